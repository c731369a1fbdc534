package process

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/filter"
)

// MonitorConfig configures a monitor step: every Interval, read Value (a
// reference, or the result of calling the step's capability with Args) and
// check Condition (a filter over {"value": ...}) until it holds or Timeout
// passes.
type MonitorConfig struct {
	Value     any             `json:"value,omitempty"`
	Args      map[string]any  `json:"args,omitempty"`
	Condition json.RawMessage `json:"condition" jsonschema:"required"`
	Interval  string          `json:"interval,omitempty" jsonschema:"maxLength=40"`
	Timeout   string          `json:"timeout,omitempty" jsonschema:"maxLength=40"`
	// FailOnTimeout fails the step (and the run) when the timeout passes;
	// otherwise the step completes with held=false.
	FailOnTimeout bool `json:"fail_on_timeout,omitempty"`
}

// monitorStep is the monitor step type: the engine re-reads the value on
// its interval.
func monitorStep() StepType {
	return Define(StepDef[MonitorConfig]{
		Type: StepMonitor, Label: "Monitor",
		Description: "Watches for a condition over time: re-checks a value on an interval until it holds or times out.",
		Check:       checkMonitor,
		Run:         runMonitor,
	})
}

// runMonitor reads the value (calling the step's capability when it names
// one) on the step's interval and completes the step when the condition
// holds or the timeout passes.
func runMonitor(env StepEnv) bool {
	def := env.Step()
	var cfg MonitorConfig
	if err := env.Config(&cfg); err != nil {
		return env.Fail(err)
	}
	interval, timeout, err := cfg.Periods()
	if err != nil {
		return env.Fail(fmt.Errorf("step %s: %w", def.Key, err))
	}
	s := env.State()
	if s.Deadline == nil {
		dl := env.Now().Add(timeout)
		s.Deadline = &dl
		env.SetState(s)
	}
	var value any
	switch {
	case env.Called():
		out, ok := env.CallOutcome()
		if !ok {
			return false
		}
		env.ClearAttempts()
		value = out
	case env.TimerFired("check"):
		if def.Capability != "" {
			env.Resume()
			env.Call(def.Capability, orEmpty(cfg.Args), "check", "check-"+strconv.Itoa(s.Checks+1)+"/")
			return false
		}
		value = cfg.Value
	default:
		if timer, _ := env.Pending(); timer {
			return false
		}
		if def.Capability != "" {
			env.Call(def.Capability, orEmpty(cfg.Args), "check", "check-"+strconv.Itoa(s.Checks+1)+"/")
			return false
		}
		value = cfg.Value
	}
	s.Checks++
	env.SetState(s)
	f, err := filter.Parse(cfg.Condition, "config", "condition")
	if err != nil {
		return env.Fail(fmt.Errorf("step %s: %s", def.Key, errs.Text(err)))
	}
	if f.Match(map[string]any{"value": value}) {
		return env.Complete(map[string]any{"held": true, "checks": s.Checks, "value": value}, true)
	}
	now := env.Now()
	if !now.Before(*s.Deadline) {
		if cfg.FailOnTimeout {
			return env.Fail(fmt.Errorf("step %s: condition did not hold within %s", def.Key, timeout))
		}
		return env.Complete(map[string]any{"held": false, "checks": s.Checks, "value": value}, true)
	}
	// The next check comes on the interval, or at the timeout; the
	// deadline stays the timeout.
	next := min(interval, s.Deadline.Sub(now))
	env.StartTimer(next, "check")
	env.SetState(s)
	env.Wait()
	return false
}

func checkMonitor(cfg *MonitorConfig, s Step, loc []any) []errs.Violation {
	var v violations
	raw := json.RawMessage(cfg.Condition)
	if _, err := filter.Parse(raw, at(loc, "condition")...); err != nil {
		v.addAll(violationsOf(err, at(loc, "condition")))
	}
	if cfg.Value == nil && s.Capability == "" {
		v.add(at(loc, "value"), "missing", "a monitor needs a value to watch (a reference) or a capability to call")
	}
	if cfg.Value != nil && s.Capability != "" {
		v.add(at(loc, "value"), "value_error", "give a value or a capability to call, not both")
	}
	if len(cfg.Args) > 0 && s.Capability == "" {
		v.add(at(loc, "args"), "value_error", "args are passed to the step's capability, and the step names none")
	}
	checkDuration(&v, cfg.Interval, at(loc, "interval"))
	checkDuration(&v, cfg.Timeout, at(loc, "timeout"))
	return v.vs
}

// The monitor defaults.
const (
	DefaultMonitorInterval = time.Hour
	DefaultMonitorTimeout  = 24 * time.Hour
)

// Periods are how often the step checks (1h by default) and how long it
// watches (24h by default).
func (c MonitorConfig) Periods() (interval, timeout time.Duration, err error) {
	interval, timeout = DefaultMonitorInterval, DefaultMonitorTimeout
	if c.Interval != "" {
		if interval, err = positiveDuration("", c.Interval); err != nil {
			return 0, 0, err
		}
	}
	if c.Timeout != "" {
		if timeout, err = positiveDuration("", c.Timeout); err != nil {
			return 0, 0, err
		}
	}
	return interval, timeout, nil
}
