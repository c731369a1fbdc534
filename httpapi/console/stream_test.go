package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// readEvent reads one server-sent event's name and id, skipping the retry
// line and comments.
func readEvent(t *testing.T, rd *bufio.Reader) (name, id string) {
	t.Helper()
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && name != "":
			return name, id
		case strings.HasPrefix(line, "event: "):
			name = line[7:]
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		}
	}
}

func decode(t *testing.T, r resp, v any) {
	t.Helper()
	if r.status >= 300 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatal(err)
	}
}

// TestProxyStreamsEvents opens the API's event stream through the
// console's proxy with the cookie, as the page's EventSource does, and
// resumes it with Last-Event-ID, which the proxy passes on.
func TestProxyStreamsEvents(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	c := s.browser(t)
	if r := s.do(t, c, "POST", "/console/session/dev-login", "{}", consoleHdr...); r.status != 200 {
		t.Fatalf("dev-login = %d %s", r.status, r.body)
	}
	open := func(lastID string) (*bufio.Reader, func()) {
		// A safety net for a stream that never ends, not a wait: a minute
		// (10s was short for a loaded machine).
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "GET", s.srv.URL+"/console/proxy/v1/stream?names=task.*", nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream through the proxy = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
		return bufio.NewReader(res.Body), func() { cancel(); res.Body.Close() }
	}
	first, stop := open("")
	keep, stopKeep := open("") // keeps the tenant's events while the first is away
	defer stopKeep()
	body := `{"name":"Review","trigger":{"type":"manual"},"steps":[{"key":"a","type":"human_task","config":{"title":"A"}},{"key":"b","type":"human_task","config":{"title":"B"}}]}`
	var proc struct{ ID string }
	decode(t, s.do(t, c, "POST", "/console/proxy/v1/processes", body, consoleHdr...), &proc)
	s.do(t, c, "POST", "/console/proxy/v1/processes/"+proc.ID+"/start", `{"subject":{"type":"x","label":"y"}}`, consoleHdr...)
	name, id := readEvent(t, first)
	if name != "task.created" || id == "" {
		t.Fatalf("first event = %s %s", name, id)
	}
	stop()
	var tasks []struct{ ID string }
	decode(t, s.do(t, c, "GET", "/console/proxy/v1/tasks?status=open", ""), &tasks)
	s.do(t, c, "POST", "/console/proxy/v1/tasks/"+tasks[0].ID+"/complete", `{"action":"complete"}`, consoleHdr...)
	if name, _ := readEvent(t, keep); name != "task.created" {
		t.Fatalf("kept stream: %s", name)
	}
	again, stopAgain := open(id)
	defer stopAgain()
	var got []string
	for range 2 {
		name, _ := readEvent(t, again)
		got = append(got, name)
	}
	if strings.Join(got, " ") != "task.completed task.created" {
		t.Errorf("resumed through the proxy: %v", got)
	}
}
