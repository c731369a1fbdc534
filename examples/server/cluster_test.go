package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/pgtest"
)

var (
	clusterRuns  = flag.Int("cluster-runs", 600, "runs of TestServerCluster (3000 for the long version)")
	clusterProcs = flag.Bool("cluster-procs", false, "the long version of TestServerCluster: wait for a schedule tick after the kill (up to a minute)")
)

// tickProcess runs once a minute and routes nothing in particular.
const tickProcess = `{
  "name": "Minute tick",
  "function": "operations",
  "trigger": {"type": "schedule", "cron": "* * * * *"},
  "steps": [{"key": "route", "type": "route",
    "config": {"rules": [{"when": {"subject.type": "delivery"}, "queue": "receiving"}], "default": {"queue": "ap"}}}]
}`

// TestServerCluster runs the server three times on one PostgreSQL
// database with -cluster, starts runs on all three (each start keyed, and
// sent again to a live server when its server died), kills one with
// SIGKILL mid-way, and checks that every key made one run, every run
// completed and sent its one message, and every minute tick of a schedule
// fired once. With -cluster-procs (the long version) it waits for a tick
// after the kill, up to a minute, and checks it too; -cluster-runs sets
// the number of runs.
func TestServerCluster(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	bin := buildServer(t)
	var srvs []*serverProc
	for i := range 3 {
		srvs = append(srvs, startServer(t, bin, t.TempDir(), fmt.Sprintf("n%d", i+1),
			"-store", u.String(), "-cluster", "-node-id", fmt.Sprintf("n%d", i+1), "-cluster-lease-ttl", "2s"))
	}
	anon := newClient(srvs[0].base, "")
	var sess struct {
		Token string `json:"token"`
	}
	anon.must(t, "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": "ten_cluster"}, http.StatusCreated, &sess)
	clients := make([]*client, 3)
	for i, s := range srvs {
		clients[i] = newClient(s.base, sess.Token)
	}
	var chase, tick record
	clients[0].must(t, "POST", "/v1/processes", json.RawMessage(chaseProcess), http.StatusCreated, &chase)
	clients[1].must(t, "POST", "/v1/processes", json.RawMessage(tickProcess), http.StatusCreated, &tick)

	n := *clusterRuns
	var dead atomic.Int32 // 1 + the index of the killed server
	var killedAt time.Time
	live := func(i int) *client {
		for ; int(dead.Load()) == i%3+1; i++ {
		}
		return clients[i%3]
	}
	runs := make([]string, n)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	var killOnce sync.Once
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				body := map[string]any{"subject": map[string]any{"type": "delivery", "label": fmt.Sprintf("PO-%d", i)}}
				// A 503 (the shard is moving: a lease round is catching up,
				// slower on a loaded machine) is retried on another server,
				// for up to 30s, as a client does.
				giveUp := time.Now().Add(30 * time.Second)
				for try := 0; ; try++ {
					status, raw, _, err := live(i+try).keyedCall("/v1/processes/"+chase.ID+"/start", fmt.Sprintf("start-%d", i), body)
					if err == nil && status == http.StatusCreated {
						var r record
						if err := json.Unmarshal(raw, &r); err != nil {
							t.Errorf("start %d: %v", i, err)
							return
						}
						runs[i] = r.ID
						break
					}
					if time.Now().After(giveUp) || err == nil && status != http.StatusServiceUnavailable {
						t.Errorf("start %d: %v %d %s", i, err, status, raw)
						return
					}
					time.Sleep(50 * time.Millisecond) // the next try goes to another server
				}
				if done.Add(1) == int64(n/2) {
					killOnce.Do(func() {
						dead.Store(3)
						killedAt = time.Now()
						srvs[2].kill()
					})
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		for _, s := range srvs[:2] {
			b, _ := os.ReadFile(s.logs)
			for _, l := range strings.Split(string(b), "\n") {
				if !strings.Contains(l, "level=INFO") {
					t.Log(l)
				}
			}
		}
		return
	}
	c := live(0)
	seen := map[string]bool{}
	for i, id := range runs {
		if seen[id] {
			t.Fatalf("start %d answered run %s, which another key started", i, id)
		}
		seen[id] = true
		waitCompleted(t, live(i), srvs[0], id)
	}
	sent := map[string]int{}
	for _, m := range all[message](t, c, "/v1/outbox") {
		if runID, _, ok := strings.Cut(m.IdempotencyKey, "/"); ok {
			sent[runID]++
		}
	}
	for _, id := range runs {
		if sent[id] != 1 {
			t.Errorf("run %s sent %d messages, want 1", id, sent[id])
		}
	}
	if got := all[record](t, c, "/v1/process-runs?process_id="+chase.ID); len(got) != n {
		t.Errorf("%d runs of the started process stored, want %d", len(got), n)
		listed := map[string]int{}
		for _, r := range got {
			if listed[r.ID]++; listed[r.ID] == 2 {
				t.Errorf("run %s is listed more than once", r.ID)
			}
			if !seen[r.ID] {
				var full map[string]any
				c.must(t, "GET", "/v1/process-runs/"+r.ID, nil, http.StatusOK, &full)
				t.Errorf("run %s was answered to no start: %v", r.ID, full["subject"])
			}
		}
	}

	// The schedule: every tick fired once; in the long version, a tick
	// after the kill among them (waited for).
	type tickRun struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Trigger struct {
			Data struct {
				FiredAt string `json:"fired_at"`
			} `json:"data"`
		} `json:"trigger"`
	}
	var ticks []tickRun
	for deadline := time.Now().Add(90 * time.Second); ; {
		ticks = ticks[:0]
		after := false
		for _, listed := range all[tickRun](t, c, "/v1/process-runs?process_id="+tick.ID) {
			var r tickRun // the list leaves the trigger's data out
			c.must(t, "GET", "/v1/process-runs/"+listed.ID, nil, http.StatusOK, &r)
			ticks = append(ticks, r)
			at, err := time.Parse(time.RFC3339, r.Trigger.Data.FiredAt)
			if err != nil {
				t.Fatalf("tick run %s fired at %q: %v", r.ID, r.Trigger.Data.FiredAt, err)
			}
			after = after || at.After(killedAt) && r.Status == "completed"
		}
		if after || !*clusterProcs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no schedule tick after the kill completed: %+v", ticks)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fired := map[string]int{}
	for _, r := range ticks {
		fired[r.Trigger.Data.FiredAt]++
	}
	for at, k := range fired {
		if k != 1 {
			t.Errorf("tick %s fired %d times", at, k)
		}
	}
	for i, s := range srvs {
		if s.raced() {
			t.Errorf("server n%d had a data race:\n%s", i+1, s.tail())
		}
	}
	t.Logf("%d runs over three servers, n3 killed after %d; %d schedule ticks, each fired once", n, n/2, len(fired))
}

// TestClusterFlagNeedsStore: -cluster without -store is refused, as a
// Badger directory cannot be shared.
func TestClusterFlagNeedsStore(t *testing.T) {
	t.Parallel()
	err := run([]string{"-cluster", "-addr", "127.0.0.1:0", "-data", t.TempDir()}, nil)
	if err == nil || !strings.Contains(err.Error(), "-cluster needs -store") {
		t.Errorf("run with -cluster and no -store: %v, want a refusal", err)
	}
}
