package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/httpapi"
)

// benchClients is the number of concurrent HTTP clients of the benchmarks
// (b.SetParallelism(benchClients / GOMAXPROCS)).
const benchClients = 64

// benchNoop is an in-process provider of bench.noop, which does nothing.
type benchNoop struct{}

func (benchNoop) Info() capability.Info {
	return capability.Info{ID: "bench.noop-provider", Name: "No-op", Kind: capability.KindBuiltin,
		Capabilities: []string{"bench.noop"}}
}

func (benchNoop) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type": "object"}`)
	return []capability.Capability{{ID: "bench.noop", Name: "No-op", Description: "Does nothing.", Args: obj, Result: obj}}
}

func (benchNoop) Call(context.Context, capability.Call) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// benchAPI is a workspace on Badger in a temp dir (synced commits, the
// wall clock) served by httpapi through a real listener, and a keep-alive
// client with a session token.
type benchAPI struct {
	h      http.Handler
	srv    *httptest.Server
	client *http.Client
	base   string
	token  string
}

func newBenchAPI(b *testing.B) *benchAPI {
	b.Helper()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	ws, err := bas.Open(context.Background(), bas.Options{Dir: b.TempDir(), Logger: discard,
		Providers: []bas.Provider{benchNoop{}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	h := httpapi.New(ws, httpapi.Options{DevLogin: true, Logger: discard})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 2 * benchClients, MaxIdleConnsPerHost: 2 * benchClients, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	a := &benchAPI{h: h, srv: srv, client: &http.Client{Transport: tr}, base: srv.URL + h.BasePath()}
	var sess struct{ Token string }
	a.must(b, "POST", "/v1/auth/dev-login", []byte(`{"tenant_id": "ten_bench"}`), http.StatusCreated, &sess)
	a.token = sess.Token
	return a
}

// do sends one request and reads the whole answer (so the connection is
// reused).
func (a *benchAPI) do(method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

func (a *benchAPI) must(b *testing.B, method, path string, body []byte, want int, v any) {
	b.Helper()
	status, raw, err := a.do(method, path, body)
	if err != nil || status != want {
		b.Fatalf("%s %s: %d %s %v", method, path, status, raw, err)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			b.Fatal(err)
		}
	}
}

// benchProcess creates a process of one step for the benchmarks: a route
// step (which calls no capability and asks nobody) when step is "route";
// an execute step on bench.noop when step is "execute", after setting the
// autonomy gate to let every action run without a person (automation at
// 100%, no sampling). It skips the benchmark when a probe run of the
// execute step still waits for a person.
func (a *benchAPI) benchProcess(b *testing.B, step string) string {
	b.Helper()
	var p struct{ ID string }
	if step == "route" {
		a.must(b, "POST", "/v1/processes", []byte(`{"name": "Bench route", "trigger": {"type": "manual"},
		  "steps": [{"key": "route", "type": "route", "config": {"rules": [{"when": {"subject.type": "bench"}, "queue": "a"}],
		    "default": {"queue": "b"}}}]}`), http.StatusCreated, &p)
		return p.ID
	}
	a.must(b, "PATCH", "/v1/automation", []byte(`{"percent": 100, "max_percent": 100, "sample_percent": 0}`), http.StatusOK, nil)
	a.must(b, "POST", "/v1/processes", []byte(`{"name": "Bench execute", "trigger": {"type": "manual"},
	  "steps": [{"key": "noop", "type": "execute", "capability": "bench.noop", "config": {"args": {"n": 1}}}]}`),
		http.StatusCreated, &p)
	var r struct{ ID, Status string }
	a.must(b, "POST", "/v1/processes/"+p.ID+"/start", []byte(`{"subject": {"type": "probe", "label": "probe"}}`),
		http.StatusCreated, &r)
	a.must(b, "GET", "/v1/process-runs/"+r.ID+"?wait=5", nil, http.StatusOK, &r) // answers when it ends
	if r.Status != "completed" {
		b.Skipf("the autonomy gate does not let the execute step run without a person (probe run %s)", r.Status)
	}
	return p.ID
}

// BenchmarkStartRunHTTP starts runs with POST /v1/processes/{id}/start
// from 64 concurrent keep-alive clients through a real listener; each
// answer comes after the start's synced commit. The process has one step:
// a route step, or an execute step on an in-process no-op provider behind
// an automatic autonomy gate (the step's call and the gate's decision
// happen after the answer, but share the machine). It reports requests/s.
func BenchmarkStartRunHTTP(b *testing.B) {
	for _, step := range []string{"route", "execute"} {
		b.Run("step="+step, func(b *testing.B) {
			a := newBenchAPI(b)
			pid := a.benchProcess(b, step)
			path := "/v1/processes/" + pid + "/start"
			body := []byte(`{"subject": {"type": "bench", "label": "INV-1"}}`)
			b.SetParallelism(max(1, benchClients/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			began := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					status, raw, err := a.do("POST", path, body)
					if err != nil || status != http.StatusCreated {
						b.Errorf("start: %d %s %v", status, raw, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "req/s")
		})
	}
}

// BenchmarkGetRunHTTP reads runs with GET /v1/process-runs/{id} from 64
// concurrent keep-alive clients through a real listener, over 1,000 stored
// runs (of a one-step route process). It reports requests/s.
func BenchmarkGetRunHTTP(b *testing.B) {
	a := newBenchAPI(b)
	pid := a.benchProcess(b, "route")
	const stored = 1000
	ids := make([]string, stored)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= stored {
					return
				}
				var r struct{ ID string }
				status, raw, err := a.do("POST", "/v1/processes/"+pid+"/start",
					fmt.Appendf(nil, `{"subject": {"type": "bench", "label": "INV-%d"}}`, i))
				if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &r) != nil {
					b.Errorf("seed start: %d %s %v", status, raw, err)
					return
				}
				ids[i] = r.ID
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	b.SetParallelism(max(1, benchClients/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	var n atomic.Int64
	began := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[n.Add(1)%stored]
			status, raw, err := a.do("GET", "/v1/process-runs/"+id, nil)
			if err != nil || status != http.StatusOK {
				b.Errorf("get: %d %s %v", status, raw, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "req/s")
}

// BenchmarkListRunsHTTP lists a page of 20 of a process's 100 runs with
// GET /v1/process-runs?process_id=&limit=20, a next cursor sealed on each,
// calling the handler in process (no listener, no client), so that its
// allocations are the server's alone.
func BenchmarkListRunsHTTP(b *testing.B) {
	a := newBenchAPI(b)
	pid := a.benchProcess(b, "route")
	for i := range 100 {
		a.must(b, "POST", "/v1/processes/"+pid+"/start",
			fmt.Appendf(nil, `{"subject": {"type": "bench", "label": "INV-%d"}}`, i), http.StatusCreated, nil)
	}
	req := httptest.NewRequest("GET", a.base+"/v1/process-runs?process_id="+pid+"&limit=20", nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("X-Next-Cursor") == "" {
			b.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
	}
}
