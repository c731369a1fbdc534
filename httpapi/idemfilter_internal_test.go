package httpapi

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/cockroachdb/errors"
)

// heldView is a store whose View, once armed, signals when its snapshot
// is open and waits for go on before it reads.
type heldView struct {
	store.Store
	open, proceed chan struct{}
}

func (s *heldView) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(rd store.Reader) error {
		s.open <- struct{}{}
		<-s.proceed
		return fn(rd)
	})
}

// putIdemForTest stores a done record of (tenant, id) as the write path
// does: it adds the pair to f (when f is not nil) before it commits.
func putIdemForTest(t *testing.T, st store.Store, f *idemFilter, tenant, id string) {
	t.Helper()
	rec := &idemRecord{ID: id, Fingerprint: digest("f"), State: idemDone, ExpiresAt: time.Now().UTC().Add(idempotencyTTL)}
	if f != nil {
		f.add(tenant, id, rec.ExpiresAt)
	}
	raw := make([]byte, idemHeadLen)
	if err := putIdemHead(raw, rec.State, false, rec.ExpiresAt, rec.Fingerprint); err != nil {
		t.Fatal(err)
	}
	if err := st.Update(t.Context(), func(tx store.Txn) error { return idempotencyRecords.PutRaw(tx, tenant, rec, raw) }); err != nil {
		t.Fatal(err)
	}
}

// TestIdemFilterKeepsEveryStoredKey: the filter never says "never stored"
// of a key whose record was stored, whether it was stored before the
// filter (the fill finds it, in every tenant), or while the fill's
// snapshot was open (its writer added it); before the fill is done it
// says "maybe" of every key; and of keys never stored it mostly says
// "never" (else it saves no read).
func TestIdemFilterKeepsEveryStoredKey(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	type pair struct{ tenant, id string }
	var before, during []pair
	for i := range 300 {
		// Tenants that sort around each other ("a", "a\x00b", "ab").
		tenant := []string{"a", "a\x00b", "ab", store.System}[i%4]
		before = append(before, pair{tenant, digest("before", fmt.Sprint(i))})
		during = append(during, pair{tenant, digest("during", fmt.Sprint(i))})
	}
	for _, p := range before {
		putIdemForTest(t, st, nil, p.tenant, p.id)
	}
	// Other collections' records around them.
	if err := st.Update(t.Context(), func(tx store.Txn) error {
		for _, k := range [][]byte{store.Key("a", "r", "idea", "x"), store.Key("ab", "r", "idem0", "y"), store.Key("b", "i", "idem", "z")} {
			if err := tx.Set(k, []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	f := newIdemFilter()
	held := &heldView{Store: st, open: make(chan struct{}), proceed: make(chan struct{})}
	filled := make(chan error, 1)
	go func() { filled <- f.fill(t.Context(), held, time.Now()) }()
	testwait.Recv(t, held.open, "the fill opened its snapshot")
	for _, p := range during {
		putIdemForTest(t, st, f, p.tenant, p.id)
	}
	if !f.mayHold("a", digest("never")) {
		t.Error("before its fill is done, the filter said a key was never stored")
	}
	close(held.proceed)
	if err := testwait.Recv(t, filled, "the fill ended"); err != nil {
		t.Fatalf("fill: %v", err)
	}
	if !f.ready.Load() {
		t.Fatal("the filter is not ready after its fill")
	}
	for _, p := range append(before, during...) {
		if !f.mayHold(p.tenant, p.id) {
			t.Errorf("the filter says (%q, %s) was never stored", p.tenant, p.id)
		}
	}
	for _, p := range []pair{{"b", "z"}, {"a", "x"}, {"ab", "y"}} {
		if f.mayHold(p.tenant, p.id) {
			t.Errorf("another collection's record (%q, %s) is in the filter", p.tenant, p.id)
		}
	}
	if maybes := neverStoredMaybes(f, 1000); maybes > 10 {
		t.Errorf("the filter said maybe of %d of 1000 keys never stored", maybes)
	}
}

// neverStoredMaybes is of how many of n keys never stored f says maybe.
func neverStoredMaybes(f *idemFilter, n int) int {
	maybes := 0
	for i := range n {
		if f.mayHold("a", digest("never", fmt.Sprint(i))) {
			maybes++
		}
	}
	return maybes
}

// TestIdemFilterGrows: a filter that takes many more keys than its first
// layer's share adds layers, so of keys never stored it still mostly says
// "never"; it never says "never stored" of a key added, also while other
// writers add keys and layers; and it adds no layer past its bound, where
// it still says "maybe" of every key added.
func TestIdemFilterGrows(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 4, 5000
	expires := time.Now().Add(idempotencyTTL)
	f := newIdemFilterOf(1<<12, idemFilterMaxBits) // 256 keys in the first layer
	f.ready.Store(true)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				id := digest("stored", fmt.Sprint(w, i))
				f.add("a", id, expires)
				if !f.mayHold("a", id) {
					t.Errorf("the filter says %s, just added, was never stored", id)
					return
				}
			}
		})
	}
	wg.Wait()
	for w := range writers {
		for i := range perWriter {
			if id := digest("stored", fmt.Sprint(w, i)); !f.mayHold("a", id) {
				t.Fatalf("the filter says %s was never stored", id)
			}
		}
	}
	if n := len(*f.layers.Load()); n < 6 {
		t.Errorf("%d layers after 20,000 keys from a first layer of 256, want at least 6", n)
	}
	if maybes := neverStoredMaybes(f, 10000); maybes > 300 {
		t.Errorf("the filter said maybe of %d of 10,000 keys never stored, want at most 300", maybes)
	}

	bounded := newIdemFilterOf(1<<12, 1<<14) // room for a second layer, not a third
	bounded.ready.Store(true)
	for i := range 5000 {
		bounded.add("a", digest("stored", fmt.Sprint(i)), expires)
	}
	if n := len(*bounded.layers.Load()); n != 2 {
		t.Errorf("%d layers within a bound of 16,384 bits, want 2", n)
	}
	for i := range 5000 {
		if id := digest("stored", fmt.Sprint(i)); !bounded.mayHold("a", id) {
			t.Fatalf("the bounded filter says %s was never stored", id)
		}
	}
}

// TestIdemFilterNoneOnCluster: a cluster node, whose store other servers
// write too, has no filter: every keyed request reads the store.
func TestIdemFilterNoneOnCluster(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	ws, err := bas.Open(context.Background(), bas.Options{Dir: t.TempDir(), PostgresDSN: dsn,
		PostgresSchema: pgtest.Schema(t, dsn), Cluster: true, NodeID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := New(ws, Options{})
	if h.idemFilter != nil {
		t.Fatal("a cluster node's handler has a filter of stored keys")
	}
	// A record another server stored is found.
	putIdemForTest(t, ws.Store(), nil, "acme", digest("other"))
	req := &idemRequest{h: h, tenant: "acme", id: digest("other"), fingerprint: digest("f")}
	rec, err := req.lookup(t.Context())
	if err != nil || rec == nil {
		t.Fatalf("lookup of a key another server stored: %v, %v; want its record", rec, err)
	}
}

// BenchmarkIdemFilterFill fills a filter from a Badger directory of
// 100,000 idempotency records in 10 tenants (ns/op is one fill; keys/s
// the rate).
func BenchmarkIdemFilterFill(b *testing.B) {
	st, err := badgerstore.Open(badgerstore.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	const keys, batch = 100_000, 1000
	raw := make([]byte, idemHeadLen)
	expires := time.Now().UTC().Add(idempotencyTTL)
	if err := putIdemHead(raw, idemDone, false, expires, digest("f")); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < keys; i += batch {
		err := st.Update(b.Context(), func(tx store.Txn) error {
			for j := i; j < i+batch; j++ {
				rec := &idemRecord{ID: digest(fmt.Sprint(j)), State: idemDone, ExpiresAt: expires}
				if err := idempotencyRecords.PutRaw(tx, fmt.Sprint("t", j%10), rec, raw); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := newIdemFilter().fill(b.Context(), st, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(keys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// TestIdemFilterFillEndsWithTheWorkspace: a fill still scanning when its
// workspace closes stops (the engine's Done ends its context), so Close
// does not wait for the scan of every stored key; the filter stays
// unready, and every lookup reads the store.
func TestIdemFilterFillEndsWithTheWorkspace(t *testing.T) {
	t.Parallel()
	ws, err := bas.Open(t.Context(), bas.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	done := ws.Engine().Done()
	select {
	case <-done:
		t.Fatal("the engine's Done is closed while the workspace is open")
	default:
	}
	st := ws.Store()
	err = st.Update(t.Context(), func(tx store.Txn) error {
		for i := range 3000 {
			id := digest("stored", fmt.Sprint(i))
			rec := &idemRecord{ID: id, Fingerprint: digest("f"), State: idemDone, ExpiresAt: time.Now().UTC().Add(idempotencyTTL)}
			raw := make([]byte, idemHeadLen)
			if err := putIdemHead(raw, rec.State, false, rec.ExpiresAt, rec.Fingerprint); err != nil {
				return err
			}
			if err := idempotencyRecords.PutRaw(tx, "t1", rec, raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := untilDone(done) // as startFill's
	defer cancel()
	f := newIdemFilter()
	held := &heldView{Store: st, open: make(chan struct{}), proceed: make(chan struct{})}
	filled := make(chan error, 1)
	go func() { filled <- f.fill(ctx, held, time.Now()) }()
	testwait.Recv(t, held.open, "the fill opened its snapshot")
	closed := make(chan error, 1)
	go func() { closed <- ws.Close() }()
	testwait.Recv(t, done, "the engine's Done closed")
	// (The fill's context ends a moment after Done, in its own goroutine:
	// the scan goes on once it has.)
	testwait.Recv(t, ctx.Done(), "the fill's context ended")
	close(held.proceed)
	if err := testwait.Recv(t, filled, "the fill ended"); !errors.Is(err, context.Canceled) {
		t.Errorf("fill: %v, want context.Canceled", err)
	}
	if err := testwait.Recv(t, closed, "the workspace closed"); err != nil {
		t.Errorf("close: %v", err)
	}
	if f.ready.Load() || !f.mayHold("t1", digest("never")) {
		t.Error("a fill that ended early left the filter ready")
	}
}

// TestIdemFilterForgets: over eight days of keys added every 45 minutes,
// with the clock stepping back by half a period now and then, the filter never says
// "never stored" of a key whose record has not expired, holds about ten
// windows of layers (not every key since it began), and of keys that
// expired two periods ago or more it mostly says "never"; so does a
// filter whose bound keeps it from adding a layer per window.
func TestIdemFilterForgets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		first, max    int
		wantMaxLayers int
	}{
		{"unbounded", idemFilterBits, idemFilterMaxBits, 10},
		{"bounded", idemFilterMinBits, 6 * idemFilterMinBits, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newIdemFilterOf(c.first, c.max)
			f.ready.Store(true)
			type key struct {
				id      string
				expires time.Time
			}
			var keys []key
			start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			now, maxLayers, first := start, 0, 0
			step := idemFilterPeriod / 4
			for i := range 640 {
				now = now.Add(step)
				if i%5 == 4 {
					now = now.Add(-3 * step) // the clock steps back, by half a period in all
				}
				for j := range 100 {
					k := key{digest("k", fmt.Sprint(i, j)), now.Add(idempotencyTTL)}
					f.add("a", k.id, k.expires)
					keys = append(keys, k)
				}
				for first < len(keys) && keys[first].expires.Before(now.Add(-idemFilterPeriod)) {
					first++ // expired before any time the clock steps back to
				}
				for _, k := range keys[first:] {
					if now.Before(k.expires) && !f.mayHold("a", k.id) {
						t.Fatalf("at %s the filter says %s, expiring at %s, was never stored", now, k.id, k.expires)
					}
				}
				maxLayers = max(maxLayers, len(*f.layers.Load()))
				total := 0
				for _, l := range *f.layers.Load() {
					total += len(l.bits) * 64
				}
				if total > c.max {
					t.Fatalf("at %s the layers hold %d bits, over the bound %d", now, total, c.max)
				}
			}
			if maxLayers > c.wantMaxLayers {
				t.Errorf("up to %d layers, want at most %d", maxLayers, c.wantMaxLayers)
			}
			forgotten, maybes := 0, 0
			for _, k := range keys {
				if k.expires.Add(2 * idemFilterPeriod).After(now) {
					continue
				}
				forgotten++
				if f.mayHold("a", k.id) {
					maybes++
				}
			}
			t.Logf("up to %d layers; maybe of %d of %d keys that expired two periods ago or more", maxLayers, maybes, forgotten)
			if forgotten < 20000 || maybes > forgotten/100 {
				t.Errorf("of %d keys that expired two periods ago or more, the filter said maybe of %d; want at most 1%%",
					forgotten, maybes)
			}
		})
	}
}

// storedKeys notes the keys a test wrote to an idemFilter, with when each
// expires.
type storedKeys struct {
	f    *idemFilter
	keys []storedKey
}

// storedKey is one key written to the filter and when it expires.
type storedKey struct {
	id      string
	expires time.Time
}

// write adds a new key written at at, expiring idempotencyTTL later.
func (s *storedKeys) write(at time.Time) {
	k := storedKey{digest("k", fmt.Sprint(len(s.keys)+1)), at.Add(idempotencyTTL)}
	s.f.add("a", k.id, k.expires)
	s.keys = append(s.keys, k)
}

// check fails the test if a key not yet expired at now is reported absent.
func (s *storedKeys) check(t *testing.T, now time.Time, what string) {
	t.Helper()
	for _, k := range s.keys {
		if now.Before(k.expires) && !s.f.mayHold("a", k.id) {
			t.Fatalf("%s, at %s: the filter says %s, expiring at %s, was never stored", what, now, k.id, k.expires)
		}
	}
}

// TestIdemFilterClockJumpsForward: keys are written every half period for
// two days; then the clock jumps two days ahead for one keyed write (or a
// few within a window) and comes back. No key stored before the jump and
// not expired at the time the clock comes back to may be reported absent:
// a retry of it within its 24 hours must read its record. Before, the
// write ahead dropped every layer whose window ended a period before it,
// the live keys' too. Once the clock has come back, writes go on for four
// more days: they go to the layer of the write ahead until the clock
// passes its window, then the filter forgets again (at most 11 layers).
func TestIdemFilterClockJumpsForward(t *testing.T) {
	t.Parallel()
	for _, ahead := range []int{1, 3} {
		t.Run(fmt.Sprint(ahead, " writes ahead"), func(t *testing.T) {
			t.Parallel()
			f := newIdemFilterOf(idemFilterMinBits, idemFilterMaxBits)
			f.ready.Store(true)
			s := &storedKeys{f: f}
			now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			write := s.write
			check := func(what string) {
				t.Helper()
				s.check(t, now, what)
			}
			step := idemFilterPeriod / 2
			for range 32 { // two days
				now = now.Add(step)
				write(now)
			}
			check("before the jump")
			for i := range ahead {
				write(now.Add(48*time.Hour + time.Duration(i)*time.Minute))
			}
			now = now.Add(step) // back, half a period after the last write before the jump
			check("after the clock came back")
			maxLayers := 0
			for range 64 {
				now = now.Add(step)
				write(now)
				check("after the clock came back")
				maxLayers = max(maxLayers, len(*f.layers.Load()))
			}
			if maxLayers > 11 {
				t.Errorf("up to %d layers once the clock came back, want at most 11", maxLayers)
			}
			forgotten, maybes := 0, 0
			for _, k := range s.keys {
				if k.expires.Add(2 * idemFilterPeriod).Before(now) {
					forgotten++
					if f.mayHold("a", k.id) {
						maybes++
					}
				}
			}
			if forgotten < 40 || maybes > forgotten/100 {
				t.Errorf("of %d keys that expired two periods ago or more, the filter said maybe of %d; want at most 1%%", forgotten, maybes)
			}
		})
	}
}

// TestIdemFilterClockJumpsForwardTwice: keys are written every half period
// for two days; then the clock jumps two days ahead for one keyed write and
// comes back, and again, four days ahead, half a period later. No key not
// yet expired at the time the clock comes back to may be reported absent.
// Before, the second write ahead dropped the layers that ended before the
// first (the write that began the window before it), the live keys' among
// them.
func TestIdemFilterClockJumpsForwardTwice(t *testing.T) {
	t.Parallel()
	f := newIdemFilterOf(idemFilterMinBits, idemFilterMaxBits)
	f.ready.Store(true)
	s := &storedKeys{f: f}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	write := s.write
	check := func(what string) {
		t.Helper()
		s.check(t, now, what)
	}
	step := idemFilterPeriod / 2
	for range 32 { // two days
		now = now.Add(step)
		write(now)
	}
	for _, ahead := range []time.Duration{48 * time.Hour, 96 * time.Hour} {
		write(now.Add(ahead))
		now = now.Add(step) // back
		check(fmt.Sprint("after a write ", ahead, " ahead"))
		write(now)
	}
	for range 64 {
		now = now.Add(step)
		write(now)
		check("after the clock came back")
	}
}
