package decisions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/feedback"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Caller sends capability calls to the provider bound to the capability.
// The capability registry satisfies it.
type Caller interface {
	Call(ctx context.Context, call capability.Call) (json.RawMessage, error)
}

// Config configures New.
type Config struct {
	// Store is where decisions, cases and verdicts live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// Caller evaluates decisions through the decision.evaluate capability
	// (the workspace's registry, so a binding to another provider takes
	// effect). Defaults to calling the built-in Provider directly.
	Caller Caller
}

// AgreementWindowDays is the window of AgreementRate (the cockpit's
// agreement_rate).
const AgreementWindowDays = 30

// Service keeps a workspace's decisions, evaluates them through the
// decision.evaluate capability, records their cases and the feedback people
// give, and keeps the agreement ledger every AI output judged by a person
// goes into (see RecordVerdict). It is safe for concurrent use.
type Service struct {
	st       store.Store
	clock    clock.Clock
	log      *slog.Logger
	provider *Provider
	caller   Caller

	schemas schema.Cache // compiled input and output schemas

	ids ids.Generator // makes the ids of the records and audit entries it writes
}

// New returns the decisions service.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, provider: NewProvider(cfg.Store), caller: cfg.Caller}
	if s.caller == nil {
		s.caller = s.provider
	}
	return s
}

// Provider returns the built-in decision.evaluate provider on the service's
// store, for registering with the capability registry.
func (s *Service) Provider() *Provider { return s.provider }

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

// Create stores a new decision. A decision of the same name is a conflict.
func (s *Service) Create(ctx context.Context, tenant, actor string, d Decision) (*Record, error) {
	if err := errs.Validation(d.Validate()...); err != nil {
		return nil, err
	}
	now := s.now()
	rec := &Record{Decision: d.withDefaults(), ID: s.ids.New("dec", now), CreatedAt: now, CreatedBy: actor}
	err := s.st.Update(ctx, func(tx store.Txn) error {
		exists, err := records.Exists(tx, tenant, rec.Name)
		if err != nil {
			return err
		}
		if exists {
			return errs.Conflictf("decision %s already exists", rec.Name)
		}
		if err := records.Put(tx, tenant, rec); err != nil {
			return err
		}
		return audit.Write(tx, tenant, &s.ids, audit.Entry{
			At: now, Actor: actor, Action: "decision.created", Entity: "decision", EntityID: rec.Name,
			After: audit.Marshal(rec),
		})
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// Get returns the decision name.
func (s *Service) Get(ctx context.Context, tenant, name string) (*Record, error) {
	var rec *Record
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = records.Get(r, tenant, name)
		return err
	})
	return rec, err
}

// List returns one page of the decisions in name order, and the next
// cursor.
func (s *Service) List(ctx context.Context, tenant string, p store.Page) ([]*Record, string, error) {
	var (
		out  []*Record
		next string
	)
	p.Forward = true
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		out, next, err = records.List(r, tenant, p)
		return err
	})
	return out, next, err
}

// deleteBatch is how many cases one transaction of Delete removes.
const deleteBatch = 500

// Delete removes the decision name, then its cases and outcome tallies in
// batches. Its
// verdicts stay in the agreement ledger (they happened).
func (s *Service) Delete(ctx context.Context, tenant, actor, name string) error {
	var rec *Record
	err := s.st.Update(ctx, func(tx store.Txn) error {
		var err error
		if rec, err = records.Get(tx, tenant, name); err != nil {
			return err
		}
		if err := records.Delete(tx, tenant, name); err != nil {
			return err
		}
		return audit.Write(tx, tenant, &s.ids, audit.Entry{
			At: s.now(), Actor: actor, Action: "decision.deleted", Entity: "decision", EntityID: name,
			Before: audit.Marshal(rec),
		})
	})
	if err != nil {
		return err
	}
	for {
		n := 0
		err := s.st.Update(ctx, func(tx store.Txn) error {
			n = 0
			var err error
			if n, err = deleteSome(tx, tenant, cases, rec.ID); err != nil || n == deleteBatch {
				return err
			}
			m, err := deleteSome(tx, tenant, outcomeTallies, rec.ID)
			n += m
			return err
		})
		if err != nil {
			return errors.Wrapf(err, "delete cases of decision %s", name)
		}
		if n < deleteBatch {
			return nil
		}
	}
}

// deleteSome deletes up to deleteBatch records of c whose "decision" index
// names decisionID, and returns how many it deleted.
func deleteSome[T any](tx store.Txn, tenant string, c *store.Collection[T], decisionID string) (int, error) {
	var batch []string
	err := c.IDsBy(tx, tenant, "decision", []any{decisionID}, func(id string) error {
		batch = append(batch, id)
		if len(batch) == deleteBatch {
			return store.ErrStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrStop) {
		return 0, err
	}
	for _, id := range batch {
		if err := c.Delete(tx, tenant, id); err != nil {
			return 0, err
		}
	}
	return len(batch), nil
}

// validator returns the compiled input ("in") or output ("out") schema of
// rec (compiled once, then cached).
func (s *Service) validator(rec *Record, which string) (*schema.Validator, error) {
	raw := rec.InputSchema
	if which == "out" {
		raw = rec.OutputSchema
	}
	v, err := s.schemas.Compile(raw)
	if err != nil {
		return nil, errors.Wrapf(err, "compile %s schema of decision %s", which, rec.Name)
	}
	return v, nil
}

// EvaluateIn asks for an evaluation (interface.md's DecisionIn).
type EvaluateIn struct {
	// Input must satisfy the decision's input_schema.
	Input json.RawMessage `json:"input" jsonschema:"required,type=object"`
}

// Validate reports what is wrong with in before the decision's schema is
// consulted.
func (in EvaluateIn) Validate() []errs.Violation {
	return objectField(in.Input, "input")
}

func objectField(raw json.RawMessage, loc ...any) []errs.Violation {
	switch {
	case len(raw) == 0:
		return []errs.Violation{{Loc: loc, Msg: "is required", Type: "missing"}}
	case !isObject(raw):
		return []errs.Violation{{Loc: loc, Msg: "must be an object", Type: "type_error"}}
	}
	return nil
}

// Evaluation is the answer of Evaluate.
type Evaluation struct {
	// CaseID names the recorded case; feedback names it as its rule_id.
	CaseID string `json:"case_id"`
	// Output is the proposed output, or null.
	Output json.RawMessage `json:"output"`
	// Confidence is in [0, 1].
	Confidence float64 `json:"confidence"`
	// Mode is auto, suggest or manual, from the decision's thresholds.
	Mode string `json:"mode"`
	// RuleID names the learned rule the output came from.
	RuleID string `json:"rule_id"`
}

// Evaluate validates in against the decision's input_schema, calls the
// decision.evaluate capability, checks the output against output_schema (an
// output that fails it is dropped: null, confidence 0, manual), derives the
// mode from the decision's thresholds and records the case.
func (s *Service) Evaluate(ctx context.Context, tenant, name string, in EvaluateIn) (*Evaluation, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	rec, err := s.Get(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	inV, err := s.validator(rec, "in")
	if err != nil {
		return nil, err
	}
	if vs := inV.ValidateJSON(in.Input, "input"); len(vs) > 0 {
		return nil, errs.Validation(vs...)
	}
	exact, fields, err := matchKeys(rec, in.Input)
	if err != nil {
		return nil, errs.Invalidf([]any{"input"}, "json_invalid", "is not valid JSON")
	}
	now := s.now()
	c := &Case{
		ID: s.ids.New("dcs", now), DecisionID: rec.ID, Decision: rec.Name, Input: compact(in.Input),
		Status: CasePending, Outcome: json.RawMessage("null"), ExactKey: exact, FieldsKey: fields, CreatedAt: now,
	}
	args, err := json.Marshal(evaluateArgs{Name: rec.Name, Input: c.Input})
	if err != nil {
		return nil, errors.Wrap(err, "encode evaluate arguments")
	}
	raw, err := s.caller.Call(ctx, capability.Call{
		Tenant: tenant, Capability: capability.DecisionEvaluate, Args: args, IdempotencyKey: "decision/" + c.ID,
	})
	if err != nil {
		return nil, errors.Wrapf(err, "evaluate decision %s", rec.Name)
	}
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, errors.Wrapf(err, "decode result of decision %s", rec.Name)
	}
	s.settle(rec, &res)
	c.Proposed, c.Confidence, c.Mode, c.RuleID = res.Output, res.Confidence, res.Mode, res.RuleID
	err = s.st.Update(ctx, func(tx store.Txn) error {
		if err := stillDecision(tx, tenant, rec); err != nil {
			return err
		}
		return cases.Put(tx, tenant, c)
	})
	if err != nil {
		return nil, err
	}
	return &Evaluation{CaseID: c.ID, Output: c.Proposed, Confidence: c.Confidence, Mode: c.Mode, RuleID: c.RuleID}, nil
}

// stillDecision checks, in the transaction that writes for rec, that the
// decision named rec.Name is still rec: one deleted, or deleted and created
// anew under the same name, since rec was read is not found.
func stillDecision(r store.Reader, tenant string, rec *Record) error {
	cur, err := records.Get(r, tenant, rec.Name)
	if err != nil {
		return err
	}
	if cur.ID != rec.ID {
		return errs.NotFoundf("decision not found")
	}
	return nil
}

// settle makes a provider's result trustworthy: the confidence is clamped
// to [0, 1], an output that fails output_schema is dropped, and the mode is
// derived from the decision's own thresholds (a null output is manual).
func (s *Service) settle(rec *Record, res *Result) {
	if math.IsNaN(res.Confidence) || res.Confidence < 0 {
		res.Confidence = 0
	}
	res.Confidence = min(res.Confidence, 1)
	if res.RuleID == "" {
		res.RuleID = RuleNone
	}
	if len(res.Output) == 0 || isNull(res.Output) {
		res.Output, res.Mode = json.RawMessage("null"), ModeManual
		return
	}
	outV, err := s.validator(rec, "out")
	if err == nil && len(outV.ValidateJSON(res.Output, "output")) == 0 {
		res.Output = compact(res.Output)
		res.Mode = rec.Thresholds.Mode(res.Confidence)
		return
	}
	s.log.Warn("decision output dropped: it does not satisfy the output schema", "decision", rec.Name, "rule", res.RuleID)
	res.Output, res.Confidence, res.Mode, res.RuleID = json.RawMessage("null"), 0, ModeManual, RuleInvalidOutput
}

func compact(raw json.RawMessage) json.RawMessage {
	c, err := Canonical(raw)
	if err != nil {
		return raw
	}
	return c
}

// Verdicts of feedback items.
const (
	VerdictAgree    = feedback.VerdictAgree
	VerdictDisagree = feedback.VerdictDisagree
)

// Bounds of feedback (interface.md 2.8 and 8).
const (
	MaxFeedbackItems = feedback.MaxItems
	MaxRuleIDLen     = feedback.MaxRuleIDLen
	MaxNoteLen       = feedback.MaxNoteLen
)

// FeedbackIn judges evaluated cases (interface.md's FeedbackIn).
type FeedbackIn struct {
	Results []FeedbackItem `json:"results" jsonschema:"required,minItems=1,maxItems=200"`
}

// FeedbackItem judges one case (interface.md's FeedbackItemIn). For a
// decision, RuleID names the evaluated case (the case_id Evaluate
// returned). Outcome, an extension, gives the right output: with verdict
// disagree it corrects the case; with agree it must equal the proposal.
type FeedbackItem struct {
	RuleID  string          `json:"rule_id" jsonschema:"required,minLength=1,maxLength=80"`
	Verdict string          `json:"verdict" jsonschema:"required,enum=agree,enum=disagree"`
	Note    *string         `json:"note,omitempty" jsonschema:"nullable,maxLength=2000"`
	Outcome json.RawMessage `json:"outcome,omitempty"`
}

// Validate reports every violation of in's bounds, located at its field
// names (["results", 0, "verdict"]); the HTTP API puts them under "body".
func (in FeedbackIn) Validate() []errs.Violation {
	var vs []errs.Violation
	add := func(typ, msg string, loc ...any) {
		vs = append(vs, errs.Violation{Loc: loc, Msg: msg, Type: typ})
	}
	switch n := len(in.Results); {
	case n == 0:
		add("too_short", "must have at least 1 item", "results")
	case n > MaxFeedbackItems:
		add("too_long", fmt.Sprintf("must have at most %d items", MaxFeedbackItems), "results")
	}
	seen := map[string]bool{}
	for i, it := range in.Results {
		switch n := utf8.RuneCountInString(it.RuleID); {
		case n == 0:
			add("string_too_short", "must be at least 1 character", "results", i, "rule_id")
		case n > MaxRuleIDLen:
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxRuleIDLen), "results", i, "rule_id")
		case seen[it.RuleID]:
			add("value_error", "is judged twice in one request", "results", i, "rule_id")
		}
		seen[it.RuleID] = true
		switch it.Verdict {
		case VerdictAgree, VerdictDisagree:
		case "":
			add("missing", "is required", "results", i, "verdict")
		default:
			add("enum", "must be one of: agree, disagree", "results", i, "verdict")
		}
		if it.Note != nil && utf8.RuneCountInString(*it.Note) > MaxNoteLen {
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxNoteLen), "results", i, "note")
		}
	}
	return vs
}

// Feedback judges cases of the decision name: agree confirms a case's
// proposed output, disagree marks it wrong (and, with an outcome, corrects
// it). Every item becomes a verdict in the decision's agreement ledger. All
// items apply or none: an unknown case or a bad outcome is a 422 naming the
// item, a case already judged a 409. It returns the decision's agreement.
func (s *Service) Feedback(ctx context.Context, tenant, actor, name string, in FeedbackIn) (*Agreement, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	rec, err := s.Get(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	outV, err := s.validator(rec, "out")
	if err != nil {
		return nil, err
	}
	var vs []errs.Violation
	for i, it := range in.Results {
		if len(it.Outcome) > 0 && !isNull(it.Outcome) {
			vs = append(vs, outV.ValidateJSON(it.Outcome, "results", i, "outcome")...)
		}
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	var out *Agreement
	err = s.st.Update(ctx, func(tx store.Txn) error {
		if err := stillDecision(tx, tenant, rec); err != nil {
			return err
		}
		now := s.now()
		var (
			vs      []errs.Violation
			judged  []*Case
			verdict []*Verdict
		)
		for i, it := range in.Results {
			loc := func(f string) []any { return []any{"results", i, f} }
			c, err := cases.Get(tx, tenant, it.RuleID)
			if errors.Is(err, store.ErrNotFound) || err == nil && c.DecisionID != rec.ID {
				vs = append(vs, errs.Violation{Loc: loc("rule_id"), Msg: "is not a case of this decision", Type: "value_error"})
				continue
			}
			if err != nil {
				return err
			}
			if c.Status != CasePending {
				return errs.Conflictf("case %s already judged (%s)", c.ID, c.Status)
			}
			hasOutcome := len(it.Outcome) > 0 && !isNull(it.Outcome)
			var outcome json.RawMessage
			if hasOutcome {
				outcome = compact(it.Outcome)
			}
			proposed := len(c.Proposed) > 0 && !isNull(c.Proposed)
			switch {
			case it.Verdict == VerdictAgree && !proposed:
				vs = append(vs, errs.Violation{Loc: loc("verdict"), Msg: "the case proposed no output to agree with; disagree and give the outcome", Type: "value_error"})
				continue
			case it.Verdict == VerdictAgree && hasOutcome && string(outcome) != string(c.Proposed):
				vs = append(vs, errs.Violation{Loc: loc("outcome"), Msg: "differs from the proposed output; use verdict disagree to correct it", Type: "value_error"})
				continue
			case it.Verdict == VerdictDisagree && hasOutcome && proposed && string(outcome) == string(c.Proposed):
				vs = append(vs, errs.Violation{Loc: loc("outcome"), Msg: "equals the proposed output; use verdict agree", Type: "value_error"})
				continue
			}
			switch {
			case it.Verdict == VerdictAgree:
				c.Status, c.Outcome = CaseAgreed, c.Proposed
			case hasOutcome:
				c.Status, c.Outcome = CaseCorrected, outcome
			default:
				c.Status = CaseDisagreed
			}
			c.Note, c.DecidedAt, c.DecidedBy = it.Note, &now, &actor
			judged = append(judged, c)
			note := ""
			if it.Note != nil {
				note = *it.Note
			}
			verdict = append(verdict, &Verdict{
				Scope: decisionScope(rec.ID), RuleID: c.RuleID, Agreed: it.Verdict == VerdictAgree,
				Actor: actor, Note: note, Ref: c.ID, At: now,
			})
		}
		if err := errs.Validation(vs...); err != nil {
			return err
		}
		for i, c := range judged {
			if err := cases.Put(tx, tenant, c); err != nil {
				return err
			}
			if c.confirmed() {
				if err := confirm(tx, tenant, c); err != nil {
					return err
				}
			}
			if err := RecordVerdict(tx, tenant, &s.ids, verdict[i]); err != nil {
				return err
			}
		}
		var err error
		out, err = Summarize(tx, tenant, decisionScope(rec.ID))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// OutcomeIn records a known outcome for an input directly, so a decision
// can learn from past cases before anything was evaluated.
type OutcomeIn struct {
	// Input must satisfy the decision's input_schema.
	Input json.RawMessage `json:"input" jsonschema:"required,type=object"`
	// Output must satisfy its output_schema and not be null.
	Output json.RawMessage `json:"output" jsonschema:"required"`
}

// Validate reports what is wrong with in before the decision's schemas are
// consulted.
func (in OutcomeIn) Validate() []errs.Violation {
	vs := objectField(in.Input, "input")
	if len(in.Output) == 0 || isNull(in.Output) {
		vs = append(vs, errs.Violation{Loc: []any{"output"}, Msg: "is required", Type: "missing"})
	}
	return vs
}

// RecordOutcome stores a confirmed case (status recorded) of the decision
// name. It is no verdict: nothing was proposed to agree with.
func (s *Service) RecordOutcome(ctx context.Context, tenant, actor, name string, in OutcomeIn) (*Case, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	rec, err := s.Get(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	inV, err := s.validator(rec, "in")
	if err != nil {
		return nil, err
	}
	outV, err := s.validator(rec, "out")
	if err != nil {
		return nil, err
	}
	vs := inV.ValidateJSON(in.Input, "input")
	vs = append(vs, outV.ValidateJSON(in.Output, "output")...)
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	exact, fields, err := matchKeys(rec, in.Input)
	if err != nil {
		return nil, errs.Invalidf([]any{"input"}, "json_invalid", "is not valid JSON")
	}
	now := s.now()
	c := &Case{
		ID: s.ids.New("dcs", now), DecisionID: rec.ID, Decision: rec.Name, Input: compact(in.Input),
		Proposed: json.RawMessage("null"), Mode: ModeManual, RuleID: RuleNone, Status: CaseRecorded,
		Outcome: compact(in.Output), ExactKey: exact, FieldsKey: fields, CreatedAt: now,
		DecidedAt: &now, DecidedBy: &actor,
	}
	err = s.st.Update(ctx, func(tx store.Txn) error {
		if err := stillDecision(tx, tenant, rec); err != nil {
			return err
		}
		if err := cases.Put(tx, tenant, c); err != nil {
			return err
		}
		return confirm(tx, tenant, c)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Case returns one case of the decision name.
func (s *Service) Case(ctx context.Context, tenant, name, id string) (*Case, error) {
	var c *Case
	err := s.st.View(ctx, func(r store.Reader) error {
		rec, err := records.Get(r, tenant, name)
		if err != nil {
			return err
		}
		c, err = cases.Get(r, tenant, id)
		if err == nil && c.DecisionID != rec.ID {
			return errs.NotFoundf("case not found")
		}
		return err
	})
	return c, err
}

// Cases returns one page of the decision's cases, newest first.
func (s *Service) Cases(ctx context.Context, tenant, name string, p store.Page) ([]*Case, string, error) {
	var (
		out  []*Case
		next string
	)
	err := s.st.View(ctx, func(r store.Reader) error {
		rec, err := records.Get(r, tenant, name)
		if err != nil {
			return err
		}
		out, next, err = cases.ListBy(r, tenant, "decision", []any{rec.ID}, p)
		return err
	})
	return out, next, err
}

// Agreement returns the agreement on the decision name: every verdict on
// its cases, by the rule their outputs came from.
func (s *Service) Agreement(ctx context.Context, tenant, name string) (*Agreement, error) {
	var out *Agreement
	err := s.st.View(ctx, func(r store.Reader) error {
		rec, err := records.Get(r, tenant, name)
		if err != nil {
			return err
		}
		out, err = Summarize(r, tenant, decisionScope(rec.ID))
		return err
	})
	return out, err
}

// AgreementRate is the cockpit's agreement_rate: the share of agreeing
// verdicts (approvals of AI actions decided unchanged, feedback agreeing with
// a decision) among all verdicts of the tenant in the last
// AgreementWindowDays UTC days, today included; nil when there were none.
func (s *Service) AgreementRate(ctx context.Context, tenant string) (*float64, error) {
	var out *float64
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		out, err = Rate(r, tenant, s.now(), AgreementWindowDays)
		return err
	})
	return out, err
}
