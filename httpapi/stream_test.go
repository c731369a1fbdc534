package httpapi_test

// HTTP tests of GET /v1/stream (stream.go) over a real HTTP server: the
// events of the caller's tenant only, filtered by its apps and
// permissions, resumed after Last-Event-ID, heartbeats, and the ends.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// streams reports whether r answers an endless event stream, which the
// tests that read every GET route leave out (stream_test.go tests it).
func streams(r httpapi.Route) bool { return r.Path == "/v1/stream" }

// sseFrame is one server-sent event.
type sseFrame struct {
	ID, Event string
	Data      map[string]any
}

// sseStream reads an open GET /v1/stream.
type sseStream struct {
	resp   *http.Response
	rd     *bufio.Reader
	cancel context.CancelFunc
	// comments counts the comment lines (heartbeats) read.
	comments int
}

// openStream opens GET /v1/stream with token, the query q and, when set,
// Last-Event-ID. A stream ends a minute after it opened: a safety net for a
// stream that never ends, not a wait (with 10s, a test's stream on a loaded
// machine sometimes ended before the event it waited for).
func (s *testServer) openStream(t testing.TB, token, q, lastID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	req, err := http.NewRequestWithContext(ctx, "GET", s.srv.URL+s.h.BasePath()+"/v1/stream"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	st := &sseStream{resp: resp, rd: bufio.NewReader(resp.Body), cancel: cancel}
	t.Cleanup(st.close)
	return st
}

func (st *sseStream) close() {
	st.cancel()
	st.resp.Body.Close()
}

// next reads the next event (skipping the retry line and comments); ok is
// false when the stream ended.
func (st *sseStream) next(t testing.TB) (sseFrame, bool) {
	t.Helper()
	var f sseFrame
	seen := false
	for {
		line, err := st.rd.ReadString('\n')
		if err != nil {
			return f, false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if seen {
				return f, true
			}
		case strings.HasPrefix(line, ":"):
			st.comments++
		case strings.HasPrefix(line, "retry: "):
		case strings.HasPrefix(line, "id: "):
			f.ID, seen = line[4:], true
		case strings.HasPrefix(line, "event: "):
			f.Event, seen = line[7:], true
		case strings.HasPrefix(line, "data: "):
			seen = true
			if err := json.Unmarshal([]byte(line[6:]), &f.Data); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
}

// names reads n events and returns their names.
func (st *sseStream) names(t *testing.T, n int) ([]string, []sseFrame) {
	t.Helper()
	var names []string
	var frames []sseFrame
	for range n {
		f, ok := st.next(t)
		if !ok {
			t.Fatalf("the stream ended after %v", names)
		}
		names = append(names, f.Event)
		frames = append(frames, f)
	}
	return names, frames
}

// TestStreamTenantsPermissionsResume checks that a stream carries its
// tenant's events only, those its caller may read, and that it resumes
// right after Last-Event-ID.
func TestStreamTenantsPermissionsResume(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_sse"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_sse_other"}`).Token
	tasksOnly := s.newKey(t, admin, `{"name": "tasks", "roles": ["viewer"], "apps": ["tasks"]}`).Secret
	docsOnly := s.newKey(t, admin, `{"name": "docs", "roles": ["viewer"], "apps": ["docs"]}`).Secret

	all := s.openStream(t, admin, "", "")
	onlyTasks := s.openStream(t, tasksOnly, "", "")
	onlyDocs := s.openStream(t, docsOnly, "", "")
	named := s.openStream(t, admin, "?names=task.*,process.run.completed", "")
	theirs := s.openStream(t, other, "", "")

	proc := s.createProc(t, admin, `{"name": "Look", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Look"}}]}`)
	r := s.startRun(t, admin, proc.ID, "S-1")
	taskID := *r.step(t, "t").TaskID
	s.do(t, "POST", "/v1/tasks/"+taskID+"/claim", admin, nil).want(t, http.StatusOK)

	got, frames := all.names(t, 3)
	if diff := cmp.Diff([]string{"process.run.started", "task.created", "task.assigned"}, got); diff != "" {
		t.Fatalf("admin's stream (-want +got):\n%s", diff)
	}
	if frames[1].Data["data"].(map[string]any)["task_id"] != taskID || frames[1].Data["name"] != "task.created" {
		t.Errorf("task.created = %v", frames[1].Data)
	}
	// A key limited to the tasks app sees no process.* event.
	if got, _ := onlyTasks.names(t, 2); !cmp.Equal(got, []string{"task.created", "task.assigned"}) {
		t.Errorf("tasks-only stream: %v", got)
	}

	// The admin's stream goes away after task.created; the run goes on.
	cursor := frames[1].ID
	all.close()
	s.do(t, "POST", "/v1/tasks/"+taskID+"/complete", admin, `{"action": "complete"}`).want(t, http.StatusOK)
	if got, _ := named.names(t, 3); !cmp.Equal(got, []string{"task.created", "task.assigned", "task.completed"}) {
		t.Errorf("named stream: %v", got)
	}
	if got, _ := named.names(t, 1); !cmp.Equal(got, []string{"process.run.completed"}) {
		t.Errorf("named stream, end of the run: %v", got)
	}
	// Reconnecting with Last-Event-ID gives what came after it, in order.
	again := s.openStream(t, admin, "", cursor)
	if got, _ := again.names(t, 3); !cmp.Equal(got, []string{"task.assigned", "task.completed", "process.run.completed"}) {
		t.Errorf("resumed stream: %v", got)
	}
	// So does ?after=.
	after := s.openStream(t, admin, "?after="+cursor, "")
	if got, _ := after.names(t, 1); !cmp.Equal(got, []string{"task.assigned"}) {
		t.Errorf("?after= stream: %v", got)
	}
	// A cursor the server does not hold says events were missed.
	lost := s.openStream(t, admin, "", "sub01XYZ.12")
	if f, ok := lost.next(t); !ok || f.Event != "missed" || f.ID == "" {
		t.Errorf("unknown cursor: %+v %v", f, ok)
	}

	// The other tenant's stream and the docs-only key's saw none of it:
	// the first event each gets is one of their own.
	s.do(t, "POST", "/v1/events", other, `{"name": "other.thing", "data": {"n": 1}}`).want(t, http.StatusAccepted)
	if got, _ := theirs.names(t, 1); !cmp.Equal(got, []string{"other.thing"}) {
		t.Errorf("other tenant's stream: %v", got)
	}
	doc := s.uploadDoc(t, admin, s.invoiceType(t, admin), "a.txt", []byte("Invoice INV-1\nTotal: 10.00 EUR\n"))
	f, ok := onlyDocs.next(t)
	if !ok || !strings.HasPrefix(f.Event, "docs.") || f.Data["data"].(map[string]any)["document_id"] != doc.ID {
		t.Errorf("docs-only stream: %+v %v", f, ok)
	}
}

// TestStreamBounds checks ?names= and ?after= bounds and that the route
// needs a credential.
func TestStreamBounds(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_sse_b"}`).Token
	s.do(t, "GET", "/v1/stream", "", nil).want(t, http.StatusUnauthorized)
	twenty := strings.TrimSuffix(strings.Repeat("a.b,", 20), ",")
	for _, c := range []struct {
		name, q string
		want    []string
	}{
		{"21 names", "?names=" + twenty + ",c", []string{"query.names:too_long"}},
		{"a bad name", "?names=task.*,Task,a..b", []string{"query.names.1:string_pattern_mismatch", "query.names.2:string_pattern_mismatch"}},
		{"a long cursor", "?after=" + strings.Repeat("x", 201), []string{"query.after:string_too_long"}},
	} {
		resp := s.do(t, "GET", "/v1/stream"+c.q, admin, nil).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff(c.want, violationList(t, resp)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// Just inside: 20 names and a 200-character cursor open a stream.
	s.openStream(t, admin, "?names="+twenty, "")
	s.openStream(t, admin, "?after="+strings.Repeat("x", 200), "")
}

// TestStreamHeartbeatAndEnds checks the heartbeat, the end of a stream
// whose key is revoked, and the end when the workspace closes.
func TestStreamHeartbeatAndEnds(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true, StreamHeartbeat: 20 * time.Millisecond})
	admin := s.devLogin(t, `{"tenant_id": "ten_sse_h"}`).Token
	key := s.newKey(t, admin, `{"name": "watch", "roles": ["viewer"]}`)
	watch := s.openStream(t, key.Secret, "", "")
	held := s.openStream(t, admin, "", "")
	// Heartbeats come while nothing happens; revoking the key ends its
	// stream at the next one.
	for watch.comments < 2 {
		if _, err := watch.rd.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if line, _ := watch.rd.Peek(1); len(line) > 0 && line[0] == ':' {
			watch.comments++
		}
	}
	s.do(t, "DELETE", "/v1/api-keys/"+key.ID, admin, nil).want(t, http.StatusNoContent)
	if f, ok := watch.next(t); !ok || f.Event != "end" || f.Data["detail"] != "not authenticated" {
		t.Errorf("after the revoke: %+v %v", f, ok)
	}
	if _, ok := watch.next(t); ok {
		t.Error("the revoked key's stream goes on")
	}
	// Closing the workspace ends the stream with an end event.
	if err := s.ws.Close(); err != nil {
		t.Fatal(err)
	}
	if f, ok := held.next(t); !ok || f.Event != "end" {
		t.Errorf("after close: %+v %v", f, ok)
	}
}

// TestStreamLimitPerPerson checks that a person holds at most
// MaxStreamsPerPerson streams at once, across sessions, and gets one
// again once one closes.
func TestStreamLimitPerPerson(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true, MaxStreamsPerPerson: 2})
	a := s.devLogin(t, `{"tenant_id": "ten_sse_l"}`).Token
	a2 := s.devLogin(t, `{"tenant_id": "ten_sse_l"}`).Token // the same person, another session
	b := s.devLogin(t, `{"tenant_id": "ten_sse_l", "email": "b@example.com"}`).Token
	first := s.openStream(t, a, "", "")
	s.openStream(t, a2, "", "")
	resp := s.do(t, "GET", "/v1/stream", a, nil).want(t, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") == "" || resp.detail(t) != "too many open event streams; close one first" {
		t.Errorf("third stream: %s %s", resp.Header.Get("Retry-After"), resp.Body)
	}
	s.openStream(t, b, "", "") // another person has slots of their own
	first.close()
	// The server frees the slot when it sees the client gone.
	for i := 0; ; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", s.srv.URL+s.h.BasePath()+"/v1/stream", nil)
		req.Header.Set("Authorization", "Bearer "+a)
		res, err := s.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		status := res.StatusCode
		cancel()
		res.Body.Close()
		if status == http.StatusOK {
			break
		}
		if status != http.StatusTooManyRequests || i == 10000 {
			t.Fatalf("after a close: %d", status)
		}
	}
}
