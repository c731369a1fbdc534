package process

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/cron"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/internal/filter"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/internal/refs"
)

var (
	keyPattern        = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	eventPattern      = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	capabilityPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+$`)
)

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

// checkStep reports every violation of one step at loc (for a process body,
// ["body","steps",i]): the type, the config against the type's schema and
// its rules beyond the schema (durations, filters, patterns, references,
// cross-field rules), the capability and the controls. The key's pattern
// and uniqueness are the process's to check (checkSteps).
func checkStep(s Step, loc ...any) []errs.Violation {
	var v violations
	t, ok := LookupStepType(s.Type)
	if !ok {
		if s.Type == "" {
			v.add(at(loc, "type"), "missing", "a step needs a type")
		} else {
			v.add(at(loc, "type"), "enum", "must be one of %s", strings.Join(StepTypeNames(), ", "))
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
			v.addAll(t.check(cfg, s, cloc))
		}
	}
	if s.Capability != "" && !capabilityPattern.MatchString(s.Capability) {
		v.add(at(loc, "capability"), "string_pattern_mismatch", "must be a capability id such as email.send")
	}
	v.addAll(checkControls(t, s, at(loc, "controls")))
	return v.vs
}

// checkSteps reports every violation of a process's steps at loc (["body",
// "steps"]): their number (1..50), each key's pattern and uniqueness, and
// each step (checkStep).
func checkSteps(steps []Step, loc ...any) []errs.Violation {
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
		v.addAll(checkStep(s, sloc...))
	}
	return v.vs
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

// checkTrigger reports every violation of a trigger at loc (["body",
// "trigger"]) beyond its schema: an event trigger needs an event name and a
// filter that parses; a schedule needs a cron expression that parses in its
// timezone; fields of other trigger types are refused.
func checkTrigger(tr Trigger, loc ...any) []errs.Violation {
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
			// cron locates its violations at ["body","trigger",...]; move
			// them under loc.
			for _, x := range violationsOf(err, at(loc, "cron")) {
				x.Loc = relocate(x.Loc, []any{"body", "trigger"}, loc)
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

func checkIntake(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*IntakeConfig)
	var v violations
	switch {
	case cfg.DocumentID == "" && cfg.Text == "":
		v.add(at(loc, "text"), "missing", "an intake step needs document_id (a document) or text (a message)")
	case cfg.DocumentID != "" && cfg.Text != "":
		v.add(at(loc, "text"), "value_error", "give document_id or text, not both")
	case cfg.Text != "" && len(cfg.Fields) == 0:
		v.add(at(loc, "fields"), "missing", "an intake step reading text needs fields to extract")
	}
	seen := map[string]int{}
	efs := cfg.extractFields()
	for i, f := range cfg.Fields {
		floc := at(loc, "fields", i)
		if first, dup := seen[f.Key]; dup && f.Key != "" {
			v.add(at(floc, "key"), "value_error", "duplicates the key of field %d", first)
		}
		seen[f.Key] = i
		for _, x := range efs[i].Check() {
			if x.Type == "missing" && len(x.Loc) == 1 && x.Loc[0] == "key" {
				continue // the schema reports a missing key
			}
			x.Loc = append(at(floc), x.Loc...)
			v.addAll([]errs.Violation{x})
		}
		if len(f.Options) > 0 && f.Type != extract.TypeEnum {
			v.add(at(floc, "options"), "value_error", "options are only for enum fields")
		}
	}
	return v.vs
}

func checkValidate(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*ValidateConfig)
	var v violations
	checkSource(&v, cfg.Record, at(loc, "record"), "an object", true)
	ids := map[string]int{}
	for i, r := range cfg.Rules {
		rloc := at(loc, "rules", i)
		checkPath(&v, r.Field, at(rloc, "field"), true)
		if r.ValueField != "" {
			checkPath(&v, r.ValueField, at(rloc, "value_field"), false)
		}
		id := r.RuleID()
		if first, dup := ids[id]; dup {
			v.add(at(rloc, "id"), "value_error", "rule id %s duplicates rule %d's: give one of them an id", id, first)
		} else {
			ids[id] = i
		}
		checkRuleOperand(&v, r, rloc)
	}
	return v.vs
}

// checkRuleOperand checks that a rule has the operand its check needs.
func checkRuleOperand(v *violations, r ValidateRule, loc []any) {
	vloc := at(loc, "value")
	ref := false
	if s, ok := r.Value.(string); ok && isReference(s) {
		ref = true
	}
	hasValue := r.Value != nil
	comparable := map[string]bool{CheckMin: true, CheckMax: true, CheckEquals: true, CheckNotEquals: true,
		CheckBefore: true, CheckAfter: true, CheckIn: true, CheckNotIn: true}
	if r.ValueField != "" && !comparable[r.Check] {
		v.add(at(loc, "value_field"), "value_error", "is not used by the %s check", r.Check)
	}
	if len(r.Fields) > 0 && r.Check != CheckSumEquals {
		v.add(at(loc, "fields"), "value_error", "is only used by the sum_equals check")
	}
	if comparable[r.Check] {
		switch {
		case hasValue && r.ValueField != "":
			v.add(vloc, "value_error", "give value or value_field, not both")
			return
		case !hasValue && r.ValueField == "":
			v.add(vloc, "missing", "the %s check needs a value (or a value_field)", r.Check)
			return
		case r.ValueField != "" || ref:
			return
		}
	}
	switch r.Check {
	case CheckType:
		s, ok := r.Value.(string)
		if !ok || !slices.Contains(ValueTypes(), s) {
			v.add(vloc, "enum", "must be one of %s", strings.Join(ValueTypes(), ", "))
		}
	case CheckMin, CheckMax:
		if !jsonvalue.IsNumber(r.Value) {
			v.add(vloc, "type_error", "must be a number")
		}
	case CheckMinLength, CheckMaxLength:
		n, ok := jsonvalue.AsRat(r.Value)
		if !ok || !n.IsInt() || n.Sign() < 0 {
			v.add(vloc, "type_error", "must be a whole number of at least 0")
		}
	case CheckMatches:
		s, ok := r.Value.(string)
		if !ok || s == "" {
			v.add(vloc, "missing", "the matches check needs a pattern")
			break
		}
		if _, err := regexp.Compile(s); err != nil {
			v.add(vloc, "value_error", "is not a valid RE2 pattern: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	case CheckIn, CheckNotIn:
		if _, ok := r.Value.([]any); !ok {
			v.add(vloc, "type_error", "must be a list")
		}
	case CheckBefore, CheckAfter:
		if _, ok := parseTime(r.Value); !ok {
			v.add(vloc, "value_error", "must be a date (YYYY-MM-DD) or an RFC 3339 time")
		}
	case CheckSumEquals:
		if len(r.Fields) == 0 {
			v.add(at(loc, "fields"), "missing", "the sum_equals check needs the fields to add up")
		}
		for j, f := range r.Fields {
			checkPath(v, f, at(loc, "fields", j), true)
		}
	}
}

func checkRoute(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*RouteConfig)
	var v violations
	if cfg.Input != nil {
		checkSource(&v, cfg.Input, at(loc, "input"), "an object", false)
	}
	ids := map[string]int{}
	for i, r := range cfg.Rules {
		rloc := at(loc, "rules", i)
		raw, _ := json.Marshal(r.When)
		if _, err := filter.Parse(raw, at(rloc, "when")...); err != nil {
			v.addAll(violationsOf(err, at(rloc, "when")))
		}
		if r.Queue == "" && r.Owner == "" && r.Priority == "" {
			v.add(rloc, "missing", "a rule needs a queue, an owner or a priority")
		}
		id := r.RuleID(i)
		if first, dup := ids[id]; dup {
			v.add(at(rloc, "id"), "value_error", "duplicates the id of rule %d", first)
		} else {
			ids[id] = i
		}
	}
	if cfg.Default.Queue == "" && cfg.Default.Owner == "" {
		v.add(at(loc, "default", "queue"), "missing", "the default needs a queue or an owner")
	}
	return v.vs
}

func checkConsolidate(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*ConsolidateConfig)
	var v violations
	checkSource(&v, cfg.Left, at(loc, "left"), "an object or a list", true)
	checkSource(&v, cfg.Right, at(loc, "right"), "an object or a list", true)
	for i, k := range cfg.Keys {
		checkPath(&v, k.Left, at(loc, "keys", i, "left"), true)
		checkPath(&v, k.Right, at(loc, "keys", i, "right"), true)
	}
	for i, t := range cfg.Tolerances {
		checkPath(&v, t.Left, at(loc, "tolerances", i, "left"), true)
		checkPath(&v, t.Right, at(loc, "tolerances", i, "right"), true)
	}
	return v.vs
}

func checkAnalyse(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*AnalyseConfig)
	var v violations
	checkSource(&v, cfg.Values, at(loc, "values"), "a list", true)
	checkPath(&v, cfg.Field, at(loc, "field"), false)
	return v.vs
}

func checkDraft(c any, _ Step, loc []any) []errs.Violation {
	// Title and template bounds are the schema's; references are checked
	// for every config.
	_ = c.(*DraftConfig)
	return nil
}

func checkMonitor(c any, s Step, loc []any) []errs.Violation {
	cfg := c.(*MonitorConfig)
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

func checkFollowUp(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*FollowUpConfig)
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

func checkExecute(c any, s Step, loc []any) []errs.Violation {
	cfg := c.(*ExecuteConfig)
	var v violations
	if s.Capability == "" {
		// loc is [..., "steps", i, "config"]: the capability is the step's.
		v.add(at(loc[:len(loc)-1], "capability"), "missing", "an execute step needs the capability it calls")
	}
	checkPath(&v, cfg.AmountPath, at(loc, "amount_path"), false)
	return v.vs
}

func checkHumanTask(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*HumanTaskConfig)
	var v violations
	seen := map[string]bool{}
	for i, a := range cfg.Actions {
		aloc := at(loc, "actions", i)
		switch {
		case strings.TrimSpace(a) == "":
			v.add(aloc, "string_too_short", "an action needs a name")
		case utf8.RuneCountInString(a) > 40:
			v.add(aloc, "string_too_long", "must have at most 40 characters")
		case seen[a]:
			v.add(aloc, "value_error", "is listed twice")
		}
		seen[a] = true
	}
	keys := map[string]int{}
	for i, f := range cfg.Fields {
		floc := at(loc, "fields", i)
		if first, dup := keys[f.Key]; dup && f.Key != "" {
			v.add(at(floc, "key"), "value_error", "duplicates the key of field %d", first)
		}
		keys[f.Key] = i
		switch {
		case f.Type == "enum" && len(f.Options) == 0:
			v.add(at(floc, "options"), "missing", "an enum field needs options")
		case f.Type != "enum" && len(f.Options) > 0:
			v.add(at(floc, "options"), "value_error", "options are only for enum fields")
		}
	}
	return v.vs
}

func checkWait(c any, _ Step, loc []any) []errs.Violation {
	cfg := c.(*WaitConfig)
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
