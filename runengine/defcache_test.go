package runengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// loadingProcs is the process service counting the engine's Loads; when
// pause is set, a Load calls it once it has read (still in its read).
type loadingProcs struct {
	*process.Service
	loads atomic.Int64
	mu    sync.Mutex
	pause func()
}

func (p *loadingProcs) Load(r store.Reader, tenant, id string) (*process.Definition, error) {
	p.loads.Add(1)
	def, err := p.Service.Load(r, tenant, id)
	p.mu.Lock()
	pause := p.pause
	p.pause = nil
	p.mu.Unlock()
	if pause != nil {
		pause()
	}
	return def, err
}

func setupLoading(t *testing.T) (*bundle, *loadingProcs) {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	var lp *loadingProcs
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		lp = &loadingProcs{Service: c.Processes.(*process.Service)}
		c.Processes = lp
	})
	return b, lp
}

const echoStep = `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{"n":1}}}]`

// startOutcome says what a start of processID did: the version it started,
// or why it was refused.
func (b *bundle) startOutcome(t *testing.T, processID string) string {
	t.Helper()
	r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: processID, Actor: "usr_test"})
	switch {
	case errors.Is(err, errs.Conflict):
		return err.Error()
	case err != nil:
		t.Fatalf("start: %v", err)
	}
	return fmt.Sprintf("started v%d", r.ProcessVersion)
}

func patch(t *testing.T, raw string) process.ProcessPatch {
	t.Helper()
	p, err := process.DecodePatch([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartUsesTheDefinitionAfterEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	update := func(raw string) func(*testing.T, *bundle, string) {
		return func(t *testing.T, b *bundle, id string) {
			if _, _, err := b.procs.Update(ctx, tenant, "usr_test", id, patch(t, raw)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name     string
		disabled bool // the process is created disabled
		change   func(*testing.T, *bundle, string)
		want     string
	}{
		{name: "disable", change: update(`{"enabled":false}`), want: "process is disabled"},
		{name: "enable", disabled: true, change: update(`{"enabled":true}`), want: "started v1"},
		{name: "new version", change: update(`{"steps":[{"key":"two","type":"execute","capability":"test.echo"}]}`),
			want: "started v2"},
		{name: "new version by its trigger", change: update(`{"trigger":{"type":"event","event":"invoice.received"}}`),
			want: "started v2"},
		{name: "archive", change: func(t *testing.T, b *bundle, id string) {
			if err := b.procs.Archive(ctx, tenant, "usr_test", id); err != nil {
				t.Fatal(err)
			}
		}, want: "process is archived"},
		{name: "approved change", change: func(t *testing.T, b *bundle, id string) {
			payload, _ := json.Marshal(map[string]any{"process_id": id, "base_version": 1, "requested_by": "usr_a",
				"patch": json.RawMessage(`{"steps":[{"key":"two","type":"execute","capability":"test.echo"}]}`)})
			if err := b.st.Update(ctx, func(tx store.Txn) error {
				return b.procs.ApplyChangeTx(ctx, tx, tenant, payload, "usr_b")
			}); err != nil {
				t.Fatal(err)
			}
		}, want: "started v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, lp := setupLoading(t)
			def := b.create(t, `{"type":"manual"}`, echoStep)
			if tt.disabled {
				update(`{"enabled":false}`)(t, b, def.ID)
			}
			before := b.startOutcome(t, def.ID) // cached from here on
			again := b.startOutcome(t, def.ID)
			if before != again || lp.loads.Load() != 1 {
				t.Fatalf("before the change: %q then %q with %d loads, want one load", before, again, lp.loads.Load())
			}
			tt.change(t, b, def.ID)
			got := []string{b.startOutcome(t, def.ID), b.startOutcome(t, def.ID)}
			if diff := cmp.Diff([]string{tt.want, tt.want}, got); diff != "" {
				t.Errorf("starts after the change (-want +got):\n%s", diff)
			}
			if n := lp.loads.Load(); n != 2 {
				t.Errorf("%d loads, want 2 (one after the change, then the cache)", n)
			}
		})
	}
}

func TestStartOfAProcessCreatedInACallersTransaction(t *testing.T) {
	t.Parallel()
	b, lp := setupLoading(t)
	in, err := process.DecodeIn([]byte(`{"name":"From a template","function":"finance","trigger":{"type":"manual"},"steps":` + echoStep + `}`))
	if err != nil {
		t.Fatal(err)
	}
	var def *process.Definition
	if err := b.st.Update(context.Background(), func(tx store.Txn) error {
		def, err = b.procs.CreateTx(tx, tenant, "usr_test", in)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := b.startOutcome(t, def.ID); got != "started v1" {
			t.Fatalf("start = %q", got)
		}
	}
	if n := lp.loads.Load(); n != 1 {
		t.Errorf("%d loads, want 1", n)
	}
}

// A start that read the definition before a change, and keeps it after the
// change committed, must not leave it for the next starts, even when a
// start in between read the change.
func TestStartReadingBeforeAChangeKeepsNothingStale(t *testing.T) {
	t.Parallel()
	b, lp := setupLoading(t)
	def := b.create(t, `{"type":"manual"}`, echoStep)
	read, resume := make(chan struct{}), make(chan struct{})
	// A failing test must not leave the start paused: the engine's Close
	// would wait for it.
	free := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(free)
	lp.mu.Lock()
	lp.pause = func() { close(read); <-resume }
	lp.mu.Unlock()
	first := make(chan string, 1)
	go func() {
		r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
		if err != nil {
			first <- err.Error()
			return
		}
		first <- string(r.Status)
	}()
	testwait.Recv(t, read, "the start read the enabled definition")
	if _, _, err := b.procs.Update(context.Background(), tenant, "usr_test", def.ID, patch(t, `{"enabled":false}`)); err != nil {
		t.Fatal(err)
	}
	// A start after the commit reads the change (and keeps it).
	if got := b.startOutcome(t, def.ID); got != "process is disabled" {
		t.Errorf("start after the change = %q, want process is disabled", got)
	}
	free()
	testwait.Recv(t, first, "the first start ended")
	for range 2 {
		if got := b.startOutcome(t, def.ID); got != "process is disabled" {
			t.Errorf("start once the first start ended = %q, want process is disabled", got)
		}
	}
}

// A start that reads while a change is written but not yet committed must
// not leave what it read for the starts after the commit.
func TestStartReadingDuringAChangesCommitKeepsNothingStale(t *testing.T) {
	t.Parallel()
	b, lp := setupLoading(t)
	def := b.create(t, `{"type":"manual"}`, echoStep)
	if got := b.startOutcome(t, def.ID); got != "started v1" { // cached
		t.Fatalf("start = %q", got)
	}
	var hold atomic.Bool
	inTx, commit := make(chan struct{}), make(chan struct{})
	// A failing test must not leave the change in its transaction: the
	// store's Close would wait for it.
	release := sync.OnceFunc(func() { close(commit) })
	t.Cleanup(release)
	b.procs.OnChange(func(store.Txn, string, *process.Definition, *process.Definition) error {
		if hold.CompareAndSwap(true, false) {
			close(inTx)
			<-commit
		}
		return nil
	})
	hold.Store(true)
	changed := make(chan error, 1)
	go func() {
		_, _, err := b.procs.Update(context.Background(), tenant, "usr_test", def.ID, patch(t, `{"enabled":false}`))
		changed <- err
	}()
	// The change is written, its hooks ran, it is not committed.
	testwait.Recv(t, inTx, "the change's hooks ran")
	if got := b.startOutcome(t, def.ID); got != "started v1" {
		t.Fatalf("start during the change = %q, want the committed definition's start", got)
	}
	release()
	if err := testwait.Recv(t, changed, "the change committed"); err != nil {
		t.Fatal(err)
	}
	if got := b.startOutcome(t, def.ID); got != "process is disabled" {
		t.Errorf("start after the change = %q, want process is disabled", got)
	}
	// Once a read saw the change committed, starts use the cache again.
	if got := b.startOutcome(t, def.ID); got != "process is disabled" {
		t.Errorf("second start after the change = %q, want process is disabled", got)
	}
	if n := lp.loads.Load(); n != 3 {
		t.Errorf("%d loads, want 3 (the first start, the one during the change, the first after it)", n)
	}
}

func TestRerunUsesTheDefinitionAfterAChange(t *testing.T) {
	t.Parallel()
	b, _ := setupLoading(t)
	def := b.create(t, `{"type":"manual"}`, echoStep)
	id := b.start(t, def.ID) // cached
	b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if _, _, err := b.procs.Update(context.Background(), tenant, "usr_test", def.ID, patch(t, `{"enabled":false}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Rerun(context.Background(), tenant, id, "one", "usr_test"); !errors.Is(err, errs.Conflict) {
		t.Errorf("rerun of a disabled process: %v, want a conflict", err)
	}
}

// On a cluster another node's process service changes definitions without
// this node's hooks: every start reads the definition.
func TestClusterStartSeesAnotherNodesChange(t *testing.T) {
	t.Parallel()
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	var nodes [2]*node
	for i, id := range []string{"a", "b"} {
		nodes[i] = openNode(t, base, nodeConfig{id: id, lease: lc, clock: ec, prov: &recorder{node: id, mu: mu, keys: keys},
			shards: 4, ttl: 10 * time.Second})
	}
	def := chainProcess(t, nodes[0].procs, `{"type":"manual"}`, 1)
	start := func() error {
		_, err := nodes[1].eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
		return err
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nodes[0].procs.Update(t.Context(), tenant, "usr_test", def.ID, patch(t, `{"enabled":false}`)); err != nil {
		t.Fatal(err)
	}
	if err := start(); !errors.Is(err, errs.Conflict) {
		t.Errorf("start on node b after node a disabled the process: %v, want a conflict", err)
	}
}
