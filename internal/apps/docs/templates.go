package docs

import (
	"strconv"

	"github.com/bas-platform/bas/internal/extract"
)

// TypeTemplate is a ready-made document type (GET /v1/docs/type-templates).
type TypeTemplate struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Category    string     `json:"category"`
	Fields      []DocField `json:"fields"`
	Workflow    Workflow   `json:"workflow"`
	RuleCount   int        `json:"rule_count"`
	Rules       []RuleInfo `json:"rules"`
}

func itoa(n int) string { return strconv.Itoa(n) }

func label(l string, aliases ...string) *extract.Rule {
	return &extract.Rule{Method: extract.MethodLabel, Label: l, Aliases: aliases}
}

func regex(p string) *extract.Rule { return &extract.Rule{Method: extract.MethodRegex, Pattern: p} }

// lineAmounts finds the amount of each table row "description, quantity,
// unit price, amount" (cells separated by tabs or two or more spaces): the
// last cell of every such row.
const lineAmounts = `(?m)^[^\t\n]*\pL[^\t\n]*?(?:\t|  +)\d+(?:[.,]\d+)?(?:\t|  +)\S+(?:\t|  +)(\(?-?[^\s\t]*\d[^\s\t]*\)?)[ \t]*$`

var currencies = []string{"EUR", "USD", "GBP", "CHF", "CAD", "AUD", "JPY", "SEK", "NOK", "DKK", "PLN", "CZK"}

func sla(days int, auto bool, onError, onWarning string) Workflow {
	return Workflow{AutoApprove: auto, OnError: onError, OnWarning: onWarning, ReviewSLADays: days}
}

// Templates returns the built-in document type templates, in a fixed
// order: supplier invoice, receipt, purchase order, contract, bank
// statement and supplier tax form (W-9 style).
func Templates() []TypeTemplate {
	tpls := []TypeTemplate{
		{
			ID: "supplier_invoice", Name: "Supplier invoice", Category: "finance",
			Description: "An invoice from a supplier: who, which number, when, how much. Checks that the total adds up, the tax matches the rate, the due date follows the invoice date, and warns about duplicates.",
			Fields: []DocField{
				{Key: "supplier", Label: "Supplier", Required: true, Extract: label("Supplier", "From", "Vendor", "Seller")},
				{Key: "invoice_number", Label: "Invoice number", Required: true, Extract: label("Invoice number", "Invoice No.", "Invoice #", "Invoice ID", "Rechnungsnummer")},
				{Key: "issue_date", Label: "Invoice date", Type: extract.TypeDate, Required: true, Extract: label("Invoice date", "Issue date", "Date of issue", "Date")},
				{Key: "due_date", Label: "Due date", Type: extract.TypeDate, Extract: label("Due date", "Payment due", "Due")},
				{Key: "currency", Label: "Currency", Type: extract.TypeEnum, Options: currencies},
				{Key: "subtotal", Label: "Subtotal", Type: extract.TypeMoney, Extract: label("Subtotal", "Net amount", "Net total", "Total excl. tax")},
				{Key: "tax_rate", Label: "Tax rate", Type: extract.TypeNumber, Extract: label("Tax rate", "VAT rate", "VAT %")},
				{Key: "tax", Label: "Tax", Type: extract.TypeMoney, Extract: label("Tax", "VAT", "Sales tax", "Tax amount")},
				{Key: "total", Label: "Total", Type: extract.TypeMoney, Required: true, Extract: label("Total", "Total due", "Amount due", "Grand total", "Invoice total")},
				{Key: "line_amounts", Label: "Line amounts", Type: extract.TypeMoney, Repeat: true, Extract: regex(lineAmounts)},
				{Key: "supplier_email", Label: "Email", Type: extract.TypeEmail, Extract: label("Email", "E-mail")},
			},
			Workflow: sla(2, false, OnErrorReview, OnWarningReview),
		},
		{
			ID: "receipt", Name: "Receipt", Category: "finance",
			Description: "A till or card receipt for an expense. Clean receipts are approved without a person.",
			Fields: []DocField{
				{Key: "merchant", Label: "Merchant", Required: true, Extract: label("Merchant", "Store", "Shop")},
				{Key: "receipt_number", Label: "Receipt number", Extract: label("Receipt number", "Receipt No.", "Receipt #", "Transaction")},
				{Key: "issue_date", Label: "Date", Type: extract.TypeDate, Required: true, Extract: label("Date", "Purchase date")},
				{Key: "currency", Label: "Currency", Type: extract.TypeEnum, Options: currencies},
				{Key: "tax", Label: "Tax", Type: extract.TypeMoney, Extract: label("Tax", "VAT", "Sales tax")},
				{Key: "total", Label: "Total", Type: extract.TypeMoney, Required: true, Extract: label("Total", "Amount", "Amount paid")},
				{Key: "payment_method", Label: "Payment method", Type: extract.TypeEnum, Options: []string{"Card", "Cash", "Bank transfer", "Other"}, Extract: label("Payment method", "Paid by", "Payment")},
			},
			Workflow: sla(5, true, OnErrorReview, OnWarningAccept),
		},
		{
			ID: "purchase_order", Name: "Purchase order", Category: "procurement",
			Description: "An order placed with a supplier. Checks the total against the lines and the delivery date against the order date.",
			Fields: []DocField{
				{Key: "po_number", Label: "PO number", Required: true, Extract: label("PO number", "Purchase order", "Order number", "P.O. Number")},
				{Key: "buyer", Label: "Buyer", Extract: label("Buyer", "Bill to", "Ordered by")},
				{Key: "supplier", Label: "Supplier", Required: true, Extract: label("Supplier", "Vendor", "To")},
				{Key: "order_date", Label: "Order date", Type: extract.TypeDate, Required: true, Extract: label("Order date", "Date")},
				{Key: "delivery_date", Label: "Delivery date", Type: extract.TypeDate, Extract: label("Delivery date", "Deliver by", "Ship date")},
				{Key: "currency", Label: "Currency", Type: extract.TypeEnum, Options: currencies},
				{Key: "subtotal", Label: "Subtotal", Type: extract.TypeMoney},
				{Key: "tax", Label: "Tax", Type: extract.TypeMoney, Extract: label("Tax", "VAT")},
				{Key: "total", Label: "Total", Type: extract.TypeMoney, Required: true, Extract: label("Total", "Order total", "Grand total")},
				{Key: "line_amounts", Label: "Line amounts", Type: extract.TypeMoney, Repeat: true, Extract: regex(lineAmounts)},
			},
			Workflow: sla(2, false, OnErrorReview, OnWarningReview),
		},
		{
			ID: "contract", Name: "Contract", Category: "legal",
			Description: "A contract with a customer or supplier: parties, term, value and notice. Every contract is read by a person.",
			Fields: []DocField{
				{Key: "counterparty", Label: "Counterparty", Required: true, Extract: label("Counterparty", "Between", "Party", "Customer", "Supplier")},
				{Key: "contract_number", Label: "Contract number", Extract: label("Contract number", "Contract No.", "Agreement number", "Reference")},
				{Key: "effective_date", Label: "Effective date", Type: extract.TypeDate, Required: true, Extract: label("Effective date", "Start date", "Commencement date")},
				{Key: "end_date", Label: "End date", Type: extract.TypeDate, Extract: label("End date", "Expiry date", "Expiration date", "Term ends")},
				{Key: "renewal", Label: "Renewal", Type: extract.TypeEnum, Options: []string{"Automatic", "Manual", "None"}, Extract: label("Renewal", "Auto-renewal")},
				{Key: "notice_days", Label: "Notice period (days)", Type: extract.TypeNumber, Extract: regex(`(?i)notice(?: period)?[^\n\d]{0,40}(\d+)\s*days`)},
				{Key: "contract_value", Label: "Contract value", Type: extract.TypeMoney, Extract: label("Contract value", "Total value", "Fees", "Value")},
				{Key: "governing_law", Label: "Governing law", Extract: label("Governing law", "Jurisdiction")},
				{Key: "signatory_email", Label: "Signatory email", Type: extract.TypeEmail, Extract: label("Signatory email", "Email", "Notices to")},
			},
			Workflow: sla(5, false, OnErrorReview, OnWarningReview),
		},
		{
			ID: "bank_statement", Name: "Bank statement", Category: "finance",
			Description: "A statement of a bank account for a period. Checks that the closing balance is the opening balance plus credits minus debits.",
			Fields: []DocField{
				{Key: "bank", Label: "Bank", Required: true, Extract: label("Bank", "Bank name")},
				{Key: "account_number", Label: "Account number", Required: true, Extract: label("Account number", "IBAN", "Account No.", "Account")},
				{Key: "period_start", Label: "Period start", Type: extract.TypeDate, Required: true, Extract: label("Period start", "From", "Statement from")},
				{Key: "period_end", Label: "Period end", Type: extract.TypeDate, Required: true, Extract: label("Period end", "To", "Statement to")},
				{Key: "currency", Label: "Currency", Type: extract.TypeEnum, Options: currencies},
				{Key: "opening_balance", Label: "Opening balance", Type: extract.TypeMoney, Required: true, Extract: label("Opening balance", "Balance brought forward", "Previous balance")},
				{Key: "total_credits", Label: "Total credits", Type: extract.TypeMoney, Extract: label("Total credits", "Money in", "Credits", "Paid in")},
				{Key: "total_debits", Label: "Total debits", Type: extract.TypeMoney, Extract: label("Total debits", "Money out", "Debits", "Paid out")},
				{Key: "closing_balance", Label: "Closing balance", Type: extract.TypeMoney, Required: true, Extract: label("Closing balance", "Balance carried forward", "New balance")},
			},
			Workflow: sla(3, true, OnErrorReview, OnWarningReview),
		},
		{
			ID: "supplier_tax_form", Name: "Supplier tax form (W-9 style)", Category: "procurement",
			Description: "A supplier's taxpayer identification and certification form (W-9 or an equivalent), collected when onboarding a supplier.",
			Fields: []DocField{
				{Key: "legal_name", Label: "Name", Required: true, Extract: label("Name", "Legal name", "Name (as shown on your income tax return)")},
				{Key: "business_name", Label: "Business name", Extract: label("Business name", "Business name/disregarded entity name", "Trading name")},
				{Key: "tax_classification", Label: "Federal tax classification", Type: extract.TypeEnum,
					Options: []string{"Individual/sole proprietor", "C corporation", "S corporation", "Partnership", "Trust/estate", "LLC", "Other"},
					Extract: label("Federal tax classification", "Tax classification", "Entity type")},
				{Key: "tin", Label: "Taxpayer identification number", Required: true, Extract: regex(`(?i)(?:TIN|EIN|SSN|taxpayer identification number|employer identification number|VAT number)[^\n:\t]*[:\t]\s*([A-Z]{0,2}[0-9][0-9 -]{5,}[0-9])`)},
				{Key: "address", Label: "Address", Required: true, Extract: label("Address", "Address (number, street, and apt. or suite no.)", "Street")},
				{Key: "city_state_zip", Label: "City, state, and ZIP code", Extract: label("City, state, and ZIP code", "City", "Postcode")},
				{Key: "email", Label: "Email", Type: extract.TypeEmail, Extract: label("Email", "E-mail", "Contact email")},
				{Key: "signature_date", Label: "Date signed", Type: extract.TypeDate, Required: true, Extract: label("Date signed", "Date", "Signature date")},
			},
			Workflow: sla(5, false, OnErrorReview, OnWarningReview),
		},
	}
	for i := range tpls {
		tpls[i].Fields = normalizeFields(tpls[i].Fields)
		tpls[i].Rules = Rules(tpls[i].Fields)
		tpls[i].RuleCount = len(tpls[i].Rules)
	}
	return tpls
}

// Template returns the template id.
func Template(id string) (TypeTemplate, bool) {
	for _, t := range Templates() {
		if t.ID == id {
			return t, true
		}
	}
	return TypeTemplate{}, false
}
