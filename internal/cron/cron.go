// Package cron parses five-field cron schedules evaluated in an IANA time zone,
// the schedule trigger of api.md section 3.
//
// # Syntax
//
// An expression has exactly five fields separated by spaces: minute (0-59),
// hour (0-23), day of month (1-31), month (1-12 or JAN-DEC) and day of week
// (0-6 or SUN-SAT, 0 is Sunday). Each field is "*" or a comma-separated list
// of values and ranges ("1-5"), each optionally with a step ("*/15", "0-30/10",
// "5/20" meaning 5-59/20). Names are case-insensitive; "?" means "*". As in
// Vixie cron, when both day of month and day of week are restricted, a day
// matching either one matches.
//
// Not accepted: descriptors (@daily, @every 1h), a leading TZ= or CRON_TZ=
// (the zone is the separate timezone argument), a seconds field, 7 for
// Sunday, and expressions that never fire (such as "0 0 30 2 *").
//
// Parsing and next-time computation are github.com/robfig/cron/v3's; its parser
// runs behind a syntax check and a recover, since some inputs are known to
// panic it.
//
// # Time zones and daylight saving time
//
// The schedule is evaluated in its zone's wall clock: "0 9 * * 1-5" in
// Europe/Berlin fires at 08:00Z in winter and 07:00Z in summer. The package
// embeds the IANA zone database (time/tzdata), so zones resolve even on hosts
// without one (the host's database is preferred when present). On the days
// the clocks change, a schedule whose hour field is restricted (anything but
// "*" or "*/1") fires once for each wall time it names:
//
//   - Clocks go forward (02:00 becomes 03:00): wall times in the skipped hour do
//     not exist. A schedule naming one of them ("30 2 * * *") fires once at the
//     instant of the change (03:00 local), then continues normally. robfig's
//     Next alone would skip that day.
//   - Clocks go back (03:00 becomes 02:00): wall times in the repeated hour
//     happen twice. The schedule fires at the first of them only. robfig's
//     Next alone would fire twice.
//
// A schedule whose hour field is "*" follows elapsed time instead: "0 * * * *"
// fires every real hour, so it fires in both copies of a repeated hour and has
// nothing to fire in a skipped one.
//
// robfig's Next assumes clock changes of whole hours; around Lord Howe
// Island's 30-minute change it can skip a day or land on an unnamed wall time.
// Fixed-hour results are therefore checked against a direct search of the
// zone's wall clock, and the earlier, correct time wins.
package cron

import (
	"strings"
	"time"
	_ "time/tzdata" // zones resolve on hosts without a zone database

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	robfig "github.com/robfig/cron/v3"
)

// starBit is robfig's marker, in a field's bit set, that the field was "*".
const starBit = 1 << 63

// Schedule is a parsed cron schedule in a time zone. It is immutable and safe
// for concurrent use.
type Schedule struct {
	expr string
	zone string
	loc  *time.Location
	spec *robfig.SpecSchedule
	// hours and minutes list the values the schedule names, ascending.
	hours, minutes []int
}

// Parse parses a five-field cron expression evaluated in timezone, an IANA
// zone name such as "Europe/Berlin" ("" means UTC). Invalid input is an
// errs.Validation error with a value_error violation at
// ["trigger","cron"] for the expression and at ["trigger","timezone"] for
// the zone (the fields of a process's schedule trigger); both are reported when both are
// wrong.
func Parse(expr, timezone string) (*Schedule, error) {
	var vs []errs.Violation
	loc, zone, err := loadZone(timezone)
	if err != nil {
		vs = append(vs, errs.Violation{Loc: []any{"trigger", "timezone"}, Msg: err.Error(), Type: "value_error"})
	}
	fields, spec, err := parseExpr(expr)
	if err != nil {
		vs = append(vs, errs.Violation{Loc: []any{"trigger", "cron"}, Msg: err.Error(), Type: "value_error"})
	}
	if len(vs) > 0 {
		return nil, errs.Validation(vs...)
	}
	spec.Location = loc
	return &Schedule{
		expr: strings.Join(fields, " "), zone: zone, loc: loc, spec: spec,
		hours: bits(spec.Hour, 23), minutes: bits(spec.Minute, 59),
	}, nil
}

// loadZone resolves an IANA zone name; "" is UTC. "Local" is refused: it
// means whatever the host is set to.
func loadZone(name string) (*time.Location, string, error) {
	if name == "" || name == "UTC" {
		return time.UTC, "UTC", nil
	}
	if name == "Local" {
		return nil, "", errors.New(`must be an IANA time zone name such as Europe/Berlin, not "Local"`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, "", errors.Newf("unknown time zone %q: use an IANA name such as Europe/Berlin", name)
	}
	return loc, name, nil
}

// parseExpr checks the expression's shape, then parses it with robfig's
// five-field parser (no descriptors) behind a recover.
func parseExpr(expr string) (fields []string, spec *robfig.SpecSchedule, err error) {
	trimmed := strings.TrimSpace(expr)
	switch {
	case trimmed == "":
		return nil, nil, errors.New("must be a cron expression with five fields: minute hour day-of-month month day-of-week")
	case strings.HasPrefix(trimmed, "@"):
		return nil, nil, errors.Newf("descriptors such as %s are not supported: write five fields, e.g. \"0 0 * * *\" for daily", strings.Fields(trimmed)[0])
	case strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ="):
		return nil, nil, errors.New("must not name a time zone: give it in the timezone field")
	}
	fields = strings.Fields(trimmed)
	if len(fields) != 5 {
		return nil, nil, errors.Newf("must have five fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		if err := checkField(f); err != nil {
			return nil, nil, errors.Wrapf(err, "%s field %q", fieldNames[i], f)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			fields, spec, err = nil, nil, errors.Newf("is not a valid cron expression (%v)", r)
		}
	}()
	parser := robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow)
	sched, err := parser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, nil, errors.Newf("is not a valid cron expression: %v", err)
	}
	spec, ok := sched.(*robfig.SpecSchedule)
	if !ok {
		return nil, nil, errors.Newf("is not a valid cron expression: unexpected schedule %T", sched)
	}
	// Day and month combinations are the same in every leap cycle, so a
	// schedule that fires at all fires within five years of this reference.
	probe := *spec
	probe.Location = time.UTC
	if probe.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, nil, errors.New("never fires: no month has that day")
	}
	return fields, spec, nil
}

var fieldNames = [5]string{"minute", "hour", "day-of-month", "month", "day-of-week"}

// checkField checks a field's grammar: comma-separated items, each "*", "?",
// a value or a range, optionally followed by "/step". robfig checks bounds and
// names; this rejects what it would silently accept (empty list items, which
// make a field match nothing) or choke on.
func checkField(f string) error {
	for item := range strings.SplitSeq(f, ",") {
		base, step, hasStep := strings.Cut(item, "/")
		if base == "" {
			return errors.New("has an empty item")
		}
		if hasStep && (step == "" || strings.Trim(step, "0123456789") != "") {
			return errors.Newf("step %q must be a number", step)
		}
		if base == "*" || base == "?" {
			continue
		}
		lo, hi, isRange := strings.Cut(base, "-")
		values := []string{lo}
		if isRange {
			values = append(values, hi)
		}
		for _, v := range values {
			if v == "" {
				return errors.Newf("range %q is incomplete", base)
			}
			if strings.Trim(strings.ToLower(v), "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
				return errors.Newf("value %q is not a number or name", v)
			}
		}
	}
	return nil
}

// Next returns the first time the schedule fires strictly after after, in
// after's location, or the zero time when it does not fire within five years
// of after (possible only for 29 February around 2100).
func (s *Schedule) Next(after time.Time) time.Time {
	fixedHour := s.spec.Hour&starBit == 0
	t := after
	for {
		next := s.spec.Next(t)
		if next.IsZero() {
			return next
		}
		// Around a clock change that is not a whole hour (Lord Howe Island's
		// 30 minutes) robfig can skip a day or land on a wall time the
		// schedule does not name, so a fixed-hour result, or one that does
		// not match, is checked against a direct search of the wall clock.
		if fixedHour || !s.matches(s.wall(next)) {
			if found, ok := s.scan(t, next); ok {
				next = found
			}
		}
		if fixedHour {
			if gap, ok := s.skippedBefore(t, next); ok {
				return gap.In(after.Location())
			}
		}
		if s.matches(s.wall(next)) && !(fixedHour && s.repeated(next)) {
			return next
		}
		t = next
	}
}

// scan returns the first existing wall time named by the schedule that is
// strictly after after and before limit, searching day by day in the zone.
func (s *Schedule) scan(after, limit time.Time) (time.Time, bool) {
	start := s.wall(after)
	day := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
	for end := s.wall(limit); !day.After(end); day = day.AddDate(0, 0, 1) {
		if !s.matchesDay(day) {
			continue
		}
		for _, h := range s.hours {
			for _, m := range s.minutes {
				w := day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
				if w.Before(start.Truncate(time.Minute)) {
					continue
				}
				at := time.Date(w.Year(), w.Month(), w.Day(), h, m, 0, 0, s.loc)
				if !at.Before(limit) {
					return time.Time{}, false
				}
				if at.After(after) && s.wall(at).Equal(w) {
					return at, true
				}
			}
		}
	}
	return time.Time{}, false
}

// bits lists the values 0..max set in a robfig field.
func bits(field uint64, max int) []int {
	var out []int
	for i := 0; i <= max; i++ {
		if field&(1<<uint(i)) != 0 {
			out = append(out, i)
		}
	}
	return out
}

// wall returns t's wall clock in the schedule's zone as a UTC time with the
// same fields.
func (s *Schedule) wall(t time.Time) time.Time {
	return time.Unix(t.Unix()+int64(s.offset(t.Unix())), 0).UTC()
}

// skippedBefore looks for a forward clock change in (after, next] whose
// skipped wall times the schedule names; the schedule fires at the instant of
// that change instead.
func (s *Schedule) skippedBefore(after, next time.Time) (time.Time, bool) {
	cur := after
	for cur.Before(next) {
		end := cur.Add(24 * time.Hour)
		if end.After(next) {
			end = next
		}
		before, afterOff := s.offset(cur.Unix()), s.offset(end.Unix())
		if afterOff > before {
			change := s.change(cur, end, before)
			if change.After(after) && !change.After(next) && s.namesGap(change, before, afterOff) {
				return change, true
			}
		}
		cur = end
	}
	return time.Time{}, false
}

// change returns the first second in (lo, hi] whose zone offset is not before.
func (s *Schedule) change(lo, hi time.Time, before int) time.Time {
	l, h := lo.Unix(), hi.Unix()
	if hi.Nanosecond() > 0 {
		h++
	}
	for h-l > 1 {
		mid := l + (h-l)/2
		if s.offset(mid) == before {
			l = mid
		} else {
			h = mid
		}
	}
	return time.Unix(h, 0)
}

// namesGap reports whether a wall time skipped by the clock change at change
// (from offset before to offset after, in seconds) matches the schedule.
func (s *Schedule) namesGap(change time.Time, before, after int) bool {
	// Wall clock just before the change, as a UTC time with the same fields.
	start := time.Unix(change.Unix()+int64(before), 0).UTC()
	end := start.Add(time.Duration(after-before) * time.Second)
	for w := start.Truncate(time.Minute); w.Before(end); w = w.Add(time.Minute) {
		if !w.Before(start) && s.matches(w) {
			return true
		}
	}
	return false
}

// matches reports whether the wall time w (fields read as they are) is named
// by the schedule, with robfig's day-of-month / day-of-week rule.
func (s *Schedule) matches(w time.Time) bool {
	sp := s.spec
	if sp.Minute&(1<<uint(w.Minute())) == 0 || sp.Hour&(1<<uint(w.Hour())) == 0 {
		return false
	}
	return s.matchesDay(w)
}

// matchesDay reports whether the date of the wall time w is named by the
// schedule.
func (s *Schedule) matchesDay(w time.Time) bool {
	sp := s.spec
	if sp.Month&(1<<uint(w.Month())) == 0 {
		return false
	}
	dom := sp.Dom&(1<<uint(w.Day())) != 0
	dow := sp.Dow&(1<<uint(w.Weekday())) != 0
	if sp.Dom&starBit != 0 || sp.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// repeated reports whether t's wall time already happened earlier, because the
// clocks went back shortly before t.
func (s *Schedule) repeated(t time.Time) bool {
	off := s.offset(t.Unix())
	for _, d := range []int64{30 * 60, 60 * 60, 2 * 60 * 60} {
		earlier := s.offset(t.Unix() - d)
		if earlier <= off {
			continue
		}
		// The same wall time under the earlier offset is this many seconds
		// before t.
		if s.offset(t.Unix()-int64(earlier-off)) == earlier {
			return true
		}
	}
	return false
}

// offset returns the zone offset in seconds east of UTC at the Unix second u.
func (s *Schedule) offset(u int64) int {
	_, off := time.Unix(u, 0).In(s.loc).Zone()
	return off
}

// String returns the expression with its fields separated by single spaces,
// as it was given ("*/15 9-17 * * MON-FRI"); it does not include the zone.
func (s *Schedule) String() string { return s.expr }

// Timezone returns the IANA name of the schedule's zone ("UTC" when none was
// given).
func (s *Schedule) Timezone() string { return s.zone }

// Location returns the schedule's zone.
func (s *Schedule) Location() *time.Location { return s.loc }
