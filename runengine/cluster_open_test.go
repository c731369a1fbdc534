package runengine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/bas-platform/bas/store/pgstore"
	"github.com/google/go-cmp/cmp"
)

// scanCounter counts the scans of its store, by prefix.
type scanCounter struct {
	store.Store
	mu    sync.Mutex
	scans map[string]int
}

func (s *scanCounter) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(&countedReader{r, s}) })
}

func (s *scanCounter) count(prefix []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scans[string(prefix)]
}

type countedReader struct {
	store.Reader
	s *scanCounter
}

func (r *countedReader) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	r.s.mu.Lock()
	r.s.scans[string(opts.Prefix)]++
	r.s.mu.Unlock()
	return r.Reader.Scan(opts, fn)
}

// A cluster node's Open reads the paused processes and the bulk jobs a
// close interrupted once: its first lease round starts the jobs from that
// read rather than reading them again (which restarted each job twice).
func TestClusterOpenReadsPausesAndJobsOnce(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) store.Store{
		"badger": sharedBadger,
		"postgres": func(t *testing.T) store.Store {
			dsn := pgtest.DSN(t)
			pg, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: pgtest.Schema(t, dsn)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pg.Close() })
			return pg
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := &scanCounter{Store: open(t), scans: map[string]int{}}
			mu, keys := newRecorders()
			// The lease clock is fake and never moves: no lease round runs
			// after Open's.
			n := openNode(t, base, nodeConfig{id: "a", lease: clock.NewFake(t0), clock: clock.NewFake(t0),
				prov: &recorder{node: "a", mu: mu, keys: keys}, shards: 2, ttl: 10 * time.Second})
			if got := len(n.eng.Shards()); got != 2 {
				t.Fatalf("the node holds %d shards after Open; want 2", got)
			}
			got := map[string]int{
				"proc-paused":  base.count(store.Key(store.System, "proc-paused")),
				"jobs-running": base.count(store.Key(store.System, "jobs-running")),
			}
			if diff := cmp.Diff(map[string]int{"proc-paused": 1, "jobs-running": 1}, got); diff != "" {
				t.Errorf("scans during Open (-want +got):\n%s", diff)
			}
		})
	}
}
