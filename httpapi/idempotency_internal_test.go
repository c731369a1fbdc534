package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/store"
)

// TestIdempotencyOwnMarkOnCluster: on a cluster node, a keyed request
// whose handler makes two changes writes its acted mark in both: the
// second finds the first's mark and takes it for its own, not for
// another server's; a mark this request did not write refuses the change.
func TestIdempotencyOwnMarkOnCluster(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	ws, err := bas.Open(context.Background(), bas.Options{Dir: t.TempDir(), PostgresDSN: dsn,
		PostgresSchema: pgtest.Schema(t, dsn), Cluster: true, NodeID: "a", ClusterLeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := New(ws, Options{})
	req := &idemRequest{h: h, tenant: "acme", id: "idem_1", fingerprint: "f"}
	ctx := store.AlsoInUpdate(t.Context(), req.markActed)
	for i := range 2 {
		if err := ws.Store().Update(ctx, func(tx store.Txn) error { return tx.Set(store.Key("acme", "x", i), nil) }); err != nil {
			t.Fatalf("change %d of the request: %v", i+1, err)
		}
	}
	other := &idemRequest{h: h, tenant: "acme", id: "idem_1", fingerprint: "f"} // the same request on another server
	err = ws.Store().Update(store.AlsoInUpdate(t.Context(), other.markActed), func(store.Txn) error { return nil })
	if err != errKeyTaken {
		t.Fatalf("another request's change under the key: %v, want errKeyTaken", err)
	}
}
