package main

// The crash test: the server is built, run as a child process on a data
// directory, loaded with concurrent run starts and killed with SIGKILL in
// the middle; restarted on the same directory, every start it had
// acknowledged must exist and complete exactly once, and every other
// acknowledged write (sessions, processes) must be there.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// buildFlags are the flags of go build (race_test.go adds -race).
var buildFlags = []string{"build"}

// built is the server executable, built once per test binary.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildServer builds this command into a temporary directory (once) and
// returns the executable's path.
func buildServer(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "bas-server-*")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "server")
		if out, err := exec.Command("go", append(buildFlags, "-o", built.path, ".")...).CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// TestMain removes the built server after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// serverProc is a running server child process.
type serverProc struct {
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:port/api
	metrics string // http://127.0.0.1:port/metrics
	logs    string // file of its stderr
}

var (
	servingLine = regexp.MustCompile(`bas is serving (http://[^ ]+)/v1 `)
	metricsLine = regexp.MustCompile(`metrics at (http://\S+)`)
)

// startServer runs the server on dir with development login, on a free
// loopback port, and waits until it serves; extra are more flags.
func startServer(t *testing.T, bin, dir, name string, extra ...string) *serverProc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, append([]string{"-dev", "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-data", dir}, extra...)...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProc{cmd: cmd, logs: logPath}
	t.Cleanup(func() { p.kill() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				base := m[1]
				for sc.Scan() { // the metrics line follows
					if m := metricsLine.FindStringSubmatch(sc.Text()); m != nil {
						p.metrics = m[1]
						break
					}
				}
				found <- base
				break
			}
		}
		close(found)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case base, ok := <-found:
		if !ok {
			t.Fatalf("server %s exited before serving:\n%s", name, p.tail())
		}
		p.base = base
	case <-time.After(60 * time.Second):
		t.Fatalf("server %s did not start within a minute:\n%s", name, p.tail())
	}
	return p
}

// kill sends SIGKILL and reaps the process.
func (p *serverProc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill() // SIGKILL on Unix
	_ = p.cmd.Wait()
}

// raced reports whether the server's race detector found a data race.
func (p *serverProc) raced() bool {
	b, _ := os.ReadFile(p.logs)
	return bytes.Contains(b, []byte("WARNING: DATA RACE"))
}

// tail returns the end of the server's log.
func (p *serverProc) tail() string {
	b, _ := os.ReadFile(p.logs)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// client talks to a server with a session token.
type client struct {
	http  *http.Client
	base  string
	token string
}

func newClient(base, token string) *client {
	tr := &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	return &client{http: &http.Client{Transport: tr, Timeout: 30 * time.Second}, base: base, token: token}
}

// call sends a request and returns the status, the body and the headers;
// err is a transport error (the server died).
func (c *client) call(method, path string, body any) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, raw, resp.Header, nil
}

// must sends a request that must answer want and decodes the body into v.
func (c *client) must(t *testing.T, method, path string, body any, want int, v any) http.Header {
	t.Helper()
	status, raw, h, err := c.call(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, raw)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	return h
}

// all reads every page of a list.
func all[T any](t *testing.T, c *client, path string) []T {
	t.Helper()
	var out []T
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	cursor := ""
	for {
		p := path + sep + "limit=200"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var page []T
		h := c.must(t, "GET", p, nil, http.StatusOK, &page)
		out = append(out, page...)
		if cursor = h.Get("X-Next-Cursor"); cursor == "" {
			return out
		}
	}
}

type record struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type message struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
}

// chaseProcess routes the item, then sends one reminder through email.send
// (the built-in outbox) and completes after waiting a moment for a reply.
// No step asks a person, whatever the autonomy settings.
const chaseProcess = `{
  "name": "Chase delivery note",
  "function": "operations",
  "trigger": {"type": "manual"},
  "steps": [
    {"key": "route", "type": "route",
     "config": {"rules": [{"when": {"subject.type": "delivery"}, "queue": "receiving"}], "default": {"queue": "ap"}}},
    {"key": "chase", "type": "follow_up",
     "config": {"to": "supplier@example.com", "subject": "Delivery note for ${subject.label}",
                "body": "Please send the delivery note of ${subject.label}.", "every": "5ms", "max_reminders": 1}}
  ]
}`

// TestCrashAcknowledgedRunsCompleteOnce kills the server with SIGKILL
// during a load of run starts and checks on restart that every
// acknowledged start exists and completes exactly once, and that other
// acknowledged writes survived.
func TestCrashAcknowledgedRunsCompleteOnce(t *testing.T) {
	bin := buildServer(t)
	dir := filepath.Join(t.TempDir(), "data")

	srv := startServer(t, bin, dir, "first")
	anon := newClient(srv.base, "")
	var sess struct {
		Token    string `json:"token"`
		TenantID string `json:"tenant_id"`
	}
	anon.must(t, "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": "ten_crash"}, http.StatusCreated, &sess)
	c := newClient(srv.base, sess.Token)
	var proc record
	c.must(t, "POST", "/v1/processes", json.RawMessage(chaseProcess), http.StatusCreated, &proc)

	// The load: starters start runs and a writer creates processes, each
	// recording what was acknowledged, until the server is killed.
	const starters = 8
	var (
		mu        sync.Mutex
		ackedRuns []string
		ackedDefs []string
		acks      atomic.Int64
		enough    = make(chan struct{}) // closed at the 300th acknowledgement
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for g := range starters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				body := map[string]any{"subject": map[string]any{"type": "delivery", "label": fmt.Sprintf("PO-%d-%d", g, i)}}
				status, raw, _, err := c.call("POST", "/v1/processes/"+proc.ID+"/start", body)
				if err != nil {
					return // the server is gone
				}
				if status != http.StatusCreated {
					t.Errorf("start: status %d: %s", status, raw)
					return
				}
				var r record
				if err := json.Unmarshal(raw, &r); err != nil || r.ID == "" {
					t.Errorf("start answered %s", raw)
					return
				}
				mu.Lock()
				ackedRuns = append(ackedRuns, r.ID)
				mu.Unlock()
				if acks.Add(1) == 300 {
					close(enough)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			body := map[string]any{"name": fmt.Sprintf("Made under load %d", i), "trigger": map[string]any{"type": "manual"},
				"steps": []any{map[string]any{"key": "look", "type": "human_task", "config": map[string]any{"title": "Look"}}}}
			status, raw, _, err := c.call("POST", "/v1/processes", body)
			if err != nil {
				return
			}
			if status != http.StatusCreated {
				t.Errorf("create process: status %d: %s", status, raw)
				return
			}
			var d record
			_ = json.Unmarshal(raw, &d)
			mu.Lock()
			ackedDefs = append(ackedDefs, d.ID)
			mu.Unlock()
		}
	}()
	// Kill once a good number of starts were acknowledged (runs are then
	// in every state: starting, calling, waiting on their timer, done).
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
	}
	srv.kill()
	stop.Store(true)
	wg.Wait()
	if srv.raced() {
		t.Errorf("the server had a data race:\n%s", srv.tail())
	}
	if t.Failed() {
		t.Fatalf("load failed; server log:\n%s", srv.tail())
	}
	mu.Lock()
	runs, defs := append([]string(nil), ackedRuns...), append([]string(nil), ackedDefs...)
	mu.Unlock()
	if len(runs) == 0 {
		t.Fatalf("no start was acknowledged before the kill; server log:\n%s", srv.tail())
	}
	t.Logf("killed after %d acknowledged starts and %d acknowledged processes", len(runs), len(defs))

	// Restart on the same directory; the session token is an acknowledged
	// write too.
	srv = startServer(t, bin, dir, "second")
	c = newClient(srv.base, sess.Token)
	for _, id := range append([]string{proc.ID}, defs...) {
		c.must(t, "GET", "/v1/processes/"+id, nil, http.StatusOK, nil)
	}
	// Every acknowledged run exists and completes.
	for _, id := range runs {
		waitCompleted(t, c, srv, id)
	}
	// So do the runs whose start was written but not acknowledged.
	if !waitAllFinished(t, c) {
		t.Fatalf("runs never finished; server log:\n%s", srv.tail())
	}
	stored := all[record](t, c, "/v1/process-runs")
	completed := map[string]bool{}
	for _, r := range stored {
		if r.Status != "completed" {
			t.Errorf("run %s is %s", r.ID, r.Status)
		}
		completed[r.ID] = true
	}
	for _, id := range runs {
		if !completed[id] {
			t.Errorf("acknowledged run %s is missing after the restart", id)
		}
	}
	// Exactly once: each run sent one message under one idempotency key,
	// and the completion counter counted each run once.
	byRun := map[string][]string{}
	for _, m := range all[message](t, c, "/v1/outbox") {
		runID, _, ok := strings.Cut(m.IdempotencyKey, "/")
		if !ok || !strings.HasPrefix(runID, "run_") {
			continue
		}
		byRun[runID] = append(byRun[runID], m.IdempotencyKey)
	}
	var twice []string
	for id, keys := range byRun {
		if len(keys) != 1 {
			twice = append(twice, fmt.Sprintf("%s: %v", id, keys))
		}
		if !completed[id] {
			t.Errorf("a message was sent for run %s, which is not stored", id)
		}
	}
	sort.Strings(twice)
	if diff := cmp.Diff([]string(nil), twice); diff != "" {
		t.Errorf("runs that sent more than once (-want +got):\n%s", diff)
	}
	for id := range completed {
		if len(byRun[id]) == 0 {
			t.Errorf("completed run %s sent nothing", id)
		}
	}
	var cockpit struct {
		Completed30d int `json:"completed_30d"`
		Running      int `json:"running"`
	}
	c.must(t, "GET", "/v1/cockpit", nil, http.StatusOK, &cockpit)
	if cockpit.Completed30d != len(completed) || cockpit.Running != 0 {
		t.Errorf("cockpit counts %d completed and %d running; the store holds %d completed runs",
			cockpit.Completed30d, cockpit.Running, len(completed))
	}
	t.Logf("%d runs stored after the restart, %d acknowledged; all completed once", len(completed), len(runs))
	srv.kill()
	if srv.raced() {
		t.Errorf("the restarted server had a data race:\n%s", srv.tail())
	}
}

// waitCompleted waits for a run to complete with the server's long poll
// (GET ?wait=), up to a minute in all.
func waitCompleted(t *testing.T, c *client, srv *serverProc, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var r record
		status, raw, _, err := c.call("GET", "/v1/process-runs/"+id+"?wait=20", nil)
		if err != nil {
			t.Fatalf("GET run %s: %v", id, err)
		}
		if status != http.StatusOK {
			t.Fatalf("acknowledged run %s: status %d after the restart: %s", id, status, raw)
		}
		_ = json.Unmarshal(raw, &r)
		switch r.Status {
		case "completed":
			return
		case "failed", "rejected", "cancelled":
			t.Fatalf("run %s ended %s: %s", id, r.Status, raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is still %s; server log:\n%s", id, r.Status, srv.tail())
		}
	}
}

// waitAllFinished waits, with the long poll, until no run of c's tenant is
// running or waiting, up to a minute in all; it returns whether none is.
func waitAllFinished(t *testing.T, c *client) bool {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		open := append(all[record](t, c, "/v1/process-runs?status=running"), all[record](t, c, "/v1/process-runs?status=waiting")...)
		if len(open) == 0 {
			return true
		}
		for _, r := range open {
			if _, _, _, err := c.call("GET", "/v1/process-runs/"+r.ID+"?wait=10", nil); err != nil {
				t.Fatalf("GET run %s: %v", r.ID, err)
			}
		}
	}
	return false
}
