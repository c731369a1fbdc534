package process

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/internal/filter"
)

// FollowUpConfig configures a follow_up step: reminders through email.send
// every Every until an UntilEvent (matching Filter) arrives or MaxReminders
// have gone out.
type FollowUpConfig struct {
	To           any             `json:"to" jsonschema:"required"`
	Subject      string          `json:"subject" jsonschema:"required,minLength=1,maxLength=300"`
	Body         string          `json:"body" jsonschema:"required,minLength=1,maxLength=20000"`
	Every        string          `json:"every,omitempty" jsonschema:"maxLength=40"`
	MaxReminders int             `json:"max_reminders,omitempty" jsonschema:"minimum=1,maximum=50"`
	UntilEvent   string          `json:"until_event,omitempty" jsonschema:"maxLength=200"`
	Filter       json.RawMessage `json:"filter,omitempty"`
}

// followUpStep is the follow_up step type: the engine sends reminders
// through email.send until the reply event or the limit.
func followUpStep() StepType {
	return Define(StepDef[FollowUpConfig]{
		Type: StepFollowUp, Label: "Follow up",
		Description:  "Chases a person or supplier for something missing, with reminders through email.send until a reply event or a limit.",
		Capabilities: []string{CapEmailSend},
		Check:        checkFollowUp,
		Needs:        func(Step) []string { return []string{CapEmailSend} },
		Run:          runFollowUp,
	})
}

// runFollowUp sends a reminder, then waits for the next one's timer and
// for the reply event; it completes the step when the reply comes or the
// last reminder's wait ends.
func runFollowUp(env StepEnv) bool {
	def := env.Step()
	var cfg FollowUpConfig
	if err := env.Config(&cfg); err != nil {
		return env.Fail(err)
	}
	every, max, err := cfg.Schedule()
	if err != nil {
		return env.Fail(fmt.Errorf("step %s: %w", def.Key, err))
	}
	if env.Called() {
		if reply, ok := replyHeld(env); ok {
			// The reply came while this reminder was on its way: now
			// that its fate is known, the step ends, counting it if it
			// went out.
			s := env.State()
			if env.CallSucceeded() {
				s.Reminders++
				env.SetState(s)
			}
			reply["reminders_sent"] = s.Reminders
			return env.Complete(reply, true)
		}
		if _, ok := env.CallOutcome(); !ok {
			return false
		}
		s := env.State()
		s.Reminders++
		env.SetState(s)
		env.ClearAttempts()
		if _, waiting := env.Pending(); cfg.UntilEvent != "" && !waiting {
			env.AddWaiter(cfg.UntilEvent, cfg.Filter)
		}
		env.StartTimer(every, "remind")
		env.Wait()
		return false
	}
	if ev, ok := env.EventArrived(); ok {
		env.DropWaiter()
		reply := map[string]any{"replied": true, "reply": ev.Data, "event_id": ev.ID}
		if timer, _ := env.Pending(); !timer {
			// No timer: a reminder's call is on its way (the step waits
			// for the reply only once its first reminder went out). Its
			// result ends the step, so that reminders_sent counts it if
			// it was sent.
			env.SetOutput(reply)
			return false
		}
		reply["reminders_sent"] = env.State().Reminders
		return env.Complete(reply, true)
	}
	if env.TimerFired("remind") {
		if n := env.State().Reminders; n >= max {
			env.DropWaiter()
			return env.Complete(map[string]any{"replied": false, "reminders_sent": n}, true)
		}
	} else if timer, _ := env.Pending(); timer {
		return false
	}
	capID := def.Capability
	if capID == "" {
		capID = CapEmailSend
	}
	env.Resume()
	env.Call(capID, cfg.ReminderArgs(), "remind", "reminder-"+strconv.Itoa(env.State().Reminders+1)+"/")
	return false
}

// replyHeld returns a copy of the reply a follow_up step keeps as its
// output while the reminder on its way when the reply came is answered.
func replyHeld(env StepEnv) (map[string]any, bool) {
	out, ok := env.Output().(map[string]any)
	if !ok || out["replied"] != true {
		return nil, false
	}
	return maps.Clone(out), true
}

func checkFollowUp(cfg *FollowUpConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	tloc := at(loc, "to")
	checkAddress := func(s string, loc []any) {
		if isReference(s) {
			return
		}
		if addr, err := extract.ParseEmail(s); err != nil || addr != strings.TrimSpace(s) {
			v.add(loc, "value_error", "is not an email address")
		}
	}
	switch to := cfg.To.(type) {
	case nil:
		v.add(tloc, "missing", "a follow-up needs a recipient")
	case string:
		checkAddress(to, tloc)
	case []any:
		if len(to) == 0 {
			v.add(tloc, "too_short", "must list at least 1 recipient")
		}
		if len(to) > 50 {
			v.add(tloc, "too_long", "must list at most 50 recipients")
		}
		for i, e := range to {
			s, ok := e.(string)
			if !ok {
				v.add(at(tloc, i), "type_error", "must be a string")
				continue
			}
			checkAddress(s, at(tloc, i))
		}
	default:
		v.add(tloc, "type_error", "must be an email address, a list of them, or a reference")
	}
	checkOneLine(&v, cfg.Subject, at(loc, "subject"))
	checkDuration(&v, cfg.Every, at(loc, "every"))
	checkEventName(&v, cfg.UntilEvent, at(loc, "until_event"), false)
	if !filterEmpty(cfg.Filter) {
		if cfg.UntilEvent == "" {
			v.add(at(loc, "filter"), "value_error", "is only used with until_event")
		} else if _, err := filter.Parse(cfg.Filter, at(loc, "filter")...); err != nil {
			v.addAll(violationsOf(err, at(loc, "filter")))
		}
	}
	return v.vs
}

// The follow-up defaults.
const (
	DefaultFollowUpEvery        = 48 * time.Hour
	DefaultFollowUpMaxReminders = 3
)

// Schedule is how often the step reminds (every, 48h by default) and how
// many reminders it sends at most (3 by default).
func (c FollowUpConfig) Schedule() (every time.Duration, max int, err error) {
	every, max = DefaultFollowUpEvery, c.MaxReminders
	if c.Every != "" {
		if every, err = positiveDuration("every", c.Every); err != nil {
			return 0, 0, err
		}
	}
	if max <= 0 {
		max = DefaultFollowUpMaxReminders
	}
	return every, max, nil
}

// ReminderArgs are the arguments of each reminder's email.send call.
func (c FollowUpConfig) ReminderArgs() map[string]any {
	return map[string]any{"to": c.To, "subject": c.Subject, "body": c.Body}
}
