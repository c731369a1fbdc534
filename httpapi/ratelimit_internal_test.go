package httpapi

import (
	"strconv"
	"testing"
	"time"

	"github.com/bas-platform/bas/store/clock"
)

// TestLimiterFloodKeepsOtherBuckets: a flood of distinct keys beyond the
// limiter's capacity cannot reset the bucket of a caller it already
// limits; the keys that do not fit share one bucket, and buckets that
// refilled make room again.
func TestLimiterFloodKeepsOtherBuckets(t *testing.T) {
	c := clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	l := newLimiter(1, 1, c, "")
	if err := l.take("victim"); err != nil {
		t.Fatal(err)
	}
	if l.take("victim") == nil {
		t.Fatal("the victim's second request passed")
	}
	overflowed := 0
	for i := range maxBuckets + 10 {
		if l.take("flood-"+strconv.Itoa(i)) != nil {
			overflowed++
		}
	}
	if err := l.take("victim"); err == nil {
		t.Error("the flood reset the victim's bucket")
	}
	if overflowed != 10 {
		t.Errorf("%d flood keys refused, want the 10 beyond the capacity but one", overflowed)
	}
	// A second later every bucket refilled: a new key gets its own again.
	c.Advance(time.Second)
	if err := l.take("newcomer"); err != nil {
		t.Errorf("a new key after the buckets refilled: %v", err)
	}
	if err := l.take("victim"); err != nil {
		t.Errorf("the victim after a second: %v", err)
	}
}

// TestLimiterKeyOfParts: parts are one key joined by NULs (a tenant and
// person share the budget of their joined key, and no other), and taking
// from a known bucket allocates nothing.
func TestLimiterKeyOfParts(t *testing.T) {
	l := newLimiter(1e-9, 2, clock.NewFake(time.Unix(0, 0)), "")
	for _, parts := range [][]string{{"ten_1", "usr_1"}, {"ten_1\x00usr_1"}} {
		if err := l.take(parts...); err != nil {
			t.Fatalf("take(%q): %v", parts, err)
		}
	}
	if err := l.take("ten_1", "usr_1"); err == nil {
		t.Error("a third take from a budget of 2 passed")
	}
	for _, parts := range [][]string{{"ten_1", "usr_2"}, {"ten_1usr_1"}, {"ten_1", "usr_1", ""}} {
		if err := l.take(parts...); err != nil {
			t.Errorf("take(%q) shared another key's budget: %v", parts, err)
		}
	}
	free := newLimiter(1e9, 1e9, clock.NewFake(time.Unix(0, 0)), "")
	_ = free.take("ten_1", "usr_1")
	if n := testing.AllocsPerRun(50, func() { _ = free.take("ten_1", "usr_1") }); n != 0 {
		t.Errorf("take from a known bucket: %v allocations, want 0", n)
	}
}
