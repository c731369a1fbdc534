package process

import (
	"encoding/json"
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
	})
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
