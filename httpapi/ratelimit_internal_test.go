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
