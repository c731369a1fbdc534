package runengine

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestFairQueueRounds hands out a lone tenant's commands all at once, and
// several tenants' in rounds of at most fairQuantum each, in turn; a
// tenant waiting alone shortly after another's commands, in rounds of
// fairQuantum too, until mixWindow commands came without another's.
func TestFairQueueRounds(t *testing.T) {
	t.Parallel()
	var f fairQueue
	push := func(tenant string, n int) {
		for range n {
			f.push(&command{tenant: tenant})
		}
	}
	count := func(batch []*command) map[string]int {
		m := map[string]int{}
		for _, c := range batch {
			m[c.tenant]++
		}
		return m
	}
	push("flood", 100)
	if diff := cmp.Diff(map[string]int{"flood": 100}, count(f.round(nil))); diff != "" {
		t.Errorf("a lone tenant's round (-want +got):\n%s", diff)
	}
	push("flood", 40)
	push("quiet", 1)
	push("flood", 10)
	var rounds []map[string]int
	for len(f.active) > 0 {
		rounds = append(rounds, count(f.round(nil)))
	}
	want := []map[string]int{{"flood": fairQuantum, "quiet": 1}, {"flood": fairQuantum}, {"flood": fairQuantum},
		{"flood": 50 - 3*fairQuantum}}
	if diff := cmp.Diff(want, rounds); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
	push("flood", mixWindow-int(f.pushes-f.mixed)-100) // the quiet tenant's command stays within mixWindow
	for len(f.active) > 0 {
		f.round(nil)
	}
	push("flood", 100)
	if diff := cmp.Diff(map[string]int{"flood": fairQuantum}, count(f.round(nil))); diff != "" {
		t.Errorf("a round within mixWindow of the quiet tenant's command (-want +got):\n%s", diff)
	}
	push("flood", 1)
	if diff := cmp.Diff(map[string]int{"flood": 100 - fairQuantum + 1}, count(f.round(nil))); diff != "" {
		t.Errorf("a round past mixWindow (-want +got):\n%s", diff)
	}
	// Order within a tenant is kept, and the quiet tenant's command comes
	// first in the first round, before the flood's share of it, though it
	// came last.
	var f2 fairQueue
	for i := range 3 * fairQuantum {
		f2.push(&command{tenant: "flood", runID: string(rune('a' + i%26))})
	}
	f2.push(&command{tenant: "quiet", runID: "q"})
	var first []string
	for _, c := range f2.round(nil) {
		first = append(first, c.runID)
	}
	want2 := []string{"q"}
	for i := range fairQuantum {
		want2 = append(want2, string(rune('a'+i%26)))
	}
	if diff := cmp.Diff(want2, first); diff != "" {
		t.Errorf("first round (-want +got):\n%s", diff)
	}
	// Of three tenants, the one with the fewest commands waiting comes
	// first, then the next fewest.
	var f3 fairQueue
	for _, p := range []struct {
		tenant string
		n      int
	}{{"flood", 20}, {"some", 3}, {"one", 1}} {
		for i := range p.n {
			f3.push(&command{tenant: p.tenant, runID: fmt.Sprintf("%s%d", p.tenant, i)})
		}
	}
	var order []string
	for _, c := range f3.round(nil)[:5] {
		order = append(order, c.runID)
	}
	if diff := cmp.Diff([]string{"one0", "some0", "some1", "some2", "flood0"}, order); diff != "" {
		t.Errorf("a round's order (-want +got):\n%s", diff)
	}
	for i := range maxQueuedTenants + 10 {
		f2.push(&command{tenant: "t" + string(rune('A'+i))})
		f2.round(nil)
	}
	if n := len(f2.tenants); n > maxQueuedTenants+1 {
		t.Errorf("kept %d tenant queues", n)
	}
}

// TestFairQueueLongBacklog: beside another tenant's commands now and
// then, a flood's FIFO that never empties hands its commands out in order,
// fairQuantum a round, its array staying within a few times its backlog;
// the other tenant's command that comes behind a backlog of a thousand
// goes out in the next round, first.
func TestFairQueueLongBacklog(t *testing.T) {
	t.Parallel()
	var f fairQueue
	pushed, next := 0, 0
	push := func(n int) {
		for range n {
			f.push(&command{tenant: "flood", runID: fmt.Sprint(pushed)})
			pushed++
		}
	}
	const backlog = 1000
	push(backlog)
	for i := range 5000 {
		if i%100 == 0 {
			f.push(&command{tenant: "quiet", runID: "q"})
			round := f.round(nil)
			if round[0].runID != "q" {
				t.Fatalf("the quiet tenant's command is not first in the next round: %s", round[0].runID)
			}
			for _, c := range round[1:] {
				if c.runID != fmt.Sprint(next) {
					t.Fatalf("command %s handed out, want %d", c.runID, next)
				}
				next++
			}
			push(fairQuantum)
		}
		round := f.round(nil)
		if len(round) != fairQuantum {
			t.Fatalf("a round of %d, want %d", len(round), fairQuantum)
		}
		for _, c := range round {
			if c.runID != fmt.Sprint(next) {
				t.Fatalf("command %s handed out, want %d", c.runID, next)
			}
			next++
		}
		push(fairQuantum)
	}
	if c := cap(f.tenants["flood"].q); c > 4*backlog {
		t.Errorf("the FIFO's array holds %d for a backlog of %d", c, backlog)
	}
}

// TestCommitShare gives a tenant alone whole batches, and, once another
// tenant is active, at most commitQuantum changes per transaction, the
// rest held back in order for the next ones.
func TestCommitShare(t *testing.T) {
	t.Parallel()
	var s commitShare
	// offer adds n changes of tenant to the open transaction and returns
	// how many it took.
	offer := func(tenant string, n int) int {
		took := 0
		for range n {
			if !s.hold(&delta{tenant: tenant}) {
				took++
			}
		}
		return took
	}
	if got := offer("flood", 500); got != 500 {
		t.Fatalf("a tenant alone: took %d of 500", got)
	}
	s.launched()
	if got := offer("quiet", 1); got != 1 {
		t.Fatalf("quiet took %d", got)
	}
	if got := offer("flood", 500); got != commitQuantum {
		t.Errorf("flood beside quiet: took %d, want %d", got, commitQuantum)
	}
	held := s.launched()
	if len(held) != 500-commitQuantum {
		t.Fatalf("held %d", len(held))
	}
	// The held changes go first into the next transaction, as many as
	// the quantum allows; a new change of the tenant waits behind them.
	took := 0
	for _, d := range held {
		if !s.hold(d) {
			took++
		}
	}
	if took != commitQuantum || offer("flood", 1) != 0 || offer("quiet", 1) != 1 {
		t.Errorf("second transaction took %d held changes", took)
	}
	// Once quiet is out of the window, flood gets whole batches again.
	for range shareWindow + 1 {
		for _, d := range s.launched() {
			d.tenant = ""
		}
		offer("flood", 1)
	}
	s.launched()
	if got := offer("flood", 500); got != 500 {
		t.Errorf("flood alone again: took %d of 500", got)
	}
	if len(s.takeHeld()) != 0 {
		t.Error("changes held while a tenant is alone")
	}
}

// TestFairQueueEngineCommandIsABarrier: a command of no tenant (a cluster
// node's change of shards) is handed out after every command queued before
// it, whatever their tenants' turns, and before every command queued after
// it (a run resumed on a gained shard must not be handled before the drop
// of that shard's stale entries).
func TestFairQueueEngineCommandIsABarrier(t *testing.T) {
	t.Parallel()
	var f fairQueue
	name := func(tenant string, n int) *command {
		return &command{tenant: tenant, runID: tenant + string(rune('0'+n))}
	}
	for i := range 20 {
		f.push(name("a", i%10))
	}
	f.push(name("b", 1))
	f.push(&command{runID: "drop"})
	f.push(name("a", 9))
	f.push(name("b", 2))
	var got []string
	for len(f.ordered) > 0 || len(f.active) > 0 {
		for _, c := range f.round(nil) {
			got = append(got, c.runID)
		}
	}
	drop := -1
	for i, id := range got {
		if id == "drop" {
			drop = i
		}
	}
	if drop != 21 || len(got) != 24 {
		t.Fatalf("the engine command came %d of %d: %v", drop, len(got), got)
	}
	if diff := cmp.Diff([]string{"a9", "b2"}, got[22:]); diff != "" {
		t.Errorf("after the engine command (-want +got):\n%s", diff)
	}
}

// TestCommitShareQuiet lets a tenant's change commit alone only when it
// overtakes none of its tenant's changes and another tenant fills the open
// transaction.
func TestCommitShareQuiet(t *testing.T) {
	t.Parallel()
	var s commitShare
	if s.quiet(&delta{tenant: "quiet"}) {
		t.Error("alone with nothing open")
	}
	s.hold(&delta{tenant: "flood"})
	if s.quiet(&delta{tenant: "flood"}) {
		t.Error("the flood's change overtook its open one")
	}
	if s.quiet(&delta{tenant: "quiet", reads: true}) || s.quiet(&delta{}) {
		t.Error("a change that reads, or of no tenant, went alone")
	}
	if !s.quiet(&delta{tenant: "quiet"}) {
		t.Error("the quiet tenant's change waits for the flood's transaction")
	}
	s.hold(&delta{tenant: "quiet"})
	if s.quiet(&delta{tenant: "quiet"}) {
		t.Error("the quiet tenant's change overtook its open one")
	}
	if !s.several() {
		t.Error("two tenants in the open transaction are not several")
	}
	for range shareWindow + 2 {
		s.launched()
		s.hold(&delta{tenant: "flood"})
	}
	if s.several() {
		t.Error("the quiet tenant is still counted out of the window")
	}
	// The flood's commit flies and the open transaction is empty: a new
	// tenant's first change goes alone, once for that commit; the flood's
	// own next change does not.
	s.launched()
	if s.quiet(&delta{tenant: "flood"}) {
		t.Error("the flood's change went alone beside its own commit")
	}
	if !s.quiet(&delta{tenant: "new"}) {
		t.Error("a new tenant's first change waits for the flood's commit to land")
	}
	if !s.several() {
		t.Error("the new tenant is not counted active")
	}
	if s.quiet(&delta{tenant: "third"}) {
		t.Error("a second change went alone on the same commit's account")
	}
}

// TestCommitShareOnlyTheLighterGoesAlone: of two active tenants, only the
// one making fewer changes commits alone. The flooding tenant's change,
// coming while the quiet tenant's sits in the open transaction (or rides
// the commit in flight), joins the open transaction: alone, its commit in
// flight would hold back the open one with the quiet tenant's change in it.
func TestCommitShareOnlyTheLighterGoesAlone(t *testing.T) {
	t.Parallel()
	var s commitShare
	for range 4 { // the flood fills commits, the quiet tenant rides one now and then
		for range 8 {
			s.hold(&delta{tenant: "flood"})
		}
		s.launched()
	}
	if !s.quiet(&delta{tenant: "quiet"}) {
		t.Fatal("the quiet tenant's first change waits for the flood's commit")
	}
	s.hold(&delta{tenant: "flood"})
	s.launched()
	s.hold(&delta{tenant: "quiet"})
	if s.quiet(&delta{tenant: "flood"}) {
		t.Error("the flood's change went alone beside the quiet tenant's open one")
	}
	for range 8 {
		s.hold(&delta{tenant: "flood"})
	}
	s.launched() // both fly; nothing is open
	if s.quiet(&delta{tenant: "flood"}) {
		t.Error("the flood's change went alone beside the quiet tenant's commit in flight")
	}
	if !s.quiet(&delta{tenant: "quiet"}) {
		t.Error("the quiet tenant's change waits for the flood's commit")
	}
}

// TestFloodChangeJoinsTheQuietTenantsBatch: a flooding tenant's change
// that comes while a quiet tenant's change waits in the open transaction
// joins it, rather than commit alone: its lone commit in flight would
// keep that transaction, and the quiet tenant's change, waiting.
func TestFloodChangeJoinsTheQuietTenantsBatch(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 1000, false)
	wait := func(keys ...string) { t.Helper(); kc.wait(t, keys...) }
	for i := range 8 { // the flood fills commits
		var keys []string
		for j := range 16 {
			keys = append(keys, fmt.Sprintf("f-%d-%d", i, j))
		}
		kc.submit("flood", keys...)
		wait(keys...)
	}
	commits := func() uint64 {
		c.stats.Lock()
		defer c.stats.Unlock()
		return c.batches
	}
	before := commits()
	// The flood's commit syncs; the quiet tenant's change commits alone
	// beside it and syncs too; its next change waits in the open
	// transaction for them; the flood's next change comes.
	kc.submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	kc.submit("quiet", "slow-q0")
	gs.waitHeld(t)
	readyAhead(t, c)
	kc.submit("quiet", "q1")
	kc.submit("flood", "f-1")
	gs.open()
	gs.openSlow()
	wait("flood-0", "slow-q0", "q1", "f-1")
	if got := commits() - before; got != 3 {
		t.Errorf("%d commits, want 3: the flood's change committed alone", got)
	}
}

// TestQuietTenantCommitsAlone: while a flooding tenant's commit syncs and
// its next changes fill the open transaction, a quiet tenant's change
// commits in a transaction of its own, at once, and does not wait for the
// flood's commit to land.
func TestQuietTenantCommitsAlone(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 1000, false)
	var seenMu sync.Mutex
	seen := map[string]bool{}
	c.shared = func(tenant string) {
		seenMu.Lock()
		seen[tenant] = true
		seenMu.Unlock()
	}
	release := gs.open
	done, submit := kc.done, kc.submit
	wait := func(keys ...string) { t.Helper(); kc.wait(t, keys...) }
	// Both tenants are active, then the flood's commit is held syncing.
	submit("quiet", "q0")
	wait("q0")
	submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	submit("flood", "flood-1")
	submit("quiet", "q1")
	wait("q1")
	select {
	case <-done["flood-1"]:
		t.Fatal("the flood's next change is durable before its commit in flight")
	default:
	}
	release()
	wait("flood-0")
	wait("flood-1")
	if got := readKeys(t, gs, nil); len(got) != 4 {
		t.Errorf("the store holds %v", got)
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	if diff := cmp.Diff(map[string]bool{"quiet": true, "flood": true}, seen); diff != "" {
		t.Errorf("tenants told active (-want +got):\n%s", diff)
	}
}

// TestQuietTenantFirstChangeCommitsAlone: while a flooding tenant's commit
// syncs and nothing else is open, another tenant's very first change
// commits alone at once, rather than wait in the open transaction for the
// flood's commit to land and then sync with the flood's next changes.
func TestQuietTenantFirstChangeCommitsAlone(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 1000, false)
	release := gs.open
	done, submit := kc.done, kc.submit
	wait := func(keys ...string) { t.Helper(); kc.wait(t, keys...) }
	submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	submit("quiet", "q0")
	wait("q0")
	submit("flood", "flood-1") // the open transaction's, behind flood-0
	select {
	case <-done["flood-0"]:
		t.Fatal("the flood's commit is durable before its release")
	default:
	}
	release()
	wait("flood-0")
	wait("flood-1")
	if got := readKeys(t, gs, nil); len(got) != 3 {
		t.Errorf("the store holds %v", got)
	}
}

// TestQuietTenantToldInOrder: a quiet tenant's change that commits alone
// is told after its tenant's changes in commits launched before it (alone
// or in a batch), even when its own commit lands first, so what hangs on
// the answers (live events, waiters) sees each tenant's changes in order;
// and it still does not wait for the commits of other tenants.
func TestQuietTenantToldInOrder(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 1000, true)
	release := gs.open
	wait := func(keys ...string) { t.Helper(); kc.wait(t, keys...) }
	// The flood's commit is held syncing and its next change is open; the
	// quiet tenant's first change commits alone and is held too (its key
	// starts with "flood"), then its second commits alone and lands.
	kc.submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	kc.submit("flood", "flood-1")
	kc.submit("quiet", "flood-q0")
	gs.waitHeld(t)
	readyAhead(t, c)
	kc.submit("quiet", "q1")
	gs.waitLanded(t)
	// Another tenant's lone change is told without waiting for the held
	// commits, which carry none of its changes.
	readyAhead(t, c)
	kc.submit("other", "o0")
	gs.waitLanded(t)
	wait("o0")
	release()
	wait("flood-0", "flood-1", "flood-q0", "q1")
	told := kc.toldOrder()
	order := map[string][]string{}
	for _, key := range told {
		tenant := map[string]string{"flood-0": "flood", "flood-1": "flood", "flood-q0": "quiet", "q1": "quiet", "o0": "other"}[key]
		order[tenant] = append(order[tenant], key)
	}
	want := map[string][]string{"flood": {"flood-0", "flood-1"}, "quiet": {"flood-q0", "q1"}, "other": {"o0"}}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("each tenant's changes told in order (-want +got):\n%s (told %v)", diff, told)
	}
}

// TestBatchToldAfterLoneCommit: a batch carrying a quiet tenant's change
// is told after that tenant's lone commit launched before it, even when
// the batch lands first.
func TestBatchToldAfterLoneCommit(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 2, true)
	release, releaseSlow := gs.open, gs.openSlow
	wait := func(keys ...string) { t.Helper(); kc.wait(t, keys...) }
	// The quiet tenant's first change commits alone behind the flood's
	// commit and is held; the flood's commit lands.
	kc.submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	kc.submit("quiet", "slow-q0")
	gs.waitHeld(t)
	release()
	wait("flood-0")
	// Nothing else is in flight: the quiet tenant's next change goes to the
	// open transaction, which the flood's change fills; that batch lands
	// before the lone commit.
	kc.submit("quiet", "q1")
	kc.submit("flood", "f1")
	gs.waitLanded(t)
	releaseSlow()
	wait("slow-q0", "q1", "f1")
	told := kc.toldOrder()
	var quiet []string
	for _, key := range told {
		if key == "slow-q0" || key == "q1" {
			quiet = append(quiet, key)
		}
	}
	if diff := cmp.Diff([]string{"slow-q0", "q1"}, quiet); diff != "" {
		t.Errorf("the quiet tenant's changes told (-want +got):\n%s (told %v)", diff, told)
	}
}

// TestCommitterAwaitsQuietTenant: once a quiet tenant's commit lands, the
// flood's open batch, with nothing in flight, waits for the quiet tenant's
// next change and commits it in the same transaction, rather than syncing
// alone while that change waits for it; and when no change comes, the
// batch goes once the wait (on the fake clock) is over.
func TestCommitterAwaitsQuietTenant(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 1000, false)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.clock = clk
	release := gs.open
	done, submit := kc.done, kc.submit
	wait := func(keys ...string) { t.Helper(); kc.wait(t, keys...) }
	pending := func(key string) bool {
		select {
		case err := <-done[key]:
			done[key] <- err
			return false
		default:
			return true
		}
	}
	commits := func() uint64 {
		c.stats.Lock()
		defer c.stats.Unlock()
		return c.batches
	}
	held := func(key string) {
		t.Helper()
		testwait.Until(t, "the committer waits for the quiet tenant", func() bool {
			if clk.Timers() == 1 {
				return true
			}
			if !pending(key) {
				t.Fatalf("%s committed without waiting for the quiet tenant", key)
			}
			return false
		})
		if !pending(key) {
			t.Fatalf("%s committed without waiting for the quiet tenant", key)
		}
	}
	// The quiet tenant's change commits alone behind the flood's commit.
	submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	submit("quiet", "q0")
	wait("q0")
	submit("flood", "flood-1", "flood-2")
	release()
	wait("flood-0")
	// q0 landed: the flood's open batch waits for the quiet tenant's next
	// change and takes it.
	held("flood-1")
	before := commits()
	submit("quiet", "q1")
	wait("q1", "flood-1", "flood-2")
	if n := commits() - before; n != 1 {
		t.Errorf("the quiet change and the flood's batch took %d commits, want 1", n)
	}
	// That batch held fewer of the quiet tenant's changes than of the
	// flood's: its next change is awaited again, until the wait is over.
	submit("flood", "flood-3")
	held("flood-3")
	clk.Advance(aheadMax)
	wait("flood-3")
	if got := readKeys(t, gs, nil); len(got) != 6 {
		t.Errorf("the store holds %v", got)
	}
}

// TestLightTenantToldFirst: once a batch holding a quiet tenant's change
// and the flood's lands, the quiet tenant's change is told at once and the
// flood's once the committer launched its next commit (here the flood's
// next batch, once the wait for the quiet tenant is over), not before;
// all at once while that tenant's changes of its kind (here one whose run
// goes on) lately came too late to be awaited.
func TestLightTenantToldFirst(t *testing.T) {
	t.Parallel()
	for _, slow := range []bool{false, true} {
		t.Run(fmt.Sprintf("slow=%v", slow), func(t *testing.T) {
			t.Parallel()
			gs, c, kc, clk := deferringCommitter(t)
			if slow {
				c.ahead.sureThink = aheadMax
			}
			pending := func(keys ...string) []string {
				var told []string
				for _, key := range keys {
					select {
					case err := <-kc.done[key]:
						kc.done[key] <- err
						told = append(told, key)
					default:
					}
				}
				return told
			}
			awaits := func() {
				t.Helper()
				testwait.Until(t, "the committer waits for the quiet tenant", func() bool { return clk.Timers() == 1 })
			}
			floodBesideQuiet(t, gs, c, kc, clk, "q1")
			kc.wait(t, "q1")
			if slow {
				kc.wait(t, "flood-1", "flood-2")
				return
			}
			if told := pending("flood-1", "flood-2"); told != nil {
				t.Fatalf("%v told before the committer's next launch", told)
			}
			// The flood's next change waits for the quiet tenant's, which
			// does not come: the batch goes once the wait is over, and its
			// launch tells the flood's changes of the batch before.
			kc.submit("flood", "flood-3")
			awaits()
			if told := pending("flood-1", "flood-2"); told != nil {
				t.Fatalf("%v told before the committer's next launch", told)
			}
			clk.Advance(aheadMax)
			kc.wait(t, "flood-1", "flood-2", "flood-3")
			if got := readKeys(t, gs, nil); len(got) != 6 {
				t.Errorf("the store holds %v", got)
			}
		})
	}
}

// TestLightTenantToldFirstNotWhenFailed: a batch holding a quiet tenant's
// change and the flood's that fails tells every change its error at once:
// none waits for the committer's next launch (here there is none), and
// none hears nil.
func TestLightTenantToldFirstNotWhenFailed(t *testing.T) {
	t.Parallel()
	gs, c, kc, clk := deferringCommitter(t)
	floodBesideQuiet(t, gs, c, kc, clk, "fail-q1") // the store fails it
	for _, key := range []string{"fail-q1", "flood-1", "flood-2"} {
		if err := testwait.Recv(t, kc.done[key], key+" told"); !errors.Is(err, errGatedFail) {
			t.Errorf("%s told %v, want the commit's failure", key, err)
		}
	}
}

// TestCloseTellsDeferredChanges: the flood's changes of a batch that told
// the quiet tenant's first, waiting for the committer's next launch, are
// told when the committer closes instead, which launches none.
func TestCloseTellsDeferredChanges(t *testing.T) {
	t.Parallel()
	gs, c, kc, clk := deferringCommitter(t)
	floodBesideQuiet(t, gs, c, kc, clk, "q1")
	kc.wait(t, "q1")
	c.close()
	kc.wait(t, "flood-1", "flood-2")
}

// deferringCommitter is a gatedCommitter on a fake clock whose others'
// changes of a batch that told a quiet tenant's first are told only at its
// next launch (or its close).
func deferringCommitter(t *testing.T) (*gatedStore, *committer, *keyedChanges, *clock.Fake) {
	t.Helper()
	gs, c, kc := gatedCommitter(t, 1000, false)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.clock = clk
	c.othersMax = time.Hour
	return gs, c, kc, clk
}

// floodBesideQuiet launches a batch of the flood's flood-1 and flood-2
// and the quiet tenant's change of key (one whose run goes on): the quiet
// tenant's q0 commits alone behind the flood's held commit, then the
// flood's open batch waits for the quiet tenant's next change and takes
// it.
func floodBesideQuiet(t *testing.T, gs *gatedStore, c *committer, kc *keyedChanges, clk *clock.Fake, key string) {
	t.Helper()
	kc.submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	kc.submit("quiet", "q0")
	kc.wait(t, "q0")
	kc.submit("flood", "flood-1", "flood-2")
	gs.open()
	kc.wait(t, "flood-0")
	testwait.Until(t, "the committer waits for the quiet tenant", func() bool { return clk.Timers() == 1 })
	kc.submitAs("quiet", true, key)
}

// TestCommitterAwaitsARunThatGoesOn: once a quiet tenant's change that
// leaves its run going on landed, the flood's open batch waits for that
// run's next change up to aheadMax, and goes when aheadMax is over.
func TestCommitterAwaitsARunThatGoesOn(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 1000, false)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.clock = clk
	pending := func(key string) bool {
		select {
		case err := <-kc.done[key]:
			kc.done[key] <- err
			return false
		default:
			return true
		}
	}
	// The quiet tenant's change commits alone behind the flood's commit.
	kc.submit("flood", "flood-0")
	gs.waitHeld(t)
	readyAhead(t, c)
	kc.submitAs("quiet", true, "q0")
	kc.wait(t, "q0")
	kc.submit("flood", "flood-1", "flood-2")
	gs.open()
	kc.wait(t, "flood-0")
	awaits := func(key string) {
		t.Helper()
		testwait.Until(t, "the committer waits for the quiet tenant", func() bool { return clk.Timers() == 1 })
		clk.Advance(aheadMax - time.Microsecond)
		if clk.Timers() != 1 || !pending(key) {
			t.Fatalf("%s did not wait aheadMax for the next change of a run that goes on", key)
		}
	}
	awaits("flood-1")
	// The run's next change joins the flood's batch; that batch holds
	// fewer of the quiet tenant's changes than of the flood's, and the
	// quiet one leaves its run going on: the next batch waits for it too,
	// and goes once aheadMax is over.
	kc.submitAs("quiet", true, "q1")
	kc.wait(t, "q1", "flood-1", "flood-2")
	kc.submit("flood", "flood-3")
	awaits("flood-3")
	clk.Advance(time.Microsecond)
	kc.wait(t, "flood-3")
}

// TestAnticipationLearnsThinkTime: the flood's batch waits for a quiet
// tenant that comes back soon, up to aheadMax, not after that; not at all
// once quiet tenants come back late; and a batch's light tenant is one with
// fewer changes than another's, never a tenant alone.
func TestAnticipationLearnsThinkTime(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := &committer{clock: clk}
	defer c.ahead.stop()
	for _, tc := range []struct {
		open map[string]int
		want string
	}{{map[string]int{"flood": 3}, ""}, {map[string]int{"flood": 3, "quiet": 1}, "quiet"}, {map[string]int{"a": 2, "b": 2}, ""}} {
		c.share.inOpen = tc.open
		if got := c.share.light(); got != tc.want {
			t.Errorf("light of %v = %q, want %q", tc.open, got, tc.want)
		}
	}
	c.share.inOpen = map[string]int{"flood": 3}
	if c.awaitQuiet() {
		t.Fatal("waited with no quiet tenant")
	}
	c.ahead.landed("quiet", clk.Now(), false)
	if !c.awaitQuiet() {
		t.Fatal("the flood's batch did not wait for the quiet tenant")
	}
	clk.Advance(100 * time.Microsecond)
	if !c.ahead.came("quiet", clk.Now()) || c.awaitQuiet() {
		t.Fatal("the quiet tenant's change did not end the wait")
	}
	awaitsAheadMax(t, c, clk, false)
	// Quiet tenants that come back a millisecond later turn the wait off.
	for range 6 {
		c.ahead.landed("quiet", clk.Now(), false)
		clk.Advance(aheadMax)
		c.ahead.came("quiet", clk.Now())
	}
	c.ahead.landed("quiet", clk.Now(), false)
	if c.awaitQuiet() {
		t.Error("waited for tenants that come back late")
	}
	// One that comes back soon again turns it back on.
	for range 8 {
		clk.Advance(50 * time.Microsecond)
		c.ahead.came("quiet", clk.Now())
		c.ahead.landed("quiet", clk.Now(), false)
	}
	if !c.awaitQuiet() {
		t.Error("did not wait again for a tenant that comes back soon")
	}
	// A tenant that never comes back is forgotten.
	clk.Advance(aheadForget)
	if c.awaitQuiet() || c.ahead.on.Load() {
		t.Error("still awaiting a tenant gone for good")
	}
}

// TestAnticipationCoversTheDeviation: a quiet tenant whose next change
// mostly comes within 40 µs but every fourth time after 240 µs (its next
// run, after its caller heard of the last one's end) is awaited for that
// late one too, even after a streak of early ones, which would otherwise
// commit alone behind the flood's next commit. The wait stays bounded by
// aheadMax.
func TestAnticipationCoversTheDeviation(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := &committer{clock: clk}
	defer c.ahead.stop()
	c.share.inOpen = map[string]int{"flood": 3}
	for range 8 {
		for _, took := range []time.Duration{240, 40, 40, 40} {
			c.ahead.landed("quiet", clk.Now(), false)
			clk.Advance(took * time.Microsecond)
			if !c.ahead.came("quiet", clk.Now()) {
				t.Fatal("the quiet tenant was not awaited")
			}
		}
	}
	c.ahead.landed("quiet", clk.Now(), false)
	clk.Advance(240 * time.Microsecond)
	if !c.awaitQuiet() {
		c.ahead.mu.Lock()
		t.Errorf("the wait ended before 240 µs: think %v", c.ahead.think)
		c.ahead.mu.Unlock()
	}
	clk.Advance(aheadMax - 240*time.Microsecond)
	if c.awaitQuiet() {
		t.Error("the wait outlasted aheadMax")
	}
}

// TestAnticipationAwaitsUpToAheadMax: a quiet tenant whose next change
// came within 30 µs many times over is still awaited up to aheadMax (a wait
// learnt from those times would have ended after tens of microseconds, and
// its next run's start, which comes later, would commit alone behind the
// flood's commit); a change after aheadMax is not awaited, and a tenant
// that never came back is forgotten.
func TestAnticipationAwaitsUpToAheadMax(t *testing.T) {
	t.Parallel()
	const us = time.Microsecond
	c, clk := floodedCommitter(t)
	for range 64 {
		c.ahead.landed("quiet", clk.Now(), false)
		clk.Advance(30 * us)
		if !c.ahead.came("quiet", clk.Now()) {
			t.Fatal("the quiet tenant was not awaited")
		}
	}
	awaitsAheadMax(t, c, clk, false)
	c.ahead.landed("quiet", clk.Now(), false)
	clk.Advance(aheadForget)
	if c.awaitQuiet() || c.ahead.on.Load() {
		t.Error("still awaiting a tenant gone for good")
	}
}

// awaitsAheadMax fails t unless, once a commit holding the quiet tenant's
// change landed (leaving a run going on when sure), the flood's batch waits
// for its next change up to aheadMax and not past it; the change then
// comes.
func awaitsAheadMax(t *testing.T, c *committer, clk *clock.Fake, sure bool) {
	t.Helper()
	c.ahead.landed("quiet", clk.Now(), sure)
	clk.Advance(aheadMax - time.Microsecond)
	if !c.awaitQuiet() {
		t.Errorf("the wait (sure %v) ended before aheadMax", sure)
	}
	clk.Advance(time.Microsecond)
	if c.awaitQuiet() {
		t.Errorf("the wait (sure %v) outlasted aheadMax", sure)
	}
	c.ahead.came("quiet", clk.Now())
}

// floodedCommitter returns a committer on a fake clock whose open
// transaction holds three changes of a flooding tenant, for the tests of
// its wait for a quiet tenant (see anticipation).
func floodedCommitter(t *testing.T) (*committer, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := &committer{clock: clk}
	t.Cleanup(c.ahead.stop)
	c.share.inOpen = map[string]int{"flood": 3}
	return c, clk
}

// TestLightTenantByRate: a commit's light tenant, whose next change the
// flood's batch awaits, is the tenant that makes fewer changes lately than
// another active tenant, whether that other one has changes in the commit
// or only committed within the window; never a tenant alone.
func TestLightTenantByRate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		open   map[string]int
		recent []string
		rate   map[string]int // in changes per commit
		want   string
	}{
		{"fewer in the batch", map[string]int{"flood": 3, "quiet": 1}, nil, nil, "quiet"},
		{"as many, none seen before", map[string]int{"a": 2, "b": 2}, nil, nil, ""},
		{"as many in the batch, fewer lately", map[string]int{"flood": 1, "quiet": 1}, []string{"flood", "quiet"},
			map[string]int{"flood": 8}, "quiet"},
		{"alone in the batch, the flood active", map[string]int{"quiet": 1}, []string{"flood", "quiet"},
			map[string]int{"flood": 8}, "quiet"},
		{"alone in the batch, no other tenant", map[string]int{"quiet": 1}, []string{"quiet"}, nil, ""},
		{"the flood alone in the batch", map[string]int{"flood": 8}, []string{"flood", "quiet"},
			map[string]int{"flood": 8}, ""},
		{"alone, another as light", map[string]int{"quiet": 1}, []string{"other", "quiet"},
			map[string]int{"other": 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := commitShare{inOpen: tc.open, recent: map[string]uint64{}, rate: map[string]int{}, lone: map[string]int{}}
			for _, r := range tc.recent {
				s.recent[r] = 1
			}
			for r, n := range tc.rate {
				s.rate[r] = n * rateOne
			}
			if got := s.light(); got != tc.want {
				t.Errorf("light = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCommitterAwaitsQuietTenantAfterItsOwnCommit: a quiet tenant's change
// that committed in a transaction of its own (nothing of the flood's in
// it) while the flood is active is awaited as one beside the flood's
// changes is: the flood's next batch, with nothing in flight, waits for
// the quiet tenant's next change and takes it, rather than syncing while
// that change would wait for it.
func TestCommitterAwaitsQuietTenantAfterItsOwnCommit(t *testing.T) {
	t.Parallel()
	gs, c, kc := gatedCommitter(t, 1000, false)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.clock = clk
	wait := func(keys ...string) { t.Helper(); kc.wait(t, keys...) }
	commits := func() uint64 {
		c.stats.Lock()
		defer c.stats.Unlock()
		return c.batches
	}
	// The flood commits many changes at a time: flood-0 alone, the 16
	// after it together once it landed.
	kc.submit("flood", "flood-0")
	gs.waitHeld(t)
	var floods []string
	for i := 1; i <= 16; i++ {
		floods = append(floods, fmt.Sprintf("flood-%d", i))
	}
	kc.submit("flood", floods...)
	gs.open()
	wait(append([]string{"flood-0"}, floods...)...)
	// Nothing is in flight: the quiet tenant's change commits at once, in
	// a transaction of its own.
	before := commits()
	kc.submit("quiet", "q0")
	wait("q0")
	if n := commits() - before; n != 1 {
		t.Fatalf("the quiet change took %d commits, want 1", n)
	}
	// The flood's next change waits for the quiet tenant's.
	kc.submit("flood", "flood-17")
	testwait.Until(t, "the flood's batch waits for the quiet tenant", func() bool {
		select {
		case err := <-kc.done["flood-17"]:
			t.Fatalf("flood-17 committed (%v) without waiting for the quiet tenant", err)
		default:
		}
		return clk.Timers() == 1
	})
	before = commits()
	kc.submit("quiet", "q1")
	wait("q1", "flood-17")
	if n := commits() - before; n != 1 {
		t.Errorf("the quiet change and the flood's batch took %d commits, want 1", n)
	}
}

// keyedChanges submits changes to a committer that each set one key (to
// "v") and waits for them to be durable.
type keyedChanges struct {
	c    *committer
	done map[string]chan error // by key: the change's result, once
	mu   sync.Mutex
	told []string // the keys in the order their changes were told
}

func newKeyedChanges(c *committer) *keyedChanges {
	return &keyedChanges{c: c, done: map[string]chan error{}}
}

// submit submits one change of tenant per key.
func (k *keyedChanges) submit(tenant string, keys ...string) { k.submitAs(tenant, false, keys...) }

// submitAs is submit; goesOn says each change leaves its run going on (see
// delta.goesOn).
func (k *keyedChanges) submitAs(tenant string, goesOn bool, keys ...string) {
	for _, key := range keys {
		ch := make(chan error, 1)
		k.done[key] = ch
		k.c.submit(&delta{tenant: tenant, goesOn: goesOn, apply: setKey([]byte(key), []byte("v")), after: func(err error) {
			k.mu.Lock()
			k.told = append(k.told, key)
			k.mu.Unlock()
			ch <- err
		}})
	}
}

// toldOrder returns the keys of the changes told so far, in order.
func (k *keyedChanges) toldOrder() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.told)
}

// wait fails t unless the change of each key is durable within 10 s.
func (k *keyedChanges) wait(t *testing.T, keys ...string) {
	t.Helper()
	for _, key := range keys {
		select {
		case err := <-k.done[key]:
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s is not durable", key)
		}
	}
}

// readyAhead waits until the committer's opener holds as many
// transactions ready as it keeps, so that the changes submitted next (the
// open transaction's, and each quiet change that commits alone) find one
// each, however the committer's loop interleaves with the test.
func readyAhead(t *testing.T, c *committer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.opener.ready) < cap(c.opener.ready) {
		if time.Now().After(deadline) {
			t.Fatal("no transaction opened ahead")
		}
		runtime.Gosched()
	}
}

// gatedCommitter makes a committer of at most batch changes a transaction
// over a gatedStore (with landed when landed is set), and the keyedChanges
// to submit its changes. When the test ends the store's gates open, before
// the committer closes (which waits for the held commits).
func gatedCommitter(t *testing.T, batch int, landed bool) (*gatedStore, *committer, *keyedChanges) {
	t.Helper()
	gs := &gatedStore{Store: testStore(t), held: make(chan struct{}, 8), release: make(chan struct{}), slow: make(chan struct{})}
	if landed {
		gs.landed = make(chan struct{}, 8)
	}
	gs.pipe = gs.Store.(store.Pipeliner)
	c := newCommitter(gs, batch, nil, Failpoints{}, nil)
	// An opener that never replaces its ready transactions: a refresh
	// between readyAhead and a submit would leave none for a lone commit.
	c.opener = newOpener(gs, nil, func() {})
	t.Cleanup(c.close)
	t.Cleanup(func() {
		gs.openSlow()
		gs.open()
	})
	return gs, c, newKeyedChanges(c)
}

// gatedStore holds the answer of every pipelined commit that writes a key
// starting with "flood" until release is closed, as a slow sync would, and
// of one that writes a key starting with "slow" (and none with "flood")
// until slow is closed; held says one is held. When landed is set, every
// other pipelined commit sends on it once the store made it durable, before
// its answer.
type gatedStore struct {
	store.Store
	pipe    store.Pipeliner
	held    chan struct{}
	release chan struct{}
	slow    chan struct{}
	landed  chan struct{}

	releaseOnce, slowOnce sync.Once
}

// waitHeld fails t unless a commit is held within testwait.Limit.
func (g *gatedStore) waitHeld(t *testing.T) {
	t.Helper()
	testwait.Recv(t, g.held, "a commit was held")
}

// waitLanded fails t unless a commit that is not held lands within
// testwait.Limit.
func (g *gatedStore) waitLanded(t *testing.T) {
	t.Helper()
	testwait.Recv(t, g.landed, "a commit that is not held landed")
}

// open closes release, once.
func (g *gatedStore) open() { g.releaseOnce.Do(func() { close(g.release) }) }

// openSlow closes slow, once.
func (g *gatedStore) openSlow() { g.slowOnce.Do(func() { close(g.slow) }) }

func (g *gatedStore) Begin(ctx context.Context) (store.PipelinedTxn, error) {
	tx, err := g.pipe.Begin(ctx)
	return &gatedTxn{PipelinedTxn: tx, g: g}, err
}

type gatedTxn struct {
	store.PipelinedTxn
	g                 *gatedStore
	flood, slow, fail bool
}

func (t *gatedTxn) Set(k, v []byte) error {
	t.flood = t.flood || bytes.HasPrefix(k, []byte("flood"))
	t.slow = t.slow || bytes.HasPrefix(k, []byte("slow"))
	t.fail = t.fail || bytes.HasPrefix(k, []byte("fail"))
	return t.PipelinedTxn.Set(k, v)
}

// errGatedFail is the failure of a gated commit that writes a key starting
// with "fail".
var errGatedFail = errors.New("gated store: the commit failed")

func (t *gatedTxn) CommitAsync(done func(error)) {
	if t.fail { // the store fails it, as a failed sync would
		t.PipelinedTxn.Discard()
		go done(errGatedFail)
		return
	}
	gate := t.g.release
	if !t.flood {
		gate = t.g.slow
	}
	if !t.flood && !t.slow {
		if t.g.landed == nil {
			t.PipelinedTxn.CommitAsync(done)
			return
		}
		t.PipelinedTxn.CommitAsync(func(err error) {
			t.g.landed <- struct{}{}
			done(err)
		})
		return
	}
	t.g.held <- struct{}{}
	t.PipelinedTxn.CommitAsync(func(err error) {
		<-gate
		done(err)
	})
}

// TestAnticipationAwaitsARunThatGoesOn: after a commit whose quiet change
// left its run going on (a call in flight), the flood's batch waits up to
// aheadMax for that run's next change; how long such changes take is
// smoothed apart from the others (a caller's next run): while they take
// over half of aheadMax (slow calls) nothing waits for them, while the
// other wait still holds, and the other way round.
func TestAnticipationAwaitsARunThatGoesOn(t *testing.T) {
	t.Parallel()
	const us = time.Microsecond
	c, clk := floodedCommitter(t)
	come := func(took time.Duration, sure bool) {
		t.Helper()
		c.ahead.landed("quiet", clk.Now(), sure)
		clk.Advance(took)
		if !c.ahead.came("quiet", clk.Now()) {
			t.Fatal("the quiet tenant was not awaited")
		}
	}
	awaited := func(sure bool) bool {
		c.ahead.landed("quiet", clk.Now(), sure)
		waits := c.awaitQuiet()
		c.ahead.came("quiet", clk.Now())
		return waits
	}
	awaitsAheadMax(t, c, clk, true)
	// Slow calls: the sure changes come a millisecond late, and are no
	// longer awaited; the others still are.
	for range 6 {
		come(aheadMax, true)
	}
	if awaited(true) {
		t.Error("waited for runs whose calls come back late")
	}
	if !awaited(false) {
		t.Error("the wait for a change not sure to come was turned off by slow calls")
	}
	// Quick calls again, and callers that come back late: the other way
	// round.
	for range 8 {
		come(20*us, true)
	}
	for range 6 {
		come(aheadMax, false)
	}
	if awaited(false) {
		t.Error("waited for callers that come back late")
	}
	if !awaited(true) {
		t.Error("the wait for a run that goes on was turned off by late callers")
	}
}
