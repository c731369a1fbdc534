package runengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

const taskSteps = `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`

func TestStartIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, taskSteps)
	other := b.create(t, `{"type":"manual"}`, taskSteps)
	start := func(ten, processID, key string) (*runengine.Run, error) {
		return b.eng.Start(ctx, runengine.StartParams{Tenant: ten, ProcessID: processID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, IdempotencyKey: key})
	}
	first, err := start(tenant, def.ID, "k1")
	if err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		name      string
		ten, proc string
		key       string
		advance   time.Duration
		same      bool
		kind      error
	}{
		{name: "same key", ten: tenant, proc: def.ID, key: "k1", same: true},
		{name: "same key, just inside the window", ten: tenant, proc: def.ID, key: "k1",
			advance: runengine.IdempotencyWindow - time.Second, same: true},
		{name: "same key, another process", ten: tenant, proc: other.ID, key: "k1", kind: errs.Conflict},
		{name: "same key, another tenant", ten: "ten_other", proc: def.ID, key: "k1", kind: errs.NotFound},
		{name: "another key", ten: tenant, proc: def.ID, key: "k2"},
		{name: "no key", ten: tenant, proc: def.ID},
		{name: "a key of 255 bytes", ten: tenant, proc: def.ID, key: strings.Repeat("k", 255)},
		{name: "a key of 256 bytes", ten: tenant, proc: def.ID, key: strings.Repeat("k", 256), kind: errs.Invalid},
	} {
		b.advance(test.advance)
		got, err := start(test.ten, test.proc, test.key)
		b.clk.Set(t0) // (never moves backwards: the window test comes last of the advancing ones)
		if test.kind != nil {
			if !errors.Is(err, test.kind) {
				t.Errorf("%s: %v, want %v", test.name, err, test.kind)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", test.name, err)
		}
		if (got.ID == first.ID) != test.same {
			t.Errorf("%s: run %s, first %s; want same=%v", test.name, got.ID, first.ID, test.same)
		}
	}
	_, err = start(tenant, def.ID, strings.Repeat("k", 256))
	want := []errs.Violation{{Loc: []any{"idempotency_key"}, Msg: "must be at most 255 bytes", Type: "string_too_long"}}
	if diff := cmp.Diff(want, errs.Violations(err)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	// Past the window the key starts a new run, and the expired key is
	// swept by the next idempotent start.
	b.advance(runengine.IdempotencyWindow + time.Second)
	later, err := start(tenant, def.ID, "k2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := start(tenant, def.ID, "k3"); err != nil {
		t.Fatal(err)
	}
	again, err := start(tenant, def.ID, "k1")
	if err != nil || again.ID == first.ID {
		t.Errorf("past the window: run %v, %v; want a new run", again, err)
	}
	err = b.st.View(ctx, func(r store.Reader) error {
		_, err := r.Get(store.Key(tenant, "start-key", strings.Repeat("k", 255)))
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired key was not swept: %v", err)
	}
	if rerun, err := start(tenant, def.ID, "k2"); err != nil || rerun.ID != later.ID {
		t.Errorf("a key renewed past the window: %v, %v; want %s", rerun, err, later.ID)
	}
}

func TestStartIdempotencyKeyConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, taskSteps)
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
				IdempotencyKey: "same"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = r.ID
		})
	}
	testwait.Wait(t, &wg, "the 8 starts returned")
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("one key started several runs: %v", ids)
		}
	}
	runs, _, err := b.eng.ListRuns(context.Background(), tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
	if err != nil || len(runs) != 1 {
		t.Errorf("%d runs, %v; want 1", len(runs), err)
	}
}

func TestWaitRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, taskSteps)
	r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if _, err := b.eng.WaitRun(short, tenant, r.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting on a waiting run: %v, want the context's deadline", err)
	}
	if _, err := b.eng.WaitRun(ctx, "ten_other", r.ID); !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant's run: %v, want not found", err)
	}
	waiting, err := b.eng.WaitRunUntil(ctx, tenant, r.ID, func(r *runengine.Run) bool {
		return r.Steps[0].Status == runengine.StepWaitingTask
	})
	if err != nil || waiting.Status != runengine.RunWaiting {
		t.Fatalf("WaitRunUntil a step waits: %+v, %v", waiting, err)
	}
	done := make(chan *runengine.Run, 2)
	never := make(chan error, 1)
	go func() {
		_, err := b.eng.WaitRunUntil(ctx, tenant, r.ID, func(r *runengine.Run) bool { return r.Overdue })
		never <- err
	}()
	for range 2 {
		go func() {
			got, err := b.eng.WaitRun(ctx, tenant, r.ID)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID,
		Action: "complete", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := testwait.Recv(t, done, "WaitRun returned once the run completed"); got == nil || got.Status != runengine.RunCompleted {
			t.Fatalf("WaitRun returned %+v", got)
		}
	}
	if err := testwait.Recv(t, never, "WaitRunUntil returned once the run ended"); !errors.Is(err, errs.Conflict) {
		t.Errorf("waiting for what a run that ended never became: %v, want conflict", err)
	}
	// An ended run is returned at once.
	if got, err := b.eng.WaitRun(ctx, tenant, r.ID); err != nil || got.Status != runengine.RunCompleted {
		t.Errorf("an ended run: %+v, %v", got, err)
	}
}

func TestTypedCallsAnswerSnapshots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it",
	  "fields":[{"key":"note","label":"Note","type":"text"}]}}]`)
	r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
		Data: map[string]any{"po": map[string]any{"number": "PO-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != runengine.RunWaiting || r.Steps[0].Status != runengine.StepWaitingTask {
		t.Fatalf("started run: %s, step %s", r.Status, r.Steps[0].Status)
	}
	r.Trigger.Data["po"].(map[string]any)["number"] = "changed by the caller"
	// What the run's pointers point to is the caller's too.
	taskID, started := *r.Steps[0].TaskID, *r.Steps[0].StartedAt
	*r.Steps[0].TaskID = "tsk_changed_by_the_caller"
	*r.Steps[0].StartedAt = started.Add(-time.Hour)
	*r.CurrentStep = "changed by the caller"
	task, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID,
		Action: "complete", Fields: map[string]any{"note": "ok"}, Actor: "usr_a"})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != runengine.TaskCompleted || task.Values["note"] != "ok" {
		t.Errorf("completed task: %+v", task)
	}
	task.Values["note"] = "changed by the caller"
	// A run whose current step a caller could rename would never end.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := b.eng.WaitRun(wctx, tenant, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"po": map[string]any{"number": "PO-1"}}
	if diff := cmp.Diff(want, done.Trigger.Data); diff != "" {
		t.Errorf("trigger data (-want +got):\n%s", diff)
	}
	if got := done.Steps[0]; *got.TaskID != taskID || !got.StartedAt.Equal(started) {
		t.Errorf("step after the caller changed its snapshot: task %s, started %v; want %s, %v", *got.TaskID, got.StartedAt, taskID, started)
	}
	if got, _ := b.eng.GetTask(ctx, tenant, task.ID); got.Values["note"] != "ok" {
		t.Errorf("stored task values: %v", got.Values)
	}
}

func TestSubscribe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	def := b.create(t, `{"type":"manual"}`, taskSteps)
	all := b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant})
	tasksOnly := b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant, Names: []string{"task.*"}})
	others := b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: "ten_other"})
	r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID,
		Action: "complete"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: "ten_other", Name: "other.thing"}); err != nil {
		t.Fatal(err)
	}
	take := func(seq func(func(runengine.Notice, error) bool), n int) ([]string, []string) {
		var names, cursors []string
		for note, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, note.Event.Name)
			cursors = append(cursors, note.Cursor)
			if len(names) == n {
				break
			}
		}
		return names, cursors
	}
	names, cursors := take(all, 4)
	want := []string{"process.run.started", "task.created", "task.completed", "process.run.completed"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if names, _ := take(others, 1); !cmp.Equal(names, []string{"other.thing"}) {
		t.Errorf("another tenant's events: %v", names)
	}
	// A cursor resumes right after its event while the tenant keeps a
	// subscriber (tasksOnly, not yet read).
	resumed := b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant, After: cursors[1]})
	if names, _ := take(resumed, 2); !cmp.Equal(names, want[2:]) {
		t.Errorf("resumed after %s: %v, want %v", cursors[1], names, want[2:])
	}
	if names, _ := take(tasksOnly, 2); !cmp.Equal(names, []string{"task.created", "task.completed"}) {
		t.Errorf("task.* events: %v", names)
	}
	// With no subscriber left, the tenant's events are not kept: a cursor
	// from before then is told it missed some.
	for _, after := range []string{"nonsense", "sub.1", cursors[0] + "0", cursors[1]} {
		for _, err := range b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant, After: after}) {
			if !errors.Is(err, runengine.ErrMissed) {
				t.Errorf("resumed after %q: %v, want ErrMissed", after, err)
			}
			break
		}
	}
}

func TestSubscriberFallsBehind(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true},
		func(c *runengine.Config) { c.SubscribeBuffer = 4 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant, Names: []string{"ping"}})
	for i := range 6 {
		if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "ping",
			Data: map[string]any{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for note, err := range slow {
		switch {
		case errors.Is(err, runengine.ErrMissed):
			got = append(got, "missed")
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, fmt.Sprint(note.Event.Data["n"]))
		}
		if len(got) == 5 {
			break
		}
	}
	// The engine kept the last four; the two before were lost to it.
	if diff := cmp.Diff([]string{"missed", "2", "3", "4", "5"}, got); diff != "" {
		t.Errorf("a slow subscriber's deliveries (-want +got):\n%s", diff)
	}
}

// The HTTP layer's fast path answers a start with the same JSON as the
// typed run it stands for.
func TestStartJSONIsTheRunsView(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, taskSteps)
	raw, err := wiring.EngineOf(b.eng).StartJSON(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
		Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_a"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	r, err := b.eng.GetRun(ctx, tenant, got["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	typed, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(typed, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StartJSON (-typed +view):\n%s", diff)
	}
}
