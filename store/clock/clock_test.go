package clock

import (
	"github.com/bas-platform/bas/internal/testwait"

	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFakeFiresDueTimersInOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		after   []time.Duration
		advance time.Duration
		fired   []bool
		waiting int
	}{
		{"none due", []time.Duration{time.Second, time.Minute}, 999 * time.Millisecond, []bool{false, false}, 2},
		{"exactly due", []time.Duration{time.Second, time.Minute}, time.Second, []bool{true, false}, 1},
		{"all due", []time.Duration{time.Second, time.Minute}, time.Hour, []bool{true, true}, 0},
		{"zero fires at once", []time.Duration{0, -time.Second}, 0, []bool{true, true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFake(t0)
			var timers []Timer
			for _, d := range tt.after {
				timers = append(timers, f.NewTimer(d))
			}
			f.Advance(tt.advance)
			var fired []bool
			for _, tm := range timers {
				select {
				case <-tm.C():
					fired = append(fired, true)
				default:
					fired = append(fired, false)
				}
			}
			if diff := cmp.Diff(tt.fired, fired); diff != "" {
				t.Errorf("fired (-want +got):\n%s", diff)
			}
			if got := f.Timers(); got != tt.waiting {
				t.Errorf("Timers() = %d, want %d", got, tt.waiting)
			}
		})
	}
}

func TestFakeStopAndSetNeverBackwards(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(t0)
	tm := f.NewTimer(time.Minute)
	if !tm.Stop() {
		t.Fatal("Stop of a waiting timer = false, want true")
	}
	if tm.Stop() {
		t.Fatal("second Stop = true, want false")
	}
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	f.Set(t0)
	if got, want := f.Now(), t0.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("Set backwards moved the clock to %v, want it kept at %v", got, want)
	}
}

func TestRealTimerFires(t *testing.T) {
	tm := Real{}.NewTimer(time.Millisecond)
	testwait.Recv(t, tm.C(), "the 1ms timer fired")
	if tm.Stop() {
		t.Fatal("Stop after firing = true, want false")
	}
}
