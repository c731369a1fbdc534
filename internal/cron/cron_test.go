package cron

import (
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// fires returns the next n fire times after from, as RFC 3339 UTC strings.
func fires(t testing.TB, s *Schedule, from string, n int) []string {
	t.Helper()
	var out []string
	at := mustTime(t, from)
	for range n {
		at = s.Next(at)
		if at.IsZero() {
			out = append(out, "never")
			break
		}
		out = append(out, at.UTC().Format(time.RFC3339))
	}
	return out
}

func TestNext(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, expr, zone, from string
		want                   []string
	}{
		{"every minute", "* * * * *", "", "2025-01-01T10:00:00Z",
			[]string{"2025-01-01T10:01:00Z", "2025-01-01T10:02:00Z", "2025-01-01T10:03:00Z"}},
		{"strictly after a fire time", "0 9 * * *", "", "2025-01-01T09:00:00Z",
			[]string{"2025-01-02T09:00:00Z", "2025-01-03T09:00:00Z"}},
		{"sub-second before a fire time", "0 9 * * *", "", "2025-01-01T08:59:59.5Z",
			[]string{"2025-01-01T09:00:00Z"}},
		{"just after a fire time", "0 9 * * *", "", "2025-01-01T09:00:00.001Z",
			[]string{"2025-01-02T09:00:00Z"}},
		{"every 15 minutes", "*/15 * * * *", "", "2025-01-01T10:07:00Z",
			[]string{"2025-01-01T10:15:00Z", "2025-01-01T10:30:00Z", "2025-01-01T10:45:00Z", "2025-01-01T11:00:00Z"}},
		{"step from an offset", "5/20 * * * *", "", "2025-01-01T10:00:00Z",
			[]string{"2025-01-01T10:05:00Z", "2025-01-01T10:25:00Z", "2025-01-01T10:45:00Z", "2025-01-01T11:05:00Z"}},
		{"stepped range", "0 8-18/5 * * *", "", "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T08:00:00Z", "2025-01-01T13:00:00Z", "2025-01-01T18:00:00Z", "2025-01-02T08:00:00Z"}},
		{"hour range", "30 9-11 * * *", "", "2025-01-01T10:00:00Z",
			[]string{"2025-01-01T10:30:00Z", "2025-01-01T11:30:00Z", "2025-01-02T09:30:00Z"}},
		{"lists", "0,30 6,18 * * *", "", "2025-01-01T07:00:00Z",
			[]string{"2025-01-01T18:00:00Z", "2025-01-01T18:30:00Z", "2025-01-02T06:00:00Z", "2025-01-02T06:30:00Z"}},
		{"weekdays by number (2025-01-03 is a Friday)", "0 9 * * 1-5", "", "2025-01-03T10:00:00Z",
			[]string{"2025-01-06T09:00:00Z", "2025-01-07T09:00:00Z"}},
		{"weekday names", "0 9 * * MON,wed,Fri", "", "2025-01-03T10:00:00Z",
			[]string{"2025-01-06T09:00:00Z", "2025-01-08T09:00:00Z", "2025-01-10T09:00:00Z"}},
		{"weekday name range", "0 12 * * tue-THU", "", "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T12:00:00Z", "2025-01-02T12:00:00Z", "2025-01-07T12:00:00Z"}},
		{"sunday is 0", "0 0 * * 0", "", "2025-01-01T00:00:00Z",
			[]string{"2025-01-05T00:00:00Z", "2025-01-12T00:00:00Z"}},
		{"month names", "0 0 1 jan,JUL *", "", "2025-02-01T00:00:00Z",
			[]string{"2025-07-01T00:00:00Z", "2026-01-01T00:00:00Z"}},
		{"question mark", "0 0 1 * ?", "", "2025-01-15T00:00:00Z",
			[]string{"2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"}},
		{"last possible day skips short months", "0 0 31 * *", "", "2025-01-31T00:00:00Z",
			[]string{"2025-03-31T00:00:00Z", "2025-05-31T00:00:00Z"}},
		{"day of month or day of week", "0 0 13 * 5", "", "2025-06-01T00:00:00Z",
			[]string{"2025-06-06T00:00:00Z", "2025-06-13T00:00:00Z", "2025-06-20T00:00:00Z"}},
		{"leap day", "0 0 29 2 *", "", "2025-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"Berlin winter", "0 9 * * 1-5", "Europe/Berlin", "2025-01-06T00:00:00Z",
			[]string{"2025-01-06T08:00:00Z", "2025-01-07T08:00:00Z"}},
		{"Berlin summer", "0 9 * * 1-5", "Europe/Berlin", "2025-07-07T00:00:00Z",
			[]string{"2025-07-07T07:00:00Z", "2025-07-08T07:00:00Z"}},
		{"Berlin across the spring change", "0 9 * * *", "Europe/Berlin", "2025-03-29T12:00:00Z",
			[]string{"2025-03-30T07:00:00Z", "2025-03-31T07:00:00Z"}},
		{"New York", "30 17 * * *", "America/New_York", "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T22:30:00Z", "2025-01-02T22:30:00Z"}},
		{"Kathmandu quarter-hour offset", "0 0 * * *", "Asia/Kathmandu", "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T18:15:00Z", "2025-01-02T18:15:00Z"}},
		{"explicit UTC", "0 0 * * *", "UTC", "2025-01-01T12:00:00Z",
			[]string{"2025-01-02T00:00:00Z"}},

		// Clocks go forward in Berlin on 2025-03-30 at 02:00 CET (01:00Z).
		{"spring gap fires at the change", "30 2 * * *", "Europe/Berlin", "2025-03-29T12:00:00Z",
			[]string{"2025-03-30T01:00:00Z", "2025-03-31T00:30:00Z", "2025-04-01T00:30:00Z"}},
		{"spring gap fires once for several names", "*/15 2 * * *", "Europe/Berlin", "2025-03-29T12:00:00Z",
			[]string{"2025-03-30T01:00:00Z", "2025-03-31T00:00:00Z", "2025-03-31T00:15:00Z"}},
		{"spring gap and the hour after", "0 2,3 * * *", "Europe/Berlin", "2025-03-29T12:00:00Z",
			[]string{"2025-03-30T01:00:00Z", "2025-03-31T00:00:00Z", "2025-03-31T01:00:00Z"}},
		{"spring gap not named by that weekday", "30 2 * * 1", "Europe/Berlin", "2025-03-29T12:00:00Z",
			[]string{"2025-03-31T00:30:00Z"}},
		{"spring gap hourly follows elapsed time", "30 * * * *", "Europe/Berlin", "2025-03-30T00:00:00Z",
			[]string{"2025-03-30T00:30:00Z", "2025-03-30T01:30:00Z", "2025-03-30T02:30:00Z"}},
		{"spring gap from inside the change hour", "30 2 * * *", "Europe/Berlin", "2025-03-30T01:00:00Z",
			[]string{"2025-03-31T00:30:00Z"}},
		// Clocks go back in Berlin on 2025-10-26 at 03:00 CEST (01:00Z).
		{"autumn repeat fires once", "30 2 * * *", "Europe/Berlin", "2025-10-25T12:00:00Z",
			[]string{"2025-10-26T00:30:00Z", "2025-10-27T01:30:00Z"}},
		{"autumn repeat fires once for each name", "*/30 2 * * *", "Europe/Berlin", "2025-10-25T12:00:00Z",
			[]string{"2025-10-26T00:00:00Z", "2025-10-26T00:30:00Z", "2025-10-27T01:00:00Z"}},
		{"autumn repeat from inside the second copy", "30 2 * * *", "Europe/Berlin", "2025-10-26T01:10:00Z",
			[]string{"2025-10-27T01:30:00Z"}},
		{"autumn range", "30 1-3 * * *", "Europe/Berlin", "2025-10-25T12:00:00Z",
			[]string{"2025-10-25T23:30:00Z", "2025-10-26T00:30:00Z", "2025-10-26T02:30:00Z", "2025-10-27T00:30:00Z"}},
		{"autumn hourly follows elapsed time", "0 * * * *", "Europe/Berlin", "2025-10-25T23:30:00Z",
			[]string{"2025-10-26T00:00:00Z", "2025-10-26T01:00:00Z", "2025-10-26T02:00:00Z"}},
		// Lord Howe Island moves its clocks by 30 minutes.
		{"half-hour change back", "45 1 * * *", "Australia/Lord_Howe", "2025-04-05T12:00:00Z",
			[]string{"2025-04-05T14:45:00Z", "2025-04-06T15:15:00Z"}},
		{"half-hour change forward", "15 2 * * *", "Australia/Lord_Howe", "2025-10-04T12:00:00Z",
			[]string{"2025-10-04T15:30:00Z", "2025-10-05T15:15:00Z"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(test.expr, test.zone)
			if err != nil {
				t.Fatalf("Parse(%q, %q): %v", test.expr, test.zone, err)
			}
			got := fires(t, s, test.from, len(test.want))
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("Next of %q in %q from %s (-want +got):\n%s", test.expr, test.zone, test.from, diff)
			}
		})
	}
}

func TestNextKeepsLocation(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 9 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	got := s.Next(time.Date(2025, 1, 1, 0, 0, 0, 0, ny))
	if got.Location() != ny {
		t.Errorf("Next returned location %v, want %v", got.Location(), ny)
	}
	if want := mustTime(t, "2025-01-01T08:00:00Z"); !got.Equal(want) {
		t.Errorf("Next = %v, want %v", got, want)
	}
	gap, err := Parse("30 2 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if got := gap.Next(time.Date(2025, 3, 29, 12, 0, 0, 0, ny)); got.Location() != ny {
		t.Errorf("Next at a clock change returned location %v, want %v", got.Location(), ny)
	}
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		expr, zone         string
		wantString, wantTZ string
	}{
		{"  */15   9-17 * *  MON-FRI ", "Europe/Berlin", "*/15 9-17 * * MON-FRI", "Europe/Berlin"},
		{"0 0 * * *", "", "0 0 * * *", "UTC"},
		{"0\t0 * * *", "UTC", "0 0 * * *", "UTC"},
	} {
		s, err := Parse(test.expr, test.zone)
		if err != nil {
			t.Fatalf("Parse(%q, %q): %v", test.expr, test.zone, err)
		}
		if diff := cmp.Diff([]string{test.wantString, test.wantTZ, test.wantTZ}, []string{s.String(), s.Timezone(), s.Location().String()}); diff != "" {
			t.Errorf("String, Timezone, Location of Parse(%q, %q) (-want +got):\n%s", test.expr, test.zone, diff)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cronLoc := []any{"trigger", "cron"}
	zoneLoc := []any{"trigger", "timezone"}
	v := func(loc []any, msg string) errs.Violation {
		return errs.Violation{Loc: loc, Msg: msg, Type: "value_error"}
	}
	for _, test := range []struct {
		name, expr, zone string
		want             []errs.Violation
	}{
		{"empty", "", "", []errs.Violation{v(cronLoc, "must be a cron expression with five fields: minute hour day-of-month month day-of-week")}},
		{"blank", "   ", "", []errs.Violation{v(cronLoc, "must be a cron expression with five fields: minute hour day-of-month month day-of-week")}},
		{"four fields", "0 9 * *", "", []errs.Violation{v(cronLoc, "must have five fields (minute hour day-of-month month day-of-week), got 4")}},
		{"six fields", "0 0 9 * * *", "", []errs.Violation{v(cronLoc, "must have five fields (minute hour day-of-month month day-of-week), got 6")}},
		{"descriptor", "@daily", "", []errs.Violation{v(cronLoc, `descriptors such as @daily are not supported: write five fields, e.g. "0 0 * * *" for daily`)}},
		{"every", "@every 1h", "", []errs.Violation{v(cronLoc, `descriptors such as @every are not supported: write five fields, e.g. "0 0 * * *" for daily`)}},
		{"TZ prefix", "TZ=Europe/Berlin 0 9 * * *", "", []errs.Violation{v(cronLoc, "must not name a time zone: give it in the timezone field")}},
		{"CRON_TZ prefix", "CRON_TZ=UTC 0 9 * * *", "", []errs.Violation{v(cronLoc, "must not name a time zone: give it in the timezone field")}},
		{"known panic TZ=0", "TZ=0", "", []errs.Violation{v(cronLoc, "must not name a time zone: give it in the timezone field")}},
		{"minute out of range", "60 * * * *", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: end of range (60) above maximum (59): 60")}},
		{"hour out of range", "0 24 * * *", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: end of range (24) above maximum (23): 24")}},
		{"day zero", "0 0 0 * *", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: beginning of range (0) below minimum (1): 0")}},
		{"month 13", "0 0 1 13 *", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: end of range (13) above maximum (12): 13")}},
		{"weekday 7", "0 0 * * 7", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: end of range (7) above maximum (6): 7")}},
		{"reversed range", "0 17-9 * * *", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: beginning of range (17) beyond end of range (9): 17-9")}},
		{"wrapping range", "0 0 * * sat-sun", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: beginning of range (6) beyond end of range (0): sat-sun")}},
		{"zero step", "*/0 * * * *", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: step of range should be a positive number: */0")}},
		{"unknown name", "0 0 * * FUN", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: failed to parse int from FUN: strconv.Atoi: parsing \"FUN\": invalid syntax")}},
		{"empty list item", "0,,30 * * * *", "", []errs.Violation{v(cronLoc, `minute field "0,,30": has an empty item`)}},
		{"lone comma", ", * * * *", "", []errs.Violation{v(cronLoc, `minute field ",": has an empty item`)}},
		{"empty step", "*/ * * * *", "", []errs.Violation{v(cronLoc, `minute field "*/": step "" must be a number`)}},
		{"two slashes", "*/2/3 * * * *", "", []errs.Violation{v(cronLoc, `minute field "*/2/3": step "2/3" must be a number`)}},
		{"negative", "-5 * * * *", "", []errs.Violation{v(cronLoc, `minute field "-5": range "-5" is incomplete`)}},
		{"open range", "0 9- * * *", "", []errs.Violation{v(cronLoc, `hour field "9-": range "9-" is incomplete`)}},
		{"three part range", "0 0 1-2-3 * *", "", []errs.Violation{v(cronLoc, `day-of-month field "1-2-3": value "2-3" is not a number or name`)}},
		{"symbol", "0 0 * * L", "", []errs.Violation{v(cronLoc, "is not a valid cron expression: failed to parse int from L: strconv.Atoi: parsing \"L\": invalid syntax")}},
		{"hash", "0 0 * * 1#2", "", []errs.Violation{v(cronLoc, `day-of-week field "1#2": value "1#2" is not a number or name`)}},
		{"never fires", "0 0 30 2 *", "", []errs.Violation{v(cronLoc, "never fires: no month has that day")}},
		{"never fires in April", "0 0 31 4,6 *", "", []errs.Violation{v(cronLoc, "never fires: no month has that day")}},
		{"unknown zone", "0 9 * * *", "Mars/Olympus_Mons", []errs.Violation{v(zoneLoc, `unknown time zone "Mars/Olympus_Mons": use an IANA name such as Europe/Berlin`)}},
		{"path zone", "0 9 * * *", "../../etc/passwd", []errs.Violation{v(zoneLoc, `unknown time zone "../../etc/passwd": use an IANA name such as Europe/Berlin`)}},
		{"Local zone", "0 9 * * *", "Local", []errs.Violation{v(zoneLoc, `must be an IANA time zone name such as Europe/Berlin, not "Local"`)}},
		{"both wrong", "0 9 * *", "Nowhere", []errs.Violation{
			v(zoneLoc, `unknown time zone "Nowhere": use an IANA name such as Europe/Berlin`),
			v(cronLoc, "must have five fields (minute hour day-of-month month day-of-week), got 4"),
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(test.expr, test.zone)
			if err == nil {
				t.Fatalf("Parse(%q, %q) = %v, want an error", test.expr, test.zone, s)
			}
			if !errors.Is(err, errs.Invalid) {
				t.Errorf("error %v is not errs.Invalid", err)
			}
			if diff := cmp.Diff(test.want, errs.Violations(err)); diff != "" {
				t.Errorf("Parse(%q, %q) violations (-want +got):\n%s", test.expr, test.zone, diff)
			}
		})
	}
}

// FuzzParse checks that no input panics Parse or Next, and that whatever
// parses fires strictly after the given time.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"* * * * *", "*/15 9-17 * * MON-FRI", "0 0 29 2 *", "5/20 1,2,3 1-31/2 JAN-dec ?",
		"TZ=0", "TZ=TZ=TZ=", "CRON_TZ=", "TZ= ", "@every 1s", "@daily", "@",
		"0-", "-", "/", "*/", "1-2-3", ",", "* * * * * *", "60 * * * *", "0 0 31 2 *",
		"99999999999999999999 * * * *", "*/99999999999999 * * * *", "0/0 * * * *", "\x00 * * * *",
		"1-0 * * * *", "* * * * 0-6/7", "0 0 * * SUN-SAT",
	} {
		f.Add(seed, "")
		f.Add(seed, "Europe/Berlin")
		f.Add(seed, "Australia/Lord_Howe")
	}
	from := time.Date(2025, 3, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr, zone string) {
		s, err := Parse(expr, zone)
		if err != nil {
			if len(errs.Violations(err)) == 0 {
				t.Fatalf("Parse(%q, %q) error %v carries no violations", expr, zone, err)
			}
			return
		}
		if next := s.Next(from); !next.IsZero() && !next.After(from) {
			t.Fatalf("Parse(%q, %q).Next(%v) = %v, not after", expr, zone, from, next)
		}
	})
}

func BenchmarkNext(b *testing.B) {
	for _, bench := range []struct{ name, expr, zone string }{
		{"every-5-minutes-UTC", "*/5 * * * *", ""},
		{"weekdays-9am-Berlin", "0 9 * * 1-5", "Europe/Berlin"},
		{"yearly-Berlin", "0 9 1 1 *", "Europe/Berlin"},
	} {
		b.Run(bench.name, func(b *testing.B) {
			s, err := Parse(bench.expr, bench.zone)
			if err != nil {
				b.Fatal(err)
			}
			at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				at = s.Next(at)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("*/15 9-17 * * MON-FRI", "Europe/Berlin"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOncePerLocalDay checks, through a whole year of clock changes in zones
// that change at different hours and by different amounts, that a daily
// schedule fires exactly once per local date, at its wall time or, when that
// does not exist that day, at the instant the clocks jump past it.
func TestOncePerLocalDay(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "America/Santiago", "Australia/Lord_Howe"} {
		for _, hm := range [][2]int{{0, 0}, {30, 1}, {30, 2}, {0, 3}} {
			expr := fmt.Sprintf("%d %d * * *", hm[0], hm[1])
			t.Run(zone+"/"+expr, func(t *testing.T) {
				t.Parallel()
				s, err := Parse(expr, zone)
				if err != nil {
					t.Fatal(err)
				}
				loc := s.Location()
				perDay := map[string]int{}
				at := time.Date(2024, 12, 31, 12, 0, 0, 0, loc)
				end := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
				for {
					next := s.Next(at)
					if !next.After(at) {
						t.Fatalf("Next(%v) = %v, not after", at, next)
					}
					if !next.Before(end) {
						break
					}
					local := next.In(loc)
					perDay[local.Format(time.DateOnly)]++
					if local.Hour() != hm[1] || local.Minute() != hm[0] {
						// Only allowed when the named wall time was skipped:
						// the instant before is still before the named time.
						before := next.Add(-time.Second).In(loc)
						named := time.Date(local.Year(), local.Month(), local.Day(), hm[1], hm[0], 0, 0, time.UTC)
						beforeWall := time.Date(before.Year(), before.Month(), before.Day(), before.Hour(), before.Minute(), before.Second(), 0, time.UTC)
						wall := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), local.Second(), 0, time.UTC)
						if !beforeWall.Before(named) || wall.Sub(beforeWall) <= time.Second {
							t.Errorf("fired at %v, neither %02d:%02d nor a clock change past it", local, hm[1], hm[0])
						}
					}
					at = next
				}
				if len(perDay) != 365 {
					t.Errorf("fired on %d local dates in 2025, want 365", len(perDay))
				}
				for day, n := range perDay {
					if n != 1 {
						t.Errorf("fired %d times on %s", n, day)
					}
				}
			})
		}
	}
}

// FuzzNext: from any instant, what parses fires strictly later, on a
// whole minute, and the fire after that is later still.
func FuzzNext(f *testing.F) {
	for _, seed := range []string{"* * * * *", "0 0 29 2 *", "*/7 3 * * 1-5", "30 2 * * *", "0 0 31 * *"} {
		f.Add(seed, "Europe/Berlin", int64(1711846800)) // the night clocks went forward
		f.Add(seed, "America/New_York", int64(1730613600))
		f.Add(seed, "", int64(-62135596800))
		f.Add(seed, "Australia/Lord_Howe", int64(253402300799))
	}
	f.Fuzz(func(t *testing.T, expr, zone string, unix int64) {
		s, err := Parse(expr, zone)
		if err != nil || unix < -62135596800 || unix > 253402300799 {
			return
		}
		from := time.Unix(unix, 0).UTC()
		next := s.Next(from)
		if next.IsZero() {
			return
		}
		if !next.After(from) || next.Second() != 0 || next.Nanosecond() != 0 {
			t.Fatalf("Parse(%q, %q).Next(%v) = %v", expr, zone, from, next)
		}
		if again := s.Next(next); !again.IsZero() && !again.After(next) {
			t.Fatalf("Parse(%q, %q).Next(%v) = %v, not after", expr, zone, next, again)
		}
	})
}
