package process

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/filter"
	"github.com/cockroachdb/errors"
)

// WaitConfig configures a wait step: a Duration, or an Event (with a Filter)
// with an optional Timeout.
type WaitConfig struct {
	Duration string          `json:"duration,omitempty" jsonschema:"maxLength=40"`
	Event    string          `json:"event,omitempty" jsonschema:"maxLength=200"`
	Filter   json.RawMessage `json:"filter,omitempty"`
	Timeout  string          `json:"timeout,omitempty" jsonschema:"maxLength=40"`
}

// waitStep is the wait step type: the engine sets a timer or waits for
// the event.
func waitStep() StepType {
	return Define(StepDef[WaitConfig]{
		Type: StepWait, Label: "Wait",
		Description: "Waits for a time, or for an event (with a filter and a timeout).",
		Check:       checkWait,
		Run:         runWait,
	})
}

// runWait sets the step's timer, or waits for its event (with the timeout's
// timer), and completes the step when either comes.
func runWait(env StepEnv) bool {
	def := env.Step()
	var cfg WaitConfig
	if err := env.Config(&cfg); err != nil {
		return env.Fail(err)
	}
	if env.TimerFired("wait") {
		if cfg.Event != "" {
			env.DropWaiter()
			return env.Complete(map[string]any{"timed_out": true, "event": nil}, false)
		}
		return env.Complete(map[string]any{"waited": cfg.Duration}, false)
	}
	if ev, ok := env.EventArrived(); ok {
		env.DropWaiter()
		return env.Complete(map[string]any{"timed_out": false, "event": ev.Name, "event_id": ev.ID, "data": ev.Data}, false)
	}
	if timer, event := env.Pending(); timer || event {
		return false
	}
	if cfg.Event != "" {
		env.AddWaiter(cfg.Event, cfg.Filter)
		if cfg.Timeout != "" {
			d, err := cfg.TimeoutValue()
			if err != nil {
				return env.Fail(fmt.Errorf("step %s: %w", def.Key, err))
			}
			env.StartTimer(d, "wait")
		}
		env.Wait()
		return false
	}
	d, err := cfg.DurationValue()
	if err != nil {
		return env.Fail(fmt.Errorf("step %s: %w", def.Key, err))
	}
	env.StartTimer(d, "wait")
	env.Wait()
	return false
}

func checkWait(cfg *WaitConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	switch {
	case cfg.Duration == "" && cfg.Event == "":
		v.add(at(loc, "duration"), "missing", "a wait needs a duration (such as 48h) or an event")
	case cfg.Duration != "" && cfg.Event != "":
		v.add(at(loc, "event"), "value_error", "give a duration or an event, not both")
	}
	checkDuration(&v, cfg.Duration, at(loc, "duration"))
	checkEventName(&v, cfg.Event, at(loc, "event"), false)
	if cfg.Event == "" {
		if !filterEmpty(cfg.Filter) {
			v.add(at(loc, "filter"), "value_error", "is only used when waiting for an event")
		}
		if cfg.Timeout != "" {
			v.add(at(loc, "timeout"), "value_error", "is only used when waiting for an event")
		}
		return v.vs
	}
	if !filterEmpty(cfg.Filter) {
		if _, err := filter.Parse(cfg.Filter, at(loc, "filter")...); err != nil {
			v.addAll(violationsOf(err, at(loc, "filter")))
		}
	}
	checkDuration(&v, cfg.Timeout, at(loc, "timeout"))
	return v.vs
}

// DurationValue is the time a wait without an event waits.
func (c WaitConfig) DurationValue() (time.Duration, error) {
	return positiveDuration("duration", c.Duration)
}

// TimeoutValue is how long a wait for an event waits at most.
func (c WaitConfig) TimeoutValue() (time.Duration, error) {
	return positiveDuration("timeout", c.Timeout)
}

// positiveDuration parses s, the value of the config field name, as a
// positive duration.
func positiveDuration(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		if name == "" {
			return 0, errors.Newf("%q is not a positive duration", s)
		}
		return 0, errors.Newf("%s %q is not a positive duration", name, s)
	}
	return d, nil
}
