package main_test

// End-to-end tests of provider plugins in a workspace: the example vendor
// plugin (examples/provider, "acme-erp") and the host's fault plugin
// (plugins/internal/testplugin) are built once into a temporary directory,
// loaded by bas.Open, and called by process runs that are created, started
// and approved over the HTTP API.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/plugins/plugintest"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/plugins"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// e2eBins are the plugin binaries the tests load, built once per test binary.
var e2eBins = &plugintest.Set{Packages: map[string]string{
	"acme-erp":   "github.com/bas-platform/bas/examples/provider",
	"testplugin": "github.com/bas-platform/bas/plugins/internal/testplugin",
	"chaos":      "github.com/bas-platform/bas/plugins/internal/chaosplugin",
}}

func TestMain(m *testing.M) {
	code := m.Run()
	e2eBins.Remove()
	os.Exit(code)
}

// pluginBinaries builds the example provider and the fault plugin (in
// parallel, once) and returns their paths.
func pluginBinaries(tb testing.TB) (acme, fault string) {
	tb.Helper()
	return e2eBins.Path(tb, "acme-erp"), e2eBins.Path(tb, "testplugin")
}

// acmeDir returns a plugin directory holding the example provider and its
// sample purchase orders next to it (where the plugin looks for them).
func acmeDir(tb testing.TB) string {
	tb.Helper()
	acme, _ := pluginBinaries(tb)
	dir := tb.TempDir()
	plugintest.Link(tb, acme, dir, "acme-erp")
	csv, err := os.ReadFile("purchase_orders.csv")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "purchase_orders.csv"), csv, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func fileSHA256(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// e2eStart is the time the fake clock of every test workspace starts at.
var e2eStart = time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)

// e2eServer is a workspace in memory with a fake clock, served over real
// HTTP, and the demo admin's session.
type e2eServer struct {
	ws     *bas.Workspace
	h      *httpapi.Handler
	srv    *httptest.Server
	clock  *bas.FakeClock
	logs   *e2eLogs
	token  string
	tenant string
}

// newE2E opens a workspace with opts (InMemory, Clock and Logger are set
// here) and serves it; everything stops when t ends.
func newE2E(t *testing.T, opts bas.Options) *e2eServer {
	t.Helper()
	s := &e2eServer{clock: bas.NewFakeClock(e2eStart), logs: &e2eLogs{}}
	opts.InMemory, opts.Clock = true, s.clock
	opts.Logger = slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ws, err := bas.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	s.ws = ws
	s.h = httpapi.New(ws, httpapi.Options{DevLogin: true})
	s.srv = httptest.NewServer(s.h)
	t.Cleanup(s.srv.Close)
	var sess struct {
		Token    string `json:"token"`
		TenantID string `json:"tenant_id"`
	}
	s.do(t, "POST", "/v1/auth/dev-login", `{}`, http.StatusCreated, &sess)
	s.token, s.tenant = sess.Token, sess.TenantID
	return s
}

// do sends body (nil, a string, or a value sent as JSON) to path with the
// session's token, fails the test unless the answer has status want, and
// decodes it into out (when not nil). It returns the answer's header.
func (s *e2eServer) do(t *testing.T, method, path string, body any, want int, out any) http.Header {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.srv.URL+s.h.BasePath()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	return resp.Header
}

// createProcess creates a process from a ProcessIn body and returns its id.
func (s *e2eServer) createProcess(t *testing.T, body string) string {
	t.Helper()
	var p struct {
		ID string `json:"id"`
	}
	s.do(t, "POST", "/v1/processes", body, http.StatusCreated, &p)
	return p.ID
}

// executeProcess is a manual process of one execute step calling capID
// with args (JSON).
func (s *e2eServer) executeProcess(t *testing.T, key, capID, args string) string {
	t.Helper()
	return s.createProcess(t, fmt.Sprintf(`{"name": "Call %s", "trigger": {"type": "manual"},
	  "steps": [{"key": %q, "type": "execute", "capability": %q, "config": {"args": %s}}]}`, capID, key, capID, args))
}

// e2eRun is a run as GET /v1/process-runs/{id} shows it.
type e2eRun struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Trigger struct {
		Type  string  `json:"type"`
		Event *string `json:"event"`
	} `json:"trigger"`
	Steps []struct {
		Key        string  `json:"key"`
		Status     string  `json:"status"`
		Output     any     `json:"output"`
		Error      *string `json:"error"`
		ApprovalID *string `json:"approval_id"`
		TaskID     *string `json:"task_id"`
	} `json:"steps"`
	Error *string `json:"error"`
}

// startRun starts the process by hand about subject label and returns the
// run's id.
func (s *e2eServer) startRun(t *testing.T, processID, label string) string {
	t.Helper()
	var r e2eRun
	s.do(t, "POST", "/v1/processes/"+processID+"/start",
		fmt.Sprintf(`{"subject": {"type": "purchase_order", "label": %q}}`, label), http.StatusCreated, &r)
	return r.ID
}

func (s *e2eServer) getRun(t *testing.T, id string) e2eRun {
	t.Helper()
	var r e2eRun
	s.do(t, "GET", "/v1/process-runs/"+id, nil, http.StatusOK, &r)
	return r
}

// engineRun reads the run from the engine (it shows each step's attempts).
func (s *e2eServer) engineRun(t *testing.T, id string) *runengine.Run {
	t.Helper()
	r, err := s.ws.Engine().GetRun(context.Background(), s.tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// awaitRun waits until cond holds for the run as the API shows it (the
// engine works after it answers) and returns it: the workspace tells it of
// each committed change of the run. The limit is generous, not a timing
// assertion.
func (s *e2eServer) awaitRun(t *testing.T, id, what string, cond func(e2eRun) bool) e2eRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var r e2eRun
	if _, err := s.ws.WaitRunUntil(ctx, s.tenant, id, func(*bas.Run) bool {
		r = s.getRun(t, id)
		return cond(r)
	}); err != nil {
		t.Fatalf("run %s never %s (%v): %+v", id, what, err, r)
	}
	return r
}

// approveRun waits until the run's first step waits on its approval and
// approves it over HTTP (the default autonomy is supervised: an execute
// step asks a person first).
func (s *e2eServer) approveRun(t *testing.T, id string) {
	t.Helper()
	r := s.awaitRun(t, id, "waits on its approval", func(r e2eRun) bool {
		return r.Steps[0].Status == "waiting_approval" && r.Steps[0].ApprovalID != nil
	})
	s.do(t, "POST", "/v1/approvals/"+*r.Steps[0].ApprovalID+"/approve", `{}`, http.StatusOK, nil)
}

// advanceUntil moves the fake clock by step at a time until cond holds: the
// engine's retry backoff and the plugin host's restart backoff both wait on
// the workspace's clock.
func (s *e2eServer) advanceUntil(t *testing.T, what string, step time.Duration, cond func() bool) {
	t.Helper()
	e2eEventually(t, what, func() bool {
		if cond() {
			return true
		}
		s.clock.Advance(step)
		return false
	})
}

// e2eConnection is a ConnectionOut.
type e2eConnection struct {
	Provider string  `json:"provider"`
	Name     string  `json:"name"`
	Kind     string  `json:"kind"`
	Status   string  `json:"status"`
	Detail   *string `json:"detail"`
}

// pluginConnections returns the plugin rows of GET /v1/connections.
func (s *e2eServer) pluginConnections(t *testing.T) []e2eConnection {
	t.Helper()
	var out []e2eConnection
	path := "/v1/connections?limit=200"
	for range 100 {
		var page []e2eConnection
		next := s.do(t, "GET", path, nil, http.StatusOK, &page).Get("X-Next-Cursor")
		for _, c := range page {
			if c.Kind == "plugin" {
				out = append(out, c)
			}
		}
		if next == "" {
			return out
		}
		path = "/v1/connections?limit=200&cursor=" + url.QueryEscape(next)
	}
	t.Fatal("GET /v1/connections: more than 100 pages")
	return nil
}

func e2eEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// e2eLogs collects a workspace's log output.
type e2eLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *e2eLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *e2eLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// mustContain fails the test unless s contains every part.
func mustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(s, part) {
			t.Errorf("%s = %q, want it to contain %q", what, s, part)
		}
	}
}

func strp(s string) *string { return &s }

// po1001 is the sample order PO-1001 as erp.purchase_order.get returns it
// (decoded from JSON).
var po1001 = map[string]any{
	"number": "PO-1001", "supplier": "Northwind Traders", "currency": "EUR", "status": "open",
	"total_cents": float64(4*12900 + 2*45000 + 4*2450),
	"lines": []any{
		map[string]any{"sku": "NW-CHAIR-01", "description": "Ergonomic office chair", "quantity": float64(4), "unit_cents": float64(12900)},
		map[string]any{"sku": "NW-DESK-02", "description": "Standing desk", "quantity": float64(2), "unit_cents": float64(45000)},
		map[string]any{"sku": "NW-LAMP-07", "description": "Desk lamp", "quantity": float64(4), "unit_cents": float64(2450)},
	},
}

// lookupProcess is a manual process whose execute step looks up the
// purchase order named by the run's subject.
const lookupProcess = `{"name": "Check purchase order", "trigger": {"type": "manual"},
  "steps": [{"key": "lookup", "type": "execute", "capability": "erp.purchase_order.get",
    "config": {"args": {"number": "${subject.label}"}}}]}`

func TestExampleProviderInAProcess(t *testing.T) {
	t.Parallel()
	s := newE2E(t, bas.Options{PluginDir: acmeDir(t)})
	lookup := s.createProcess(t, lookupProcess)
	// A second process starts on the event the plugin emits with every
	// lookup; its task shows the event's data.
	followUp := s.createProcess(t, `{"name": "Follow up purchase order",
	  "trigger": {"type": "event", "event": "erp.purchase_order.looked_up"},
	  "steps": [{"key": "review", "type": "human_task",
	    "config": {"title": "Review ${trigger.data.number} from ${trigger.data.supplier} (${trigger.data.total_cents} cents)"}}]}`)

	id := s.startRun(t, lookup, "PO-1001")
	r := s.awaitRun(t, id, "waits on its approval", func(r e2eRun) bool { return r.Steps[0].ApprovalID != nil })
	var apr struct {
		Tool string         `json:"tool"`
		Args map[string]any `json:"args"`
	}
	s.do(t, "GET", "/v1/approvals/"+*r.Steps[0].ApprovalID, nil, http.StatusOK, &apr)
	if diff := cmp.Diff(map[string]any{"number": "PO-1001"}, apr.Args); apr.Tool != "erp.purchase_order.get" || diff != "" {
		t.Errorf("approval asks for %s with args (-want +got):\n%s", apr.Tool, diff)
	}
	s.approveRun(t, id)
	r = s.awaitRun(t, id, "finishes", func(r e2eRun) bool { return r.Status != "running" && r.Status != "waiting" })
	if r.Status != "completed" {
		t.Fatalf("run %s: %+v, want completed", r.Status, r)
	}
	if diff := cmp.Diff(po1001, r.Steps[0].Output); diff != "" {
		t.Errorf("step output (-want +got):\n%s", diff)
	}

	// The plugin's event reached the bus and started the follow-up.
	var runs []e2eRun
	e2eEventually(t, "the follow-up process starts", func() bool {
		s.do(t, "GET", "/v1/process-runs?process_id="+followUp, nil, http.StatusOK, &runs)
		return len(runs) == 1 && runs[0].Steps[0].TaskID != nil
	})
	if ev := runs[0].Trigger.Event; runs[0].Trigger.Type != "event" || ev == nil || *ev != "erp.purchase_order.looked_up" {
		t.Errorf("follow-up trigger = %+v", runs[0].Trigger)
	}
	var task struct {
		Title string `json:"title"`
	}
	s.do(t, "GET", "/v1/tasks/"+*runs[0].Steps[0].TaskID, nil, http.StatusOK, &task)
	if want := "Review PO-1001 from Northwind Traders (151400 cents)"; task.Title != want {
		t.Errorf("follow-up task title = %q, want %q", task.Title, want)
	}

	// An unknown order is the plugin's NotFound: the step fails at once.
	id = s.startRun(t, lookup, "PO-9999")
	s.approveRun(t, id)
	r = s.awaitRun(t, id, "fails", func(r e2eRun) bool { return r.Status == "failed" })
	mustContain(t, "step error", *r.Steps[0].Error, "purchase order PO-9999 not found")
	if n := s.engineRun(t, id).Steps[0].Attempts; n != 1 {
		t.Errorf("attempts for a NotFound = %d, want 1", n)
	}

	// The workspace lists the plugin's app and its connection.
	var apps []struct {
		ID     string `json:"id"`
		Events struct {
			Emits []string `json:"emits"`
		} `json:"events"`
	}
	s.do(t, "GET", "/v1/apps", nil, http.StatusOK, &apps)
	found := false
	for _, a := range apps {
		if a.ID == "acme-erp" {
			found = true
			if diff := cmp.Diff([]string{"erp.purchase_order.looked_up"}, a.Events.Emits); diff != "" {
				t.Errorf("acme-erp emits (-want +got):\n%s", diff)
			}
		}
	}
	if !found {
		t.Errorf("GET /v1/apps does not list acme-erp: %+v", apps)
	}
	want := []e2eConnection{{Provider: "plugin.acme-erp", Name: "ACME ERP", Kind: "plugin", Status: "connected"}}
	if diff := cmp.Diff(want, s.pluginConnections(t)); diff != "" {
		t.Errorf("plugin connections (-want +got):\n%s", diff)
	}
}

func TestPluginLoadFailuresLeaveTheWorkspaceRunning(t *testing.T) {
	t.Parallel()
	_, fault := pluginBinaries(t)
	dir := acmeDir(t)
	plugintest.Link(t, fault, dir, "tampered")
	// (A path in Options.Plugins that names no file fails Open itself:
	// TestOptionsValidate.)
	s := newE2E(t, bas.Options{
		PluginDir: dir,
		PluginChecksums: map[string]string{
			"acme-erp": fileSHA256(t, filepath.Join(dir, "acme-erp")), // checked, and matches
			"tampered": strings.Repeat("ab", 32),                      // a well-formed sum of another binary
		},
	})

	logs := s.logs.String()
	mustContain(t, "logs", logs, `msg="plugin not loaded"`,
		"plugin "+filepath.Join(dir, "tampered")+": bad checksum: the binary's sha256 does not match the configured checksum")

	want := []e2eConnection{
		{Provider: "plugin.acme-erp", Name: "ACME ERP", Kind: "plugin", Status: "connected"},
		{Provider: "plugin.tampered", Name: "tampered", Kind: "plugin", Status: "failed",
			Detail: strp("bad checksum: the binary's sha256 does not match the configured checksum")},
	}
	if diff := cmp.Diff(want, s.pluginConnections(t)); diff != "" {
		t.Errorf("plugin connections (-want +got):\n%s", diff)
	}

	// The rest of the workspace runs: the healthy plugin serves a process.
	id := s.startRun(t, s.createProcess(t, lookupProcess), "PO-1001")
	s.approveRun(t, id)
	r := s.awaitRun(t, id, "completes", func(r e2eRun) bool { return r.Status == "completed" })
	if diff := cmp.Diff(po1001, r.Steps[0].Output); diff != "" {
		t.Errorf("step output (-want +got):\n%s", diff)
	}
}

// TestUnregisteredPluginIsStopped loads a plugin that the registry refuses
// (it lists a capability it does not describe): its process is stopped at
// once, and /v1/connections says why.
func TestUnregisteredPluginIsStopped(t *testing.T) {
	t.Parallel()
	_, fault := pluginBinaries(t)
	path := plugintest.Link(t, fault, t.TempDir(), "undescribed")
	s := newE2E(t, bas.Options{Plugins: []string{path}, PluginEnv: []string{"BAS_TESTPLUGIN_UNDESCRIBED=test.secret"}})
	logs := s.logs.String()
	mustContain(t, "logs", logs, `msg="plugin not registered"`)
	m := regexp.MustCompile(`msg="plugin loaded" .*plugin=plugin.undescribed .*pid=(\d+)`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("no pid of the loaded plugin in the logs:\n%s", logs)
	}
	pid, _ := strconv.Atoi(m[1])
	testwait.Until(t, fmt.Sprintf("the unregistered plugin's process %d exits", pid), func() bool { return !plugintest.Alive(pid) })
	detail := "capability: provider plugin.undescribed lists \"test.secret\", which is neither in the catalog nor described by the provider"
	want := []e2eConnection{{Provider: "plugin.undescribed", Name: "Test plugin", Kind: "plugin", Status: "failed", Detail: &detail}}
	if diff := cmp.Diff(want, s.pluginConnections(t)); diff != "" {
		t.Errorf("plugin connections (-want +got):\n%s", diff)
	}
}

func TestPluginCrashMidCallRetriesAfterTheRestart(t *testing.T) {
	t.Parallel()
	_, fault := pluginBinaries(t)
	dir := t.TempDir()
	plugintest.Link(t, fault, dir, "test")
	s := newE2E(t, bas.Options{PluginDir: dir})
	// test.crash exits the plugin in the middle of the first call naming a
	// new marker file and answers every later one.
	marker := filepath.Join(t.TempDir(), "crashed")
	id := s.startRun(t, s.executeProcess(t, "call", "test.crash", fmt.Sprintf(`{"marker": %q}`, marker)), "PO-1001")
	s.approveRun(t, id)

	// The call fails with the crash; the engine schedules a retry on the
	// workspace's clock, and the plugin host waits there to restart.
	r := s.awaitRun(t, id, "waits on a retry", func(r e2eRun) bool { return r.Steps[0].Error != nil })
	if r.Status != "waiting" || r.Steps[0].Status != "running" {
		t.Errorf("after the crash: run %s, step %s; want waiting, running", r.Status, r.Steps[0].Status)
	}
	mustContain(t, "step error", *r.Steps[0].Error,
		"step call: provider plugin.test: test.crash: plugin plugin.test exited or lost its connection during call test.crash; it is restarting")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the plugin did not crash: %v", err)
	}

	s.advanceUntil(t, "the run completes after the restart", 250*time.Millisecond, func() bool {
		return s.getRun(t, id).Status == "completed"
	})
	got := s.engineRun(t, id).Steps[0]
	if got.Attempts != 1 {
		t.Errorf("step attempts = %d, want 1 (the crashed one; the retry succeeded)", got.Attempts)
	}
	out, _ := got.Output.(map[string]any)
	if out["survived"] != true {
		t.Errorf("step output = %v, want the restarted plugin's answer", got.Output)
	}
	want := []e2eConnection{{Provider: "plugin.test", Name: "Test plugin", Kind: "plugin", Status: "connected"}}
	if diff := cmp.Diff(want, s.pluginConnections(t)); diff != "" {
		t.Errorf("plugin connections after the restart (-want +got):\n%s", diff)
	}
}

func TestPluginMalformedOutputFailsTheStep(t *testing.T) {
	t.Parallel()
	_, fault := pluginBinaries(t)
	dir := t.TempDir()
	plugintest.Link(t, fault, dir, "test")
	s := newE2E(t, bas.Options{PluginDir: dir})

	// Output that is not JSON is the provider's fault: retrying cannot
	// help, so the step fails at its first attempt.
	id := s.startRun(t, s.executeProcess(t, "call", "test.malformed", `{}`), "PO-1001")
	s.approveRun(t, id)
	r := s.awaitRun(t, id, "fails", func(r e2eRun) bool { return r.Status != "running" && r.Status != "waiting" })
	if r.Status != "failed" || r.Steps[0].Status != "failed" {
		t.Fatalf("run %s, step %s; want both failed: %+v", r.Status, r.Steps[0].Status, r)
	}
	mustContain(t, "step error", *r.Steps[0].Error, "step call: provider plugin.test: test.malformed: ",
		"plugin plugin.test returned malformed output for test.malformed: unexpected end of JSON input")
	if n := s.engineRun(t, id).Steps[0].Attempts; n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}

	// The plugin is unharmed.
	id = s.startRun(t, s.executeProcess(t, "call", "test.echo", `{"po": "${subject.label}"}`), "PO-1002")
	s.approveRun(t, id)
	r = s.awaitRun(t, id, "completes", func(r e2eRun) bool { return r.Status == "completed" })
	if diff := cmp.Diff(map[string]any{"po": "PO-1002"}, r.Steps[0].Output); diff != "" {
		t.Errorf("echo output (-want +got):\n%s", diff)
	}
}

func TestPluginHangTimesOut(t *testing.T) {
	t.Parallel()
	_, fault := pluginBinaries(t)
	// bas.Options has no call timeout (the plugin host, the registry and
	// the engine each default to 30s), so this workspace gets its plugin
	// from a host of its own with a short one, as an in-process provider.
	const timeout = 250 * time.Millisecond
	clk := bas.NewFakeClock(e2eStart)
	host := plugins.NewHost(plugins.HostOptions{CallTimeout: timeout, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = host.Close() }) // after the workspace's Close
	p, err := host.Load(context.Background(), plugintest.Link(t, fault, t.TempDir(), "test"))
	if err != nil {
		t.Fatal(err)
	}
	s := newE2E(t, bas.Options{Providers: []bas.Provider{p}})

	hang := s.startRun(t, s.executeProcess(t, "call", "test.hang", `{}`), "PO-1001")
	s.approveRun(t, hang)

	// While the call hangs and times out, the workspace serves other runs.
	// (An echo may miss the 250ms deadline on a loaded machine: its retry
	// waits on the fake clock, which moves until it completes.)
	echo := s.executeProcess(t, "call", "test.echo", `{"po": "${subject.label}"}`)
	id := s.startRun(t, echo, "PO-1002")
	s.approveRun(t, id)
	s.advanceUntil(t, "the echo run completes", time.Second, func() bool { return s.getRun(t, id).Status == "completed" })

	// Timing out is the plugin being unavailable: the engine retries with
	// backoff (on the fake clock), then gives up with the reason.
	r := s.awaitRun(t, hang, "times out once", func(r e2eRun) bool { return r.Steps[0].Error != nil })
	mustContain(t, "step error after the first timeout", *r.Steps[0].Error,
		"step call: provider plugin.test: test.hang: plugin plugin.test: call test.hang timed out after 250ms")
	s.advanceUntil(t, "the run gives up", time.Second, func() bool { return s.getRun(t, hang).Status == "failed" })
	r = s.getRun(t, hang)
	want := "step call: provider plugin.test: test.hang: plugin plugin.test: call test.hang timed out after 250ms (gave up after 5 attempts)"
	if diff := cmp.Diff(strp(want), r.Steps[0].Error); diff != "" {
		t.Errorf("step error (-want +got):\n%s", diff)
	}

	// The host and the plugin are unharmed. (A health check, on the fake
	// clock with the calls' 250ms deadline, may miss it on a loaded machine
	// and restart the plugin: the clock moves until it is back.)
	id = s.startRun(t, echo, "PO-1003")
	s.approveRun(t, id)
	s.advanceUntil(t, "the echo run completes", time.Second, func() bool { return s.getRun(t, id).Status == "completed" })
	r = s.getRun(t, id)
	if diff := cmp.Diff(map[string]any{"po": "PO-1003"}, r.Steps[0].Output); diff != "" {
		t.Errorf("echo output (-want +got):\n%s", diff)
	}
	wantConn := []e2eConnection{{Provider: "plugin.test", Name: "Test plugin", Kind: "plugin", Status: "connected"}}
	s.advanceUntil(t, "the plugin is connected", time.Second, func() bool { return cmp.Equal(wantConn, s.pluginConnections(t)) })
}
