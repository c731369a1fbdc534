package automation

import (
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/store"
)

// The defaults a workspace starts with (documented in the API reference).
const (
	DefaultPercent              = 0
	DefaultMaxPercent           = 50
	DefaultSamplePercent        = 10
	DefaultRampMinAgreement     = 0.9
	DefaultRampMinDecisions     = 20
	DefaultRollbackAgreement    = 0.7
	DefaultRollbackMinDecisions = 10
)

// workspaceID is the id of the workspace level's record; process ids are
// prefixed ("prc_...") and never equal it.
const workspaceID = "workspace"

// Exception is a temporary automation level: Percent of items run without a
// person until Until, then it lapses by itself.
type Exception struct {
	Percent int       `json:"percent"`
	Until   time.Time `json:"until"`
	Reason  string    `json:"reason"`
	SetBy   string    `json:"set_by"`
}

// Level is the automation settings stored at one level: the workspace, or
// one process. A nil field is unset (a process inherits the workspace's; the
// workspace uses the default).
type Level struct {
	// ID is "workspace" or the process id.
	ID                   string     `json:"id"`
	AutoRamp             *bool      `json:"auto_ramp,omitempty"`
	Paused               *bool      `json:"paused,omitempty"`
	PausedReason         *string    `json:"paused_reason,omitempty"`
	Percent              *int       `json:"percent,omitempty"`
	MaxPercent           *int       `json:"max_percent,omitempty"`
	SamplePercent        *int       `json:"sample_percent,omitempty"`
	DailyLimit           *int       `json:"daily_limit,omitempty"`
	Exception            *Exception `json:"exception,omitempty"`
	RampMinAgreement     *float64   `json:"ramp_min_agreement,omitempty"`
	RampMinDecisions     *int       `json:"ramp_min_decisions,omitempty"`
	RollbackAgreement    *float64   `json:"rollback_agreement,omitempty"`
	RollbackMinDecisions *int       `json:"rollback_min_decisions,omitempty"`
	// RampMinWhatIf, when set, is the agreement rate the process's latest
	// what-if must reach for the ramp to raise its percent.
	RampMinWhatIf *float64 `json:"ramp_min_what_if,omitempty"`
	// RampFrom and RollbackFrom are the Seq of the process's last verdict
	// when its level last changed: the ramp weighs only verdicts after
	// RampFrom (moved by every change of percent or pause, the ramp's own
	// steps included), the rollback only those after RollbackFrom (moved by
	// a person's change and by a rollback, not by ramp steps).
	RampFrom     int64      `json:"ramp_from,omitempty"`
	RollbackFrom int64      `json:"rollback_from,omitempty"`
	UpdatedAt    *time.Time `json:"updated_at,omitempty"`
	UpdatedBy    string     `json:"updated_by,omitempty"`
}

var levels = &store.Collection[Level]{
	Name: "automation",
	ID:   func(l *Level) string { return l.ID },
}

// clone returns a deep copy of l.
func (l *Level) clone() *Level {
	c := *l
	c.AutoRamp = clonePtr(l.AutoRamp)
	c.Paused = clonePtr(l.Paused)
	c.PausedReason = clonePtr(l.PausedReason)
	c.Percent = clonePtr(l.Percent)
	c.MaxPercent = clonePtr(l.MaxPercent)
	c.SamplePercent = clonePtr(l.SamplePercent)
	c.DailyLimit = clonePtr(l.DailyLimit)
	c.Exception = clonePtr(l.Exception)
	c.RampMinAgreement = clonePtr(l.RampMinAgreement)
	c.RampMinDecisions = clonePtr(l.RampMinDecisions)
	c.RollbackAgreement = clonePtr(l.RollbackAgreement)
	c.RollbackMinDecisions = clonePtr(l.RollbackMinDecisions)
	c.RampMinWhatIf = clonePtr(l.RampMinWhatIf)
	c.UpdatedAt = clonePtr(l.UpdatedAt)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func ptr[T any](v T) *T { return &v }

// setField applies one Field to a stored pointer: absent keeps it, null
// clears it, a value sets it.
func setField[T any](dst **T, f Field[T]) {
	if !f.Present() {
		return
	}
	if v, ok := f.Value(); ok {
		*dst = &v
		return
	}
	*dst = nil
}

// apply changes l by p at now, on behalf of actor.
func (l *Level) apply(p Patch, now time.Time, actor string) {
	setField(&l.AutoRamp, p.AutoRamp)
	setField(&l.Paused, p.Paused)
	if paused, _ := p.Paused.Value(); p.Paused.Present() && !paused && !p.PausedReason.Present() {
		l.PausedReason = nil // the reason of a pause that ended
	}
	setField(&l.PausedReason, p.PausedReason)
	setField(&l.Percent, p.Percent)
	setField(&l.MaxPercent, p.MaxPercent)
	setField(&l.SamplePercent, p.SamplePercent)
	setField(&l.DailyLimit, p.DailyLimit)
	if clear, _ := p.ClearDailyLimit.Value(); clear {
		l.DailyLimit = nil
	}
	if pct, ok := p.ExceptionPercent.Value(); ok {
		days, _ := p.ExceptionDays.Value()
		reason, _ := p.ExceptionReason.Value()
		l.Exception = &Exception{Percent: pct, Until: now.Add(time.Duration(days) * 24 * time.Hour).UTC(), Reason: reason, SetBy: actor}
	}
	if clear, _ := p.ClearException.Value(); clear || p.ExceptionPercent.IsNull() {
		l.Exception = nil
	}
	setField(&l.RampMinAgreement, p.RampMinAgreement)
	setField(&l.RampMinDecisions, p.RampMinDecisions)
	setField(&l.RollbackAgreement, p.RollbackAgreement)
	setField(&l.RollbackMinDecisions, p.RollbackMinDecisions)
	setField(&l.RampMinWhatIf, p.RampMinWhatIf)
}

// effective is the resolution of a workspace level and, for a process, its
// own level: what the gate, the ramp and GET use.
type effective struct {
	autoRamp      bool
	paused        bool
	pausedReason  *string
	percent       int
	maxPercent    int
	samplePercent int
	// wsLimit caps the workspace's automatic actions a day; procLimit (set
	// only by a process's own daily_limit) caps the process's.
	wsLimit, procLimit   *int
	exception            *Exception // active only
	rampMinAgreement     float64
	rampMinDecisions     int
	rollbackAgreement    float64
	rollbackMinDecisions int
	rampMinWhatIf        *float64 // nil: the ramp needs no what-if
	inherited            []string
}

// current is the percent of items the gate lets run alone now: 0 when
// paused, the exception's while it lasts, else percent (at most
// max_percent).
func (e effective) current() int {
	switch {
	case e.paused:
		return 0
	case e.exception != nil:
		return e.exception.Percent
	default:
		return min(e.percent, e.maxPercent)
	}
}

// level returns the percent in force ignoring a pause: the exception's or
// percent (at most max_percent).
func (e effective) level() int {
	if e.exception != nil {
		return e.exception.Percent
	}
	return min(e.percent, e.maxPercent)
}

func (e effective) dailyLimit() *int {
	if e.procLimit != nil {
		return e.procLimit
	}
	return e.wsLimit
}

// active reports whether ex is set and has not lapsed at now.
func active(ex *Exception, now time.Time) bool { return ex != nil && now.Before(ex.Until) }

// pick resolves one field: the process's own value, else the workspace's,
// else the default; it notes the field as inherited when the level asked
// about does not set it.
func pick[T any](own, ws *T, def T, name string, inherited *[]string) T {
	if own != nil {
		return *own
	}
	*inherited = append(*inherited, name)
	if ws != nil {
		return *ws
	}
	return def
}

// resolve resolves the workspace level ws and, when proc is not nil, the
// process level proc on top of it, at now. A workspace pause stops every
// process whatever the process says.
func resolve(ws, proc *Level, now time.Time) effective {
	if ws == nil {
		ws = &Level{ID: workspaceID}
	}
	own, parent := ws, &Level{}
	if proc != nil {
		own, parent = proc, ws
	}
	var e effective
	in := &e.inherited
	e.autoRamp = pick(own.AutoRamp, parent.AutoRamp, false, "auto_ramp", in)
	e.paused = pick(own.Paused, parent.Paused, false, "paused", in)
	e.pausedReason = own.PausedReason
	if own.PausedReason == nil {
		e.pausedReason = parent.PausedReason
		*in = append(*in, "paused_reason")
	}
	if proc != nil && ws.Paused != nil && *ws.Paused && !e.paused {
		e.paused, e.pausedReason = true, ws.PausedReason
	}
	e.percent = pick(own.Percent, parent.Percent, DefaultPercent, "percent", in)
	e.maxPercent = pick(own.MaxPercent, parent.MaxPercent, DefaultMaxPercent, "max_percent", in)
	e.samplePercent = pick(own.SamplePercent, parent.SamplePercent, DefaultSamplePercent, "sample_percent", in)
	e.wsLimit = ws.DailyLimit
	if proc != nil {
		e.procLimit = proc.DailyLimit
	}
	if own.DailyLimit == nil {
		*in = append(*in, "daily_limit")
	}
	ex := own.Exception
	if !active(ex, now) {
		ex = nil
		if active(parent.Exception, now) {
			ex = parent.Exception
		}
		*in = append(*in, "exception_percent", "exception_until", "exception_reason")
	}
	e.exception = ex
	e.rampMinAgreement = pick(own.RampMinAgreement, parent.RampMinAgreement, DefaultRampMinAgreement, "ramp_min_agreement", in)
	e.rampMinDecisions = pick(own.RampMinDecisions, parent.RampMinDecisions, DefaultRampMinDecisions, "ramp_min_decisions", in)
	e.rollbackAgreement = pick(own.RollbackAgreement, parent.RollbackAgreement, DefaultRollbackAgreement, "rollback_agreement", in)
	e.rollbackMinDecisions = pick(own.RollbackMinDecisions, parent.RollbackMinDecisions, DefaultRollbackMinDecisions, "rollback_min_decisions", in)
	e.rampMinWhatIf = own.RampMinWhatIf
	if e.rampMinWhatIf == nil {
		*in = append(*in, "ramp_min_what_if")
		e.rampMinWhatIf = parent.RampMinWhatIf
	}
	return e
}

// View is the automation settings of the workspace or of one process as GET
// shows them: every value in force (a process's unset fields filled from the
// workspace, the workspace's from the defaults) and which are inherited.
type View struct {
	// Scope is "workspace" or "process".
	Scope string `json:"scope"`
	// ProcessID is the process's id, null for the workspace.
	ProcessID    *string `json:"process_id"`
	AutoRamp     bool    `json:"auto_ramp"`
	Paused       bool    `json:"paused"`
	PausedReason *string `json:"paused_reason"`
	Percent      int     `json:"percent"`
	MaxPercent   int     `json:"max_percent"`
	// SamplePercent of automatic actions get an after-the-fact review.
	SamplePercent int `json:"sample_percent"`
	// DailyLimit caps automatic actions a UTC day: the workspace's caps all
	// of the workspace's, a process's own caps that process's (both apply).
	DailyLimit           *int       `json:"daily_limit"`
	ExceptionPercent     *int       `json:"exception_percent"`
	ExceptionUntil       *time.Time `json:"exception_until"`
	ExceptionReason      *string    `json:"exception_reason"`
	RampMinAgreement     float64    `json:"ramp_min_agreement"`
	RampMinDecisions     int        `json:"ramp_min_decisions"`
	RollbackAgreement    float64    `json:"rollback_agreement"`
	RollbackMinDecisions int        `json:"rollback_min_decisions"`
	// RampMinWhatIf is the agreement rate the process's latest what-if
	// must reach for the ramp to raise percent; null when none is needed.
	RampMinWhatIf *float64 `json:"ramp_min_what_if"`
	// EffectivePercent is what the gate applies now: 0 when paused, the
	// exception's percent while it lasts, else percent (at most
	// max_percent).
	EffectivePercent int `json:"effective_percent"`
	// Inherited names the fields this level does not set: a process takes
	// them from the workspace, the workspace from the defaults.
	Inherited []string `json:"inherited"`
	// AutomaticToday counts today's (UTC) automatic actions of the scope.
	AutomaticToday int `json:"automatic_today"`
	// Agreement is the agreement on the process's approvals (processes
	// only): what the ramp and the rollback weigh.
	Agreement *decisions.Agreement `json:"agreement,omitempty"`
	UpdatedAt *time.Time           `json:"updated_at"`
	UpdatedBy *string              `json:"updated_by"`
}

// view renders e for the level own (nil when never written).
func (e effective) view(processID string, own *Level) *View {
	v := &View{
		Scope: "workspace", AutoRamp: e.autoRamp, Paused: e.paused, PausedReason: e.pausedReason,
		Percent: e.percent, MaxPercent: e.maxPercent, SamplePercent: e.samplePercent, DailyLimit: e.dailyLimit(),
		RampMinAgreement: e.rampMinAgreement, RampMinDecisions: e.rampMinDecisions,
		RollbackAgreement: e.rollbackAgreement, RollbackMinDecisions: e.rollbackMinDecisions, RampMinWhatIf: e.rampMinWhatIf,
		EffectivePercent: e.current(), Inherited: append([]string{}, e.inherited...),
	}
	if processID != "" {
		v.Scope, v.ProcessID = "process", ptr(processID)
	}
	if ex := e.exception; ex != nil {
		v.ExceptionPercent, v.ExceptionUntil, v.ExceptionReason = ptr(ex.Percent), ptr(ex.Until), ptr(ex.Reason)
	}
	if own != nil && own.UpdatedAt != nil {
		v.UpdatedAt, v.UpdatedBy = clonePtr(own.UpdatedAt), ptr(own.UpdatedBy)
	}
	return v
}

// widening lists how after lets more run without a person than before
// (empty when it does not): a higher percent or max_percent, a daily limit
// cleared or raised, a pause ended, or an exception above the percent in
// force.
func widening(before, after effective) []string {
	var out []string
	if a, b := min(after.percent, after.maxPercent), min(before.percent, before.maxPercent); a > b {
		out = append(out, fmt.Sprintf("raises percent from %d to %d", b, a))
	}
	if after.maxPercent > before.maxPercent {
		out = append(out, fmt.Sprintf("raises max_percent from %d to %d", before.maxPercent, after.maxPercent))
	}
	for _, l := range []struct {
		name      string
		old, next *int
	}{{"the workspace's daily limit", before.wsLimit, after.wsLimit}, {"the process's daily limit", before.procLimit, after.procLimit}} {
		switch {
		case l.old == nil:
		case l.next == nil:
			out = append(out, fmt.Sprintf("clears %s of %d", l.name, *l.old))
		case *l.next > *l.old:
			out = append(out, fmt.Sprintf("raises %s from %d to %d", l.name, *l.old, *l.next))
		}
	}
	if before.paused && !after.paused {
		out = append(out, "ends the pause")
	}
	if ex := after.exception; ex != nil && (before.exception == nil || *ex != *before.exception) && ex.Percent > before.level() {
		out = append(out, fmt.Sprintf("sets an exception of %d%% above the current %d%%", ex.Percent, before.level()))
	}
	return out
}
