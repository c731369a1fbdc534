package crm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
)

// Bounds of the CRM records: interface.md section 8 where it gives one,
// this app's own (documented in httpapi/API.md) elsewhere.
const (
	MaxCompanyNameLen   = 200
	MaxFirstNameLen     = 100
	MaxLastNameLen      = 100
	MaxDealTitleLen     = 200
	MaxSubjectLen       = 300
	MaxBodyLen          = 20000
	MaxDomainLen        = 253
	MaxIndustryLen      = 120
	MaxPhoneLen         = 40
	MaxWebsiteLen       = 2048
	MaxEmailLen         = 320
	MaxTitleLen         = 200
	MaxIDLen            = 80
	MaxLifecycleLen     = 40
	MaxPipelineNameLen  = 200
	MaxStageNameLen     = 100
	MaxStages           = 50
	MaxProbability      = 100
	MaxAmountCents      = 1_000_000_000_000_000 // ten trillion in a currency's major unit
	DefaultCurrency     = "USD"
	DefaultLifecycle    = "lead"
	MaxQueryLen         = 100
	defaultCountPerPage = 50
)

// The stage kinds.
const (
	KindOpen = "open"
	KindWon  = "won"
	KindLost = "lost"
)

// ActivityKinds returns the activity kinds.
func ActivityKinds() []string { return []string{"call", "email", "meeting", "note", "task"} }

var (
	reCurrency  = regexp.MustCompile(`^[A-Z]{3}$`)
	reLifecycle = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	reEmail     = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
)

// ---- Records ----------------------------------------------------------------

// Company is CompanyOut (interface.md 2.12) with the extensions phone,
// website and updated_at.
type Company struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Domain    *string   `json:"domain"`
	Industry  *string   `json:"industry"`
	Phone     *string   `json:"phone"`
	Website   *string   `json:"website"`
	OwnerID   *string   `json:"owner_id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Contact is ContactOut (interface.md 2.12) with updated_at.
type Contact struct {
	ID        string    `json:"id"`
	FirstName string    `json:"first_name"`
	LastName  *string   `json:"last_name"`
	Email     *string   `json:"email"`
	Phone     *string   `json:"phone"`
	Title     *string   `json:"title"`
	CompanyID *string   `json:"company_id"`
	OwnerID   *string   `json:"owner_id"`
	Lifecycle string    `json:"lifecycle"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Deal is DealOut (interface.md 2.12) with the extensions status (the kind
// of its stage: open, won or lost) and updated_at.
type Deal struct {
	ID            string     `json:"id"`
	Title         string     `json:"title"`
	AmountCents   int64      `json:"amount_cents"`
	Currency      string     `json:"currency"`
	PipelineID    string     `json:"pipeline_id"`
	StageID       string     `json:"stage_id"`
	Status        string     `json:"status"`
	CompanyID     *string    `json:"company_id"`
	ContactID     *string    `json:"contact_id"`
	OwnerID       *string    `json:"owner_id"`
	ExpectedClose *time.Time `json:"expected_close"`
	ClosedAt      *time.Time `json:"closed_at"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// Activity is ActivityOut (interface.md 2.12) with updated_at.
type Activity struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Subject    string    `json:"subject"`
	Body       *string   `json:"body"`
	DealID     *string   `json:"deal_id"`
	ContactID  *string   `json:"contact_id"`
	CompanyID  *string   `json:"company_id"`
	OccurredAt time.Time `json:"occurred_at"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Pipeline is a sales pipeline with its stages in order.
type Pipeline struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	IsDefault bool      `json:"is_default"`
	Stages    []Stage   `json:"stages"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Stage is one stage of a pipeline.
type Stage struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Position    int    `json:"position"`
	Probability int    `json:"probability"`
	Kind        string `json:"kind"`
}

func (p *Pipeline) stage(id string) (Stage, bool) {
	for _, s := range p.Stages {
		if s.ID == id {
			return s, true
		}
	}
	return Stage{}, false
}

// firstOpen returns the first open stage, where a deal lands by default.
func (p *Pipeline) firstOpen() (Stage, bool) {
	for _, s := range p.Stages {
		if s.Kind == KindOpen {
			return s, true
		}
	}
	return Stage{}, false
}

func (p *Pipeline) renumber() {
	for i := range p.Stages {
		p.Stages[i].Position = i
	}
}

// BoardColumn is one stage of the board (interface.md 2.12) with the
// extensions count, weighted_cents and totals per currency.
type BoardColumn struct {
	Stage Stage   `json:"stage"`
	Deals []*Deal `json:"deals"`
	// TotalCents sums the amounts of every deal in the stage, whatever
	// its currency (Totals splits it by currency).
	TotalCents int64 `json:"total_cents"`
	// Count is the number of deals in the stage.
	Count int64 `json:"count"`
	// WeightedCents is TotalCents times the stage's probability, rounded
	// down to a cent.
	WeightedCents int64 `json:"weighted_cents"`
	// Totals are the stage's figures per currency, by currency code.
	Totals []CurrencyTotal `json:"totals"`
}

// CurrencyTotal is a stage's figures in one currency.
type CurrencyTotal struct {
	Currency      string `json:"currency"`
	Count         int64  `json:"count"`
	TotalCents    int64  `json:"total_cents"`
	WeightedCents int64  `json:"weighted_cents"`
}

// ---- Inputs -----------------------------------------------------------------

// CompanyIn creates a company (interface.md CompanyIn).
type CompanyIn struct {
	Name     string  `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Domain   *string `json:"domain,omitempty" jsonschema:"nullable,maxLength=253"`
	Industry *string `json:"industry,omitempty" jsonschema:"nullable,maxLength=120"`
	Phone    *string `json:"phone,omitempty" jsonschema:"nullable,maxLength=40"`
	Website  *string `json:"website,omitempty" jsonschema:"nullable,maxLength=2048"`
	OwnerID  *string `json:"owner_id,omitempty" jsonschema:"nullable,maxLength=80"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in CompanyIn) Validate() []errs.Violation {
	var c check
	c.text(&in.Name, 1, MaxCompanyNameLen, "name")
	c.text(in.Domain, 0, MaxDomainLen, "domain")
	c.text(in.Industry, 0, MaxIndustryLen, "industry")
	c.text(in.Phone, 0, MaxPhoneLen, "phone")
	c.text(in.Website, 0, MaxWebsiteLen, "website")
	c.text(in.OwnerID, 0, MaxIDLen, "owner_id")
	return c.vs
}

// CompanyPatch changes a company: only the keys present apply; null clears
// a nullable field (a null name is ignored).
type CompanyPatch struct {
	Name     *string `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=200"`
	Domain   *string `json:"domain,omitempty" jsonschema:"nullable,maxLength=253"`
	Industry *string `json:"industry,omitempty" jsonschema:"nullable,maxLength=120"`
	Phone    *string `json:"phone,omitempty" jsonschema:"nullable,maxLength=40"`
	Website  *string `json:"website,omitempty" jsonschema:"nullable,maxLength=2048"`
	OwnerID  *string `json:"owner_id,omitempty" jsonschema:"nullable,maxLength=80"`
	// Null names the keys given as null. UnmarshalJSON fills it.
	Null []string `json:"-"`
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *CompanyPatch) UnmarshalJSON(b []byte) error {
	type plain CompanyPatch
	return decodePatch(b, (*plain)(p), &p.Null)
}

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p CompanyPatch) Validate() []errs.Violation {
	var c check
	c.text(p.Name, 1, MaxCompanyNameLen, "name")
	c.text(p.Domain, 0, MaxDomainLen, "domain")
	c.text(p.Industry, 0, MaxIndustryLen, "industry")
	c.text(p.Phone, 0, MaxPhoneLen, "phone")
	c.text(p.Website, 0, MaxWebsiteLen, "website")
	c.text(p.OwnerID, 0, MaxIDLen, "owner_id")
	return c.vs
}

// ContactIn creates a contact (interface.md ContactIn).
type ContactIn struct {
	FirstName string  `json:"first_name" jsonschema:"required,minLength=1,maxLength=100"`
	LastName  *string `json:"last_name,omitempty" jsonschema:"nullable,maxLength=100"`
	Email     *string `json:"email,omitempty" jsonschema:"nullable,maxLength=320"`
	Phone     *string `json:"phone,omitempty" jsonschema:"nullable,maxLength=40"`
	Title     *string `json:"title,omitempty" jsonschema:"nullable,maxLength=200"`
	CompanyID *string `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	OwnerID   *string `json:"owner_id,omitempty" jsonschema:"nullable,maxLength=80"`
	Lifecycle *string `json:"lifecycle,omitempty" jsonschema:"maxLength=40,default=lead"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in ContactIn) Validate() []errs.Violation {
	var c check
	c.text(&in.FirstName, 1, MaxFirstNameLen, "first_name")
	c.text(in.LastName, 0, MaxLastNameLen, "last_name")
	c.email(in.Email, "email")
	c.text(in.Phone, 0, MaxPhoneLen, "phone")
	c.text(in.Title, 0, MaxTitleLen, "title")
	c.text(in.CompanyID, 0, MaxIDLen, "company_id")
	c.text(in.OwnerID, 0, MaxIDLen, "owner_id")
	c.lifecycle(in.Lifecycle, "lifecycle")
	return c.vs
}

// ContactPatch changes a contact: only the keys present apply; null clears
// a nullable field (a null first_name is ignored; a null lifecycle sets
// it back to lead).
type ContactPatch struct {
	FirstName *string `json:"first_name,omitempty" jsonschema:"nullable,minLength=1,maxLength=100"`
	LastName  *string `json:"last_name,omitempty" jsonschema:"nullable,maxLength=100"`
	Email     *string `json:"email,omitempty" jsonschema:"nullable,maxLength=320"`
	Phone     *string `json:"phone,omitempty" jsonschema:"nullable,maxLength=40"`
	Title     *string `json:"title,omitempty" jsonschema:"nullable,maxLength=200"`
	CompanyID *string `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	OwnerID   *string `json:"owner_id,omitempty" jsonschema:"nullable,maxLength=80"`
	Lifecycle *string `json:"lifecycle,omitempty" jsonschema:"nullable,maxLength=40"`
	// Null names the keys given as null. UnmarshalJSON fills it.
	Null []string `json:"-"`
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *ContactPatch) UnmarshalJSON(b []byte) error {
	type plain ContactPatch
	return decodePatch(b, (*plain)(p), &p.Null)
}

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p ContactPatch) Validate() []errs.Violation {
	var c check
	c.text(p.FirstName, 1, MaxFirstNameLen, "first_name")
	c.text(p.LastName, 0, MaxLastNameLen, "last_name")
	c.email(p.Email, "email")
	c.text(p.Phone, 0, MaxPhoneLen, "phone")
	c.text(p.Title, 0, MaxTitleLen, "title")
	c.text(p.CompanyID, 0, MaxIDLen, "company_id")
	c.text(p.OwnerID, 0, MaxIDLen, "owner_id")
	c.lifecycle(p.Lifecycle, "lifecycle")
	return c.vs
}

// DealIn creates a deal (interface.md DealIn) with the extension
// pipeline_id: without stage_id the deal lands in the first open stage
// of that pipeline (the default pipeline when none is named).
type DealIn struct {
	Title         string     `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	AmountCents   *int64     `json:"amount_cents,omitempty" jsonschema:"minimum=0,maximum=1000000000000000,default=0"`
	Currency      *string    `json:"currency,omitempty" jsonschema:"pattern=^[A-Z]{3}$,default=USD"`
	PipelineID    *string    `json:"pipeline_id,omitempty" jsonschema:"nullable,maxLength=80"`
	StageID       *string    `json:"stage_id,omitempty" jsonschema:"nullable,maxLength=80"`
	CompanyID     *string    `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	ContactID     *string    `json:"contact_id,omitempty" jsonschema:"nullable,maxLength=80"`
	OwnerID       *string    `json:"owner_id,omitempty" jsonschema:"nullable,maxLength=80"`
	ExpectedClose *time.Time `json:"expected_close,omitempty" jsonschema:"nullable"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in DealIn) Validate() []errs.Violation {
	var c check
	c.text(&in.Title, 1, MaxDealTitleLen, "title")
	c.amount(in.AmountCents, "amount_cents")
	c.currency(in.Currency, "currency")
	c.text(in.PipelineID, 0, MaxIDLen, "pipeline_id")
	c.text(in.StageID, 0, MaxIDLen, "stage_id")
	c.text(in.CompanyID, 0, MaxIDLen, "company_id")
	c.text(in.ContactID, 0, MaxIDLen, "contact_id")
	c.text(in.OwnerID, 0, MaxIDLen, "owner_id")
	return c.vs
}

// DealPatch changes a deal (interface.md DealPatch) with the extensions
// currency and pipeline_id (a move to another pipeline: its stage_id, or
// its first open stage). Moving a deal is a patch of stage_id.
type DealPatch struct {
	Title         *string    `json:"title,omitempty" jsonschema:"nullable,minLength=1,maxLength=200"`
	AmountCents   *int64     `json:"amount_cents,omitempty" jsonschema:"nullable,minimum=0,maximum=1000000000000000"`
	Currency      *string    `json:"currency,omitempty" jsonschema:"nullable,pattern=^[A-Z]{3}$"`
	PipelineID    *string    `json:"pipeline_id,omitempty" jsonschema:"nullable,maxLength=80"`
	StageID       *string    `json:"stage_id,omitempty" jsonschema:"nullable,maxLength=80"`
	CompanyID     *string    `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	ContactID     *string    `json:"contact_id,omitempty" jsonschema:"nullable,maxLength=80"`
	OwnerID       *string    `json:"owner_id,omitempty" jsonschema:"nullable,maxLength=80"`
	ExpectedClose *time.Time `json:"expected_close,omitempty" jsonschema:"nullable"`
	// Null names the keys given as null. UnmarshalJSON fills it.
	Null []string `json:"-"`
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *DealPatch) UnmarshalJSON(b []byte) error {
	type plain DealPatch
	return decodePatch(b, (*plain)(p), &p.Null)
}

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p DealPatch) Validate() []errs.Violation {
	var c check
	c.text(p.Title, 1, MaxDealTitleLen, "title")
	c.amount(p.AmountCents, "amount_cents")
	c.currency(p.Currency, "currency")
	c.text(p.PipelineID, 0, MaxIDLen, "pipeline_id")
	c.text(p.StageID, 0, MaxIDLen, "stage_id")
	c.text(p.CompanyID, 0, MaxIDLen, "company_id")
	c.text(p.ContactID, 0, MaxIDLen, "contact_id")
	c.text(p.OwnerID, 0, MaxIDLen, "owner_id")
	return c.vs
}

// ActivityIn logs an activity (interface.md ActivityIn). occurred_at
// defaults to now.
type ActivityIn struct {
	Kind       string     `json:"kind" jsonschema:"required,enum=call,enum=email,enum=meeting,enum=note,enum=task"`
	Subject    string     `json:"subject" jsonschema:"required,minLength=1,maxLength=300"`
	Body       *string    `json:"body,omitempty" jsonschema:"nullable,maxLength=20000"`
	DealID     *string    `json:"deal_id,omitempty" jsonschema:"nullable,maxLength=80"`
	ContactID  *string    `json:"contact_id,omitempty" jsonschema:"nullable,maxLength=80"`
	CompanyID  *string    `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	OccurredAt *time.Time `json:"occurred_at,omitempty" jsonschema:"nullable"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in ActivityIn) Validate() []errs.Violation {
	var c check
	c.kind(&in.Kind, "kind")
	c.text(&in.Subject, 1, MaxSubjectLen, "subject")
	c.text(in.Body, 0, MaxBodyLen, "body")
	c.text(in.DealID, 0, MaxIDLen, "deal_id")
	c.text(in.ContactID, 0, MaxIDLen, "contact_id")
	c.text(in.CompanyID, 0, MaxIDLen, "company_id")
	return c.vs
}

// ActivityPatch changes an activity: only the keys present apply; null
// clears a nullable field (a null kind, subject or occurred_at is ignored).
type ActivityPatch struct {
	Kind       *string    `json:"kind,omitempty" jsonschema:"nullable,enum=call,enum=email,enum=meeting,enum=note,enum=task"`
	Subject    *string    `json:"subject,omitempty" jsonschema:"nullable,minLength=1,maxLength=300"`
	Body       *string    `json:"body,omitempty" jsonschema:"nullable,maxLength=20000"`
	DealID     *string    `json:"deal_id,omitempty" jsonschema:"nullable,maxLength=80"`
	ContactID  *string    `json:"contact_id,omitempty" jsonschema:"nullable,maxLength=80"`
	CompanyID  *string    `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	OccurredAt *time.Time `json:"occurred_at,omitempty" jsonschema:"nullable"`
	// Null names the keys given as null. UnmarshalJSON fills it.
	Null []string `json:"-"`
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *ActivityPatch) UnmarshalJSON(b []byte) error {
	type plain ActivityPatch
	return decodePatch(b, (*plain)(p), &p.Null)
}

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p ActivityPatch) Validate() []errs.Violation {
	var c check
	c.kind(p.Kind, "kind")
	c.text(p.Subject, 1, MaxSubjectLen, "subject")
	c.text(p.Body, 0, MaxBodyLen, "body")
	c.text(p.DealID, 0, MaxIDLen, "deal_id")
	c.text(p.ContactID, 0, MaxIDLen, "contact_id")
	c.text(p.CompanyID, 0, MaxIDLen, "company_id")
	return c.vs
}

// PipelineIn creates a pipeline with its stages in order (1 to 50, at
// least one open).
type PipelineIn struct {
	Name   string    `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Stages []StageIn `json:"stages" jsonschema:"required,minItems=1,maxItems=50"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in PipelineIn) Validate() []errs.Violation {
	var c check
	c.text(&in.Name, 1, MaxPipelineNameLen, "name")
	switch {
	case len(in.Stages) == 0:
		c.add("too_short", "must have at least 1 item", "stages")
	case len(in.Stages) > MaxStages:
		c.add("too_long", fmt.Sprintf("must have at most %d items", MaxStages), "stages")
	default:
		open := false
		for i, s := range in.Stages {
			c.vs = append(c.vs, s.validate("stages", i)...)
			open = open || s.kind() == KindOpen
		}
		if !open {
			c.add("value_error", "a pipeline needs at least one open stage", "stages")
		}
	}
	return c.vs
}

// StageIn adds a stage. Probability defaults to 100 for a won stage and 0
// otherwise; kind to open; position to the end (positions count from 0).
type StageIn struct {
	Name        string  `json:"name" jsonschema:"required,minLength=1,maxLength=100"`
	Probability *int    `json:"probability,omitempty" jsonschema:"minimum=0,maximum=100"`
	Kind        *string `json:"kind,omitempty" jsonschema:"enum=open,enum=won,enum=lost,default=open"`
	Position    *int    `json:"position,omitempty" jsonschema:"minimum=0"`
}

func (in StageIn) kind() string {
	if in.Kind == nil {
		return KindOpen
	}
	return *in.Kind
}

func (in StageIn) probability() int {
	switch {
	case in.Probability != nil:
		return *in.Probability
	case in.kind() == KindWon:
		return 100
	}
	return 0
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in StageIn) Validate() []errs.Violation { return in.validate() }

func (in StageIn) validate(loc ...any) []errs.Violation {
	c := check{loc: loc}
	c.text(&in.Name, 1, MaxStageNameLen, "name")
	c.probability(in.Probability, "probability")
	if in.Kind != nil && !slices.Contains([]string{KindOpen, KindWon, KindLost}, *in.Kind) {
		c.add("enum", "must be one of open, won, lost", "kind")
	}
	if in.Position != nil && *in.Position < 0 {
		c.add("greater_than_equal", "must be at least 0", "position")
	}
	return c.vs
}

// PipelinePatch renames a pipeline.
type PipelinePatch struct {
	Name *string `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=200"`
}

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p PipelinePatch) Validate() []errs.Violation {
	var c check
	c.text(p.Name, 1, MaxPipelineNameLen, "name")
	return c.vs
}

// StagePatch renames a stage, changes its probability or moves it to
// another position (counting from 0; the others shift).
type StagePatch struct {
	Name        *string `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=100"`
	Probability *int    `json:"probability,omitempty" jsonschema:"nullable,minimum=0,maximum=100"`
	Position    *int    `json:"position,omitempty" jsonschema:"nullable,minimum=0"`
}

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p StagePatch) Validate() []errs.Violation {
	var c check
	c.text(p.Name, 1, MaxStageNameLen, "name")
	c.probability(p.Probability, "probability")
	if p.Position != nil && *p.Position < 0 {
		c.add("greater_than_equal", "must be at least 0", "position")
	}
	return c.vs
}

// ---- Validation helpers -----------------------------------------------------

// check collects violations under loc (none: at the field names).
type check struct {
	loc []any
	vs  []errs.Violation
}

func (c *check) add(typ, msg string, field ...any) {
	c.vs = append(c.vs, errs.Violation{Loc: append(slices.Clone(c.loc), field...), Msg: msg, Type: typ})
}

// text checks a string's length in characters (min counts what is left
// after trimming spaces); nil passes.
func (c *check) text(s *string, min, max int, field string) {
	if s == nil {
		return
	}
	switch {
	case min > 0 && utf8.RuneCountInString(strings.TrimSpace(*s)) < min:
		c.add("string_too_short", fmt.Sprintf("must be at least %d character", min), field)
	case utf8.RuneCountInString(*s) > max:
		c.add("string_too_long", fmt.Sprintf("must be at most %d characters", max), field)
	}
}

func (c *check) email(s *string, field string) {
	if s == nil {
		return
	}
	switch {
	case utf8.RuneCountInString(*s) > MaxEmailLen:
		c.add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxEmailLen), field)
	case strings.TrimSpace(*s) != "" && !reEmail.MatchString(strings.TrimSpace(*s)):
		c.add("value_error", "must be an e-mail address", field)
	}
}

func (c *check) lifecycle(s *string, field string) {
	if s != nil && !reLifecycle.MatchString(*s) {
		c.add("string_pattern_mismatch", "must be lowercase letters, digits and '_', starting with a letter, at most 40 characters", field)
	}
}

func (c *check) amount(v *int64, field string) {
	switch {
	case v == nil:
	case *v < 0:
		c.add("greater_than_equal", "must be at least 0", field)
	case *v > MaxAmountCents:
		c.add("less_than_equal", fmt.Sprintf("must be at most %d", int64(MaxAmountCents)), field)
	}
}

func (c *check) currency(s *string, field string) {
	if s != nil && !reCurrency.MatchString(*s) {
		c.add("string_pattern_mismatch", "must be an ISO 4217 code in upper case (three letters)", field)
	}
}

func (c *check) probability(v *int, field string) {
	switch {
	case v == nil:
	case *v < 0:
		c.add("greater_than_equal", "must be at least 0", field)
	case *v > MaxProbability:
		c.add("less_than_equal", "must be at most 100", field)
	}
}

func (c *check) kind(s *string, field string) {
	if s != nil && !slices.Contains(ActivityKinds(), *s) {
		c.add("enum", "must be one of "+strings.Join(ActivityKinds(), ", "), field)
	}
}

// decodePatch decodes b into v and sets null to the keys given as null.
func decodePatch(b []byte, v any, null *[]string) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*null = (*null)[:0]
	for k, r := range raw {
		if bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
			*null = append(*null, k)
		}
	}
	slices.Sort(*null)
	return nil
}

// nulled reports whether key was given as null.
func nulled(null []string, key string) bool { return slices.Contains(null, key) }

// set applies a nullable patch field: a value replaces, null clears.
func set(dst **string, v *string, null []string, key string) {
	switch {
	case v != nil:
		t := strings.TrimSpace(*v)
		if t == "" {
			*dst = nil
			return
		}
		*dst = &t
	case nulled(null, key):
		*dst = nil
	}
}

// clean trims s and turns an empty string into nil.
func clean(s *string) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	if t == "" {
		return nil
	}
	return &t
}

// A patch names only fields it changes: a field it does not take is a 422
// extra_forbidden (API.md: every PATCH body is strict), never silently
// dropped.

// NoExtraProperties makes unknown fields of a CompanyPatch a 422.
func (CompanyPatch) NoExtraProperties() {}

// NoExtraProperties makes unknown fields of a ContactPatch a 422.
func (ContactPatch) NoExtraProperties() {}

// NoExtraProperties makes unknown fields of a DealPatch a 422.
func (DealPatch) NoExtraProperties() {}

// NoExtraProperties makes unknown fields of an ActivityPatch a 422.
func (ActivityPatch) NoExtraProperties() {}

// NoExtraProperties makes unknown fields of a PipelinePatch a 422.
func (PipelinePatch) NoExtraProperties() {}

// NoExtraProperties makes unknown fields of a StagePatch a 422.
func (StagePatch) NoExtraProperties() {}
