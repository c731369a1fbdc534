package capability

import (
	"bytes"
	"encoding/json"

	"github.com/cockroachdb/errors"
)

// The ids of the standard capabilities (see StandardSpecs). Steps, templates and
// providers name capabilities by these ids.
const (
	// Built-in apps.
	TaskCreate        = "task.create"
	ApprovalRequest   = "approval.request"
	EmailSend         = "email.send"
	DocumentExtract   = "document.extract"
	DocumentValidate  = "document.validate"
	DocumentApprove   = "document.approve"
	DocumentReject    = "document.reject"
	CRMCompanyCreate  = "crm.company.create"
	CRMContactCreate  = "crm.contact.create"
	CRMContactLookup  = "crm.contact.lookup"
	CRMDealCreate     = "crm.deal.create"
	CRMDealUpdate     = "crm.deal.update"
	CRMDealMove       = "crm.deal.move"
	CRMActivityLog    = "crm.activity.log"
	CustomerCreate    = "customer.create"
	InvoiceCreate     = "invoice.create"
	InvoiceFinalize   = "invoice.finalize"
	InvoiceSend       = "invoice.send"
	InvoiceVoid       = "invoice.void"
	InvoiceGet        = "invoice.get"
	InvoiceRemind     = "invoice.remind"
	PaymentRequest    = "payment.request"
	BoardItemCreate   = "board.item.create"
	BoardItemMove     = "board.item.move"
	BoardItemUpdate   = "board.item.update"
	DecisionEvaluate  = "decision.evaluate"
	ERPPurchaseOrder  = "erp.purchase_order.get"
	ERPGoodsReceipt   = "erp.goods_receipt.get"
	ERPSupplierGet    = "erp.supplier.get"
	ERPBillCreate     = "erp.bill.create"
	LedgerPost        = "ledger.post"
	ChatMessageSend   = "chat.message.send"
	StorageFilePut    = "storage.file.put"
	CalendarEventNew  = "calendar.event.create"
	SMSSend           = "sms.send"
	ESignRequest      = "esign.request"
	TicketCreate      = "ticket.create"
	HREmployeeGet     = "hr.employee.get"
	CommerceOrderGet  = "commerce.order.get"
	CommerceOrderList = "commerce.order.list"
)

// ---- Arguments and results ------------------------------------------------
//
// Every standard capability's arguments and result are Go types; their JSON
// Schemas are reflected from them, so the schema a provider is checked
// against and the type a Go caller fills are the same thing. Arguments are
// strict (an unknown field is a violation); results may carry more fields
// than the schema names.

// TaskField is a field a person fills in on a human task.
type TaskField struct {
	Key      string   `json:"key" jsonschema:"required,pattern=^[a-z][a-z0-9_]{0\\,39}$"`
	Label    string   `json:"label" jsonschema:"required,minLength=1,maxLength=120"`
	Type     string   `json:"type,omitempty" jsonschema:"enum=text,enum=number,enum=money,enum=date,enum=email,enum=enum,enum=boolean"`
	Required bool     `json:"required,omitempty"`
	Options  []string `json:"options,omitempty" jsonschema:"maxItems=100"`
}

// TaskCreateArgs are the arguments of task.create: the human task a person
// works. Actions default to ["complete"].
type TaskCreateArgs struct {
	Title       string      `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	Description string      `json:"description,omitempty" jsonschema:"maxLength=4000"`
	Actions     []string    `json:"actions,omitempty" jsonschema:"maxItems=10,minLength=1,maxLength=40"`
	Fields      []TaskField `json:"fields,omitempty" jsonschema:"maxItems=50"`
	Assignee    string      `json:"assignee,omitempty" jsonschema:"maxLength=200"`
	DueHours    *float64    `json:"due_hours,omitempty" jsonschema:"exclusiveMinimum=0,maximum=87600"`
}

// TaskCreateResult is the result of task.create.
type TaskCreateResult struct {
	TaskID string `json:"task_id" jsonschema:"required,minLength=1"`
	Status string `json:"status" jsonschema:"required"`
}

// ApprovalRequestArgs are the arguments of approval.request: a person is
// asked to approve or reject what Summary describes.
type ApprovalRequestArgs struct {
	Title    string         `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	Summary  string         `json:"summary,omitempty" jsonschema:"maxLength=4000"`
	Details  map[string]any `json:"details,omitempty"`
	Risk     string         `json:"risk,omitempty" jsonschema:"enum=low,enum=medium,enum=high"`
	Assignee string         `json:"assignee,omitempty" jsonschema:"maxLength=200"`
	DueHours *float64       `json:"due_hours,omitempty" jsonschema:"exclusiveMinimum=0,maximum=87600"`
}

// ApprovalRequestResult is the result of approval.request.
type ApprovalRequestResult struct {
	ApprovalID string `json:"approval_id" jsonschema:"required,minLength=1"`
	Status     string `json:"status" jsonschema:"required"`
}

// Recipients is one e-mail address or a list of them. It decodes from a
// JSON string or array and encodes as an array.
type Recipients []string

// UnmarshalJSON accepts "a@example.com" or ["a@example.com", ...].
func (r *Recipients) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return errors.Wrap(err, "recipients")
		}
		*r = Recipients{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.Wrap(err, "recipients: want an address or a list of addresses")
	}
	*r = list
	return nil
}

// SchemaJSON returns the JSON Schema of Recipients, "an address or a list
// of 1 to 50 addresses"; the registry's reflector uses it in place of the
// schema it would derive from []string.
func (Recipients) SchemaJSON() []byte {
	return []byte(`{"oneOf":[` +
		`{"type":"string","format":"email","maxLength":320},` +
		`{"type":"array","items":{"type":"string","format":"email","maxLength":320},"minItems":1,"maxItems":50}]}`)
}

// EmailSendArgs are the arguments of email.send.
type EmailSendArgs struct {
	To      Recipients `json:"to" jsonschema:"required"`
	Subject string     `json:"subject" jsonschema:"required,minLength=1,maxLength=300"`
	Body    string     `json:"body" jsonschema:"required,maxLength=100000"`
	CC      Recipients `json:"cc,omitempty"`
	ReplyTo string     `json:"reply_to,omitempty" jsonschema:"format=email,maxLength=320"`
}

// EmailSendResult is the result of email.send.
type EmailSendResult struct {
	MessageID string `json:"message_id" jsonschema:"required,minLength=1"`
	// Status is "queued" or "sent".
	Status string `json:"status" jsonschema:"required"`
}

// DocumentArgs name one document (document.extract, document.validate).
type DocumentArgs struct {
	DocumentID string `json:"document_id" jsonschema:"required,minLength=1,maxLength=80"`
}

// ExtractedField is where an extracted value came from.
type ExtractedField struct {
	Value any    `json:"value"`
	Text  string `json:"text,omitempty"`
	Page  int    `json:"page,omitempty"`
	Start int    `json:"start,omitempty"`
	End   int    `json:"end,omitempty"`
}

// DocumentExtractResult is the result of document.extract: Fields maps each
// field key to its parsed value (money in integer cents, dates as
// YYYY-MM-DD), Extracted to its evidence.
type DocumentExtractResult struct {
	DocumentID string                    `json:"document_id" jsonschema:"required,minLength=1"`
	Status     string                    `json:"status" jsonschema:"required"`
	Fields     map[string]any            `json:"fields" jsonschema:"required"`
	Extracted  map[string]ExtractedField `json:"extracted,omitempty"`
}

// ValidationIssue is one finding of document.validate; RuleID is a stable
// id such as "required:invoice_number".
//
// It is not Issue, the record the built-in checks write: it is the result
// every provider of document.validate returns, so its shape is the
// vendor's contract. Field is omitted (never null) for a finding about the
// whole document, and Evidence is whatever the provider cites (Issue's
// Evidence record when the built-in documents app answers); making it Issue
// would make field and evidence required and change the published result
// schema under providers that write neither.
type ValidationIssue struct {
	RuleID   string `json:"rule_id" jsonschema:"required"`
	Field    string `json:"field,omitempty"`
	Severity string `json:"severity" jsonschema:"required,enum=error,enum=warning"`
	Message  string `json:"message" jsonschema:"required"`
	Evidence any    `json:"evidence,omitempty"`
}

// DocumentValidation is a document's validation outcome.
type DocumentValidation struct {
	Status string            `json:"status" jsonschema:"required,enum=passed,enum=warnings,enum=errors"`
	Issues []ValidationIssue `json:"issues" jsonschema:"required"`
}

// DocumentValidateResult is the result of document.validate.
type DocumentValidateResult struct {
	DocumentID string             `json:"document_id" jsonschema:"required,minLength=1"`
	Status     string             `json:"status" jsonschema:"required"`
	Validation DocumentValidation `json:"validation" jsonschema:"required"`
}

// DocumentApproveArgs are the arguments of document.approve.
type DocumentApproveArgs struct {
	DocumentID string `json:"document_id" jsonschema:"required,minLength=1,maxLength=80"`
	Note       string `json:"note,omitempty" jsonschema:"maxLength=2000"`
}

// DocumentRejectArgs are the arguments of document.reject.
type DocumentRejectArgs struct {
	DocumentID string `json:"document_id" jsonschema:"required,minLength=1,maxLength=80"`
	Reason     string `json:"reason" jsonschema:"required,minLength=1,maxLength=2000"`
}

// DocumentStatusResult is the result of document.approve and
// document.reject.
type DocumentStatusResult struct {
	DocumentID string `json:"document_id" jsonschema:"required,minLength=1"`
	Status     string `json:"status" jsonschema:"required"`
}

// CompanyCreateArgs are the arguments of crm.company.create.
type CompanyCreateArgs struct {
	Name     string `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Domain   string `json:"domain,omitempty" jsonschema:"maxLength=253"`
	Industry string `json:"industry,omitempty" jsonschema:"maxLength=120"`
	Phone    string `json:"phone,omitempty" jsonschema:"maxLength=40"`
	Website  string `json:"website,omitempty" jsonschema:"maxLength=2048"`
	OwnerID  string `json:"owner_id,omitempty" jsonschema:"maxLength=80"`
}

// CompanyCreateResult is the result of crm.company.create.
type CompanyCreateResult struct {
	CompanyID string `json:"company_id" jsonschema:"required,minLength=1"`
}

// ContactCreateArgs are the arguments of crm.contact.create.
type ContactCreateArgs struct {
	FirstName string `json:"first_name" jsonschema:"required,minLength=1,maxLength=100"`
	LastName  string `json:"last_name,omitempty" jsonschema:"maxLength=100"`
	Email     string `json:"email,omitempty" jsonschema:"format=email,maxLength=320"`
	Phone     string `json:"phone,omitempty" jsonschema:"maxLength=40"`
	Title     string `json:"title,omitempty" jsonschema:"maxLength=200"`
	CompanyID string `json:"company_id,omitempty" jsonschema:"maxLength=80"`
}

// ContactCreateResult is the result of crm.contact.create.
type ContactCreateResult struct {
	ContactID string `json:"contact_id" jsonschema:"required,minLength=1"`
}

// ContactLookupArgs are the arguments of crm.contact.lookup: at least one
// of Email, Name and Company.
type ContactLookupArgs struct {
	Email   string `json:"email,omitempty" jsonschema:"format=email,maxLength=320,anyof_required=email"`
	Name    string `json:"name,omitempty" jsonschema:"minLength=1,maxLength=200,anyof_required=name"`
	Company string `json:"company,omitempty" jsonschema:"minLength=1,maxLength=200,anyof_required=company"`
}

// ContactMatch is one contact crm.contact.lookup found.
type ContactMatch struct {
	ContactID string `json:"contact_id" jsonschema:"required,minLength=1"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
	Email     string `json:"email,omitempty"`
	Company   string `json:"company,omitempty"`
}

// ContactLookupResult is the result of crm.contact.lookup.
type ContactLookupResult struct {
	Found    bool           `json:"found" jsonschema:"required"`
	Contacts []ContactMatch `json:"contacts" jsonschema:"required"`
}

// DealCreateArgs are the arguments of crm.deal.create. Without a stage the
// deal starts in the first stage of the pipeline (the default pipeline
// when none is named).
type DealCreateArgs struct {
	Title       string `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	AmountCents *int64 `json:"amount_cents,omitempty" jsonschema:"minimum=0"`
	Currency    string `json:"currency,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	CompanyID   string `json:"company_id,omitempty" jsonschema:"maxLength=80"`
	ContactID   string `json:"contact_id,omitempty" jsonschema:"maxLength=80"`
	PipelineID  string `json:"pipeline_id,omitempty" jsonschema:"maxLength=80"`
	StageID     string `json:"stage_id,omitempty" jsonschema:"maxLength=80"`
	CloseDate   string `json:"close_date,omitempty" jsonschema:"format=date"`
	OwnerID     string `json:"owner_id,omitempty" jsonschema:"maxLength=80"`
}

// DealResult is the result of crm.deal.create and crm.deal.update.
type DealResult struct {
	DealID  string `json:"deal_id" jsonschema:"required,minLength=1"`
	StageID string `json:"stage_id" jsonschema:"required"`
	// Status is the kind of the deal's stage: open, won or lost.
	Status string `json:"status,omitempty" jsonschema:"enum=open,enum=won,enum=lost"`
}

// DealUpdateArgs are the arguments of crm.deal.update; only the fields
// present change.
type DealUpdateArgs struct {
	DealID      string `json:"deal_id" jsonschema:"required,minLength=1,maxLength=80"`
	Title       string `json:"title,omitempty" jsonschema:"minLength=1,maxLength=200"`
	AmountCents *int64 `json:"amount_cents,omitempty" jsonschema:"minimum=0"`
	Currency    string `json:"currency,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	StageID     string `json:"stage_id,omitempty" jsonschema:"maxLength=80"`
	CloseDate   string `json:"close_date,omitempty" jsonschema:"format=date"`
}

// DealMoveArgs are the arguments of crm.deal.move: the stage to move the
// deal to, by id or by name (case-insensitive, within the deal's
// pipeline).
type DealMoveArgs struct {
	DealID    string `json:"deal_id" jsonschema:"required,minLength=1,maxLength=80"`
	StageID   string `json:"stage_id,omitempty" jsonschema:"minLength=1,maxLength=80,anyof_required=stage_id"`
	StageName string `json:"stage_name,omitempty" jsonschema:"minLength=1,maxLength=100,anyof_required=stage_name"`
}

// DealMoveResult is the result of crm.deal.move.
type DealMoveResult struct {
	DealID      string `json:"deal_id" jsonschema:"required,minLength=1"`
	StageID     string `json:"stage_id" jsonschema:"required"`
	FromStageID string `json:"from_stage_id" jsonschema:"required"`
	Status      string `json:"status" jsonschema:"required,enum=open,enum=won,enum=lost"`
	ClosedAt    string `json:"closed_at,omitempty" jsonschema:"format=date-time"`
}

// ActivityLogArgs are the arguments of crm.activity.log.
type ActivityLogArgs struct {
	Subject   string `json:"subject" jsonschema:"required,minLength=1,maxLength=300"`
	Type      string `json:"type,omitempty" jsonschema:"enum=note,enum=call,enum=email,enum=meeting,enum=task"`
	Body      string `json:"body,omitempty" jsonschema:"maxLength=20000"`
	CompanyID string `json:"company_id,omitempty" jsonschema:"maxLength=80"`
	ContactID string `json:"contact_id,omitempty" jsonschema:"maxLength=80"`
	DealID    string `json:"deal_id,omitempty" jsonschema:"maxLength=80"`
}

// ActivityLogResult is the result of crm.activity.log.
type ActivityLogResult struct {
	ActivityID string `json:"activity_id" jsonschema:"required,minLength=1"`
}

// CustomerCreateArgs are the arguments of customer.create (a customer to
// invoice).
type CustomerCreateArgs struct {
	Name     string `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Email    string `json:"email,omitempty" jsonschema:"format=email,maxLength=320"`
	Phone    string `json:"phone,omitempty" jsonschema:"maxLength=40"`
	Currency string `json:"currency,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	// CompanyID links the customer to a CRM company.
	CompanyID string `json:"company_id,omitempty" jsonschema:"maxLength=80"`
}

// CustomerCreateResult is the result of customer.create.
type CustomerCreateResult struct {
	CustomerID string `json:"customer_id" jsonschema:"required,minLength=1"`
}

// InvoiceLine is one line of an invoice.
type InvoiceLine struct {
	Description     string   `json:"description" jsonschema:"required,minLength=1,maxLength=500"`
	Quantity        int64    `json:"quantity" jsonschema:"required,minimum=1"`
	UnitAmountCents int64    `json:"unit_amount_cents" jsonschema:"required,minimum=0"`
	TaxRatePercent  *float64 `json:"tax_rate_percent,omitempty" jsonschema:"minimum=0,maximum=100"`
}

// InvoiceCreateArgs are the arguments of invoice.create: a draft invoice.
type InvoiceCreateArgs struct {
	CustomerID   string        `json:"customer_id" jsonschema:"required,minLength=1,maxLength=80"`
	Currency     string        `json:"currency,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	Lines        []InvoiceLine `json:"lines" jsonschema:"required,minItems=1,maxItems=500"`
	DaysUntilDue *int          `json:"days_until_due,omitempty" jsonschema:"minimum=0,maximum=365"`
	DueDate      string        `json:"due_date,omitempty" jsonschema:"format=date"`
	DealID       string        `json:"deal_id,omitempty" jsonschema:"maxLength=80"`
	Memo         string        `json:"memo,omitempty" jsonschema:"maxLength=2000"`
	// Finalize and Send, when true, finalize the draft and then mail it
	// (Send implies Finalize).
	Finalize bool `json:"finalize,omitempty"`
	Send     bool `json:"send,omitempty"`
}

// InvoiceResult is the result of every invoice.* capability.
type InvoiceResult struct {
	InvoiceID      string `json:"invoice_id" jsonschema:"required,minLength=1"`
	Status         string `json:"status" jsonschema:"required,enum=draft,enum=open,enum=paid,enum=void,enum=uncollectible"`
	Number         string `json:"number,omitempty"`
	Currency       string `json:"currency,omitempty"`
	TotalCents     *int64 `json:"total_cents,omitempty"`
	AmountDueCents *int64 `json:"amount_due_cents,omitempty"`
	DueDate        string `json:"due_date,omitempty"`
	PaymentURL     string `json:"payment_url,omitempty"`
	RemindersSent  *int   `json:"reminders_sent,omitempty"`
}

// InvoiceArgs name one invoice (invoice.finalize, invoice.get).
type InvoiceArgs struct {
	InvoiceID string `json:"invoice_id" jsonschema:"required,minLength=1,maxLength=80"`
}

// InvoiceSendArgs are the arguments of invoice.send; To defaults to the
// customer's address.
type InvoiceSendArgs struct {
	InvoiceID string     `json:"invoice_id" jsonschema:"required,minLength=1,maxLength=80"`
	To        Recipients `json:"to,omitempty"`
}

// InvoiceRemindArgs are the arguments of invoice.remind: a payment
// reminder for an open invoice, to the customer's address unless To is
// given.
type InvoiceRemindArgs struct {
	InvoiceID string `json:"invoice_id" jsonschema:"required,minLength=1,maxLength=80"`
	To        string `json:"to,omitempty" jsonschema:"format=email,maxLength=320"`
}

// InvoiceVoidArgs are the arguments of invoice.void.
type InvoiceVoidArgs struct {
	InvoiceID string `json:"invoice_id" jsonschema:"required,minLength=1,maxLength=80"`
	Reason    string `json:"reason,omitempty" jsonschema:"maxLength=2000"`
}

// PaymentRequestArgs are the arguments of payment.request: ask a payer for
// an amount, optionally against an invoice.
type PaymentRequestArgs struct {
	AmountCents int64  `json:"amount_cents" jsonschema:"required,minimum=1"`
	Currency    string `json:"currency" jsonschema:"required,pattern=^[A-Z]{3}$"`
	Description string `json:"description,omitempty" jsonschema:"maxLength=500"`
	InvoiceID   string `json:"invoice_id,omitempty" jsonschema:"maxLength=80"`
	CustomerID  string `json:"customer_id,omitempty" jsonschema:"maxLength=80"`
	Email       string `json:"email,omitempty" jsonschema:"format=email,maxLength=320"`
}

// PaymentRequestResult is the result of payment.request.
type PaymentRequestResult struct {
	PaymentRequestID string `json:"payment_request_id" jsonschema:"required,minLength=1"`
	Status           string `json:"status" jsonschema:"required"`
	URL              string `json:"url,omitempty"`
}

// BoardItemCreateArgs are the arguments of board.item.create.
type BoardItemCreateArgs struct {
	BoardID    string         `json:"board_id" jsonschema:"required,minLength=1,maxLength=80"`
	Title      string         `json:"title" jsonschema:"required,minLength=1,maxLength=300"`
	StatusID   string         `json:"status_id,omitempty" jsonschema:"maxLength=80"`
	GroupID    string         `json:"group_id,omitempty" jsonschema:"maxLength=80"`
	AssigneeID string         `json:"assignee_id,omitempty" jsonschema:"maxLength=80"`
	Values     map[string]any `json:"values,omitempty"`
}

// BoardItemCreateResult is the result of board.item.create.
type BoardItemCreateResult struct {
	ItemID string `json:"item_id" jsonschema:"required,minLength=1"`
	Key    string `json:"key" jsonschema:"required"`
}

// BoardItemMoveArgs are the arguments of board.item.move.
type BoardItemMoveArgs struct {
	ItemID   string `json:"item_id" jsonschema:"required,minLength=1,maxLength=80"`
	StatusID string `json:"status_id" jsonschema:"required,minLength=1,maxLength=80"`
	GroupID  string `json:"group_id,omitempty" jsonschema:"maxLength=80"`
	Position *int   `json:"position,omitempty" jsonschema:"minimum=0"`
}

// BoardItemMoveResult is the result of board.item.move.
type BoardItemMoveResult struct {
	ItemID   string `json:"item_id" jsonschema:"required,minLength=1"`
	StatusID string `json:"status_id" jsonschema:"required"`
}

// BoardItemUpdateArgs are the arguments of board.item.update: the fields
// given change, values merge into the item's (a null value clears one).
type BoardItemUpdateArgs struct {
	ItemID      string         `json:"item_id" jsonschema:"required,minLength=1,maxLength=80"`
	Title       string         `json:"title,omitempty" jsonschema:"maxLength=300"`
	Description *string        `json:"description,omitempty" jsonschema:"nullable,maxLength=20000"`
	AssigneeID  *string        `json:"assignee_id,omitempty" jsonschema:"nullable,maxLength=200"`
	Values      map[string]any `json:"values,omitempty"`
}

// BoardItemUpdateResult is the result of board.item.update.
type BoardItemUpdateResult struct {
	ItemID   string `json:"item_id" jsonschema:"required,minLength=1"`
	Key      string `json:"key" jsonschema:"required"`
	StatusID string `json:"status_id" jsonschema:"required"`
}

// DecisionEvaluateArgs are the arguments of decision.evaluate.
type DecisionEvaluateArgs struct {
	Name  string         `json:"name" jsonschema:"required,minLength=1,maxLength=120"`
	Input map[string]any `json:"input" jsonschema:"required"`
}

// DecisionEvaluateResult is the result of decision.evaluate.
type DecisionEvaluateResult struct {
	Output     any     `json:"output" jsonschema:"required"`
	Confidence float64 `json:"confidence" jsonschema:"required,minimum=0,maximum=1"`
	Mode       string  `json:"mode" jsonschema:"required,enum=auto,enum=suggest,enum=manual"`
}

// PurchaseOrderGetArgs are the arguments of erp.purchase_order.get.
type PurchaseOrderGetArgs struct {
	Number string `json:"number" jsonschema:"required,minLength=1,maxLength=80"`
}

// PurchaseOrderLine is one line of a purchase order.
type PurchaseOrderLine struct {
	SKU         string `json:"sku" jsonschema:"required"`
	Description string `json:"description" jsonschema:"required"`
	Quantity    int64  `json:"quantity" jsonschema:"required,minimum=0"`
	UnitCents   int64  `json:"unit_cents" jsonschema:"required,minimum=0"`
}

// PurchaseOrder is the result of erp.purchase_order.get.
type PurchaseOrder struct {
	Number     string              `json:"number" jsonschema:"required,minLength=1"`
	Supplier   string              `json:"supplier" jsonschema:"required"`
	Currency   string              `json:"currency" jsonschema:"required,pattern=^[A-Z]{3}$"`
	TotalCents int64               `json:"total_cents" jsonschema:"required,minimum=0"`
	Lines      []PurchaseOrderLine `json:"lines" jsonschema:"required"`
	Status     string              `json:"status" jsonschema:"required,enum=draft,enum=open,enum=partially_received,enum=received,enum=closed,enum=cancelled"`
}

// GoodsReceiptGetArgs are the arguments of erp.goods_receipt.get: the
// receipts booked against a purchase order.
type GoodsReceiptGetArgs struct {
	PurchaseOrder string `json:"purchase_order" jsonschema:"required,minLength=1,maxLength=80"`
}

// GoodsReceiptLine is what was received of one SKU.
type GoodsReceiptLine struct {
	SKU      string `json:"sku" jsonschema:"required"`
	Quantity int64  `json:"quantity" jsonschema:"required,minimum=0"`
}

// GoodsReceipt is the result of erp.goods_receipt.get: the received
// quantities summed over every receipt of the order.
type GoodsReceipt struct {
	PurchaseOrder string             `json:"purchase_order" jsonschema:"required,minLength=1"`
	Lines         []GoodsReceiptLine `json:"lines" jsonschema:"required"`
	ReceivedAt    string             `json:"received_at,omitempty" jsonschema:"format=date-time"`
}

// SupplierGetArgs are the arguments of erp.supplier.get: the supplier's id
// in the ERP or its name.
type SupplierGetArgs struct {
	SupplierID string `json:"supplier_id,omitempty" jsonschema:"minLength=1,maxLength=80,anyof_required=supplier_id"`
	Name       string `json:"name,omitempty" jsonschema:"minLength=1,maxLength=200,anyof_required=name"`
}

// Supplier is the result of erp.supplier.get.
type Supplier struct {
	SupplierID       string `json:"supplier_id" jsonschema:"required,minLength=1"`
	Name             string `json:"name" jsonschema:"required"`
	Email            string `json:"email,omitempty"`
	TaxID            string `json:"tax_id,omitempty"`
	Currency         string `json:"currency,omitempty"`
	PaymentTermsDays *int   `json:"payment_terms_days,omitempty" jsonschema:"minimum=0"`
	Status           string `json:"status" jsonschema:"required,enum=active,enum=blocked,enum=inactive"`
}

// BillLine is one line of a supplier bill.
type BillLine struct {
	Description string `json:"description" jsonschema:"required,minLength=1,maxLength=500"`
	AmountCents int64  `json:"amount_cents" jsonschema:"required"`
	Account     string `json:"account,omitempty" jsonschema:"maxLength=80"`
	SKU         string `json:"sku,omitempty" jsonschema:"maxLength=80"`
	Quantity    *int64 `json:"quantity,omitempty" jsonschema:"minimum=0"`
}

// BillCreateArgs are the arguments of erp.bill.create: book a supplier
// invoice in accounts payable.
type BillCreateArgs struct {
	Supplier      string     `json:"supplier" jsonschema:"required,minLength=1,maxLength=200"`
	Number        string     `json:"number" jsonschema:"required,minLength=1,maxLength=80"`
	Currency      string     `json:"currency" jsonschema:"required,pattern=^[A-Z]{3}$"`
	TotalCents    int64      `json:"total_cents" jsonschema:"required"`
	IssueDate     string     `json:"issue_date,omitempty" jsonschema:"format=date"`
	DueDate       string     `json:"due_date,omitempty" jsonschema:"format=date"`
	PurchaseOrder string     `json:"purchase_order,omitempty" jsonschema:"maxLength=80"`
	DocumentID    string     `json:"document_id,omitempty" jsonschema:"maxLength=80"`
	Lines         []BillLine `json:"lines,omitempty" jsonschema:"maxItems=500"`
}

// BillCreateResult is the result of erp.bill.create.
type BillCreateResult struct {
	BillID string `json:"bill_id" jsonschema:"required,minLength=1"`
	Status string `json:"status" jsonschema:"required"`
}

// LedgerLine is one line of a journal entry: a debit or a credit.
type LedgerLine struct {
	Account     string `json:"account" jsonschema:"required,minLength=1,maxLength=80"`
	DebitCents  int64  `json:"debit_cents,omitempty" jsonschema:"minimum=0"`
	CreditCents int64  `json:"credit_cents,omitempty" jsonschema:"minimum=0"`
	Description string `json:"description,omitempty" jsonschema:"maxLength=500"`
}

// LedgerPostArgs are the arguments of ledger.post: a journal entry whose
// debits equal its credits (the provider refuses one that does not
// balance).
type LedgerPostArgs struct {
	Date      string       `json:"date" jsonschema:"required,format=date"`
	Currency  string       `json:"currency" jsonschema:"required,pattern=^[A-Z]{3}$"`
	Memo      string       `json:"memo,omitempty" jsonschema:"maxLength=2000"`
	Reference string       `json:"reference,omitempty" jsonschema:"maxLength=120"`
	Lines     []LedgerLine `json:"lines" jsonschema:"required,minItems=2,maxItems=500"`
}

// Balanced reports whether the entry's debits equal its credits.
func (a LedgerPostArgs) Balanced() bool {
	var d, c int64
	for _, l := range a.Lines {
		d += l.DebitCents
		c += l.CreditCents
	}
	return d == c
}

// LedgerPostResult is the result of ledger.post.
type LedgerPostResult struct {
	EntryID string `json:"entry_id" jsonschema:"required,minLength=1"`
	Status  string `json:"status" jsonschema:"required"`
}

// ChatMessageSendArgs are the arguments of chat.message.send.
type ChatMessageSendArgs struct {
	Channel string `json:"channel" jsonschema:"required,minLength=1,maxLength=200"`
	Text    string `json:"text" jsonschema:"required,minLength=1,maxLength=40000"`
}

// ChatMessageSendResult is the result of chat.message.send.
type ChatMessageSendResult struct {
	MessageID string `json:"message_id" jsonschema:"required,minLength=1"`
}

// FilePutArgs are the arguments of storage.file.put: store a workspace
// document, or inline content, at Path.
type FilePutArgs struct {
	Path          string `json:"path" jsonschema:"required,minLength=1,maxLength=1024"`
	DocumentID    string `json:"document_id,omitempty" jsonschema:"minLength=1,maxLength=80,oneof_required=document_id"`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"maxLength=35000000,oneof_required=content_base64"`
	ContentType   string `json:"content_type,omitempty" jsonschema:"maxLength=200"`
}

// FilePutResult is the result of storage.file.put.
type FilePutResult struct {
	FileID string `json:"file_id" jsonschema:"required,minLength=1"`
	URL    string `json:"url,omitempty"`
}

// CalendarEventCreateArgs are the arguments of calendar.event.create.
type CalendarEventCreateArgs struct {
	Title       string   `json:"title" jsonschema:"required,minLength=1,maxLength=300"`
	Start       string   `json:"start" jsonschema:"required,format=date-time"`
	End         string   `json:"end" jsonschema:"required,format=date-time"`
	Attendees   []string `json:"attendees,omitempty" jsonschema:"maxItems=200,format=email"`
	Location    string   `json:"location,omitempty" jsonschema:"maxLength=500"`
	Description string   `json:"description,omitempty" jsonschema:"maxLength=8000"`
}

// CalendarEventCreateResult is the result of calendar.event.create.
type CalendarEventCreateResult struct {
	EventID string `json:"event_id" jsonschema:"required,minLength=1"`
	URL     string `json:"url,omitempty"`
}

// SMSSendArgs are the arguments of sms.send; To is an E.164 number.
type SMSSendArgs struct {
	To   string `json:"to" jsonschema:"required,pattern=^\\+[1-9][0-9]{6\\,14}$"`
	Text string `json:"text" jsonschema:"required,minLength=1,maxLength=1600"`
}

// SMSSendResult is the result of sms.send.
type SMSSendResult struct {
	MessageID string `json:"message_id" jsonschema:"required,minLength=1"`
	Status    string `json:"status" jsonschema:"required"`
}

// Signer is one person asked to sign.
type Signer struct {
	Name  string `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Email string `json:"email" jsonschema:"required,format=email,maxLength=320"`
}

// ESignRequestArgs are the arguments of esign.request: send a workspace
// document out for signature.
type ESignRequestArgs struct {
	DocumentID string   `json:"document_id" jsonschema:"required,minLength=1,maxLength=80"`
	Signers    []Signer `json:"signers" jsonschema:"required,minItems=1,maxItems=20"`
	Subject    string   `json:"subject,omitempty" jsonschema:"maxLength=300"`
	Message    string   `json:"message,omitempty" jsonschema:"maxLength=4000"`
}

// ESignRequestResult is the result of esign.request.
type ESignRequestResult struct {
	EnvelopeID string `json:"envelope_id" jsonschema:"required,minLength=1"`
	Status     string `json:"status" jsonschema:"required"`
}

// TicketCreateArgs are the arguments of ticket.create (a support or
// service-desk ticket).
type TicketCreateArgs struct {
	Subject        string `json:"subject" jsonschema:"required,minLength=1,maxLength=300"`
	Description    string `json:"description,omitempty" jsonschema:"maxLength=20000"`
	RequesterEmail string `json:"requester_email,omitempty" jsonschema:"format=email,maxLength=320"`
	Priority       string `json:"priority,omitempty" jsonschema:"enum=low,enum=normal,enum=high,enum=urgent"`
}

// TicketCreateResult is the result of ticket.create.
type TicketCreateResult struct {
	TicketID string `json:"ticket_id" jsonschema:"required,minLength=1"`
	URL      string `json:"url,omitempty"`
}

// EmployeeGetArgs are the arguments of hr.employee.get: the employee's id
// in the HR system or their work address.
type EmployeeGetArgs struct {
	EmployeeID string `json:"employee_id,omitempty" jsonschema:"minLength=1,maxLength=80,anyof_required=employee_id"`
	Email      string `json:"email,omitempty" jsonschema:"format=email,maxLength=320,anyof_required=email"`
}

// Employee is the result of hr.employee.get.
type Employee struct {
	EmployeeID   string `json:"employee_id" jsonschema:"required,minLength=1"`
	Name         string `json:"name" jsonschema:"required"`
	Email        string `json:"email,omitempty"`
	Department   string `json:"department,omitempty"`
	ManagerEmail string `json:"manager_email,omitempty"`
	StartDate    string `json:"start_date,omitempty"`
	Status       string `json:"status" jsonschema:"required,enum=active,enum=on_leave,enum=terminated"`
}

// OrderGetArgs are the arguments of commerce.order.get.
type OrderGetArgs struct {
	OrderID string `json:"order_id" jsonschema:"required,minLength=1,maxLength=80"`
}

// OrderLine is one line of a shop order.
type OrderLine struct {
	SKU       string `json:"sku" jsonschema:"required"`
	Title     string `json:"title,omitempty"`
	Quantity  int64  `json:"quantity" jsonschema:"required,minimum=0"`
	UnitCents int64  `json:"unit_cents" jsonschema:"required,minimum=0"`
}

// Order is the result of commerce.order.get.
type Order struct {
	OrderID       string      `json:"order_id" jsonschema:"required,minLength=1"`
	CustomerEmail string      `json:"customer_email,omitempty"`
	Currency      string      `json:"currency" jsonschema:"required,pattern=^[A-Z]{3}$"`
	TotalCents    int64       `json:"total_cents" jsonschema:"required,minimum=0"`
	Status        string      `json:"status" jsonschema:"required"`
	Lines         []OrderLine `json:"lines" jsonschema:"required"`
}

// OrderListArgs are the arguments of commerce.order.list: orders created
// since a time, at most Limit of them.
type OrderListArgs struct {
	Since  string `json:"since,omitempty" jsonschema:"format=date-time"`
	Status string `json:"status,omitempty" jsonschema:"maxLength=40"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=200"`
}

// OrderList is the result of commerce.order.list.
type OrderList struct {
	Orders []Order `json:"orders" jsonschema:"required"`
}

// ---- The catalog ----------------------------------------------------------

// StandardSpec declares one capability of the standard catalog: its id,
// title and description, a value of its argument and result types (their
// JSON Schemas are reflected from them), and whether a system outside the
// workspace fills it. The registry (package capability/registry) turns the
// declarations into the catalog.
type StandardSpec struct {
	ID, Name, Description string
	Args, Result          any
	// External marks capabilities that a system outside the workspace
	// fills (an ERP, a chat tool ...); the built-in apps fill the others.
	External bool
}

// StandardSpecs returns the declarations of the standard catalog: every
// capability the built-in apps and step types use, and the common ones an
// external system fills.
func StandardSpecs() []StandardSpec {
	return append([]StandardSpec{
		{TaskCreate, "Create a human task", "Gives a person a task with actions to choose from and fields to fill in; the chosen action is the outcome and the fields are the output.", &TaskCreateArgs{}, &TaskCreateResult{}, false},
		{ApprovalRequest, "Request an approval", "Asks a person to approve or reject what the summary describes.", &ApprovalRequestArgs{}, &ApprovalRequestResult{}, false},
		{EmailSend, "Send an e-mail", "Sends an e-mail to one address or a list; the built-in provider writes it to the workspace outbox.", &EmailSendArgs{}, &EmailSendResult{}, false},
		{DocumentExtract, "Extract a document", "Reads a document's fields by its type's extraction rules; fields holds the parsed values, extracted their evidence.", &DocumentArgs{}, &DocumentExtractResult{}, false},
		{DocumentValidate, "Validate a document", "Checks a document's extracted fields against its type's rules; every issue cites evidence.", &DocumentArgs{}, &DocumentValidateResult{}, false},
		{DocumentApprove, "Approve a document", "Approves a document that is validated or in review.", &DocumentApproveArgs{}, &DocumentStatusResult{}, false},
		{DocumentReject, "Reject a document", "Rejects a document with a reason.", &DocumentRejectArgs{}, &DocumentStatusResult{}, false},
		{CRMCompanyCreate, "Create a CRM company", "Adds a company to the CRM.", &CompanyCreateArgs{}, &CompanyCreateResult{}, false},
		{CRMContactCreate, "Create a CRM contact", "Adds a contact to the CRM, optionally at a company.", &ContactCreateArgs{}, &ContactCreateResult{}, false},
		{CRMContactLookup, "Look up CRM contacts", "Finds contacts by e-mail address, name or company.", &ContactLookupArgs{}, &ContactLookupResult{}, false},
		{CRMDealCreate, "Create a CRM deal", "Opens a deal in a pipeline stage (the default pipeline's first stage unless named).", &DealCreateArgs{}, &DealResult{}, false},
		{CRMDealUpdate, "Update a CRM deal", "Changes a deal's fields or moves it to another stage of its pipeline.", &DealUpdateArgs{}, &DealResult{}, false},
		{CRMDealMove, "Move a CRM deal", "Moves a deal to another stage of its pipeline, named by id or by name; entering a won or lost stage closes it.", &DealMoveArgs{}, &DealMoveResult{}, false},
		{CRMActivityLog, "Log a CRM activity", "Records a note, call, e-mail, meeting or task against a company, contact or deal.", &ActivityLogArgs{}, &ActivityLogResult{}, false},
		{CustomerCreate, "Create a customer", "Adds a customer to invoice.", &CustomerCreateArgs{}, &CustomerCreateResult{}, false},
		{InvoiceCreate, "Create an invoice", "Creates a draft invoice for a customer.", &InvoiceCreateArgs{}, &InvoiceResult{}, false},
		{InvoiceFinalize, "Finalize an invoice", "Finalizes a draft invoice: it gets its number and becomes open.", &InvoiceArgs{}, &InvoiceResult{}, false},
		{InvoiceSend, "Send an invoice", "Sends an open invoice to the customer (or the given addresses).", &InvoiceSendArgs{}, &InvoiceResult{}, false},
		{InvoiceVoid, "Void an invoice", "Voids an open invoice.", &InvoiceVoidArgs{}, &InvoiceResult{}, false},
		{InvoiceGet, "Read an invoice", "Returns an invoice's status and amounts.", &InvoiceArgs{}, &InvoiceResult{}, false},
		{InvoiceRemind, "Remind about an invoice", "Sends the customer a payment reminder for an open invoice, with its payment link.", &InvoiceRemindArgs{}, &InvoiceResult{}, false},
		{PaymentRequest, "Request a payment", "Asks a payer for an amount, optionally against an invoice, through the payments account.", &PaymentRequestArgs{}, &PaymentRequestResult{}, false},
		{BoardItemCreate, "Create a board item", "Adds an item to a board.", &BoardItemCreateArgs{}, &BoardItemCreateResult{}, false},
		{BoardItemMove, "Move a board item", "Moves a board item to another status (and group or position).", &BoardItemMoveArgs{}, &BoardItemMoveResult{}, false},
		{BoardItemUpdate, "Update a board item", "Changes a board item's title, description, assignee or column values.", &BoardItemUpdateArgs{}, &BoardItemUpdateResult{}, false},
		{DecisionEvaluate, "Evaluate a decision", "Evaluates a named decision on an input and says whether its output may be applied automatically.", &DecisionEvaluateArgs{}, &DecisionEvaluateResult{}, false},
		{ERPPurchaseOrder, "Read a purchase order", "Returns a purchase order from the ERP by its number, with its lines.", &PurchaseOrderGetArgs{}, &PurchaseOrder{}, true},
		{ERPGoodsReceipt, "Read goods receipts", "Returns the quantities received against a purchase order (for three-way matching).", &GoodsReceiptGetArgs{}, &GoodsReceipt{}, true},
		{ERPSupplierGet, "Read a supplier", "Returns a supplier from the ERP by its id or name.", &SupplierGetArgs{}, &Supplier{}, true},
		{ERPBillCreate, "Book a supplier bill", "Books a supplier invoice in accounts payable.", &BillCreateArgs{}, &BillCreateResult{}, true},
		{LedgerPost, "Post a journal entry", "Posts a balanced journal entry to the general ledger.", &LedgerPostArgs{}, &LedgerPostResult{}, true},
		{ChatMessageSend, "Send a chat message", "Posts a message to a chat channel.", &ChatMessageSendArgs{}, &ChatMessageSendResult{}, true},
		{StorageFilePut, "Store a file", "Stores a workspace document, or inline content, in a file store.", &FilePutArgs{}, &FilePutResult{}, true},
		{CalendarEventNew, "Create a calendar event", "Puts an event in a calendar and invites attendees.", &CalendarEventCreateArgs{}, &CalendarEventCreateResult{}, true},
		{SMSSend, "Send a text message", "Sends an SMS to a phone number.", &SMSSendArgs{}, &SMSSendResult{}, true},
		{ESignRequest, "Request signatures", "Sends a document out for electronic signature.", &ESignRequestArgs{}, &ESignRequestResult{}, true},
		{TicketCreate, "Create a ticket", "Opens a ticket in a support or service desk.", &TicketCreateArgs{}, &TicketCreateResult{}, true},
		{HREmployeeGet, "Read an employee", "Returns an employee from the HR system by id or e-mail address.", &EmployeeGetArgs{}, &Employee{}, true},
		{CommerceOrderGet, "Read a shop order", "Returns an order from the shop by its id, with its lines.", &OrderGetArgs{}, &Order{}, true},
		{CommerceOrderList, "List shop orders", "Returns the shop's orders created since a time.", &OrderListArgs{}, &OrderList{}, true},
	}, aiSpecs()...)
}
