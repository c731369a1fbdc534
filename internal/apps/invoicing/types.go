package invoicing

import (
	"bytes"
	"encoding/json"
	"net/mail"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"golang.org/x/text/currency"
)

// Invoice statuses (api.md section 5): draft -> open -> paid | void |
// uncollectible.
const (
	StatusDraft         = "draft"
	StatusOpen          = "open"
	StatusPaid          = "paid"
	StatusVoid          = "void"
	StatusUncollectible = "uncollectible"
)

// Collection states of an invoice: current -> overdue -> reminding ->
// collected | uncollectible. A voided invoice keeps the state it had.
const (
	CollectionCurrent       = "current"
	CollectionOverdue       = "overdue"
	CollectionReminding     = "reminding"
	CollectionCollected     = "collected"
	CollectionUncollectible = "uncollectible"
)

// Invoice event types (InvoiceEventOut.type).
const (
	EventCreated       = "created"
	EventUpdated       = "updated"
	EventFinalized     = "finalized"
	EventSent          = "sent"
	EventReminderSent  = "reminder_sent"
	EventPayment       = "payment"
	EventPaid          = "paid"
	EventVoided        = "voided"
	EventUncollectible = "uncollectible"
	EventOverdue       = "overdue"
)

// Payment methods accepted by pay.
var paymentMethods = []string{"card", "bank_transfer", "cash", "check", "other"}

// Bounds of the app (interface.md section 8 and the issue's).
const (
	MaxLines        = 500
	MaxDaysUntilDue = 365
	DefaultDueDays  = 14
	maxMemo         = 2000
	maxDescription  = 500
	maxReminderDays = 10
	maxTemplate     = 5000
)

// loc is a violation location ("lines", 0, "quantity"): the Go API locates
// violations at the input's field names; the HTTP API puts them under "body".
func loc(parts ...any) []any { return parts }

// violation is one violation at l.
func violation(l []any, typ, msg string) errs.Violation {
	return errs.Violation{Loc: l, Msg: msg, Type: typ}
}

// at extends the location base.
func at(base []any, parts ...any) []any { return append(append([]any{}, base...), parts...) }

// nullKeys returns which of keys are present and null in the JSON object b.
func nullKeys(b []byte, keys ...string) []string {
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	var out []string
	for _, k := range keys {
		if r, ok := raw[k]; ok && bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
			out = append(out, k)
		}
	}
	return out
}

func checkLen(l []any, s string, minLen, maxLen int) []errs.Violation {
	n := utf8.RuneCountInString(s)
	switch {
	case minLen > 0 && strings.TrimSpace(s) == "":
		return []errs.Violation{violation(l, "string_too_short", "must not be empty")}
	case n < minLen:
		return []errs.Violation{violation(l, "string_too_short", "must be at least "+itoa(minLen)+" characters")}
	case maxLen > 0 && n > maxLen:
		return []errs.Violation{violation(l, "string_too_long", "must be at most "+itoa(maxLen)+" characters")}
	}
	return nil
}

func checkOptLen(l []any, s *string, maxLen int) []errs.Violation {
	if s == nil {
		return nil
	}
	return checkLen(l, *s, 0, maxLen)
}

// validEmail reports whether s is one plain address ("a@b.example").
func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == "" && strings.Contains(s[strings.LastIndexByte(s, '@'):], ".")
}

func checkEmail(l []any, s *string) []errs.Violation {
	if s == nil {
		return nil
	}
	if vs := checkLen(l, *s, 0, 320); vs != nil {
		return vs
	}
	if !validEmail(*s) {
		return []errs.Violation{violation(l, "value_error", "must be an email address")}
	}
	return nil
}

// Patterns of codes (compiled once; never changed).
var (
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	countryPattern  = regexp.MustCompile(`^[A-Z]{2}$`)
	cardPattern     = regexp.MustCompile(`^[0-9]{12,19}$`)
)

// checkCurrency reports a code that is not an ISO 4217 currency.
func checkCurrency(l []any, s string) []errs.Violation {
	if !currencyPattern.MatchString(s) {
		return []errs.Violation{violation(l, "string_pattern_mismatch", "must be an ISO 4217 code in upper case, such as USD")}
	}
	if _, err := currency.ParseISO(s); err != nil {
		return []errs.Violation{violation(l, "value_error", "is not an ISO 4217 currency code")}
	}
	return nil
}

// minorDigits is how many decimals the currency's amounts show (2 for USD,
// 0 for JPY); amounts are always integers of the smallest unit.
func minorDigits(code string) int {
	u, err := currency.ParseISO(code)
	if err != nil {
		return 2
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale
}

// ---- Customers ------------------------------------------------------------

// Address is a postal address (interface.md Address); Country defaults to
// US.
type Address struct {
	Line1      *string `json:"line1" jsonschema:"nullable,maxLength=200"`
	City       *string `json:"city" jsonschema:"nullable,maxLength=100"`
	State      *string `json:"state" jsonschema:"nullable,maxLength=100"`
	PostalCode *string `json:"postal_code" jsonschema:"nullable,maxLength=20"`
	Country    *string `json:"country" jsonschema:"nullable,pattern=^[A-Z]{2}$"`
}

func (a *Address) validate(base []any) []errs.Violation {
	if a == nil {
		return nil
	}
	var vs []errs.Violation
	vs = append(vs, checkOptLen(at(base, "line1"), a.Line1, 200)...)
	vs = append(vs, checkOptLen(at(base, "city"), a.City, 100)...)
	vs = append(vs, checkOptLen(at(base, "state"), a.State, 100)...)
	vs = append(vs, checkOptLen(at(base, "postal_code"), a.PostalCode, 20)...)
	if a.Country != nil && !countryPattern.MatchString(*a.Country) {
		vs = append(vs, violation(at(base, "country"), "string_pattern_mismatch", "must be an ISO 3166 two-letter country code, such as US"))
	}
	return vs
}

// normalized returns the address with the country defaulted to US.
func (a *Address) normalized() Address {
	var out Address
	if a != nil {
		out = *a
	}
	if out.Country == nil {
		us := "US"
		out.Country = &us
	}
	return out
}

// CustomerIn creates a customer (interface.md CustomerIn).
type CustomerIn struct {
	Name      string   `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Email     *string  `json:"email,omitempty" jsonschema:"nullable,format=email,maxLength=320"`
	Phone     *string  `json:"phone,omitempty" jsonschema:"nullable,maxLength=40"`
	CompanyID *string  `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	Address   *Address `json:"address,omitempty" jsonschema:"nullable"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in CustomerIn) Validate() []errs.Violation {
	var vs []errs.Violation
	vs = append(vs, checkLen(loc("name"), in.Name, 1, 200)...)
	vs = append(vs, checkEmail(loc("email"), in.Email)...)
	vs = append(vs, checkOptLen(loc("phone"), in.Phone, 40)...)
	vs = append(vs, checkOptLen(loc("company_id"), in.CompanyID, 80)...)
	return append(vs, in.Address.validate(loc("address"))...)
}

// CustomerPatch changes a customer; only the keys present apply, and a
// nullable key given as null clears it (address: back to {country: US}).
// A given address replaces the whole address.
type CustomerPatch struct {
	Name      *string  `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=200"`
	Email     *string  `json:"email,omitempty" jsonschema:"nullable,format=email,maxLength=320"`
	Phone     *string  `json:"phone,omitempty" jsonschema:"nullable,maxLength=40"`
	CompanyID *string  `json:"company_id,omitempty" jsonschema:"nullable,maxLength=80"`
	Address   *Address `json:"address,omitempty" jsonschema:"nullable"`
	// Clear names the keys given as null; UnmarshalJSON fills it.
	Clear []string `json:"-"`
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *CustomerPatch) UnmarshalJSON(b []byte) error {
	type plain CustomerPatch
	var x plain
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	x.Clear = nullKeys(b, "email", "phone", "company_id", "address")
	*p = CustomerPatch(x)
	return nil
}

func (p CustomerPatch) clears(k string) bool { return slices.Contains(p.Clear, k) }

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p CustomerPatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.Name != nil {
		vs = append(vs, checkLen(loc("name"), *p.Name, 1, 200)...)
	}
	vs = append(vs, checkEmail(loc("email"), p.Email)...)
	vs = append(vs, checkOptLen(loc("phone"), p.Phone, 40)...)
	vs = append(vs, checkOptLen(loc("company_id"), p.CompanyID, 80)...)
	return append(vs, p.Address.validate(loc("address"))...)
}

// Customer is a customer to invoice (interface.md CustomerOut).
type Customer struct {
	ID                 string  `json:"id"`
	Name               string  `json:"name"`
	Email              *string `json:"email"`
	CompanyID          *string `json:"company_id"`
	Phone              *string `json:"phone"`
	Address            Address `json:"address"`
	PaymentsCustomerID *string `json:"payments_customer_id"`
	// BalanceCents is the amount due of the customer's open invoices.
	BalanceCents int64     `json:"balance_cents"`
	CreatedAt    time.Time `json:"created_at"`
}

// ---- Invoices -------------------------------------------------------------

// LineIn is one line of an invoice as given.
type LineIn struct {
	Description     string   `json:"description" jsonschema:"required,minLength=1,maxLength=500"`
	Quantity        int64    `json:"quantity" jsonschema:"required,minimum=1,maximum=9223372036854775807"`
	UnitAmountCents int64    `json:"unit_amount_cents" jsonschema:"required,minimum=0,maximum=9223372036854775807"`
	TaxRatePercent  *float64 `json:"tax_rate_percent,omitempty" jsonschema:"nullable,minimum=0,maximum=100"`
}

// Line is one line of an invoice with its computed amounts.
type Line struct {
	Description     string  `json:"description"`
	Quantity        int64   `json:"quantity"`
	UnitAmountCents int64   `json:"unit_amount_cents"`
	TaxRatePercent  float64 `json:"tax_rate_percent"`
	// AmountCents is quantity x unit_amount_cents; TaxCents its tax,
	// rounded half up to the cent.
	AmountCents int64 `json:"amount_cents"`
	TaxCents    int64 `json:"tax_cents"`
}

func validateLines(lines []LineIn, base []any) []errs.Violation {
	var vs []errs.Violation
	switch {
	case len(lines) == 0:
		return []errs.Violation{violation(base, "too_short", "must have at least 1 line")}
	case len(lines) > MaxLines:
		return []errs.Violation{violation(base, "too_long", "must have at most 500 lines")}
	}
	for i, l := range lines {
		vs = append(vs, checkLen(at(base, i, "description"), l.Description, 1, maxDescription)...)
		if l.Quantity < 1 {
			vs = append(vs, violation(at(base, i, "quantity"), "greater_than_equal", "must be at least 1"))
		}
		if l.UnitAmountCents < 0 {
			vs = append(vs, violation(at(base, i, "unit_amount_cents"), "greater_than_equal", "must be at least 0"))
		}
		if r := l.TaxRatePercent; r != nil {
			switch _, ok := rateMilli(*r); {
			case *r < 0:
				vs = append(vs, violation(at(base, i, "tax_rate_percent"), "greater_than_equal", "must be at least 0"))
			case *r > 100:
				vs = append(vs, violation(at(base, i, "tax_rate_percent"), "less_than_equal", "must be at most 100"))
			case !ok:
				vs = append(vs, violation(at(base, i, "tax_rate_percent"), "value_error", "must have at most 3 decimals"))
			}
		}
	}
	return vs
}

// makeLines turns lines as given into lines with amounts; a line without a
// rate takes defaultRate. Violations name overflowing amounts.
func makeLines(in []LineIn, defaultRate float64, base []any) ([]Line, int64, int64, []errs.Violation) {
	out := make([]Line, len(in))
	for i, l := range in {
		rate := defaultRate
		if l.TaxRatePercent != nil {
			rate = *l.TaxRatePercent
		}
		out[i] = Line{Description: strings.TrimSpace(l.Description), Quantity: l.Quantity,
			UnitAmountCents: l.UnitAmountCents, TaxRatePercent: rate}
	}
	sub, tax, vs := totals(out, base...)
	return out, sub, tax, vs
}

// dateLayout is the layout of due dates.
const dateLayout = "2006-01-02"

// InvoiceIn creates a draft invoice (interface.md InvoiceIn).
type InvoiceIn struct {
	CustomerID   string   `json:"customer_id" jsonschema:"required,minLength=1,maxLength=80"`
	Lines        []LineIn `json:"lines" jsonschema:"required,minItems=1,maxItems=500"`
	DaysUntilDue *int     `json:"days_until_due,omitempty" jsonschema:"nullable,minimum=0,maximum=365"`
	DueDate      *string  `json:"due_date,omitempty" jsonschema:"nullable,format=date"`
	DealID       *string  `json:"deal_id,omitempty" jsonschema:"nullable,maxLength=80"`
	Memo         *string  `json:"memo,omitempty" jsonschema:"nullable,maxLength=2000"`
	// Currency defaults to the account's default currency.
	Currency *string `json:"currency,omitempty" jsonschema:"nullable,pattern=^[A-Z]{3}$"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in InvoiceIn) Validate() []errs.Violation {
	var vs []errs.Violation
	vs = append(vs, checkLen(loc("customer_id"), in.CustomerID, 1, 80)...)
	vs = append(vs, validateLines(in.Lines, loc("lines"))...)
	vs = append(vs, checkDue(in.DaysUntilDue, in.DueDate)...)
	vs = append(vs, checkOptLen(loc("deal_id"), in.DealID, 80)...)
	vs = append(vs, checkOptLen(loc("memo"), in.Memo, maxMemo)...)
	if in.Currency != nil {
		vs = append(vs, checkCurrency(loc("currency"), *in.Currency)...)
	}
	return vs
}

func checkDue(days *int, date *string) []errs.Violation {
	var vs []errs.Violation
	if days != nil {
		switch {
		case *days < 0:
			vs = append(vs, violation(loc("days_until_due"), "greater_than_equal", "must be at least 0"))
		case *days > MaxDaysUntilDue:
			vs = append(vs, violation(loc("days_until_due"), "less_than_equal", "must be at most 365"))
		}
	}
	if date != nil {
		if _, err := time.Parse(dateLayout, *date); err != nil {
			vs = append(vs, violation(loc("due_date"), "value_error", "must be a date (YYYY-MM-DD)"))
		}
		if days != nil {
			vs = append(vs, violation(loc("due_date"), "value_error", "give days_until_due or due_date, not both"))
		}
	}
	return vs
}

// InvoicePatch changes a draft invoice; only the keys present apply. A
// nullable key given as null clears it (days_until_due back to 14).
type InvoicePatch struct {
	CustomerID   *string   `json:"customer_id,omitempty" jsonschema:"nullable,minLength=1,maxLength=80"`
	Lines        *[]LineIn `json:"lines,omitempty" jsonschema:"nullable,minItems=1,maxItems=500"`
	DaysUntilDue *int      `json:"days_until_due,omitempty" jsonschema:"nullable,minimum=0,maximum=365"`
	DueDate      *string   `json:"due_date,omitempty" jsonschema:"nullable,format=date"`
	DealID       *string   `json:"deal_id,omitempty" jsonschema:"nullable,maxLength=80"`
	Memo         *string   `json:"memo,omitempty" jsonschema:"nullable,maxLength=2000"`
	Currency     *string   `json:"currency,omitempty" jsonschema:"nullable,pattern=^[A-Z]{3}$"`
	// Clear names the keys given as null; UnmarshalJSON fills it.
	Clear []string `json:"-"`
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *InvoicePatch) UnmarshalJSON(b []byte) error {
	type plain InvoicePatch
	var x plain
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	x.Clear = nullKeys(b, "days_until_due", "due_date", "deal_id", "memo")
	*p = InvoicePatch(x)
	return nil
}

func (p InvoicePatch) clears(k string) bool { return slices.Contains(p.Clear, k) }

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p InvoicePatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.CustomerID != nil {
		vs = append(vs, checkLen(loc("customer_id"), *p.CustomerID, 1, 80)...)
	}
	if p.Lines != nil {
		vs = append(vs, validateLines(*p.Lines, loc("lines"))...)
	}
	vs = append(vs, checkDue(p.DaysUntilDue, p.DueDate)...)
	vs = append(vs, checkOptLen(loc("deal_id"), p.DealID, 80)...)
	vs = append(vs, checkOptLen(loc("memo"), p.Memo, maxMemo)...)
	if p.Currency != nil {
		vs = append(vs, checkCurrency(loc("currency"), *p.Currency)...)
	}
	return vs
}

// PayIn records a payment (POST .../pay).
type PayIn struct {
	AmountCents int64   `json:"amount_cents" jsonschema:"required,minimum=1,maximum=9223372036854775807"`
	Method      string  `json:"method" jsonschema:"required,enum=card,enum=bank_transfer,enum=cash,enum=check,enum=other"`
	Reference   *string `json:"reference,omitempty" jsonschema:"nullable,maxLength=200"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in PayIn) Validate() []errs.Violation {
	var vs []errs.Violation
	if in.AmountCents < 1 {
		vs = append(vs, violation(loc("amount_cents"), "greater_than_equal", "must be at least 1"))
	}
	if !slices.Contains(paymentMethods, in.Method) {
		vs = append(vs, violation(loc("method"), "enum", "must be one of card, bank_transfer, cash, check, other"))
	}
	return append(vs, checkOptLen(loc("reference"), in.Reference, 200)...)
}

// NoteIn carries an optional note (void, mark-uncollectible).
type NoteIn struct {
	Note *string `json:"note,omitempty" jsonschema:"nullable,maxLength=2000"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in NoteIn) Validate() []errs.Violation {
	return checkOptLen(loc("note"), in.Note, 2000)
}

// SendIn sends an invoice; To defaults to the customer's email.
type SendIn struct {
	To *string `json:"to,omitempty" jsonschema:"nullable,format=email,maxLength=320"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in SendIn) Validate() []errs.Violation { return checkEmail(loc("to"), in.To) }

// CheckoutIn pays an invoice through its payment link in simulated mode.
// Card numbers follow the usual test cards: 4242424242424242 succeeds,
// 4000000000000002 is declined.
type CheckoutIn struct {
	CardNumber string `json:"card_number" jsonschema:"required,pattern=^[0-9]{12\\,19}$"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in CheckoutIn) Validate() []errs.Violation {
	if !cardPattern.MatchString(in.CardNumber) {
		return []errs.Violation{violation(loc("card_number"), "string_pattern_mismatch", "must be 12 to 19 digits")}
	}
	return nil
}

// Event is one entry of an invoice's history (interface.md InvoiceEventOut).
type Event struct {
	At   time.Time `json:"at"`
	Type string    `json:"type"`
	Note *string   `json:"note"`
}

// Payment is one payment recorded against an invoice.
type Payment struct {
	ID          string    `json:"id"`
	AmountCents int64     `json:"amount_cents"`
	Method      string    `json:"method"`
	Reference   *string   `json:"reference"`
	At          time.Time `json:"at"`
}

// Invoice is an invoice (interface.md InvoiceOut plus the fields api.md
// and the app add).
type Invoice struct {
	ID            string  `json:"id"`
	Number        *string `json:"number"`
	Status        string  `json:"status"`
	Collection    string  `json:"collection"`
	CustomerID    string  `json:"customer_id"`
	CustomerName  string  `json:"customer_name"`
	CustomerEmail *string `json:"customer_email"`
	Currency      string  `json:"currency"`
	Lines         []Line  `json:"lines"`

	SubtotalCents   int64 `json:"subtotal_cents"`
	TaxCents        int64 `json:"tax_cents"`
	TotalCents      int64 `json:"total_cents"`
	AmountPaidCents int64 `json:"amount_paid_cents"`
	AmountDueCents  int64 `json:"amount_due_cents"`

	DaysUntilDue int     `json:"days_until_due"`
	DueDate      *string `json:"due_date"`
	DealID       *string `json:"deal_id"`
	Memo         *string `json:"memo"`

	// PaymentURL is the payment link of a sent invoice in simulated mode
	// (anyone holding it can pay); it stops working at
	// PaymentLinkExpiresAt or once the invoice is no longer open.
	PaymentURL           *string `json:"payment_url"`
	PaymentLinkExpiresAt *string `json:"payment_link_expires_at"`
	// RemindersSent counts the reminders sent; NextCollectionAt is when the
	// clock next moves collection on (overdue, a reminder), or null.
	RemindersSent    int        `json:"reminders_sent"`
	NextCollectionAt *time.Time `json:"next_collection_at"`

	Payments []Payment `json:"payments"`
	Events   []Event   `json:"events"`

	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	FinalizedAt     *time.Time `json:"finalized_at"`
	SentAt          *time.Time `json:"sent_at"`
	PaidAt          *time.Time `json:"paid_at"`
	VoidedAt        *time.Time `json:"voided_at"`
	UncollectibleAt *time.Time `json:"marked_uncollectible_at"`
}

// ---- The payments account -------------------------------------------------

// Account modes and statuses (interface.md section 2.10).
const (
	ModeSimulated       = "simulated"
	ModePayments        = "payments"
	AccountNotConnected = "not_connected"
	AccountOnboarding   = "onboarding"
	AccountConnected    = "connected"
)

// Reminders is the account's reminder schedule: when Enabled, an open
// invoice past its due date gets a reminder on each of DaysAfterDue (days
// after the due date, ascending, 1..365, at most 10). Template is the
// email body; {number}, {customer_name}, {amount_due}, {due_date},
// {business_name} and {payment_url} are replaced. Null uses the default.
type Reminders struct {
	Enabled      bool    `json:"enabled"`
	DaysAfterDue []int   `json:"days_after_due" jsonschema:"maxItems=10"`
	Template     *string `json:"template" jsonschema:"nullable,maxLength=5000"`
}

// Tax is the account's tax settings: DefaultRatePercent applies to lines
// that give no rate (0..100, at most 3 decimals); TaxID is printed on
// invoices; Inclusive must be false (prices exclude tax).
type Tax struct {
	DefaultRatePercent float64 `json:"default_rate_percent"`
	TaxID              *string `json:"tax_id"`
	Inclusive          bool    `json:"inclusive"`
}

// Account is the payments account (interface.md AccountOut).
type Account struct {
	Mode              string    `json:"mode"`
	Status            string    `json:"status"`
	PaymentsAccountID *string   `json:"payments_account_id"`
	ChargesEnabled    bool      `json:"charges_enabled"`
	PayoutsEnabled    bool      `json:"payouts_enabled"`
	DefaultCurrency   string    `json:"default_currency"`
	BusinessName      string    `json:"business_name"`
	SupportEmail      *string   `json:"support_email"`
	Reminders         Reminders `json:"reminders"`
	Tax               Tax       `json:"tax"`
}

// RemindersIn changes the reminder schedule; keys present apply.
type RemindersIn struct {
	Enabled      *bool   `json:"enabled,omitempty" jsonschema:"nullable"`
	DaysAfterDue *[]int  `json:"days_after_due,omitempty" jsonschema:"nullable,maxItems=10"`
	Template     *string `json:"template,omitempty" jsonschema:"nullable,maxLength=5000"`
}

// TaxIn changes the tax settings; keys present apply.
type TaxIn struct {
	DefaultRatePercent *float64 `json:"default_rate_percent,omitempty" jsonschema:"nullable,minimum=0,maximum=100"`
	TaxID              *string  `json:"tax_id,omitempty" jsonschema:"nullable,maxLength=50"`
	Inclusive          *bool    `json:"inclusive,omitempty" jsonschema:"nullable"`
}

// AccountPatch changes the account's business fields, reminders and tax.
type AccountPatch struct {
	BusinessName    *string      `json:"business_name,omitempty" jsonschema:"nullable,minLength=1,maxLength=200"`
	SupportEmail    *string      `json:"support_email,omitempty" jsonschema:"nullable,format=email,maxLength=320"`
	DefaultCurrency *string      `json:"default_currency,omitempty" jsonschema:"nullable,pattern=^[A-Z]{3}$"`
	Reminders       *RemindersIn `json:"reminders,omitempty" jsonschema:"nullable"`
	Tax             *TaxIn       `json:"tax,omitempty" jsonschema:"nullable"`
	// Clear names the keys given as null; UnmarshalJSON fills it.
	Clear []string `json:"-"`
	// clearTemplate and clearTaxID are the nested nulls.
	clearTemplate, clearTaxID bool
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *AccountPatch) UnmarshalJSON(b []byte) error {
	type plain AccountPatch
	var x plain
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	x.Clear = nullKeys(b, "support_email")
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(b, &raw)
	if r, ok := raw["reminders"]; ok {
		x.clearTemplate = len(nullKeys(r, "template")) > 0
	}
	if r, ok := raw["tax"]; ok {
		x.clearTaxID = len(nullKeys(r, "tax_id")) > 0
	}
	*p = AccountPatch(x)
	return nil
}

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p AccountPatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.BusinessName != nil {
		vs = append(vs, checkLen(loc("business_name"), *p.BusinessName, 1, 200)...)
	}
	vs = append(vs, checkEmail(loc("support_email"), p.SupportEmail)...)
	if p.DefaultCurrency != nil {
		vs = append(vs, checkCurrency(loc("default_currency"), *p.DefaultCurrency)...)
	}
	if r := p.Reminders; r != nil {
		if r.DaysAfterDue != nil {
			days := *r.DaysAfterDue
			if len(days) > maxReminderDays {
				vs = append(vs, violation(loc("reminders", "days_after_due"), "too_long", "must have at most 10 days"))
			}
			for i, d := range days {
				switch {
				case d < 1:
					vs = append(vs, violation(loc("reminders", "days_after_due", i), "greater_than_equal", "must be at least 1"))
				case d > MaxDaysUntilDue:
					vs = append(vs, violation(loc("reminders", "days_after_due", i), "less_than_equal", "must be at most 365"))
				case i > 0 && d <= days[i-1]:
					vs = append(vs, violation(loc("reminders", "days_after_due", i), "value_error", "must be greater than the day before it"))
				}
			}
		}
		vs = append(vs, checkOptLen(loc("reminders", "template"), r.Template, maxTemplate)...)
	}
	if t := p.Tax; t != nil {
		if r := t.DefaultRatePercent; r != nil {
			switch _, ok := rateMilli(*r); {
			case *r < 0:
				vs = append(vs, violation(loc("tax", "default_rate_percent"), "greater_than_equal", "must be at least 0"))
			case *r > 100:
				vs = append(vs, violation(loc("tax", "default_rate_percent"), "less_than_equal", "must be at most 100"))
			case !ok:
				vs = append(vs, violation(loc("tax", "default_rate_percent"), "value_error", "must have at most 3 decimals"))
			}
		}
		vs = append(vs, checkOptLen(loc("tax", "tax_id"), t.TaxID, 50)...)
		if t.Inclusive != nil && *t.Inclusive {
			vs = append(vs, violation(loc("tax", "inclusive"), "value_error", "tax-inclusive prices are not supported; prices exclude tax"))
		}
	}
	return vs
}

func itoa(n int) string { return strconv.Itoa(n) }

// A patch names only fields it changes: a field it does not take is a 422
// extra_forbidden (API.md: every PATCH body is strict), never silently
// dropped.

// NoExtraProperties makes unknown fields of a CustomerPatch a 422.
func (CustomerPatch) NoExtraProperties() {}

// NoExtraProperties makes unknown fields of an InvoicePatch a 422.
func (InvoicePatch) NoExtraProperties() {}

// NoExtraProperties makes unknown fields of an AccountPatch a 422.
func (AccountPatch) NoExtraProperties() {}
