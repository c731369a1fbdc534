package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
)

// TestIdempotencyKeyActsOnceAcrossServers: on a cluster, the same keyed
// start sent to two servers at once (as a client does that retries on
// another server while the first, which seemed dead, still commits) starts
// one run: the server whose commit comes second finds the key taken in its
// transaction, starts nothing and answers with the first one's response.
func TestIdempotencyKeyActsOnceAcrossServers(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	// Two nodes of one cluster on one database, as two servers are (the
	// Handlers of one workspace share their claims on keys in flight). The
	// default lease TTL (15s): one of 1s lapses when a loaded machine
	// delays a renewal, and the starts then meet their shard moving (503).
	schema := pgtest.Schema(t, dsn)
	var servers [2]*testServer
	for i, node := range []string{"a", "b"} {
		ws, err := bas.Open(context.Background(), bas.Options{Dir: t.TempDir(), PostgresDSN: dsn, PostgresSchema: schema,
			Cluster: true, NodeID: node})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ws.Close() })
		h := httpapi.New(ws, httpapi.Options{DevLogin: true})
		srv := httptest.NewServer(conform(t, h))
		t.Cleanup(srv.Close)
		servers[i] = &testServer{ws: ws, h: h, srv: srv}
	}
	admin := servers[0].devLogin(t, `{}`)
	var proc struct{ ID string }
	servers[0].do(t, "POST", "/v1/processes", admin.Token, `{"name": "Route", "trigger": {"type": "manual"},
	  "steps": [{"key": "route", "type": "route", "config": {"rules": [{"when": {"subject.type": "delivery"}, "queue": "receiving"}], "default": {"queue": "ap"}}}]}`).
		want(t, http.StatusCreated).decode(t, &proc)

	const keys = 16
	var ids [keys][2]string
	var wg sync.WaitGroup
	for k := range keys {
		for i, s := range servers {
			wg.Go(func() {
				// A client retries a 503 (a shard moving between nodes,
				// as when the node's lease lapses on a loaded machine)
				// with the same key.
				var r *testResponse
				for deadline := time.Now().Add(30 * time.Second); ; {
					r = s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", admin.Token,
						`{"subject": {"type": "delivery", "label": "PO-1"}}`, "Idempotency-Key", fmt.Sprintf("start-%d", k))
					if r.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
						break
					}
					time.Sleep(10 * time.Millisecond) // a client's back-off between retries
				}
				if r.Status != http.StatusCreated {
					t.Errorf("start %d on server %d: %d %s", k, i, r.Status, r.Body)
					return
				}
				var run struct{ ID string }
				r.decode(t, &run)
				ids[k][i] = run.ID
			})
		}
	}
	testwait.Wait(t, &wg, "the keyed starts were answered")
	for k, pair := range ids {
		if pair[0] != pair[1] {
			t.Errorf("key start-%d: the servers answered runs %s and %s, want one", k, pair[0], pair[1])
		}
	}
	var runs []struct{ ID string }
	servers[1].do(t, "GET", "/v1/process-runs?process_id="+proc.ID+"&limit=100", admin.Token, nil).
		want(t, http.StatusOK).decode(t, &runs)
	if len(runs) != keys {
		t.Errorf("%d runs stored, want %d", len(runs), keys)
	}

	// A route that marks the key in its own change (a process's
	// creation): one process per key; the other server replays the
	// response, or says the request is still in progress there.
	for k := range keys {
		for i, s := range servers {
			wg.Go(func() {
				body := fmt.Sprintf(`{"name": "Keyed %d", "trigger": {"type": "manual"}, "steps": [{"key": "route",
				  "type": "route", "config": {"rules": [{"when": {"subject.type": "x"}, "queue": "q"}], "default": {"queue": "ap"}}}]}`, k)
				r := s.do(t, "POST", "/v1/processes", admin.Token, body, "Idempotency-Key", fmt.Sprintf("create-%d", k))
				if r.Status != http.StatusCreated && r.Status != http.StatusConflict {
					t.Errorf("create %d on server %d: %d %s", k, i, r.Status, r.Body)
				}
			})
		}
	}
	testwait.Wait(t, &wg, "the keyed creations were answered")
	var procs []struct{ Name string }
	servers[0].do(t, "GET", "/v1/processes?limit=100", admin.Token, nil).want(t, http.StatusOK).decode(t, &procs)
	made := map[string]int{}
	for _, p := range procs {
		made[p.Name]++
	}
	for k := range keys {
		if n := made[fmt.Sprintf("Keyed %d", k)]; n != 1 {
			t.Errorf("key create-%d made %d processes, want 1", k, n)
		}
	}
}
