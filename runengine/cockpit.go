package runengine

import (
	"bytes"
	"context"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// FunctionCounts are a business function's runs in flight.
type FunctionCounts struct {
	// Running counts runs not finished.
	Running int `json:"running"`
	// Waiting counts those waiting on a person, a timer or an event.
	Waiting int `json:"waiting"`
}

// Cockpit is the workspace at a glance; every figure is read from
// counters and indexes kept in the same commits as the runs.
type Cockpit struct {
	Running         int                       `json:"running"`
	WaitingOnYou    int                       `json:"waiting_on_you"`
	Overdue         int                       `json:"overdue"`
	Completed30d    int                       `json:"completed_30d"`
	MinutesSaved30d int                       `json:"minutes_saved_30d"`
	AgreementRate   *float64                  `json:"agreement_rate"`
	ByFunction      map[string]FunctionCounts `json:"by_function"`
	RecentRuns      []*Run                    `json:"recent_runs"`
	OpenTasks       []*Task                   `json:"open_tasks"`
	// Daily holds the last 30 days' counters, oldest first, today last:
	// the series behind completed_30d and minutes_saved_30d.
	Daily []DayCount `json:"daily"`
}

// DayCount is one UTC day of the cockpit's 30-day series.
type DayCount struct {
	// Date is the day, YYYY-MM-DD.
	Date string `json:"date"`
	// Completed counts the runs that completed that day.
	Completed int `json:"completed"`
	// MinutesSaved sums the minutes saved by the runs completed that day.
	MinutesSaved int `json:"minutes_saved"`
}

// Viewer is who looks at the cockpit.
type Viewer struct {
	// Assignees are the names tasks may be assigned to the viewer by (user
	// id, email).
	Assignees []string
	// CanDecide counts pending approvals as waiting on the viewer.
	CanDecide bool
	// CanWork counts unassigned open tasks as waiting on the viewer.
	CanWork bool
}

// UnassignedFunction is the cockpit's by_function bucket of the runs of
// processes that name no function.
const UnassignedFunction = "unassigned"

// Cockpit computes tenant's cockpit for viewer. agreement is the
// workspace's agreement rate (nil when nothing was decided yet). On a
// single node the counters and the ids of the recent runs come from memory
// (see countCache), the records from the store; on a cluster everything is
// read from the store.
func (e *Engine) Cockpit(ctx context.Context, tenant string, v Viewer, agreement *float64) (*Cockpit, error) {
	c := &Cockpit{AgreementRate: agreement, ByFunction: map[string]FunctionCounts{}, Daily: make([]DayCount, 30)}
	now := e.clock.Now().UTC()
	fromStore := true
	open := int64(-1) // the tenant's open tasks, when known: with none, no list
	if e.countCache != nil {
		from := windowOf(now).dates[0]
		err := e.counts(ctx, tenant, from, func(t *tenantCounts) { open = c.fill(t, now, v) })
		switch {
		case err == nil:
			fromStore = false
		case !errors.Is(err, errClosed) && !errors.Is(err, errCountsMoved):
			return nil, err
		}
	}
	err := e.st.View(ctx, func(r store.Reader) error {
		if fromStore {
			if err := e.cockpitCounters(r, tenant, now, v, c); err != nil {
				return err
			}
		}
		var err error
		if c.RecentRuns, err = e.recentRuns(r, tenant, fromStore); err != nil {
			return err
		}
		if open != 0 {
			c.OpenTasks, _, err = tasks.ListBy(r, tenant, "status", []any{TaskOpen}, store.Page{Limit: 10})
		}
		return err
	})
	if c.RecentRuns == nil {
		c.RecentRuns = []*Run{}
	}
	markApart(c.RecentRuns)
	if c.OpenTasks == nil {
		c.OpenTasks = []*Task{}
	}
	return c, err
}

// recentRunsShown is how many of the newest runs a cockpit shows.
const recentRunsShown = 10

// recentRuns reads tenant's newest runs for its cockpit from r: between
// the ids the count cache holds (see newestRuns), unless fromStore (no
// cache, or the tenant's counters were not held) or those do not make up
// the page; then with a scan of all its run records.
func (e *Engine) recentRuns(r store.Reader, tenant string, fromStore bool) ([]*Run, error) {
	if !fromStore {
		out, _, ok, err := e.newestRuns(r, tenant, recentRunsShown, false)
		if ok || err != nil {
			return out, err
		}
	}
	list, _, err := runs.List(r, tenant, store.Page{Limit: recentRunsShown})
	return list, err
}

// newestRuns reads up to limit of tenant's newest runs from r, and with
// needMore whether older runs exist, with a scan between the oldest and
// newest ids of its runs the count cache holds (see tenantCounts.recent):
// no run is newer than those, and every run between them is held, so the
// scan starts on the few tables that hold them instead of every table of
// the run records; and since each of them was last written after a store
// version the cache holds (ScanOptions.Since), it passes over the tables
// written before that, which a store of a million runs has at every level
// (their key ranges span the newest ids). ok is false when those ids
// cannot tell: the tenant is not held, or has runs older than those held
// and too few runs lie between them (ids of commits not landed, or
// failed). A tenant whose every run is held is scanned as before: it has
// few.
func (e *Engine) newestRuns(r store.Reader, tenant string, limit int, needMore bool) (out []*Run, more, ok bool, err error) {
	if e.countCache == nil {
		return nil, false, false, nil
	}
	oldest, newest, since, cut := e.countCache.recentRange(tenant)
	if !cut {
		return nil, false, false, nil
	}
	want := limit
	if needMore {
		want++
	}
	out, err = runs.ListRange(r, tenant, oldest, newest, want, since)
	switch {
	case err != nil:
		return nil, false, false, err
	case len(out) > limit:
		return out[:limit], true, true, nil
	case len(out) == limit && !needMore:
		return out, false, true, nil
	}
	return nil, false, false, nil // older runs than those held may exist
}

// fill sets c's counter figures for viewer v from t, at now, and returns
// the tenant's open tasks (anyone's).
func (c *Cockpit) fill(t *tenantCounts, now time.Time, v Viewer) (open int64) {
	index := c.days(now)
	for _, cell := range t.cells {
		switch cell.name {
		case "inflight", "waiting":
			fn := cell.part
			if fn == "" {
				fn = UnassignedFunction
			}
			fc := c.ByFunction[fn]
			if cell.name == "inflight" {
				fc.Running += int(cell.n)
				c.Running += int(cell.n)
			} else {
				fc.Waiting += int(cell.n)
			}
			c.ByFunction[fn] = fc
		case "overdue":
			c.Overdue += int(cell.n)
		case "approvals-pending":
			if v.CanDecide {
				c.WaitingOnYou += int(cell.n)
			}
		case "tasks-open":
			open += cell.n
			if cell.part == "*" && v.CanWork {
				c.WaitingOnYou += int(cell.n)
			}
			for _, a := range v.Assignees {
				if a == cell.part {
					c.WaitingOnYou += int(cell.n)
				}
			}
		case "completed", "minutes":
			i, ok := index[cell.part]
			if !ok {
				continue
			}
			if cell.name == "completed" {
				c.Daily[i].Completed += int(cell.n)
			} else {
				c.Daily[i].MinutesSaved += int(cell.n)
			}
		}
	}
	c.settle()
	return open
}

// days sets c's 30 days ending at now and returns each day's index (which
// the caller must not change).
func (c *Cockpit) days(now time.Time) map[string]int {
	w := windowOf(now)
	for i, day := range w.dates {
		c.Daily[i] = DayCount{Date: day}
	}
	return w.index
}

// cockpitWindow is the 30 days of a cockpit's series ending on one UTC
// day: formatted once a day instead of at every cockpit.
type cockpitWindow struct {
	day    int64          // the last day, in days since 1970-01-01
	dates  [30]string     // YYYY-MM-DD, oldest first
	index  map[string]int // each date's index in dates
	before string         // the day before dates[0]
}

// lastWindow is the window windowOf made last.
var lastWindow atomic.Pointer[cockpitWindow]

// windowOf returns the cockpit window ending on now's UTC day.
func windowOf(now time.Time) *cockpitWindow {
	day := now.Unix() / 86400
	if now.Unix()%86400 < 0 {
		day-- // before 1970: days round down
	}
	if w := lastWindow.Load(); w != nil && w.day == day {
		return w
	}
	now = now.UTC()
	w := &cockpitWindow{day: day, index: make(map[string]int, 30)}
	for d := range w.dates {
		date := now.Add(-time.Duration(d) * 24 * time.Hour).Format("2006-01-02")
		w.index[date] = len(w.dates) - 1 - d
		w.dates[len(w.dates)-1-d] = date
	}
	w.before = now.Add(-time.Duration(len(w.dates)) * 24 * time.Hour).Format("2006-01-02")
	lastWindow.Store(w)
	return w
}

// settle drops the functions with nothing in flight and sums the days.
func (c *Cockpit) settle() {
	for fn, fc := range c.ByFunction {
		if fc.Running == 0 && fc.Waiting == 0 {
			delete(c.ByFunction, fn)
		}
	}
	for _, d := range c.Daily {
		c.Completed30d += d.Completed
		c.MinutesSaved30d += d.MinutesSaved
	}
}

// cockpitCounters reads c's counter figures for viewer v from the store.
func (e *Engine) cockpitCounters(r store.Reader, tenant string, now time.Time, v Viewer, c *Cockpit) error {
	sum := func(name string, parts ...any) (int, error) {
		n, err := e.counter(r, []byte(counterKey(tenant, name, parts...)))
		return int(n), err
	}
	for _, kind := range []string{"inflight", "waiting"} {
		prefix := store.Key(tenant, "count", kind)
		err := r.Scan(store.ScanOptions{Prefix: prefix, Rewritten: true}, func(key, val []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil || len(parts) < 4 { // a node's share has a fifth part
				return err
			}
			fn, _ := parts[3].(string)
			if fn == "" {
				fn = UnassignedFunction
			}
			n, err := counterValue(key, val)
			if err != nil {
				return err
			}
			fc := c.ByFunction[fn]
			if kind == "inflight" {
				fc.Running += int(n)
				c.Running += int(n)
			} else {
				fc.Waiting += int(n)
			}
			c.ByFunction[fn] = fc
			return nil
		})
		if err != nil {
			return err
		}
	}
	var err error
	if c.Overdue, err = sum("overdue"); err != nil {
		return err
	}
	if err := e.daily(r, tenant, now, c); err != nil {
		return err
	}
	for _, a := range v.Assignees {
		n, err := sum("tasks-open", a)
		if err != nil {
			return err
		}
		c.WaitingOnYou += n
	}
	if v.CanWork {
		n, err := sum("tasks-open", "*")
		if err != nil {
			return err
		}
		c.WaitingOnYou += n
	}
	if v.CanDecide {
		n, err := sum("approvals-pending")
		if err != nil {
			return err
		}
		c.WaitingOnYou += n
	}
	c.settle()
	return nil
}

// daily fills c's 30-day series with two scans of the
// completed and minutes counters from the day before the oldest: the
// counters of a day, and on a cluster the nodes' shares of them, lie
// together in key order.
func (e *Engine) daily(r store.Reader, tenant string, now time.Time, c *Cockpit) error {
	index := c.days(now)
	today := c.Daily[29].Date
	before := windowOf(now).before
	for _, name := range []string{"completed", "minutes"} {
		prefix := store.Key(tenant, "count", name)
		err := r.Scan(store.ScanOptions{Prefix: prefix, After: store.AppendKey(bytes.Clone(prefix), before), Rewritten: true}, func(key, val []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil || len(parts) < 4 {
				return err
			}
			day, _ := parts[3].(string)
			if day > today {
				return store.ErrStop
			}
			i, ok := index[day]
			if !ok { // the day before the oldest's shares on a cluster
				return nil
			}
			n, err := counterValue(key, val)
			if err != nil {
				return err
			}
			if name == "completed" {
				c.Daily[i].Completed += int(n)
			} else {
				c.Daily[i].MinutesSaved += int(n)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
