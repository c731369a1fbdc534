package runengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/google/go-cmp/cmp"
)

func testStore(t *testing.T) store.Store {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func readKeys(t *testing.T, st store.Store, prefix []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: prefix}, func(k, v []byte) error {
			got[string(k[len(prefix):])] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCommitterLandsEveryDelta submits deltas from many goroutines, among
// them deltas that fail, deltas that read what earlier ones wrote, and
// deltas too big to share a transaction, and checks what each was told and
// what the store holds.
func TestCommitterLandsEveryDelta(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	c := newCommitter(st, 50, nil, Failpoints{}, nil)
	prefix := store.Key("t", "k")
	key := func(s string) []byte { return append(append([]byte(nil), prefix...), s...) }
	big := make([]byte, 300<<10) // four of these are over one transaction's limit

	type result struct {
		name string
		err  error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	submit := func(name string, d *delta) {
		wg.Add(1)
		d.after = func(err error) {
			mu.Lock()
			results = append(results, result{name, err})
			mu.Unlock()
			wg.Done()
		}
		c.submit(d)
	}
	want := map[string]string{}
	var wantMu sync.Mutex
	var senders sync.WaitGroup
	for g := range 8 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for i := range 40 {
				name := fmt.Sprintf("g%d-%d", g, i)
				val := name
				if i%10 == 3 {
					val = string(big)
				}
				submit(name, &delta{apply: setKey(key(name), []byte(val)), counters: []counterInc{{"t-count", 1}}})
				wantMu.Lock()
				want[name] = val
				wantMu.Unlock()
			}
		}()
	}
	testwait.Wait(t, &senders, "the senders submitted their changes")
	boom := errors.New("boom")
	submit("bad", &delta{apply: func(tx store.Txn) error {
		if err := tx.Set(key("bad"), []byte("half")); err != nil {
			return err
		}
		return boom
	}})
	// A reading delta sees every delta submitted before it.
	submit("reader", &delta{reads: true, apply: func(tx store.Txn) error {
		v, err := tx.Get(key("g7-39"))
		if err != nil {
			return err
		}
		return tx.Set(key("copy"), v)
	}})
	want["copy"] = "g7-39"
	testwait.Wait(t, &wg, "every change was told")

	errsByName := map[string]error{}
	for _, r := range results {
		if _, dup := errsByName[r.name]; dup {
			t.Errorf("%s told twice", r.name)
		}
		errsByName[r.name] = r.err
	}
	for name := range want {
		if name != "copy" && errsByName[name] != nil {
			t.Errorf("%s: %v", name, errsByName[name])
		}
	}
	if !errors.Is(errsByName["bad"], boom) || errsByName["reader"] != nil {
		t.Errorf("bad: %v, reader: %v", errsByName["bad"], errsByName["reader"])
	}
	short := cmp.Transformer("short", func(s string) string {
		if len(s) > 32 {
			return fmt.Sprintf("%d bytes", len(s))
		}
		return s
	})
	if diff := cmp.Diff(want, readKeys(t, st, prefix), short); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	var n int64
	if err := st.View(context.Background(), func(r store.Reader) error {
		var err error
		n, err = readCounter(r, []byte("t-count"))
		return err
	}); err != nil || n != 320 {
		t.Errorf("counter = %d, %v; want 320", n, err)
	}
	c.close()
}

// TestCommitterForgetsCounters: the committer keeps at most about
// maxCounters counter values (daily counters add keys every day), and a
// counter it forgot is read back, so no increment is lost.
func TestCommitterForgetsCounters(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	c := newCommitter(st, 50, nil, Failpoints{}, nil)
	c.maxCounters = 4 // before the first submit, as the loop reads it then
	const days = 10
	for i := range days {
		d := &delta{apply: setKey(store.Key("t", "k", strconv.Itoa(i)), []byte("v")),
			counters: []counterInc{{"t-total", 1}, {"t-day-" + strconv.Itoa(i), 1}}}
		if err := c.commitWait(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	c.close()
	// One batch's counters may be known beyond the bound until the next.
	if n := len(c.counters); n > c.maxCounters+2 {
		t.Errorf("%d counter values kept, want at most %d", n, c.maxCounters+2)
	}
	want := map[string]int64{"t-total": days}
	for i := range days {
		want["t-day-"+strconv.Itoa(i)] = 1
	}
	got := map[string]int64{}
	err := st.View(context.Background(), func(r store.Reader) error {
		for k := range want {
			n, err := readCounter(r, []byte(k))
			if err != nil {
				return err
			}
			got[k] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}

// TestCommitterCloseCommitsQueued checks that close commits what was
// submitted before it, and refuses what comes after.
func TestCommitterCloseCommitsQueued(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	c := newCommitter(st, 1000, nil, Failpoints{}, nil)
	prefix := store.Key("t", "q")
	want := map[string]string{}
	errs := make(chan error, 200)
	for i := range 200 {
		name := fmt.Sprintf("%03d", i)
		want[name] = name
		c.submit(&delta{apply: setKey(append(append([]byte(nil), prefix...), name...), []byte(name)), reads: i%50 == 49,
			after: func(err error) { errs <- err }})
	}
	c.close()
	for i := range 200 {
		if err := testwait.Recv(t, errs, fmt.Sprintf("change %d of 200 was told", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, readKeys(t, st, prefix)); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	late := make(chan error, 1)
	c.submit(&delta{apply: setKey(append(prefix, 'x'), nil), after: func(err error) { late <- err }})
	if err := testwait.Recv(t, late, "the change after close was told"); !errors.Is(err, errClosed) {
		t.Errorf("after close: %v", err)
	}
}

// countedPipe is a store.Pipeliner whose transactions only tell when they
// are begun and discarded.
type countedPipe struct {
	mu        sync.Mutex
	n         int
	discarded []int
	begun     chan int
}

func (p *countedPipe) Begin(context.Context) (store.PipelinedTxn, error) {
	p.mu.Lock()
	id := p.n
	p.n++
	p.mu.Unlock()
	p.begun <- id
	return &countedTxn{p: p, id: id}, nil
}

type countedTxn struct {
	store.PipelinedTxn // never called
	p                  *countedPipe
	id                 int
}

func (t *countedTxn) Discard() {
	t.p.mu.Lock()
	t.p.discarded = append(t.p.discarded, t.id)
	t.p.mu.Unlock()
}

// TestOpenerRefreshesIdleTransactions: transactions an opener holds ready
// are replaced at each refresh tick (an open transaction holds back the
// store's read mark), and stop discards every one it opened.
func TestOpenerRefreshesIdleTransactions(t *testing.T) {
	p := &countedPipe{begun: make(chan int, 64)}
	refresh := make(chan time.Time)
	o := newOpener(p, refresh, func() {})
	waitBegun := func(upTo int) {
		t.Helper()
		for {
			select {
			case id := <-p.begun:
				if id == upTo {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("transaction %d never begun", upTo)
			}
		}
	}
	discarded := func() []int {
		p.mu.Lock()
		defer p.mu.Unlock()
		got := slices.Clone(p.discarded)
		slices.Sort(got)
		return got
	}
	waitBegun(maxFlights) // maxFlights ready, one more waiting to be
	if got := discarded(); len(got) != 0 {
		t.Fatalf("discarded %v before any refresh", got)
	}
	select {
	case refresh <- time.Time{}:
	case <-time.After(10 * time.Second):
		t.Fatal("the opener never took the refresh")
	}
	waitBegun(2*maxFlights + 1)
	var want []int // the ready ones and the one waiting
	for id := range maxFlights + 1 {
		want = append(want, id)
	}
	if diff := cmp.Diff(want, discarded()); diff != "" {
		t.Fatalf("discarded at the refresh (-want +got):\n%s", diff)
	}
	if tx := o.take(); tx.(*countedTxn).id != maxFlights+1 {
		t.Fatalf("took transaction %d, want the first opened after the refresh", tx.(*countedTxn).id)
	}
	o.stop()
	got := discarded()
	if len(got) != p.n-1 { // all but the one taken
		t.Fatalf("after stop %d of %d opened transactions discarded: %v", len(got), p.n, got)
	}
}
