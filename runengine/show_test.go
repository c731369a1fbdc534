package runengine

import (
	"context"
	"fmt"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestDispatcherShowsAnEventOnce hands the hub the same events again, as a
// scan of the outbox and the in-memory copy (or a Publish) of one event
// do when they cross: subscribers see each event once, also across the
// generations of ids the dispatcher keeps.
func TestDispatcherShowsAnEventOnce(t *testing.T) {
	d := &dispatcher{e: &Engine{hub: newHub(3 * shownGen)}}
	sub := d.e.hub.subscribe(SubscribeParams{Tenant: "ten_a"})
	ev := func(n int) *Event { return &Event{ID: fmt.Sprintf("evt_%06d", n), Tenant: "ten_a", Name: "thing.made"} }

	var want []string
	d.show([]*Event{ev(1), ev(2)})
	d.show([]*Event{ev(2), ev(3)}) // 2 again: a scan found it first
	d.show([]*Event{ev(1)})
	want = append(want, "evt_000001", "evt_000002", "evt_000003")
	// Fill a whole generation: the early ids move to the previous one and
	// are still recognised.
	for i := 4; i < 4+shownGen; i++ {
		d.show([]*Event{ev(i)})
		want = append(want, ev(i).ID)
	}
	d.show([]*Event{ev(3), ev(4 + shownGen - 1)})

	var got []string
	for {
		batch, missed, _ := sub.next()
		if missed != "" {
			t.Fatalf("missed events at %s", missed)
		}
		if len(batch) == 0 {
			break
		}
		for _, n := range batch {
			got = append(got, n.Event.ID)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events shown (-want +got):\n%s", diff)
	}
}

// TestDispatcherShowIdle: with no subscriber, nothing is kept.
func TestDispatcherShowIdle(t *testing.T) {
	d := &dispatcher{e: &Engine{hub: newHub(16)}}
	d.show([]*Event{{ID: "evt_1", Tenant: "ten_a"}})
	if d.shown != nil {
		t.Fatalf("ids kept with no subscriber: %v", d.shown)
	}
}

// TestSubscriberGetsAnEventMadeBeforeIt: an event nothing consumed when
// its change was made (so it is not written to the outbox) still reaches a
// subscriber that came before the change committed.
func TestSubscriberGetsAnEventMadeBeforeIt(t *testing.T) {
	e, _ := memEngine(t, Config{})
	st := e.st
	op, post := e.outboxWrite("ten_a", "thing.made", map[string]any{"n": 1}, e.clock.Now(), nil, nil)
	sub := e.hub.subscribe(SubscribeParams{Tenant: "ten_a"})
	if err := st.Update(context.Background(), func(tx store.Txn) error { return op(tx) }); err != nil {
		t.Fatal(err)
	}
	post()
	batch, missed, _ := sub.next()
	var got []string
	for _, n := range batch {
		got = append(got, n.Event.Name+" "+fmt.Sprint(n.Event.Data["n"]))
	}
	if diff := cmp.Diff([]string{"thing.made 1"}, got); diff != "" || missed != "" {
		t.Errorf("events (-want +got):\n%s (missed %q)", diff, missed)
	}
	// Not written to the outbox: nothing consumes it.
	if err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "outbox")}, func(k, _ []byte) error {
			t.Errorf("outbox holds %q", k)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
}
