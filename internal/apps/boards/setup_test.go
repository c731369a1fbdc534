package boards

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// event is one event the recording sink got.
type event struct {
	Tenant string
	Name   string
	Data   map[string]any
}

// recordingSink stands in for the run engine's outbox: Emit writes the
// event into the store inside the caller's transaction, so an event exists
// exactly when its change was committed.
type recordingSink struct {
	st  store.Store
	mu  sync.Mutex
	seq int
}

func (r *recordingSink) Emit(tx store.Txn, tenant, name string, data any) error {
	b, err := json.Marshal(event{Tenant: tenant, Name: name, Data: data.(map[string]any)})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.seq++
	n := r.seq
	r.mu.Unlock()
	return tx.Set(store.Key(store.System, "test-outbox", n), b)
}

func (r *recordingSink) Kick() {}

// events returns the committed events in the order they were written.
func (r *recordingSink) events(t testing.TB) []event {
	t.Helper()
	var out []event
	err := r.st.View(context.Background(), func(rd store.Reader) error {
		return rd.Scan(store.ScanOptions{Prefix: store.Key(store.System, "test-outbox")}, func(_, v []byte) error {
			var e event
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type bundle struct {
	svc    *Service
	st     store.Store
	clock  *clock.Fake
	sink   *recordingSink
	tenant string
	ctx    context.Context
}

var t0 = time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)

func setup(t testing.TB) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	fc := clock.NewFake(t0)
	sink := &recordingSink{st: st}
	svc := New(Config{Store: st, Clock: fc, Events: sink, BatchSize: 3})
	return &bundle{svc: svc, st: st, clock: fc, sink: sink, tenant: "ten_a", ctx: context.Background()}
}

func (b *bundle) board(t testing.TB, in BoardIn) *Detail {
	t.Helper()
	d, err := b.svc.CreateBoard(b.ctx, b.tenant, in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (b *bundle) item(t testing.TB, board string, in ItemIn) *Item {
	t.Helper()
	it, err := b.svc.CreateItem(b.ctx, b.tenant, board, in)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// keysOf returns the keys of items, in order.
func keysOf(items []*Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

func sp(s string) *string { return &s }
func ip(i int) *int       { return &i }

func storePage() store.Page { return store.Page{} }
