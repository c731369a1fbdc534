package cron_test

import (
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/cron"
	"github.com/bas-platform/bas/internal/errs"
)

// Weekdays at 09:00 Berlin time: 08:00Z in winter, 07:00Z in summer.
func Example() {
	s, err := cron.Parse("0 9 * * MON-FRI", "Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2025, 3, 27, 12, 0, 0, 0, time.UTC) // a Thursday
	for range 3 {
		at = s.Next(at)
		fmt.Println(at.Format(time.RFC3339), at.In(s.Location()).Format("Mon 15:04 MST"))
	}
	// Output:
	// 2025-03-28T08:00:00Z Fri 09:00 CET
	// 2025-03-31T07:00:00Z Mon 09:00 CEST
	// 2025-04-01T07:00:00Z Tue 09:00 CEST
}

// Invalid input comes back as violations for a 422.
func ExampleParse_invalid() {
	_, err := cron.Parse("0 9 * *", "Europe/Bonn")
	for _, v := range errs.Violations(err) {
		fmt.Println(v)
	}
	// Output:
	// trigger.timezone: unknown time zone "Europe/Bonn": use an IANA name such as Europe/Berlin
	// trigger.cron: must have five fields (minute hour day-of-month month day-of-week), got 4
}
