package clock_test

import (
	"fmt"
	"time"

	"github.com/bas-platform/bas/store/clock"
)

// A fake clock moves only when told to; a timer fires when the fake time
// reaches it, so a test never sleeps to wait for time.
func ExampleFake() {
	c := clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	t := c.NewTimer(time.Hour)

	c.Advance(59 * time.Minute)
	select {
	case <-t.C():
		fmt.Println("fired early")
	default:
		fmt.Println("waiting at", c.Now().Format("15:04"))
	}

	c.Advance(time.Minute)
	fmt.Println("fired at", (<-t.C()).Format("15:04"))
	// Output:
	// waiting at 09:59
	// fired at 10:00
}
