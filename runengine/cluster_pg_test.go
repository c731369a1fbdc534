package runengine_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/bas-platform/bas/store/pgstore"
)

var clusterRuns = flag.Int("cluster-runs", 300, "runs of TestClusterThreeNodes (3000 for the long version)")

// TestClusterThreeNodes: three engine nodes on one PostgreSQL database
// (BAS_PG_DSN) run a few hundred runs (-cluster-runs for more), started
// on every node whatever shard the run falls in, and a schedule ticking
// meanwhile; one node is killed mid-way (its store refuses everything, it
// neither renews nor releases its leases). Every start made exactly one
// run, every run completed exactly once, every call of a run's step used
// one idempotency key, and every schedule tick fired exactly once.
func TestClusterThreeNodes(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	const (
		ttl   = 2 * time.Second
		ticks = 6
	)
	n := *clusterRuns
	ec := clock.NewFake(t0) // the engines' clock, advanced a minute per schedule tick
	mu, keys := newRecorders()

	var finMu sync.Mutex
	finished := map[string]int{}
	fin := make(chan string, 2*n+4*ticks)
	onFinish := func(_, id string, _ runengine.RunStatus) { fin <- id }

	logs := &lockedBuffer{}
	var nodes []*node
	for i := range 3 {
		pg, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pg.Close() })
		id := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, openNode(t, pg, nodeConfig{id: id, lease: clock.Real{}, clock: ec,
			prov: &recorder{node: id, mu: mu, keys: keys}, shards: 16, ttl: ttl, onFinish: onFinish,
			logger: slog.New(slog.NewTextHandler(logs, nil)).With("node", id)}))
	}
	waitFor(t, "the shards spread over the three nodes", func() bool {
		total := 0
		for _, nd := range nodes {
			got := len(nd.eng.Shards())
			if got == 0 {
				return false
			}
			total += got
		}
		return total == 16
	})
	spread := fmt.Sprint(nodes[0].eng.Shards(), nodes[1].eng.Shards(), nodes[2].eng.Shards())
	var dead atomic.Int32 // 1 + the index of the killed node
	live := func(i int) *node {
		for {
			nd := nodes[i%3]
			if int(dead.Load()) != i%3+1 {
				return nd
			}
			i++
		}
	}
	chain := chainProcess(t, nodes[0].procs, `{"type":"manual"}`, 3)
	sched := chainProcess(t, nodes[0].procs, `{"type":"schedule","cron":"* * * * *"}`, 1)

	// Collect finishes; tell the schedule driver of each scheduled run's.
	cronDone := make(chan string, 4*ticks)
	allDone := make(chan struct{})
	go func() {
		total := 0
		for id := range fin {
			finMu.Lock()
			finished[id]++
			first := finished[id] == 1
			finMu.Unlock()
			if !first {
				continue
			}
			r, err := live(0).eng.GetRun(context.Background(), tenant, id)
			if err == nil && r.ProcessID == sched.ID {
				cronDone <- id
			}
			if total++; total == n+ticks {
				close(allDone)
			}
		}
	}()

	// The schedule: a tick a (fake) minute, the next once the last ran.
	go func() {
		for range ticks {
			ec.Advance(time.Minute)
			select {
			case <-cronDone:
			case <-t.Context().Done():
				return
			}
		}
	}()

	// Starts, on every node in turn; a start that met the killed node is
	// sent again to a live one with the same idempotency key.
	runIDs := make([]string, n)
	var wg sync.WaitGroup
	var next atomic.Int64
	var started atomic.Int64
	killAt := int64(n / 2)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				for try := 0; ; try++ {
					r, err := live(i+try).eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: chain.ID,
						IdempotencyKey: fmt.Sprintf("start-%d", i)})
					if err == nil {
						runIDs[i] = r.ID
						break
					}
					if try > 50 || t.Context().Err() != nil {
						t.Errorf("start %d: %v", i, err)
						return
					}
				}
				if started.Add(1) == killAt {
					dead.Store(3)
					nodes[2].kill()
				}
			}
		}()
	}
	testwait.Wait(t, &wg, "the starters returned")
	select {
	case <-allDone:
	case <-time.After(2 * time.Minute):
		finMu.Lock()
		defer finMu.Unlock()
		var stuck []string
		for i, id := range runIDs {
			if finished[id] == 0 && len(stuck) < 10 {
				r, err := live(0).eng.GetRun(context.Background(), tenant, id)
				if err != nil {
					stuck = append(stuck, fmt.Sprintf("start %d: %q: %v", i, id, err))
					continue
				}
				var steps []string
				for _, st := range r.Steps {
					steps = append(steps, string(st.Status))
				}
				mu.Lock()
				calls := fmt.Sprint(keys[id+"/s1"], keys[id+"/s2"], keys[id+"/s3"])
				mu.Unlock()
				stuck = append(stuck, fmt.Sprintf("start %d: %s %s %v shard owned by n1 %v n2 %v; calls %s; log:\n%s", i, id, r.Status, steps,
					live(0).eng.Owns(id), live(1).eng.Owns(id), calls, logs.grep(id)))
			}
		}
		t.Fatalf("only %d of %d runs finished; unfinished: %v", len(finished), n+ticks, stuck)
	}

	// Every start made one run; every run completed exactly once.
	seen := map[string]bool{}
	for i, id := range runIDs {
		if id == "" || seen[id] {
			t.Fatalf("start %d: run %q missing or repeated", i, id)
		}
		seen[id] = true
	}
	finMu.Lock()
	for id, c := range finished {
		if c != 1 {
			t.Errorf("run %s finished %d times", id, c)
		}
	}
	finMu.Unlock()
	var runs []*runengine.Run
	for page := (store.Page{Limit: 500}); ; {
		got, cursor, err := nodes[0].eng.ListRuns(t.Context(), tenant, runengine.RunQuery{}, page)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, got...)
		if cursor == "" {
			break
		}
		page.Cursor = cursor
	}
	fired := map[any]int{}
	for _, r := range runs {
		if r.Status != runengine.RunCompleted {
			t.Errorf("run %s is %s", r.ID, r.Status)
		}
		switch r.ProcessID {
		case chain.ID:
			if !seen[r.ID] {
				t.Errorf("run %s was started by no start", r.ID)
			}
		case sched.ID:
			fired[r.Trigger.Data["fired_at"]]++
		}
	}
	if len(runs) != n+ticks {
		t.Errorf("%d runs stored, want %d", len(runs), n+ticks)
	}
	if len(fired) != ticks {
		t.Errorf("%d schedule ticks fired, want %d: %v", len(fired), ticks, fired)
	}
	for at, c := range fired {
		if c != 1 {
			t.Errorf("tick %v fired %d times", at, c)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for step, byKey := range keys {
		if len(byKey) != 1 {
			t.Errorf("step %s was called with %d idempotency keys: %v", step, len(byKey), byKey)
		}
	}
	if len(keys) != 3*n+ticks {
		t.Errorf("%d steps called, want %d", len(keys), 3*n+ticks)
	}
	t.Logf("%d runs and %d ticks over three nodes (shards %s), n3 killed after %d starts; shards at the end: n1 %v, n2 %v",
		n, ticks, spread, killAt, nodes[0].eng.Shards(), nodes[1].eng.Shards())
}

// lockedBuffer collects the nodes' logs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// grep returns the log lines that mention s, and the lease and shard lines.
func (b *lockedBuffer) grep(s string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, s) || strings.Contains(l, "lease") {
			out = append(out, l)
		}
	}
	if len(out) > 40 {
		out = out[len(out)-40:]
	}
	return strings.Join(out, "\n")
}
