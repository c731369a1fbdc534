// Package docs is the built-in documents app: document types with fields,
// rules and a review workflow; uploads and new versions of files; text
// extraction, validation with evidence, review, feedback and agreement.
//
// # Types
//
// A document type (DocType) lists fields (DocField: key, label, type,
// required, options, extract rule) and a Workflow (auto_approve, on_error,
// on_warning, review_sla_days). Templates() are ready-made types (supplier
// invoice, receipt, purchase order, contract, bank statement, supplier tax
// form); CreateFromTemplate copies one.
//
// # Documents
//
// Upload stores the file in the store in 256 KiB chunks (each its own key,
// a few per commit; the document record names the file, never holds its
// bytes), sniffs its content type (plain text, CSV and PDF with a text
// layer can be read; anything else is refused), extracts the type's fields
// (package extract), validates them and routes the document, all before
// it returns:
//
//	received -> extracted -> validated (clean) | needs_review (issues)
//	         -> approved | rejected
//
// A clean document (no errors, and no warnings unless on_warning is
// accept) is validated, waiting for a person's approval, or approved at
// once with auto_approve. A document with errors goes to review, or is
// rejected at once when on_error is reject. A document waiting for a
// person has a Review with due_at = when it entered + review_sla_days. A
// new version (AddVersion) starts the cycle again and keeps the history.
// CorrectFields sets values by hand and validates again; Approve is
// refused while errors remain; Reject needs a note.
//
// # Validation
//
// Every issue has a stable rule id, a severity and evidence (the text
// found with its page and code-point offsets, what was searched for, or
// the values compared):
//
//   - required:<key>: a required field was not found (error);
//   - type:<key>: text was found but is not a valid number, amount, date
//     or email (error); option:<key>: not one of an enum's options (error);
//   - sum:<total>: the total is not the sum of the lines (line_amounts),
//     nor the lines plus tax, nor subtotal plus tax, within a cent;
//     sum:<subtotal>: the subtotal is not the sum of the lines (errors);
//   - tax:<tax>: the tax is not the net amount (subtotal, else total minus
//     tax) times tax_rate percent, within a cent (error);
//   - balance:<closing_balance>: opening plus credits minus debits (error);
//   - dates:<key>: a due, end, delivery or period-end date before its
//     issue, effective, order or period-start date (error);
//   - duplicate:<invoice_number>: another document of the tenant, not
//     rejected, has the same supplier and number (warning);
//   - text:document: the file has no text at all (a scan) (error).
//
// The cross-field rules apply when a type has fields with the well-known
// keys and types they need (total, subtotal, tax, tax_rate, line_amounts,
// supplier, invoice_number, issue_date, due_date ... see Rules); the
// type's rule_count is the number of rules its fields imply.
//
// # Events
//
// docs.document.received, .extracted, .validated, .approved and .rejected
// are emitted through the EventSink in the transaction that makes the
// change. Their data is the document in brief: id (and document_id),
// type_id, type_name, status, title, version, filename, content_type,
// priority, queue, tags, fields (the values as a flat map key -> value:
// money in cents, dates as YYYY-MM-DD, so a trigger can filter on
// "fields.total"), and from validated on validation {status, errors,
// warnings, rule_ids}; approved and rejected add note and by.
//
// # Capabilities
//
// Provider fills document.extract, document.validate, document.approve and
// document.reject for the tenant of each call.
//
// # Input errors
//
// The inputs' violations (a 422) are located at their field names
// (["fields", 0, "key"], ["file"]); the HTTP API puts them under "body".
package docs
