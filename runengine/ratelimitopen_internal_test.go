package runengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// timedCalls fills test.timed: each call notes its args' label and the
// clock's time, and answers at once.
type timedCalls struct {
	clk   *clock.Fake
	start time.Time
	mu    sync.Mutex
	made  []string
}

func (p *timedCalls) Info() capability.Info {
	return capability.Info{ID: "test.timer", Name: "Timed", Kind: capability.KindBuiltin, Capabilities: []string{"test.timed"}}
}

func (p *timedCalls) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.timed", Name: "Timed", Description: "Notes when it is called.", Args: obj, Result: obj}}
}

func (p *timedCalls) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	var args struct{ Label string }
	_ = json.Unmarshal(c.Args, &args)
	p.mu.Lock()
	p.made = append(p.made, fmt.Sprintf("%s at %s", args.Label, p.clk.Now().Sub(p.start)))
	p.mu.Unlock()
	return json.RawMessage(`{}`), nil
}

func (p *timedCalls) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.made)
}

// rateWaits counts the keys of the slots kept for waiting calls (see
// rateWait).
func rateWaits(t *testing.T, st store.Store) int {
	t.Helper()
	n := 0
	if err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "ratewait"), KeysOnly: true},
			func(_, _ []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRateLimitKeepsReservedSlotsAcrossRestart: under a limit of one call
// per 10s (per customer), three runs start at once: the first calls, the
// other two wait for the slots at 10s and 20s. The engine closes and opens
// again at the same time, and a fourth run starts: it must wait for the
// slot at 30s. Before, the limiter's buckets were memory only: the fourth
// called at once, two calls at 0s, beside the two reserved ones still to
// come within 20s. The engine's Close keeps its buckets too: they are
// dropped here, as after a crash. A slot kept in the store is deleted when
// its call goes out, and that of a run cancelled while it waited (at 30s)
// with the cancel: the slot passes unused, and after the restart the
// fourth run takes it. Before, the cancelled run's slot was kept until an
// Open after it no longer counted, and the fourth run waited for 40s.
func TestRateLimitKeepsReservedSlotsAcrossRestart(t *testing.T) {
	t.Parallel()
	const tenant = "ten_a"
	st := memStore(t)
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	cfg := Config{Grace: time.Millisecond, Gate: autoDecides{},
		RateLimits: []RateLimit{{Capability: "test.", Key: "args.customer", Limit: 1, Per: 10 * time.Second}}}
	p := &timedCalls{clk: clk, start: start}
	open := func() (*Engine, *process.Service) { return openOn(t, st, clk, cfg, p) }
	eng, procs := open()
	def := createNew(t, procs, tenant, `{"name":"Timed","trigger":{"type":"manual"},
		"steps":[{"key":"call","type":"execute","capability":"test.timed","config":{"args":{"label":"${subject.label}","customer":"c1"}}}]}`)
	ctx := context.Background()
	startRun := func(label string) string {
		r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "t", Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	await := func(id, what string, cond func(*Run) bool) {
		t.Helper()
		awaitRun(t, eng, tenant, id, what, cond)
	}
	waiting := func(r *Run) bool { return r.Status == RunWaiting }
	done := func(r *Run) bool { return r.Status == RunCompleted }
	await(startRun("a"), "completed", done)
	ids := map[string]string{}
	for _, l := range []string{"b", "c", "gone"} {
		ids[l] = startRun(l)
		await(ids[l], "waited", waiting)
	}
	if _, err := eng.Cancel(ctx, CancelParams{Tenant: tenant, RunID: ids["gone"], Actor: "usr"}); err != nil {
		t.Fatal(err)
	}
	await(ids["gone"], "cancelled", func(r *Run) bool { return r.Status == RunCancelled })
	if n := rateWaits(t, st); n != 2 {
		t.Errorf("%d slots kept before the restart, want 2 (not the cancelled run's)", n)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	// As after a crash: Close's buckets are not kept, the slots are.
	if err := st.Update(ctx, func(tx store.Txn) error { return tx.Delete(bucketsKey) }); err != nil {
		t.Fatal(err)
	}

	eng, _ = open()
	ids["d"] = startRun("d")
	await(ids["d"], "waited or called", func(r *Run) bool { return r.Status == RunWaiting || r.Status == RunCompleted })
	for _, w := range []struct {
		run   string
		after time.Duration
	}{{"b", 10 * time.Second}, {"c", 10 * time.Second}, {"d", 10 * time.Second}} {
		clk.Advance(w.after)
		await(ids[w.run], "completed", done)
	}
	want := []string{"a at 0s", "b at 10s", "c at 20s", "d at 30s"}
	if diff := cmp.Diff(want, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if n := rateWaits(t, st); n != 0 {
		t.Errorf("%d slots kept once the calls went out, want 0", n)
	}
}

// TestRateLimitKeepsBucketsAcrossClose: under a limit of one call per
// 10s, a run calls; the engine closes and opens again at the same time,
// and a second run starts: it must wait for the slot at 10s. Before, it
// called at once, two calls at 0s. The buckets Close kept are deleted
// once taken back.
func TestRateLimitKeepsBucketsAcrossClose(t *testing.T) {
	t.Parallel()
	const tenant = "ten_a"
	st, clk, cfg, p, eng, def := openOneCallPer10s(t, tenant)
	ctx := context.Background()
	run := func(label string, after time.Duration) {
		t.Helper()
		r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "t", Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, testwait.Limit)
		defer cancel()
		if _, err := eng.WaitRunUntil(wctx, tenant, r.ID, func(r *Run) bool { return r.Status != RunRunning }); err != nil {
			t.Fatal(err)
		}
		clk.Advance(after)
		if r, err := eng.WaitRunUntil(wctx, tenant, r.ID, func(r *Run) bool { return r.Status == RunCompleted }); err != nil {
			t.Fatalf("run %s never completed: %v (%+v)", label, err, r)
		}
	}
	run("a", 0)
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	eng, _ = openOn(t, st, clk, cfg, p)
	run("b", 10*time.Second)
	if diff := cmp.Diff([]string{"a at 0s", "b at 10s"}, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if err := st.View(ctx, func(r store.Reader) error { _, err := r.Get(bucketsKey); return err }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the kept buckets after the open: %v, want none", err)
	}
}

// TestRateLimitRemovedDropsKeptSlots: under a limit of one call per 10s,
// a run calls and a second waits for the slot at 10s; the engine closes
// (keeping its buckets and the slot) and opens again without rate limits,
// or as a cluster's node (whose limiter counts its own calls and keeps
// none). The slot kept for the waiting run and the kept buckets must be
// deleted by that open. Before, such an engine read neither: both
// stayed in the store for good.
func TestRateLimitRemovedDropsKeptSlots(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reopen func(*Config, *clock.Fake)
	}{
		{"no rate limits", func(cfg *Config, _ *clock.Fake) { cfg.RateLimits = nil }},
		{"a cluster's node", func(cfg *Config, clk *clock.Fake) {
			cfg.Cluster = &ClusterConfig{NodeID: "a", Shards: 2, LeaseTTL: 9 * time.Second, Clock: clk}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const tenant = "ten_a"
			st, clk, cfg, p, eng, def := openOneCallPer10s(t, tenant)
			ctx := context.Background()
			run := func(label string, until func(*Run) bool) string {
				t.Helper()
				r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "t", Label: label}})
				if err != nil {
					t.Fatal(err)
				}
				wctx, cancel := context.WithTimeout(ctx, testwait.Limit)
				defer cancel()
				if r, err := eng.WaitRunUntil(wctx, tenant, r.ID, until); err != nil {
					t.Fatalf("run %s: %v (%+v)", label, err, r)
				}
				return r.ID
			}
			run("a", func(r *Run) bool { return r.Status == RunCompleted })
			run("b", func(r *Run) bool { return r.Status == RunWaiting })
			if err := eng.Close(); err != nil {
				t.Fatal(err)
			}
			kept := func() (waits int, buckets bool) {
				t.Helper()
				err := st.View(ctx, func(r store.Reader) error { _, err := r.Get(bucketsKey); return err })
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				return rateWaits(t, st), err == nil
			}
			if waits, buckets := kept(); waits != 1 || !buckets {
				t.Fatalf("after the close: %d slots and buckets %v kept, want 1 and true", waits, buckets)
			}
			tc.reopen(&cfg, clk)
			eng, _ = openOn(t, st, clk, cfg, p)
			if waits, buckets := kept(); waits != 0 || buckets {
				t.Errorf("after the open: %d slots and buckets %v kept, want 0 and false", waits, buckets)
			}
			if err := eng.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// openOneCallPer10s opens an engine on a new store under a limit of one
// call of test.timed per 10s, with a process of tenant that makes one
// such call labelled with its subject's label.
func openOneCallPer10s(t *testing.T, tenant string) (store.Store, *clock.Fake, Config, *timedCalls, *Engine, *process.Definition) {
	t.Helper()
	st := memStore(t)
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	cfg := Config{Grace: time.Millisecond, Gate: autoDecides{},
		RateLimits: []RateLimit{{Capability: "test.timed", Limit: 1, Per: 10 * time.Second}}}
	p := &timedCalls{clk: clk, start: start}
	eng, procs := openOn(t, st, clk, cfg, p)
	def := createNew(t, procs, tenant, `{"name":"Timed","trigger":{"type":"manual"},
		"steps":[{"key":"call","type":"execute","capability":"test.timed","config":{"args":{"label":"${subject.label}"}}}]}`)
	return st, clk, cfg, p, eng, def
}

// TestRateLimitDropsUndecodableKeptSlots: a kept slot whose value or key
// cannot be decoded, and kept buckets that cannot be, do not fail the
// Open (before, the whole engine refused to open): they are deleted, and
// the engine still runs its calls under the limit.
func TestRateLimitDropsUndecodableKeptSlots(t *testing.T) {
	t.Parallel()
	const tenant = "ten_a"
	st, clk, cfg, p, eng, def := openOneCallPer10s(t, tenant)
	ctx := context.Background()
	start := func(label string) *Run {
		t.Helper()
		r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "t", Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	waitFor := func(id string, until func(*Run) bool) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, testwait.Limit)
		defer cancel()
		if r, err := eng.WaitRunUntil(wctx, tenant, id, until); err != nil {
			t.Fatalf("run %s: %v (%+v)", id, err, r)
		}
	}
	a := start("a")
	waitFor(a.ID, func(r *Run) bool { return r.Status == RunCompleted })
	b := start("b")
	waitFor(b.ID, func(r *Run) bool { return r.Status == RunWaiting })
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rateWaits(t, st); n != 1 {
		t.Fatalf("after the close: %d slots kept, want 1", n)
	}
	if err := st.Update(ctx, func(tx store.Txn) error {
		if err := tx.Set(bucketsKey, []byte("[bad")); err != nil {
			return err
		}
		if err := tx.Set(store.Key(store.System, "ratewait", "short"), []byte("{}")); err != nil {
			return err
		}
		return st.View(ctx, func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "ratewait"), KeysOnly: true},
				func(key, _ []byte) error { return tx.Set(bytes.Clone(key), []byte("{bad")) })
		})
	}); err != nil {
		t.Fatal(err)
	}
	eng, _ = openOn(t, st, clk, cfg, p)
	err := st.View(ctx, func(r store.Reader) error { _, err := r.Get(bucketsKey); return err })
	if n := rateWaits(t, st); n != 0 || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after the open: %d slots kept, buckets read %v; want 0 and not found", n, err)
	}
	clk.Advance(10 * time.Second)
	waitFor(b.ID, func(r *Run) bool { return r.Status == RunCompleted })
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a at 0s", "b at 10s"}, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestRateLimitPausedRunTakesANewSlot: under a limit of one call per 10s,
// a run calls and two wait for the slots at 10s and 20s; both are paused,
// which gives their slots up (their kept slots are deleted), and the
// engine restarts, as after a crash, while they are paused and their
// timers come due. Resumed together at 30s, the first calls at once and
// the second takes the next slot, at 40s. Before, each kept its old
// reservation and both called at 30s, two calls in 10s.
func TestRateLimitPausedRunTakesANewSlot(t *testing.T) {
	t.Parallel()
	const tenant = "ten_a"
	st, clk, cfg, p, eng, def := openOneCallPer10s(t, tenant)
	ctx := context.Background()
	await := func(id, what string, cond func(*Run) bool) {
		t.Helper()
		awaitRun(t, eng, tenant, id, what, cond)
	}
	start := func(label string, until RunStatus) string {
		t.Helper()
		r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "t", Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		await(r.ID, string(until), func(r *Run) bool { return r.Status == until })
		return r.ID
	}
	start("a", RunCompleted)
	b, c := start("b", RunWaiting), start("c", RunWaiting)
	for _, id := range []string{b, c} {
		if _, err := eng.Pause(ctx, tenant, id, "usr"); err != nil {
			t.Fatal(err)
		}
	}
	if n := rateWaits(t, st); n != 0 {
		t.Errorf("%d slots kept for paused runs, want 0", n)
	}
	clk.Advance(30 * time.Second) // b's and c's timers come due, held by the pause
	for _, id := range []string{b, c} {
		await(id, "holding its timer", func(r *Run) bool { return r.Paused != nil && len(r.Paused.Timers) == 1 })
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Update(ctx, func(tx store.Txn) error { return tx.Delete(bucketsKey) }); err != nil {
		t.Fatal(err)
	}
	eng, _ = openOn(t, st, clk, cfg, p)
	for _, id := range []string{b, c} {
		if _, err := eng.Resume(ctx, tenant, id, "usr"); err != nil {
			t.Fatal(err)
		}
	}
	await(b, "completed", func(r *Run) bool { return r.Status == RunCompleted })
	await(c, "waiting for a new slot", func(r *Run) bool { return r.Status == RunWaiting || r.Status == RunCompleted })
	clk.Advance(10 * time.Second)
	await(c, "completed", func(r *Run) bool { return r.Status == RunCompleted })
	if diff := cmp.Diff([]string{"a at 0s", "b at 30s", "c at 40s"}, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if n := rateWaits(t, st); n != 0 {
		t.Errorf("%d slots kept once the calls went out, want 0", n)
	}
}

// TestRateLimitResumedRunTakesItsTurn: under a limit of one call per 10s,
// a run calls at 0s and b waits for the slot at 10s; b is paused at 1s,
// which gives that slot up, and resumed at 2s, before its timer; c starts
// at 3s. Resumed, b takes the next free slot at once (20s), showing why it
// waits, and c the one after it (30s). Before, b waited for its old timer
// with no waiting reason, took a slot only when the timer fired (10s), and
// so called after c, which came after it.
func TestRateLimitResumedRunTakesItsTurn(t *testing.T) {
	t.Parallel()
	const tenant = "ten_a"
	_, clk, _, p, eng, def := openOneCallPer10s(t, tenant)
	ctx := context.Background()
	start := func(label string, until RunStatus) string {
		t.Helper()
		r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "t", Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		awaitRun(t, eng, tenant, r.ID, string(until), func(r *Run) bool { return r.Status == until })
		return r.ID
	}
	calls := func(n int) {
		t.Helper()
		testwait.Until(t, fmt.Sprintf("%d calls made", n), func() bool { return len(p.calls()) >= n })
	}
	start("a", RunCompleted)
	b := start("b", RunWaiting)
	clk.Advance(time.Second)
	if _, err := eng.Pause(ctx, tenant, b, "usr"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	resumed, err := eng.Resume(ctx, tenant, b, "usr")
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Status != RunWaiting || resumed.WaitingReason == "" {
		t.Errorf("resumed: status %s, waiting reason %q; want waiting for the rate limit", resumed.Status, resumed.WaitingReason)
	}
	clk.Advance(time.Second)
	start("c", RunWaiting)
	for _, at := range []time.Duration{10 * time.Second, 20 * time.Second} {
		clk.Set(p.start.Add(at))
	}
	calls(2)
	clk.Set(p.start.Add(30 * time.Second))
	calls(3)
	if diff := cmp.Diff([]string{"a at 0s", "b at 20s", "c at 30s"}, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// awaitRun waits until tenant's run id meets cond on eng, failing t with
// what it never became.
func awaitRun(t *testing.T, eng *Engine, tenant, id, what string, cond func(*Run) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	if r, err := eng.WaitRunUntil(ctx, tenant, id, cond); err != nil {
		t.Fatalf("run %s never %s: %v (%+v)", id, what, err, r)
	}
}
