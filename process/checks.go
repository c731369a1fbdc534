package process

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/cron"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/filter"
	"github.com/bas-platform/bas/internal/refs"
)

var (
	keyPattern        = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	eventPattern      = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	capabilityPattern = regexp.MustCompile(CapabilityPattern)
)

// CapabilityPattern is the pattern the capability a step calls (and an
// agent's tool) matches.
const CapabilityPattern = `^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+$`

// KeyPattern is the pattern step keys (and task field keys) match.
const KeyPattern = `^[a-z][a-z0-9_]{0,39}$`

// violations collects violations under a location prefix.
type violations struct {
	vs []errs.Violation
}

func (v *violations) add(loc []any, typ, format string, args ...any) {
	v.vs = append(v.vs, errs.Violation{Loc: slices.Clone(loc), Msg: fmt.Sprintf(format, args...), Type: typ})
}

func (v *violations) addAll(vs []errs.Violation) { v.vs = append(v.vs, vs...) }

func at(loc []any, extra ...any) []any {
	return append(slices.Clone(loc), extra...)
}

// CheckStep reports every violation of one step at loc (for a process's
// step, ["steps",i]): the type, the config against the type's schema and
// its rules beyond the schema (durations, filters, patterns, references,
// cross-field rules), the capability and the controls. The key's pattern
// and uniqueness are the process's to check (CheckSteps).
func CheckStep(s Step, loc ...any) []errs.Violation { return builtin().CheckStep(s, loc...) }

// CheckStep reports every violation of one step whose type is one of r's
// (see the function CheckStep).
func (r *StepRegistry) CheckStep(s Step, loc ...any) []errs.Violation {
	var v violations
	t, ok := r.Lookup(s.Type)
	if !ok {
		if s.Type == "" {
			v.add(at(loc, "type"), "missing", "a step needs a type")
		} else {
			v.add(at(loc, "type"), "enum", "must be one of %s", strings.Join(r.Names(), ", "))
		}
		return v.vs
	}
	cloc := at(loc, "config")
	var doc any
	if err := decodeJSON(nonEmpty(s.Config), &doc); err != nil {
		v.add(cloc, "json_invalid", "is not valid JSON")
		return v.vs
	}
	if _, isObj := doc.(map[string]any); !isObj {
		v.add(cloc, "type_error", "must be an object")
		return v.vs
	}
	schemaVs := t.validator.Validate(doc, cloc...)
	v.addAll(schemaVs)
	v.addAll(errs.Violations(refs.Check(doc, cloc...)))
	if len(schemaVs) == 0 {
		cfg, err := t.DecodeConfig(s.Config)
		if err != nil {
			v.add(cloc, "type_error", "does not fit the %s config: %s", t.Type, err.Error())
		} else {
			v.addAll(t.checkConfig(cfg, s, cloc))
		}
	}
	if s.Capability != "" && !capabilityPattern.MatchString(s.Capability) {
		v.add(at(loc, "capability"), "string_pattern_mismatch", "must be a capability id such as email.send")
	}
	v.addAll(checkControls(t, s, at(loc, "controls")))
	return v.vs
}

// CheckSteps reports every violation of a process's steps at loc
// (["steps"]): their number (1..50), each key's pattern and uniqueness, and
// each step (CheckStep).
func CheckSteps(steps []Step, loc ...any) []errs.Violation {
	return builtin().CheckSteps(steps, loc...)
}

// CheckSteps reports every violation of a process's steps whose types are
// r's (see the function CheckSteps).
func (r *StepRegistry) CheckSteps(steps []Step, loc ...any) []errs.Violation {
	var v violations
	switch {
	case steps == nil:
		v.add(loc, "missing", "a process needs steps")
		return v.vs
	case len(steps) < 1:
		v.add(loc, "too_short", "must have at least 1 step")
	case len(steps) > MaxSteps:
		v.add(loc, "too_long", "must have at most %d steps", MaxSteps)
	}
	seen := map[string]int{}
	for i, s := range steps {
		sloc := at(loc, i)
		switch {
		case s.Key == "":
			v.add(at(sloc, "key"), "missing", "a step needs a key")
		case !keyPattern.MatchString(s.Key):
			v.add(at(sloc, "key"), "string_pattern_mismatch", "must match %s (a lowercase letter, then up to 39 lowercase letters, digits or underscores)", KeyPattern)
		default:
			if first, dup := seen[s.Key]; dup {
				v.add(at(sloc, "key"), "value_error", "duplicates the key of step %d", first)
			} else {
				seen[s.Key] = i
			}
		}
		if utf8.RuneCountInString(s.Name) > 200 {
			v.add(at(sloc, "name"), "string_too_long", "must have at most 200 characters")
		}
		v.addAll(r.CheckStep(s, sloc...))
	}
	for i, s := range steps {
		checkStepRefs(&v, s, i, seen, at(loc, i, "config"))
	}
	return v.vs
}

// checkStepRefs reports every reference of step i's config to a step the
// process does not have, or to itself or a later step: a run's data holds
// the outputs of the steps completed before the one running, so such a
// reference could only fail the step. keys maps each key to its step.
func checkStepRefs(v *violations, s Step, i int, keys map[string]int, loc []any) {
	if !bytes.Contains(s.Config, []byte("${")) {
		return
	}
	var doc any
	if decodeJSON(s.Config, &doc) != nil {
		return // CheckStep reports it
	}
	refs.Each(doc, func(path string, where []any) {
		if msg := stepRefProblem(path, i, keys); msg != "" {
			v.add(where, "value_error", "reference ${%s}: %s", path, msg)
		}
	}, loc...)
}

// stepRefProblem says what is wrong with a path of the run's data read by
// step i (by any step's progress, when i < 0): "" unless it names, under
// steps, a step that is not in keys (which maps each key to its step), or
// one that does not run before step i.
func stepRefProblem(path string, i int, keys map[string]int) string {
	rest, ok := strings.CutPrefix(path, "steps.")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(rest, ".")
	j, ok := keys[key]
	switch {
	case !ok:
		return fmt.Sprintf("the process has no step %q", key)
	case i < 0:
		return ""
	case j == i:
		return fmt.Sprintf("a step cannot read its own output (step %q)", key)
	case j > i:
		return fmt.Sprintf("step %q runs after this one; a step reads only the steps before it", key)
	}
	return ""
}

// MaxSteps bounds the steps of a process.
const MaxSteps = 50

// checkControls checks the per-step controls beyond their schema.
func checkControls(t StepType, s Step, loc []any) []errs.Violation {
	var v violations
	c := s.Controls
	if c.SLAHours != nil && (*c.SLAHours <= 0 || *c.SLAHours > 87600) {
		v.add(at(loc, "sla_hours"), "greater_than_equal", "must be more than 0 and at most 87600")
	}
	if c.AmountCapCents != nil && *c.AmountCapCents < 0 {
		v.add(at(loc, "amount_cap_cents"), "greater_than_equal", "must be at least 0")
	}
	if c.AllowedTools == nil {
		return v.vs
	}
	if len(c.AllowedTools) == 0 {
		v.add(at(loc, "allowed_tools"), "too_short", "must list at least 1 capability (leave it out to allow every capability)")
		return v.vs
	}
	if len(c.AllowedTools) > 50 {
		v.add(at(loc, "allowed_tools"), "too_long", "must have at most 50 items")
	}
	seen := map[string]bool{}
	for i, tool := range c.AllowedTools {
		switch {
		case !capabilityPattern.MatchString(tool):
			v.add(at(loc, "allowed_tools", i), "string_pattern_mismatch", "must be a capability id such as email.send")
		case seen[tool]:
			v.add(at(loc, "allowed_tools", i), "value_error", "is listed twice")
		}
		seen[tool] = true
	}
	for _, need := range t.Needs(s) {
		if !seen[need] {
			v.add(at(loc, "allowed_tools"), "value_error", "does not allow %s, which the step calls", need)
		}
	}
	return v.vs
}

// CheckTrigger reports every violation of a trigger at loc
// (["trigger"]) beyond its schema: an event trigger needs an event name and a
// filter that parses; a schedule needs a cron expression that parses in its
// timezone; fields of other trigger types are refused.
func CheckTrigger(tr Trigger, loc ...any) []errs.Violation {
	var v violations
	switch tr.Type {
	case TriggerManual, TriggerEvent, TriggerSchedule:
	case "":
		v.add(at(loc, "type"), "missing", "a trigger needs a type (manual, event or schedule)")
		return v.vs
	default:
		v.add(at(loc, "type"), "enum", "must be one of manual, event, schedule")
		return v.vs
	}
	only := func(field, owner string, set bool) {
		if set {
			v.add(at(loc, field), "value_error", "is only used by %s triggers", owner)
		}
	}
	if tr.Type != TriggerEvent {
		only("event", "event", tr.Event != "")
		only("filter", "event", !filterEmpty(tr.Filter))
	}
	if tr.Type != TriggerSchedule {
		only("cron", "schedule", tr.Cron != "")
		only("timezone", "schedule", tr.Timezone != "")
	}
	switch tr.Type {
	case TriggerEvent:
		checkEventName(&v, tr.Event, at(loc, "event"), true)
		if !filterEmpty(tr.Filter) {
			if _, err := filter.Parse(tr.Filter, at(loc, "filter")...); err != nil {
				v.addAll(violationsOf(err, at(loc, "filter")))
			}
		}
	case TriggerSchedule:
		if strings.TrimSpace(tr.Cron) == "" {
			v.add(at(loc, "cron"), "missing", "a schedule trigger needs a cron expression")
			break
		}
		if _, err := cron.Parse(tr.Cron, tr.Timezone); err != nil {
			// cron locates its violations at ["trigger",...]; move them
			// under loc.
			for _, x := range violationsOf(err, at(loc, "cron")) {
				x.Loc = relocate(x.Loc, []any{"trigger"}, loc)
				v.addAll([]errs.Violation{x})
			}
		}
	}
	return v.vs
}

// relocate replaces the prefix from of l by to.
func relocate(l []any, from, to []any) []any {
	if len(l) < len(from) {
		return l
	}
	for i := range from {
		if l[i] != from[i] {
			return l
		}
	}
	return append(slices.Clone(to), l[len(from):]...)
}

// violationsOf returns the violations an error carries, or one value_error
// at loc with its message.
func violationsOf(err error, loc []any) []errs.Violation {
	if vs := errs.Violations(err); len(vs) > 0 {
		return vs
	}
	return []errs.Violation{{Loc: loc, Msg: err.Error(), Type: "value_error"}}
}

func filterEmpty(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

func checkEventName(v *violations, name string, loc []any, required bool) {
	switch {
	case name == "":
		if required {
			v.add(loc, "missing", "an event name is required")
		}
	case utf8.RuneCountInString(name) > 200:
		v.add(loc, "string_too_long", "must have at most 200 characters")
	case !eventPattern.MatchString(name):
		v.add(loc, "string_pattern_mismatch", "must be an event name such as docs.document.validated")
	}
}

// checkDuration checks a Go duration that must be positive; a reference is
// checked when the step runs.
func checkDuration(v *violations, s string, loc []any) {
	if s == "" || isReference(s) {
		return
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		v.add(loc, "value_error", "is not a duration such as 30m, 48h or 1h30m")
		return
	}
	if d <= 0 {
		v.add(loc, "greater_than_equal", "must be more than 0")
	}
}

// checkPath checks a dotted field path (not a reference).
func checkPath(v *violations, path string, loc []any, required bool) {
	switch {
	case path == "":
		if required {
			v.add(loc, "missing", "a field path is required")
		}
	case strings.Contains(path, "${"):
		v.add(loc, "value_error", "is a field path such as lines.0.total, not a reference")
	case slices.Contains(strings.Split(path, "."), ""):
		v.add(loc, "value_error", "is not a field path: use dot-separated names such as customer.country")
	}
}

// checkSource checks a field that takes an object or list in place, or a
// reference to one.
func checkSource(v *violations, val any, loc []any, what string, required bool) {
	switch x := val.(type) {
	case nil:
		if required {
			v.add(loc, "missing", "%s is required: write it in place or as a reference such as ${steps.intake.fields}", what)
		}
	case string:
		if !isReference(x) {
			v.add(loc, "value_error", "must be %s or a reference such as ${steps.intake.fields}", what)
		}
	case map[string]any:
		if what == "a list" {
			v.add(loc, "type_error", "must be a list or a reference to one")
		}
	case []any:
		if what == "an object" {
			v.add(loc, "type_error", "must be an object or a reference to one")
		}
	default:
		v.add(loc, "type_error", "must be %s or a reference", what)
	}
}

// checkOneLine reports a line break in the text a step writes into a mail
// header (a string or a list of strings, references or not): a break
// written into the process would inject headers into every mail, so it is
// refused when the process is saved, not only when a run sends. A
// reference's value is checked when it is sent.
func checkOneLine(v *violations, val any, loc []any) {
	switch x := val.(type) {
	case string:
		if strings.ContainsAny(x, "\r\n") {
			v.add(loc, "value_error", "must be one line: a line break here would add mail headers")
		}
	case []any:
		for i, e := range x {
			checkOneLine(v, e, at(loc, i))
		}
	}
}
