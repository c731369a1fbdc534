package bas_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
)

func TestClusterOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name  string
		opts  bas.Options
		store bool   // give a shared Store
		want  string // "" opens
	}{
		{"cluster on a store", bas.Options{Cluster: true}, true, ""},
		{"cluster without a shared store", bas.Options{Cluster: true}, false,
			"Options.Cluster is true; give the nodes' shared PostgreSQL database"},
		{"node id without cluster", bas.Options{NodeID: "a"}, true, "Options.Cluster is false; set it to true to use NodeID"},
		{"node id of 200 bytes", bas.Options{Cluster: true, NodeID: strings.Repeat("n", 200)}, true, ""},
		{"node id of 201 bytes", bas.Options{Cluster: true, NodeID: strings.Repeat("n", 201)}, true, "Options.NodeID is 201 bytes long; use at most 200 bytes"},
		{"shards 4096", bas.Options{Cluster: true, ClusterShards: 4096}, true, ""},
		{"shards 4097", bas.Options{Cluster: true, ClusterShards: 4097}, true, "Options.ClusterShards is 4097; use 1 to 4096, or 0 for 32"},
		{"shards -1", bas.Options{Cluster: true, ClusterShards: -1}, true, "Options.ClusterShards is -1"},
		{"lease ttl 1s", bas.Options{Cluster: true, ClusterLeaseTTL: time.Second}, true, ""},
		{"lease ttl 999ms", bas.Options{Cluster: true, ClusterLeaseTTL: 999 * time.Millisecond}, true,
			"Options.ClusterLeaseTTL is 999ms; use at least 1s, or 0 for 15s"},
		{"lease ttl -1s", bas.Options{Cluster: true, ClusterLeaseTTL: -time.Second}, true, "Options.ClusterLeaseTTL is -1s"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			opts := test.opts
			if test.store {
				st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
				if err != nil {
					t.Fatal(err)
				}
				opts.Store = st
			}
			ws, err := bas.Open(context.Background(), opts)
			if test.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				ws.Close()
				return
			}
			if err == nil {
				ws.Close()
				t.Fatalf("opened; want %q", test.want)
			}
			if opts.Store != nil {
				opts.Store.Close()
			}
			if !strings.Contains(err.Error(), test.want) || !errors.Is(err, bas.ErrInvalid) {
				t.Errorf("error %q (invalid: %v), want it to say %q", err, errors.Is(err, bas.ErrInvalid), test.want)
			}
		})
	}
}

// Two clustered workspaces work on one PostgreSQL database at once (no
// standby): runs started on either finish, and an approval decided on the
// node that does not own the run reaches the one that does.
func TestClusterWorkspaces(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	schema := pgtest.Schema(t, dsn)
	// Leases of 5s: short enough for the shards to spread within seconds
	// (a round every TTL/3), long enough that a loaded machine delaying a
	// renewal does not lapse them (with 1s it did, and a start met its
	// shard moving: 503).
	open := func(id string) *bas.Workspace {
		ws, err := bas.Open(t.Context(), bas.Options{PostgresDSN: dsn, PostgresSchema: schema, Cluster: true, NodeID: id,
			ClusterLeaseTTL: 5 * time.Second, Providers: []bas.Provider{rates{}}})
		if err != nil {
			t.Fatalf("Open %s: %v", id, err)
		}
		t.Cleanup(func() { _ = ws.Close() })
		return ws
	}
	a, b := open("a"), open("b")
	// Spread, and settled: every one of the 32 shards (the default) is
	// held, none is between a release and its new holder's acquire.
	testwait.Until(t, "the shards spread over both nodes", func() bool {
		na, nb := len(a.Engine().Shards()), len(b.Engine().Shards())
		return na > 0 && nb > 0 && na+nb == 32
	})
	in, err := process.DecodeIn([]byte(`{"name": "Convert", "trigger": {"type": "manual"}, "steps": [
	  {"key": "a", "type": "execute", "capability": "fx.convert", "config": {"args": {"usd_cents": 100}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := a.Processes().Create(t.Context(), "acme", "usr_ann", in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for i := range 8 {
		ws := []*bas.Workspace{a, b}[i%2]
		started, err := ws.Engine().Start(t.Context(), runengine.StartParams{Tenant: "acme", ProcessID: def.ID, Actor: "usr_ann"})
		if err != nil {
			t.Fatalf("Start on %d: %v", i%2, err)
		}
		// The other node decides the run's approval.
		if run := awaitFinished(t, []*bas.Workspace{b, a}[i%2], started.ID); run.Status != "completed" {
			t.Errorf("run %d: %s, want completed", i, run.Status)
		}
		// Cancelling the completed run is refused alike on both nodes: the
		// node that does not own it carries the owner's refusal back.
		for j, ws := range []*bas.Workspace{a, b} {
			_, err := ws.Cancel(t.Context(), bas.CancelParams{Tenant: "acme", RunID: started.ID, Actor: "usr_ann"})
			if !errors.Is(err, bas.ErrConflict) || !strings.Contains(err.Error(), "run already completed") {
				t.Errorf("run %d: Cancel on node %d: %v, want ErrConflict (run already completed)", i, j, err)
			}
		}
	}
}
