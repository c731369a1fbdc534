package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
)

// TestIdempotentEngineAnswersCommitWithTheChange: a keyed run start, task
// completion and decision write their answer in the same commit as the
// change (no transaction of their own), so a retry after any crash, or
// long after the old claim lease, returns the first answer and the run is
// started once.
func TestIdempotentEngineAnswersCommitWithTheChange(t *testing.T) {
	t.Parallel()
	ws, counted, clk := openCounted(t)
	serve := func() *testServer {
		h := httpapi.New(ws, httpapi.Options{DevLogin: true})
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: &logBuffer{}}
	}
	s := serve()
	admin := s.devLogin(t, `{}`).Token
	proc, start := askProcess(t, s, admin)
	start(s, admin, "warm-up").want(t, http.StatusCreated)

	before := counted.updates.Load()
	first := start(s, admin, "s1").want(t, http.StatusCreated)
	if n := counted.updates.Load() - before; n != 0 {
		t.Errorf("a keyed start opened %d transactions of its own, want 0", n)
	}
	var run struct {
		ID    string
		Steps []struct {
			TaskID *string `json:"task_id"`
		}
	}
	first.decode(t, &run)

	// From another Handler of the workspace and past the old 10-minute
	// lease, from a new session of the same person.
	clk.Advance(11 * time.Minute)
	s2 := serve()
	again := s2.devLogin(t, `{}`).Token
	r := start(s2, again, "s1").want(t, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, first.Body) ||
		r.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("retry after restart and lease:\n got %s %v\nwant %s", r.Body, r.Header, first.Body)
	}
	var runs []json.RawMessage
	s2.do(t, "GET", "/v1/process-runs?process_id="+proc, admin, nil).want(t, http.StatusOK).decode(t, &runs)
	if len(runs) != 2 { // warm-up and s1
		t.Errorf("%d runs, want 2: the retry started one again", len(runs))
	}

	// A task completion the same way.
	var task struct{ ID string }
	for deadline := time.Now().Add(10 * time.Second); task.ID == ""; {
		if time.Now().After(deadline) {
			t.Fatal("the run's task never opened")
		}
		var tasks []struct {
			ID    string `json:"id"`
			RunID string `json:"run_id"`
		}
		s2.do(t, "GET", "/v1/tasks?status=open", admin, nil).want(t, http.StatusOK).decode(t, &tasks)
		for _, tk := range tasks {
			if tk.RunID == run.ID {
				task.ID = tk.ID
			}
		}
	}
	// A keyed start takes the sweep of expired keys the minute made due
	// (the Handlers of a workspace share when they last swept).
	start(s2, again, "sweeps").want(t, http.StatusCreated)
	before = counted.updates.Load()
	done := s2.do(t, "POST", "/v1/tasks/"+task.ID+"/complete", admin, `{"action": "complete"}`, "Idempotency-Key", "t1").want(t, http.StatusOK)
	if n := counted.updates.Load() - before; n != 0 {
		t.Errorf("a keyed completion opened %d transactions of its own, want 0", n)
	}
	s3 := serve()
	r = s3.do(t, "POST", "/v1/tasks/"+task.ID+"/complete", again, `{"action": "complete"}`, "Idempotency-Key", "t1").want(t, http.StatusOK)
	if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, done.Body) {
		t.Errorf("completion retry:\n got %s\nwant %s", r.Body, done.Body)
	}
}

// askProcess creates a process of one human task with token, and returns
// its id and a keyed start of it (on any server of the workspace).
func askProcess(t *testing.T, s *testServer, token string) (string, func(s *testServer, token, key string) *testResponse) {
	t.Helper()
	var proc struct{ ID string }
	s.do(t, "POST", "/v1/processes", token, `{"name": "Ask", "trigger": {"type": "manual"},
		"steps": [{"key": "look", "type": "human_task", "config": {"title": "Look"}}]}`).want(t, http.StatusCreated).decode(t, &proc)
	return proc.ID, func(s *testServer, token, key string) *testResponse {
		return s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", token, `{"subject": {"type": "po", "label": "PO-1"}}`,
			"Idempotency-Key", key)
	}
}

// TestIdempotencyClaimBelongsToItsProcess: a request in flight in one
// process (a server that died) does not block its retry in another (the
// restarted server, the workspace opened again on the same directory):
// claims are not stored.
func TestIdempotencyClaimBelongsToItsProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := bas.NewFakeClock(testStart)
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	open := func(block bool) *testServer {
		return openDirServer(t, dir, clk, func(_ *bas.Workspace, h *httpapi.Handler) {
			h.HandleForTest("POST", "/v1/test/once", "", "", func(c *httpapi.Ctx) error {
				calls.Add(1)
				if block {
					started <- struct{}{}
					<-release
				}
				return c.JSON(http.StatusCreated, map[string]string{"done": "yes"})
			})
		})
	}
	s := open(true)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // a failing test must not leave the first request blocked
	admin := s.devLogin(t, `{}`)
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.srv.URL+"/api/v1/test/once", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+admin.Token)
		req.Header.Set("Idempotency-Key", "dead")
		resp, err := s.srv.Client().Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	testwait.Recv(t, started, `the request in flight in the first process reached the handler`)
	// The first process dies with its request in flight: its workspace
	// closes (its store lets go of the directory) and a new one opens.
	if err := s.ws.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(false)
	if r := s2.do(t, "POST", "/v1/test/once", admin.Token, `{}`, "Idempotency-Key", "dead").want(t, http.StatusCreated); r.Header.Get("Idempotent-Replayed") != "" {
		t.Error("the retry in the restarted process was answered as a replay")
	}
	r := s2.do(t, "POST", "/v1/test/once", admin.Token, `{}`, "Idempotency-Key", "dead").want(t, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "true" {
		t.Error("the retry's answer was not kept")
	}
	free()
	testwait.Recv(t, done, "the first request was answered")
	if n := calls.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2 (the dead process's request and its retry)", n)
	}
}

// openDirServer opens a workspace on dir and serves its API, with
// before(ws, h) called before it serves. Both close when the test ends
// (a test may close the workspace before, to open dir again: a restart).
func openDirServer(t *testing.T, dir string, clk *bas.FakeClock, before func(*bas.Workspace, *httpapi.Handler)) *testServer {
	t.Helper()
	ws, err := bas.Open(context.Background(), bas.Options{Dir: dir, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := httpapi.New(ws, httpapi.Options{DevLogin: true})
	if before != nil {
		before(ws, h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // (before the workspace's close: cleanups run last first)
	return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: &logBuffer{}}
}

// TestIdempotencyClaimSharedByHandlers: two Handlers of one workspace
// share their claims: a request under a key another Handler is running is
// a 409 (still in progress), never a second effect, and once the first
// is answered its response is replayed by either.
func TestIdempotencyClaimSharedByHandlers(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	route := func(h *httpapi.Handler) {
		h.HandleForTest("POST", "/v1/test/once", "", "", func(c *httpapi.Ctx) error {
			calls.Add(1)
			select {
			case started <- struct{}{}:
				<-release
			default:
			}
			return c.JSON(http.StatusCreated, map[string]string{"done": "yes"})
		})
	}
	s := newTestServerWith(t, httpapi.Options{DevLogin: true}, route)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	h2 := httpapi.New(s.ws, httpapi.Options{DevLogin: true})
	route(h2)
	srv2 := httptest.NewServer(h2)
	t.Cleanup(srv2.Close)
	s2 := &testServer{ws: s.ws, h: h2, srv: srv2, clock: s.clock, logs: s.logs}
	admin := s.devLogin(t, `{}`)

	done := make(chan *testResponse, 1)
	go func() { done <- s.do(t, "POST", "/v1/test/once", admin.Token, `{}`, "Idempotency-Key", "race") }()
	testwait.Recv(t, started, "the first Handler's request reached the handler")
	r := s2.do(t, "POST", "/v1/test/once", admin.Token, `{}`, "Idempotency-Key", "race").want(t, http.StatusConflict)
	if got, want := r.detail(t), "a request with this Idempotency-Key is still in progress"; got != want {
		t.Errorf("the second Handler's answer: %q, want %q", got, want)
	}
	free()
	first := testwait.Recv(t, done, "the first request was answered").want(t, http.StatusCreated)
	for _, srv := range []*testServer{s2, s} {
		r := srv.do(t, "POST", "/v1/test/once", admin.Token, `{}`, "Idempotency-Key", "race").want(t, http.StatusCreated)
		if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, first.Body) {
			t.Errorf("a retry: %v %s, want the first answer replayed: %s", r.Header, r.Body, first.Body)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
}

// TestIdempotencyPublicRoutes: callers of a public route never share a
// key: another body under the same key acts on its own.
func TestIdempotencyPublicRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	a := s.do(t, "POST", "/v1/auth/dev-login", "", `{"tenant_id": "ten_a"}`, "Idempotency-Key", "same").want(t, http.StatusCreated)
	b := s.do(t, "POST", "/v1/auth/dev-login", "", `{"tenant_id": "ten_b"}`, "Idempotency-Key", "same").want(t, http.StatusCreated)
	if b.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(a.Body, b.Body) {
		t.Errorf("a second caller's request met the first's key: %s", b.Body)
	}
	r := s.do(t, "POST", "/v1/auth/dev-login", "", `{"tenant_id": "ten_a"}`, "Idempotency-Key", "same").want(t, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, a.Body) {
		t.Errorf("the same request was not replayed: %s", r.Body)
	}
}

// TestIdempotencyActedMark: a route whose change is a store write marks
// its key in the same transaction; when the server dies before the
// response is kept (the workspace is closed and opened again on its
// directory), a retry is a 409 that says the request took effect, never a
// second effect. A request that fails (5xx) frees its key.
func TestIdempotencyActedMark(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := bas.NewFakeClock(testStart)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var writes atomic.Int32
	open := func(block bool) *testServer {
		return openDirServer(t, dir, clk, func(ws *bas.Workspace, h *httpapi.Handler) {
			h.HandleForTest("POST", "/v1/test/write", "", "", func(c *httpapi.Ctx) error {
				n := writes.Add(1)
				err := ws.Store().Update(c.Context(), func(tx store.Txn) error {
					return tx.Set(store.Key(c.Tenant(), "test-write", int64(n)), []byte("x"))
				})
				if err != nil {
					return err
				}
				if c.R.URL.Query().Get("fail") != "" {
					return errors.New("failed after writing")
				}
				if block {
					started <- struct{}{}
					<-release
				}
				return c.JSON(http.StatusCreated, map[string]int32{"write": n})
			})
		})
	}
	s := open(true)
	t.Cleanup(free)
	// The workspace's filter of stored keys is filled before the key is
	// marked: only the mark's own write can put the key in it.
	testwait.Until(t, "the filter of stored keys was filled", func() bool { return httpapi.IdemFilterReadyForTest(s.ws) })
	admin := s.devLogin(t, `{}`)
	go func() {
		req, _ := http.NewRequest("POST", s.srv.URL+"/api/v1/test/write", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+admin.Token)
		req.Header.Set("Idempotency-Key", "w1")
		if resp, err := s.srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	// The change is committed; the response is not kept when the server
	// dies.
	testwait.Recv(t, started, "the first request's change was committed")
	if err := s.ws.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(false)
	r := s2.do(t, "POST", "/v1/test/write", admin.Token, `{}`, "Idempotency-Key", "w1").want(t, http.StatusConflict)
	if d := r.detail(t); !strings.Contains(d, "took effect") {
		t.Errorf("detail %q", d)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("%d writes, want 1", n)
	}
	free()

	s2.do(t, "POST", "/v1/test/write?fail=1", admin.Token, `{}`, "Idempotency-Key", "w2").want(t, http.StatusInternalServerError)
	s2.do(t, "POST", "/v1/test/write", admin.Token, `{}`, "Idempotency-Key", "w2").want(t, http.StatusCreated)
	s2.do(t, "POST", "/v1/test/write", admin.Token, `{}`, "Idempotency-Key", "w2").want(t, http.StatusCreated)
	if n := writes.Load(); n != 3 {
		t.Errorf("%d writes, want 3: the failed request freed its key, the retry acted once", n)
	}
}

// TestIdempotencyRecordForms: a keyed request's kept response is stored in
// the binary form, the sealed response after a head of 43 bytes, and is
// replayed from it; a record kept in the earlier JSON form is replayed as
// well, and still refuses another request under its key. Both kinds of
// keyed request: a run start (kept with the engine's change) and a process
// created (kept after the handler).
func TestIdempotencyRecordForms(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	sess := s.devLogin(t, `{}`)
	procBody := func(name string) string {
		return `{"name": "` + name + `", "trigger": {"type": "manual"},
			"steps": [{"key": "look", "type": "human_task", "config": {"title": "Look"}}]}`
	}
	var proc struct{ ID string }
	s.do(t, "POST", "/v1/processes", sess.Token, procBody("Ask")).want(t, http.StatusCreated).decode(t, &proc)
	for _, tc := range []struct {
		name, path, body, other string
		status                  int
	}{
		{"run start", "/v1/processes/" + proc.ID + "/start", `{"subject": {"type": "po", "label": "PO-1"}}`,
			`{"subject": {"type": "po", "label": "PO-2"}}`, http.StatusCreated},
		{"process", "/v1/processes", procBody("Keyed"), procBody("Other"), http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, form := range []string{"binary", "json"} {
				key := tc.name + " " + form
				before := idemRecords(t, s.ws, sess.TenantID)
				first := s.do(t, "POST", tc.path, sess.Token, tc.body, "Idempotency-Key", key).want(t, tc.status)
				var recKey, raw []byte
				for k, v := range idemRecords(t, s.ws, sess.TenantID) {
					if _, seen := before[k]; !seen {
						if recKey != nil {
							t.Fatal("the request kept two records")
						}
						recKey, raw = []byte(k), v
					}
				}
				if len(raw) == 0 || raw[0] != 2 {
					t.Fatalf("record stored as %.20q, want the binary form", raw)
				}
				if form == "json" {
					parts, err := store.DecodeKey(recKey)
					if err != nil {
						t.Fatal(err)
					}
					js, err := httpapi.IdemRecordAsJSONForTest(raw, parts[len(parts)-1].(string))
					if err != nil {
						t.Fatal(err)
					}
					if err := s.ws.Store().Update(t.Context(), func(tx store.Txn) error { return tx.Set(recKey, js) }); err != nil {
						t.Fatal(err)
					}
				}
				r := s.do(t, "POST", tc.path, sess.Token, tc.body, "Idempotency-Key", key).want(t, tc.status)
				if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, first.Body) ||
					r.Header.Get("Location") != first.Header.Get("Location") {
					t.Errorf("%s form replayed:\n got %s %v\nwant %s", form, r.Body, r.Header, first.Body)
				}
				s.do(t, "POST", tc.path, sess.Token, tc.other, "Idempotency-Key", key).want(t, http.StatusConflict)
			}
		})
	}
}

// idemRecords returns tenant's stored idempotency records, by key.
func idemRecords(t *testing.T, ws *bas.Workspace, tenant string) map[string][]byte {
	t.Helper()
	recs := map[string][]byte{}
	err := ws.Store().View(t.Context(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(tenant, "r", "idem")}, func(k, v []byte) error {
			recs[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
