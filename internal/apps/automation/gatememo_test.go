package automation_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// handed is one decision asked with a callwrites.Writes in the context,
// as the run engine asks: its answer and what it handed over.
type handed struct {
	d runengine.GateDecision
	b callwrites.Batch
}

// decideHanded asks for item as the run engine does, with a Writes in the
// context, and returns the answer and what the gate handed over.
func (b *bundle) decideHanded(processID, item string, isNew bool) handed {
	b.t.Helper()
	w := callwrites.Writes{Joins: true}
	d, err := b.svc.Decide(callwrites.With(context.Background(), &w), runengine.GateRequest{
		Tenant: tenant, ProcessID: processID, RunID: "run_" + item, StepKey: "pay", Capability: "payment.request",
		ItemKey: item, New: isNew})
	if err != nil {
		b.t.Fatal(err)
	}
	return handed{d: d, b: w.TakeAll()}
}

// commit applies h's writes and counts in one transaction, as the run
// engine's commit of the step would (its counters are 8-byte big-endian
// values only it writes), and tells h's Settled functions.
func (b *bundle) commit(h *handed) {
	b.t.Helper()
	err := b.st.Update(context.Background(), func(tx store.Txn) error {
		for _, op := range h.b.Ops {
			if err := op(tx); err != nil {
				return err
			}
		}
		for _, c := range h.b.Counts {
			var n int64
			raw, err := tx.Get([]byte(c.Key))
			if err == nil {
				n = int64(binary.BigEndian.Uint64(raw))
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err := tx.Set([]byte(c.Key), binary.BigEndian.AppendUint64(nil, uint64(n+c.N))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.t.Fatal(err)
	}
	h.b.Drop(nil)
}

// TestHandedDecisionsHoldTheDailyLimit: decisions asked by the run engine
// (a callwrites.Writes in the context) on the store's only writer commit
// nothing themselves; they are counted at once against the daily limit, so
// concurrent ones never pass it. A decision whose commit fails gives its
// count back; committed ones are counted once, in the store.
func TestHandedDecisionsHoldTheDailyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"percent": 100, "max_percent": 100, "daily_limit": 30}`)
	decideAll := func(keys []string) []handed {
		out := make([]handed, len(keys))
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < len(keys); i += 16 {
					out[i] = b.decideHanded("prc_1", keys[i], true)
				}
			}()
		}
		wg.Wait()
		return out
	}
	autos := func(hs []handed) (auto []*handed, rest []*handed) {
		for i := range hs {
			if hs[i].d.Auto {
				auto = append(auto, &hs[i])
			} else {
				rest = append(rest, &hs[i])
			}
		}
		return auto, rest
	}
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	first := decideAll(keys)
	auto, rest := autos(first)
	if len(auto) != 30 {
		t.Fatalf("%d automatic actions under a daily limit of 30", len(auto))
	}
	for _, h := range auto {
		if len(h.b.Ops) != 1 || len(h.b.Counts) != 2 || len(h.b.Settled) != 1 {
			t.Fatalf("an automatic decision handed %d writes, %d counts, %d settled; want 1, 2, 1",
				len(h.b.Ops), len(h.b.Counts), len(h.b.Settled))
		}
	}
	if n := b.view("prc_1").AutomaticToday; n != 0 {
		t.Errorf("automatic today %d before any step committed, want 0: a decision commits with its step", n)
	}
	// 10 of the steps' commits fail, 20 land, concurrently.
	var wg sync.WaitGroup
	for i, h := range auto {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i < 10 {
				h.b.Drop(errors.New("the step's commit failed"))
				return
			}
			b.commit(h)
		}()
	}
	for _, h := range rest {
		b.commit(h)
	}
	wg.Wait()
	if n := b.view("prc_1").AutomaticToday; n != 20 {
		t.Errorf("automatic today %d after 20 commits, want 20", n)
	}
	more := make([]string, 40)
	for i := range more {
		more[i] = fmt.Sprintf("m%d", i)
	}
	auto, rest = autos(decideAll(more))
	if len(auto) != 10 {
		t.Errorf("%d more automatic actions after 10 commits failed, want 10", len(auto))
	}
	for _, h := range append(auto, rest...) {
		b.commit(h)
	}
	if n := b.view("prc_1").AutomaticToday; n != 30 {
		t.Errorf("automatic today %d, want 30", n)
	}
	if h := b.decideHanded("prc_1", "one-more", true); h.d.Auto {
		t.Errorf("an item past the limit ran alone: %+v", h.d)
	}
}

// TestHandedDecisionAskedAgain: an item asked again while its decision is
// in flight gets the same answer and hands nothing (it is counted once);
// after its commit failed it is decided afresh; once committed, it gets the
// stored answer, also from a gate that reads the counts back from the
// store (a restart), which counts both the decisions committed with steps
// and those that committed on their own.
func TestHandedDecisionAskedAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"percent": 100, "max_percent": 100, "daily_limit": 4}`)
	first := b.decideHanded("prc_1", "k", true)
	if !first.d.Auto || first.b.Empty() {
		t.Fatalf("first ask: %+v, handed %+v", first.d, first.b)
	}
	again := b.decideHanded("prc_1", "k", false)
	if again.d != first.d || !again.b.Empty() {
		t.Errorf("asked again in flight: %+v, handed %d writes; want %+v and nothing", again.d, len(again.b.Ops), first.d)
	}
	first.b.Drop(errors.New("the step's commit failed"))
	retry := b.decideHanded("prc_1", "k", false)
	if retry.d != first.d || len(retry.b.Counts) != 2 {
		t.Fatalf("asked after the failed commit: %+v, %d counts; want %+v decided afresh", retry.d, len(retry.b.Counts), first.d)
	}
	b.commit(&retry)
	stored := b.decideHanded("prc_1", "k", false)
	if stored.d != first.d || !stored.b.Empty() {
		t.Errorf("asked once committed: %+v, handed %d writes; want the stored answer", stored.d, len(stored.b.Ops))
	}
	b.decide("prc_1", "own") // asked without a Writes: commits on its own
	if n := b.view("").AutomaticToday; n != 2 {
		t.Errorf("automatic today %d, want 2", n)
	}

	// A restart: a new gate on the same store.
	b.svc = automation.New(automation.Config{Store: b.st, Clock: b.clock})
	if d := b.decideHanded("prc_1", "k", false); d.d != first.d || !d.b.Empty() {
		t.Errorf("after the restart: %+v, handed %d writes; want the stored answer", d.d, len(d.b.Ops))
	}
	third := b.decideHanded("prc_1", "k3", true)
	fourth := b.decideHanded("prc_1", "k4", true)
	if !third.d.Auto || !fourth.d.Auto {
		t.Fatalf("the 3rd and 4th items under a limit of 4: %+v %+v", third.d, fourth.d)
	}
	b.commit(&third)
	b.commit(&fourth)
	if h := b.decideHanded("prc_1", "k5", true); h.d.Auto {
		t.Errorf("the 5th item under a limit of 4 ran alone: %+v", h.d)
	}
	shared := automation.New(automation.Config{Store: b.st, Clock: b.clock, Shared: true})
	v, err := shared.Workspace(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(4, v.AutomaticToday); diff != "" {
		t.Errorf("automatic today as a node of a cluster reads it (-want +got):\n%s", diff)
	}
}

// TestDecisionBeforeAProviderThatActsCommitsItsOwn: a decision asked
// before the call of a provider that acts outside the call's commit (the
// Writes does not say Joins) is a commit of its own, made before the
// answer: the provider acts on a durable decision.
func TestDecisionBeforeAProviderThatActsCommitsItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"percent": 100, "max_percent": 100, "daily_limit": 1}`)
	var w callwrites.Writes
	d, err := b.svc.Decide(callwrites.With(context.Background(), &w), runengine.GateRequest{Tenant: tenant, ProcessID: "prc_1",
		RunID: "run_k", StepKey: "pay", ItemKey: "run_k/pay", New: true})
	if err != nil || !d.Auto {
		t.Fatalf("decision %+v, %v; want automatic", d, err)
	}
	if h := w.TakeAll(); !h.Empty() {
		t.Errorf("handed %+v, want nothing", h)
	}
	if n := b.view("prc_1").AutomaticToday; n != 1 {
		t.Errorf("automatic today %d, want 1", n)
	}
	if h := b.decideHanded("prc_1", "k2", true); h.d.Auto {
		t.Errorf("an item past the limit ran alone: %+v", h.d)
	}
}

// TestSharedGateCommitsItsOwnDecision: when other processes write the
// store (a cluster), a decision is a commit of its own even when the run
// engine offers a Writes: nothing is handed over, and it counts at once.
func TestSharedGateCommitsItsOwnDecision(t *testing.T) {
	t.Parallel()
	b := setupWith(t, false, true)
	b.patch("", `{"percent": 100, "max_percent": 100, "daily_limit": 1}`)
	h := b.decideHanded("prc_1", "k", true)
	if !h.d.Auto || !h.b.Empty() {
		t.Errorf("decision %+v handed %+v; want automatic and nothing handed", h.d, h.b)
	}
	if n := b.view("prc_1").AutomaticToday; n != 1 {
		t.Errorf("automatic today %d, want 1", n)
	}
	if h := b.decideHanded("prc_1", "k2", true); h.d.Auto {
		t.Errorf("an item past the limit ran alone: %+v", h.d)
	}
}

// TestStoredDecisionForms: a decision is stored in the binary form, and an
// item asked again gets the stored answer whichever form holds it: one
// stored as JSON by an earlier version (here an answer the levels in force
// would no longer give) is answered as it says and counted no more, by
// the gate of the store's only writer and by a cluster node's.
func TestStoredDecisionForms(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			b := setupWith(t, false, shared)
			b.patch("", `{"percent": 100, "max_percent": 100}`)
			b.decide("prc_1", "new")
			key := store.Key(tenant, "r", "gatedecision", "prc_1|new")
			var raw []byte
			err := b.st.View(context.Background(), func(r store.Reader) error {
				var err error
				raw, err = r.Get(key)
				return err
			})
			if err != nil || len(raw) == 0 || raw[0] != 2 {
				t.Fatalf("the new decision stored as %.20q (%v), want the binary form", raw, err)
			}

			old := []byte(`{"item_key":"old","process_id":"prc_1","run_id":"run_old","step_key":"pay",` +
				`"capability":"payment.request","auto":false,"reason":"supervised: an earlier answer","sample":true,` +
				`"percent":0,"at":"2025-03-01T08:00:00Z"}`)
			err = b.st.Update(context.Background(), func(tx store.Txn) error {
				return tx.Set(store.Key(tenant, "r", "gatedecision", "prc_1|old"), old)
			})
			if err != nil {
				t.Fatal(err)
			}
			before := b.view("").AutomaticToday
			want := runengine.GateDecision{Auto: false, Reason: "supervised: an earlier answer", Sample: true}
			if got := b.decideHanded("prc_1", "old", false); got.d != want || !got.b.Empty() {
				t.Errorf("asked again: %+v, handed %d writes; want %+v and nothing", got.d, len(got.b.Ops), want)
			}
			if got := b.decide("prc_1", "old"); got != want {
				t.Errorf("asked again without a Writes: %+v, want %+v", got, want)
			}
			if n := b.view("").AutomaticToday; n != before {
				t.Errorf("automatic today %d -> %d: the stored answer was counted", before, n)
			}
		})
	}
}
