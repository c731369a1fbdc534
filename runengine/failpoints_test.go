//go:build failpoints

package runengine_test

// Failpoint tests (go test -tags failpoints ./runengine): the engine
// crashes, or its commit fails, at the points where a retry could act
// twice, and the test proves it does not. A crash is real: the test binary
// runs itself as a helper on a Badger directory, and the failpoint kills
// that process with SIGKILL; the test then runs the helper again on the
// same directory, as a restart.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

const (
	helperDirEnv   = "BAS_FAILPOINT_HELPER_DIR"
	helperPointEnv = "BAS_FAILPOINT"
	// helperOutboxEnv set makes the helper's step email.send on the
	// built-in outbox, whose message commits with the step's result.
	helperOutboxEnv = "BAS_FAILPOINT_OUTBOX"
	// helperGateEnv set makes the helper's gate the automation app's, at
	// 100% with a daily limit of one automatic action, on the same store:
	// its decision commits with the step's result.
	helperGateEnv = "BAS_FAILPOINT_GATE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirEnv); dir != "" {
		os.Exit(failpointHelper(dir, os.Getenv(helperPointEnv)))
	}
	os.Exit(m.Run())
}

// effects is a provider whose capability effect.do has a side effect (a
// line in a file) once per idempotency key: a call that repeats a key
// answers what the first answered. Every call is logged in calls.
type effects struct {
	dir string
	mu  sync.Mutex
}

func (p *effects) Info() capability.Info {
	return capability.Info{ID: "test.effects", Name: "Effects", Kind: capability.KindBuiltin, Capabilities: []string{"effect.do"}}
}

func (p *effects) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "effect.do", Name: "Effect", Description: "Acts once per idempotency key.", Args: obj, Result: obj}}
}

func (p *effects) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := appendLine(filepath.Join(p.dir, "calls"), c.IdempotencyKey); err != nil {
		return nil, err
	}
	done := readLines(filepath.Join(p.dir, "effects"))
	n := slices.Index(done, c.IdempotencyKey) + 1
	if n == 0 {
		if err := appendLine(filepath.Join(p.dir, "effects"), c.IdempotencyKey); err != nil {
			return nil, err
		}
		n = len(done) + 1
	}
	return json.Marshal(map[string]any{"effect": n})
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.CombineErrors(err, f.Close())
}

func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

// helperResult is what the helper prints.
type helperResult struct {
	RunID     string         `json:"run_id"`
	Status    string         `json:"status"`
	Output    map[string]any `json:"output"`
	Attempts  int            `json:"attempts"`
	Runs      int            `json:"runs"`
	Completed int            `json:"completed"`
	// Messages are the outbox's messages (with helperOutboxEnv).
	Messages []outboxMessage `json:"messages,omitempty"`
	// AutomaticToday is the gate's count of the day (with helperGateEnv).
	AutomaticToday int `json:"automatic_today,omitempty"`
}

// outboxMessage is what the helper reports of a message.
type outboxMessage struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

// outbox lists tenant's messages in st.
func outbox(st store.Store) ([]outboxMessage, error) {
	msgs, _, err := mail.List(context.Background(), st, tenant, store.Page{Limit: 100})
	out := make([]outboxMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, outboxMessage{ID: m.ID, Key: m.IdempotencyKey})
	}
	return out, err
}

// failpointHelper runs in a child process: it opens an engine on dir,
// starts the run of a one-step process calling effect.do (with the same
// Idempotency-Key at every start), waits until it ends and prints it.
// point names the failpoint at which the process kills itself.
func failpointHelper(dir, point string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	st, err := badgerstore.Open(badgerstore.Options{Dir: filepath.Join(dir, "db")})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	clk := clock.Real{}
	procs := process.NewService(process.Config{Store: st, Clock: clk})
	reg := registry.New(registry.Config{Store: st, Clock: clk})
	useOutbox := os.Getenv(helperOutboxEnv) != ""
	var prov capability.Provider = &effects{dir: dir}
	steps := `[{"key": "act", "type": "execute", "capability": "effect.do", "config": {"args": {"n": 1}}}]`
	if useOutbox {
		prov = mail.NewProvider(st, clk)
		steps = `[{"key": "act", "type": "execute", "capability": "email.send",
		  "config": {"args": {"to": "ann@example.com", "subject": "Hello", "body": "Hi"}}}]`
	}
	if err := reg.Register(prov); err != nil {
		return fail(err)
	}
	crash := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	var fp runengine.Failpoints
	var called atomic.Bool
	switch point {
	case "":
	case "after-call": // the provider acted; its result is not committed
		fp.AfterCall = func(_, _, _ string) { crash() }
	case "group-commit": // the commit carrying the call's result dies
		fp.AfterCall = func(_, _, _ string) { called.Store(true) }
		fp.InGroupCommit = func(int) error {
			if called.Load() {
				crash()
			}
			return nil
		}
	default:
		return fail(errors.Newf("no failpoint %q", point))
	}
	var gate runengine.Gate = &autoGate{auto: true}
	useGate := os.Getenv(helperGateEnv) != ""
	auto := automation.New(automation.Config{Store: st, Clock: clk})
	if useGate {
		gate = auto.Gate()
	}
	eng, err := runengine.New(runengine.Config{Store: st, Clock: clk, Capabilities: reg, Processes: procs,
		Gate: gate, Failpoints: fp})
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	if err := eng.Open(ctx); err != nil {
		return fail(err)
	}
	defer eng.Close()

	idFile := filepath.Join(dir, "process")
	saved, _ := os.ReadFile(idFile) // none at the first start
	processID := strings.TrimSpace(string(saved))
	if processID == "" {
		in, err := process.DecodeIn([]byte(`{"name": "Act once", "trigger": {"type": "manual"}, "steps": ` + steps + `}`))
		if err != nil {
			return fail(err)
		}
		def, err := procs.Create(ctx, tenant, "usr_test", in)
		if err != nil {
			return fail(err)
		}
		processID = def.ID
		if useGate {
			p, err := automation.ParsePatch([]byte(`{"percent": 100, "max_percent": 100, "sample_percent": 0, "daily_limit": 1}`))
			if err != nil {
				return fail(err)
			}
			if _, err := auto.UpdateWorkspace(ctx, tenant, "usr_test", p); err != nil {
				return fail(err)
			}
		}
		if err := os.WriteFile(idFile, []byte(processID), 0o600); err != nil {
			return fail(err)
		}
	}
	r, err := eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: processID, Actor: "usr_test",
		Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, IdempotencyKey: "start-1"})
	if err != nil {
		return fail(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err = eng.WaitRunUntil(wctx, tenant, r.ID, func(r *runengine.Run) bool {
		return r.Status == runengine.RunCompleted || r.Status == runengine.RunFailed
	})
	if err != nil {
		return fail(err)
	}
	runs, _, err := eng.ListRuns(ctx, tenant, runengine.RunQuery{}, store.Page{Limit: 100})
	if err != nil {
		return fail(err)
	}
	cp, err := eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil)
	if err != nil {
		return fail(err)
	}
	out, _ := r.Steps[0].Output.(map[string]any)
	res := helperResult{RunID: r.ID, Status: string(r.Status), Output: out, Attempts: r.Steps[0].Attempts,
		Runs: len(runs), Completed: cp.Completed30d}
	if useOutbox {
		if res.Messages, err = outbox(st); err != nil {
			return fail(err)
		}
	}
	if useGate {
		v, err := auto.Workspace(ctx, tenant)
		if err != nil {
			return fail(err)
		}
		res.AutomaticToday = v.AutomaticToday
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return fail(err)
	}
	return 0
}

// runHelper runs the helper on dir with the failpoint point; it returns
// what the helper printed and whether it was killed.
func runHelper(t *testing.T, dir, point string, env ...string) (res helperResult, killed bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperDirEnv+"="+dir, helperPointEnv+"="+point), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return res, true
		}
	}
	if err != nil {
		t.Fatalf("helper (failpoint %q): %v\n%s", point, err, stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("helper output %q: %v\n%s", stdout.Bytes(), err, stderr.Bytes())
	}
	return res, false
}

// TestFailpointCrashes kills the engine between a provider's side effect
// and the commit of the step's result, and inside the group commit that
// carries it. After the restart the run resumes and repeats the call with
// the same idempotency key; the provider acted once, the start (retried
// with its key) made one run, and that run completed exactly once.
func TestFailpointCrashes(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"after-call", "group-commit"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if _, killed := runHelper(t, dir, point); !killed {
				t.Fatalf("the helper was not killed at the failpoint %s", point)
			}
			calls := readLines(filepath.Join(dir, "calls"))
			if len(calls) != 1 {
				t.Fatalf("calls before the crash: %q, want one", calls)
			}

			res, killed := runHelper(t, dir, "") // the restart
			if killed {
				t.Fatal("the restarted helper was killed")
			}
			key := res.RunID + "/act/1"
			if diff := cmp.Diff([]string{key, key}, readLines(filepath.Join(dir, "calls"))); diff != "" {
				t.Errorf("calls (-want +got keys): the retry must repeat the first key\n%s", diff)
			}
			if diff := cmp.Diff([]string{key}, readLines(filepath.Join(dir, "effects"))); diff != "" {
				t.Errorf("side effects (-want +got keys):\n%s", diff)
			}
			want := helperResult{RunID: res.RunID, Status: "completed", Output: map[string]any{"effect": float64(1)}, Runs: 1, Completed: 1}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("after the restart (-want +got):\n%s", diff)
			}

			// Starting again with the key finds the same run, finished
			// once, and calls nothing.
			again, _ := runHelper(t, dir, "")
			if diff := cmp.Diff(want, again); diff != "" {
				t.Errorf("second restart (-want +got):\n%s", diff)
			}
			if n := len(readLines(filepath.Join(dir, "calls"))); n != 2 {
				t.Errorf("%d calls after the second restart, want still 2", n)
			}
		})
	}
}

// TestFailpointGroupCommitFails makes the group commit that carries a
// call's result fail (as a store error would) without a crash: the engine
// reloads the run from what is durable and repeats the call with the same
// key; the provider acts once and the run completes once.
func TestFailpointGroupCommitFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	var called, failed atomic.Int32 // an automatic step's gate decision and call are one
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		c.Failpoints.AfterCall = func(_, _, _ string) { called.Add(1) }
		c.Failpoints.InGroupCommit = func(int) error {
			if called.Load() == 1 && failed.CompareAndSwap(0, 1) {
				return errors.New("failpoint: the group commit fails")
			}
			return nil
		}
	})
	if err := b.reg.Register(&effects{dir: dir}); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"act","type":"execute","capability":"effect.do","config":{"args":{"n":1}}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if failed.Load() != 1 {
		t.Fatal("the failpoint never failed a commit")
	}
	key := id + "/act/1"
	if diff := cmp.Diff([]string{key, key}, readLines(filepath.Join(dir, "calls"))); diff != "" {
		t.Errorf("calls (-want +got keys):\n%s", diff)
	}
	if diff := cmp.Diff([]string{key}, readLines(filepath.Join(dir, "effects"))); diff != "" {
		t.Errorf("side effects (-want +got keys):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"effect": float64(1)}, r.Steps[0].Output); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	cp, err := b.eng.Cockpit(context.Background(), tenant, runengine.Viewer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Completed30d != 1 {
		t.Errorf("completed runs %d, want 1", cp.Completed30d)
	}
}

// TestFailpointOutboxCommitsWithTheStep kills the engine after the
// outbox's email.send answered a step and inside the group commit carrying
// the step's result. The message commits in that transaction, so the crash
// leaves no message; after the restart the run makes the call again with
// the same key, and the outbox holds exactly one message, the one the
// step's output names.
func TestFailpointOutboxCommitsWithTheStep(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"after-call", "group-commit"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if _, killed := runHelper(t, dir, point, helperOutboxEnv+"=1"); !killed {
				t.Fatalf("the helper was not killed at the failpoint %s", point)
			}
			st, err := badgerstore.Open(badgerstore.Options{Dir: filepath.Join(dir, "db")})
			if err != nil {
				t.Fatal(err)
			}
			before, err := outbox(st)
			if cerr := st.Close(); err != nil || cerr != nil {
				t.Fatal(err, cerr)
			}
			if len(before) != 0 {
				t.Errorf("messages after the crash %+v, want none: the message commits with the step", before)
			}

			res, killed := runHelper(t, dir, "", helperOutboxEnv+"=1")
			if killed {
				t.Fatal("the restarted helper was killed")
			}
			id, _ := res.Output["message_id"].(string)
			want := helperResult{RunID: res.RunID, Status: "completed", Output: map[string]any{"message_id": id, "status": "queued"},
				Runs: 1, Completed: 1, Messages: []outboxMessage{{ID: id, Key: res.RunID + "/act/1"}}}
			if diff := cmp.Diff(want, res); diff != "" || id == "" {
				t.Errorf("after the restart (-want +got):\n%s", diff)
			}
			again, _ := runHelper(t, dir, "", helperOutboxEnv+"=1")
			if diff := cmp.Diff(want, again); diff != "" {
				t.Errorf("second restart (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailpointGateDecisionCommitsWithTheStep kills the engine after the
// call the autonomy gate let run (the automation app's gate, the store's
// only writer, daily limit one) and inside the commit of its result.
// Before the outbox (a provider whose action commits with the step) the
// decision commits with the step too: after the crash the day's count is
// 0, the gate is asked again on resume and the day counts one automatic
// action. Before a provider that acts outside the store (a file here) the
// decision is durable before the call: the day counts one after the crash
// already, and still one after the resume, with one side effect.
func TestFailpointGateDecisionCommitsWithTheStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider string
		env      []string
		before   int
	}{
		{"outbox", []string{helperGateEnv + "=1", helperOutboxEnv + "=1"}, 0},
		{"effects", []string{helperGateEnv + "=1"}, 1},
	} {
		for _, point := range []string{"after-call", "group-commit"} {
			t.Run(tc.provider+"/"+point, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				if _, killed := runHelper(t, dir, point, tc.env...); !killed {
					t.Fatalf("the helper was not killed at the failpoint %s", point)
				}
				st, err := badgerstore.Open(badgerstore.Options{Dir: filepath.Join(dir, "db")})
				if err != nil {
					t.Fatal(err)
				}
				v, err := automation.New(automation.Config{Store: st, Clock: clock.Real{}}).Workspace(context.Background(), tenant)
				if cerr := st.Close(); err != nil || cerr != nil {
					t.Fatal(err, cerr)
				}
				if v.AutomaticToday != tc.before {
					t.Errorf("automatic today after the crash %d, want %d", v.AutomaticToday, tc.before)
				}

				for _, when := range []string{"after the restart", "after a second restart"} {
					res, killed := runHelper(t, dir, "", tc.env...)
					if killed {
						t.Fatal("the restarted helper was killed")
					}
					got := []any{res.Status, res.Runs, res.Completed, res.AutomaticToday, len(res.Messages)}
					want := []any{"completed", 1, 1, 1, 0}
					if tc.provider == "outbox" {
						want[4] = 1
					} else if diff := cmp.Diff([]string{res.RunID + "/act/1"}, readLines(filepath.Join(dir, "effects"))); diff != "" {
						t.Errorf("side effects %s (-want +got keys):\n%s", when, diff)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("status, runs, completed, automatic today, messages %s (-want +got):\n%s", when, diff)
					}
				}
			})
		}
	}
}

// newsEffects records callwrites' New of every call.
type newsEffects struct {
	*effects
	mu   sync.Mutex
	news []bool
}

func (p *newsEffects) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	p.mu.Lock()
	w := callwrites.From(ctx)
	p.news = append(p.news, w != nil && w.New)
	p.mu.Unlock()
	return p.effects.Call(ctx, c)
}

// TestFailpointNewOnlyBeforeTheFirstCommit: the gate's request and the
// call of a step reached by a run's first command say New (nothing can be
// stored under their keys: the run's first commit precedes every call of
// it); once that run is reloaded from the store (here after the commit of
// the call's result failed) the same step asks again without New, and the
// stored answers are read.
func TestFailpointNewOnlyBeforeTheFirstCommit(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	gate := &newsGate{autoGate: autoGate{auto: true}}
	var called, failed atomic.Int32
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		c.Gate = gate
		c.Failpoints.AfterCall = func(_, _, _ string) { called.Add(1) }
		c.Failpoints.InGroupCommit = func(int) error {
			if called.Load() == 1 && failed.CompareAndSwap(0, 1) {
				return errors.New("failpoint: the group commit fails")
			}
			return nil
		}
	})
	prov := &newsEffects{effects: &effects{dir: t.TempDir()}}
	if err := b.reg.Register(prov); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"act","type":"execute","capability":"effect.do","config":{"args":{"n":1}}}]`)
	b.waitRun(t, b.start(t, def.ID), "completed", status(runengine.RunCompleted))
	if failed.Load() != 1 {
		t.Fatal("the failpoint never failed a commit")
	}
	gate.mu.Lock()
	prov.mu.Lock()
	defer gate.mu.Unlock()
	defer prov.mu.Unlock()
	if diff := cmp.Diff([]bool{true, false}, gate.news); diff != "" {
		t.Errorf("gate requests' New (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{true, false}, prov.news); diff != "" {
		t.Errorf("calls' New (-want +got):\n%s", diff)
	}
}
