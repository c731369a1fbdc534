package process

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/filter"
	"github.com/cockroachdb/errors"
)

// Priorities a route can give.
const (
	PriorityLow    = "low"
	PriorityNormal = "normal"
	PriorityHigh   = "high"
	PriorityUrgent = "urgent"
)

// RouteConfig configures a route step: a rule table deciding where the item
// goes next and who owns it. The first rule whose When filter matches Input
// wins; fields it leaves empty come from Default.
type RouteConfig struct {
	// Input is the object the rules look at: usually a reference such as
	// "${trigger.data}" or "${steps.validate}". Defaults to the run's data
	// (subject, trigger, steps).
	Input any `json:"input,omitempty"`
	// Rules are tried in order.
	Rules []RouteRule `json:"rules" jsonschema:"required,minItems=1,maxItems=100"`
	// Default is where an item goes when no rule matches.
	Default RouteTarget `json:"default" jsonschema:"required"`
	// AI, when set, classifies a text with ai.classify and the rules look
	// at the classification instead of Input (see RouteAI). The workspace
	// must bind ai.classify.
	AI *RouteAI `json:"ai,omitempty"`

	// parsed holds each rule's When filter parsed by Prepare (nil for one
	// that does not parse); Route parses them itself without it. roots
	// are the keys of the run's data the parsed filters look at.
	parsed []*filter.Filter
	roots  []string
}

// Prepare parses the rules' filters once, for a config that many runs
// route with (the run engine keeps a decoded config per process version):
// Route then matches with them instead of parsing each rule's filter at
// each call. The config must not change after it.
func (c *RouteConfig) Prepare() {
	c.parsed = make([]*filter.Filter, len(c.Rules))
	c.roots = []string{}
	for i, r := range c.Rules {
		c.parsed[i] = parseWhen(r.When)
		for _, root := range c.parsed[i].Roots() {
			if !slices.Contains(c.roots, root) {
				c.roots = append(c.roots, root)
			}
		}
	}
}

// dataRoots implements dataReader: a route with an input reads none of
// the run's data; one prepared reads what its filters look at; of one not
// prepared it is not known.
func (c *RouteConfig) dataRoots() ([]string, bool) {
	switch {
	case c.Input != nil:
		return nil, true
	case c.roots != nil && len(c.parsed) == len(c.Rules):
		return c.roots, true
	}
	return nil, false
}

// RouteTarget is a destination: a queue, an owner and a priority.
type RouteTarget struct {
	// Queue is the work queue ("ap-review", "sales-emea").
	Queue string `json:"queue,omitempty" jsonschema:"maxLength=80"`
	// Owner is the person (user id or email) who owns the item.
	Owner string `json:"owner,omitempty" jsonschema:"maxLength=200"`
	// Priority is low, normal, high or urgent. Defaults to normal.
	Priority string `json:"priority,omitempty" jsonschema:"enum=low,enum=normal,enum=high,enum=urgent"`
}

// RouteRule is one row of the rule table.
type RouteRule struct {
	// ID names the rule in the output. Defaults to "rules.<index>".
	ID string `json:"id,omitempty" jsonschema:"maxLength=80"`
	// When is a filter (api.md's trigger filter language) over Input.
	When map[string]any `json:"when" jsonschema:"required"`
	// Queue, Owner and Priority are where a matching item goes; at least
	// one is set.
	Queue    string `json:"queue,omitempty" jsonschema:"maxLength=80"`
	Owner    string `json:"owner,omitempty" jsonschema:"maxLength=200"`
	Priority string `json:"priority,omitempty" jsonschema:"enum=low,enum=normal,enum=high,enum=urgent"`
}

// RuleID returns the rule's id, or "rules.<i>" for the rule at index i.
func (r RouteRule) RuleID(i int) string {
	if r.ID != "" {
		return r.ID
	}
	return "rules." + strconv.Itoa(i)
}

// RouteOutput is a route step's output.
type RouteOutput struct {
	Queue    string `json:"queue"`
	Owner    string `json:"owner"`
	Priority string `json:"priority"`
	// MatchedRule is the id of the rule that matched, or "default".
	MatchedRule string `json:"matched_rule"`
	// Classification and AI are set when the step classified with AI.
	Classification *Classification `json:"classification,omitempty"`
	AI             *AIRecord       `json:"ai,omitempty"`
}

// decoded is the output as toAny would make it: a route without AI has
// only strings.
func (o RouteOutput) decoded() (any, bool) {
	if o.Classification != nil || o.AI != nil {
		return nil, false
	}
	return map[string]any{"queue": o.Queue, "owner": o.Owner, "priority": o.Priority, "matched_rule": o.MatchedRule}, true
}

// Route decides where data goes: the first rule (in order) whose filter
// matches, with the fields it leaves empty taken from the default; the
// default when none matches. It is pure and deterministic. A rule whose
// filter does not parse never matches (definition-time validation rejects
// such rules).
func Route(cfg RouteConfig, data map[string]any) RouteOutput {
	out := RouteOutput{
		Queue:       cfg.Default.Queue,
		Owner:       cfg.Default.Owner,
		Priority:    cfg.Default.Priority,
		MatchedRule: "default",
	}
	prepared := len(cfg.parsed) == len(cfg.Rules)
	for i, r := range cfg.Rules {
		var f *filter.Filter
		if prepared {
			f = cfg.parsed[i]
		} else {
			f = parseWhen(r.When)
		}
		if f == nil || !f.Match(data) {
			continue
		}
		out.MatchedRule = r.RuleID(i)
		if r.Queue != "" {
			out.Queue = r.Queue
		}
		if r.Owner != "" {
			out.Owner = r.Owner
		}
		if r.Priority != "" {
			out.Priority = r.Priority
		}
		break
	}
	if out.Priority == "" {
		out.Priority = PriorityNormal
	}
	return out
}

// parseWhen parses a rule's filter; nil when it does not parse (such a
// rule never matches).
func parseWhen(when map[string]any) *filter.Filter {
	raw, err := json.Marshal(when)
	if err != nil {
		return nil
	}
	f, err := filter.Parse(raw)
	if err != nil {
		return nil
	}
	return f
}

// routeStep is the route step type (Route); without an input it looks at
// the run's data.
func routeStep() StepType {
	return Define(StepDef[RouteConfig]{
		Type: StepRoute, Label: "Route",
		Description: "Decides where the item goes next and who owns it, from a rule table.",
		Check:       checkRoute,
		Needs: func(s Step) []string {
			var c RouteConfig
			if err := decodeJSON(nonEmpty(s.Config), &c); err == nil && c.AI != nil {
				return []string{CapAIClassify}
			}
			return nil
		},
		Call: func(cfg *RouteConfig, _ Step) (string, map[string]any, bool) {
			if cfg.AI == nil {
				return "", nil, false
			}
			return CapAIClassify, cfg.AI.args(), true
		},
		Result: func(cfg *RouteConfig, s Step, result any) (any, error) {
			if cfg.AI == nil || s.Capability != "" {
				return result, nil
			}
			return routeFromAI(cfg, result)
		},
		Eval: func(cfg *RouteConfig, data map[string]any) (any, error) {
			if cfg.Input == nil {
				return Route(*cfg, data), nil
			}
			input, ok := cfg.Input.(map[string]any)
			if !ok {
				return nil, errors.New("input must be an object")
			}
			return Route(*cfg, input), nil
		},
	})
}

func checkRoute(cfg *RouteConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	if cfg.Input != nil {
		checkSource(&v, cfg.Input, at(loc, "input"), "an object", false)
	}
	if cfg.AI != nil {
		seen := map[string]int{}
		for i, l := range cfg.AI.Labels {
			if first, dup := seen[l.Label]; dup {
				v.add(at(loc, "ai", "labels", i, "label"), "value_error", "duplicates the label of labels[%d]", first)
			}
			seen[l.Label] = i
		}
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
