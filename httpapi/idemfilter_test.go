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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/testwait"
)

// TestIdempotentStartReplaysAfterReopen: a keyed start retried after the
// workspace is closed and opened again (a restart: the keys were stored
// before the new process's filter of stored keys) replays its first
// answer, once the filter is filled as before; a new key starts a run.
func TestIdempotentStartReplaysAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := bas.NewFakeClock(testStart)
	open := func() *testServer {
		ws, err := bas.Open(context.Background(), bas.Options{Dir: dir, Clock: clk,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("open workspace: %v", err)
		}
		h := httpapi.New(ws, httpapi.Options{DevLogin: true})
		srv := httptest.NewServer(h)
		return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: &logBuffer{}}
	}
	s := open()
	admin := s.devLogin(t, `{}`).Token
	proc, start := askProcess(t, s, admin)
	var keys []string
	for i := range 20 {
		keys = append(keys, "s"+string(rune('a'+i)))
	}
	first := map[string][]byte{}
	for _, k := range keys {
		first[k] = start(s, admin, k).want(t, http.StatusCreated).Body
		if !bytes.HasSuffix(first[k], []byte("}\n")) || bytes.HasSuffix(first[k], []byte("\n\n")) {
			t.Errorf("start %s: the answer does not end with one newline: %q", k, first[k])
		}
	}
	s.srv.Close()
	if err := s.ws.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open()
	t.Cleanup(func() { s2.srv.Close(); _ = s2.ws.Close() })
	testwait.Until(t, "the filter of stored keys was filled", func() bool { return httpapi.IdemFilterReadyForTest(s2.ws) })
	again := s2.devLogin(t, `{}`).Token
	for _, k := range keys {
		r := start(s2, again, k).want(t, http.StatusCreated)
		if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, first[k]) {
			t.Errorf("retry of %s after reopening:\n got %s %v\nwant %s", k, r.Body, r.Header, first[k])
		}
	}
	if r := start(s2, again, "new"); r.want(t, http.StatusCreated).Header.Get("Idempotent-Replayed") != "" {
		t.Error("a new key was answered as a replay")
	}
	var runs []json.RawMessage
	s2.do(t, "GET", "/v1/process-runs?process_id="+proc+"&limit=100", admin, nil).want(t, http.StatusOK).decode(t, &runs)
	if len(runs) != len(keys)+1 {
		t.Errorf("%d runs, want %d: a retry started one again", len(runs), len(keys)+1)
	}
}

// TestIdempotencyConcurrentSameKey: requests under one key at once, on a
// workspace whose filter of stored keys is filled, act once: each of the
// others is a 409 (still in progress) or replays the first's answer.
func TestIdempotencyConcurrentSameKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	s := newTestServerWith(t, httpapi.Options{DevLogin: true}, func(h *httpapi.Handler) {
		h.HandleForTest("POST", "/v1/test/once", "", "", func(c *httpapi.Ctx) error {
			return c.JSON(http.StatusCreated, map[string]int32{"call": calls.Add(1)})
		})
	})
	testwait.Until(t, "the filter of stored keys was filled", func() bool { return httpapi.IdemFilterReadyForTest(s.ws) })
	admin := s.devLogin(t, `{}`)
	for round := range 5 {
		key := "k" + string(rune('0'+round))
		before := calls.Load()
		var wg sync.WaitGroup
		resps := make([]*testResponse, 16)
		for i := range resps {
			wg.Go(func() { resps[i] = s.do(t, "POST", "/v1/test/once", admin.Token, `{}`, "Idempotency-Key", key) })
		}
		wg.Wait()
		if n := calls.Load() - before; n != 1 {
			t.Errorf("key %s: the handler ran %d times, want 1", key, n)
		}
		want := []byte(nil)
		for _, r := range resps {
			if r.Status == http.StatusCreated && r.Header.Get("Idempotent-Replayed") == "" {
				want = r.Body
			}
		}
		for i, r := range resps {
			switch {
			case r.Status == http.StatusConflict:
			case r.Status == http.StatusCreated && bytes.Equal(r.Body, want):
			default:
				t.Errorf("key %s, request %d: %d %s, want 409 or %s", key, i, r.Status, r.Body, want)
			}
		}
	}
}

// TestIdemFilterSharedByHandlers: two Handlers of one workspace share its
// filter of stored keys: a key one of them stores after the filter was
// filled (a run start kept with its change, a process kept after the
// handler, a refusal kept with no change) is replayed by the other, never
// acted on twice.
func TestIdemFilterSharedByHandlers(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	h2 := httpapi.New(s.ws, httpapi.Options{DevLogin: true})
	srv2 := httptest.NewServer(h2)
	t.Cleanup(srv2.Close)
	s2 := &testServer{ws: s.ws, h: h2, srv: srv2, clock: s.clock, logs: s.logs}
	testwait.Until(t, "the filter of stored keys was filled", func() bool { return httpapi.IdemFilterReadyForTest(s.ws) })
	admin := s.devLogin(t, `{}`).Token
	proc, start := askProcess(t, s, admin)
	create := func(s *testServer, key string) *testResponse {
		return s.do(t, "POST", "/v1/processes", admin, `{"name": "Keyed", "trigger": {"type": "manual"},
			"steps": [{"key": "look", "type": "human_task", "config": {"title": "Look"}}]}`, "Idempotency-Key", key)
	}
	for _, tc := range []struct {
		name   string
		do     func(s *testServer) *testResponse
		status int
	}{
		{"run start", func(s *testServer) *testResponse { return start(s, admin, "start-1") }, http.StatusCreated},
		{"process", func(s *testServer) *testResponse { return create(s, "process-1") }, http.StatusCreated},
		{"start of no process (a 404, kept with no change)", func(s *testServer) *testResponse {
			return s.do(t, "POST", "/v1/processes/prc_none/start", admin, `{}`, "Idempotency-Key", "none-1")
		}, http.StatusNotFound},
	} {
		first := tc.do(s).want(t, tc.status)
		again := tc.do(s2).want(t, tc.status)
		if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
			t.Errorf("%s retried on the second Handler:\n got %s %v\nwant %s", tc.name, again.Body, again.Header, first.Body)
		}
	}
	var runs []json.RawMessage
	s.do(t, "GET", "/v1/process-runs?process_id="+proc, admin, nil).want(t, http.StatusOK).decode(t, &runs)
	if len(runs) != 1 {
		t.Errorf("%d runs, want 1: the retry on the second Handler started one again", len(runs))
	}
	var procs []json.RawMessage
	s.do(t, "GET", "/v1/processes", admin, nil).want(t, http.StatusOK).decode(t, &procs)
	if len(procs) != 2 { // Ask and Keyed
		t.Errorf("%d processes, want 2: the retry on the second Handler created one again", len(procs))
	}
}

// TestIdemFilterForgetsNoLiveKey: while the fake clock runs through a day
// and more of keyed requests, so the filter of stored keys turns its
// windows and drops layers, a key replays its first response for as long
// as its record lives (24 hours), and acts again after; the filter holds
// about ten windows' layers, not one per hour.
func TestIdemFilterForgetsNoLiveKey(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_forget"}`).Token
	testwait.Until(t, "the filter of stored keys was filled", func() bool { return httpapi.IdemFilterReadyForTest(s.ws) })
	create := func(name, key string) *testResponse {
		return s.do(t, "POST", "/v1/processes", admin, `{"name": "`+name+`", "trigger": {"type": "manual"},
		  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x"}}]}`, "Idempotency-Key", key)
	}
	first := create("first", "first").want(t, http.StatusCreated)
	for h := range 47 {
		s.clock.Advance(30 * time.Minute)
		create(fmt.Sprint("p", h), fmt.Sprint("k", h)).want(t, http.StatusCreated)
		r := create("first", "first").want(t, http.StatusCreated)
		if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, first.Body) {
			t.Fatalf("after %d half hours the first key did not replay its response: %s", h+1, r.Body)
		}
	}
	for range 5 * 48 { // four days more, one key an hour
		s.clock.Advance(30 * time.Minute)
		create("later", fmt.Sprint("later", s.clock.Now().UnixNano())).want(t, http.StatusCreated)
	}
	if n := httpapi.IdemFilterLayersForTest(s.ws); n > 10 {
		t.Errorf("the filter holds %d layers after five days, want at most 10", n)
	}
	if r := create("first", "first").want(t, http.StatusCreated); r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("a key whose record expired days ago replayed: %s", r.Body)
	}
}
