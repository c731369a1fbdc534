package capability

import "slices"

// BuiltinApps returns the eleven built-in apps of api.md section 2, in that
// order, each with its API prefix, the events it emits and consumes, and the
// capabilities it fills. The processes app consumes every event the others
// emit: event triggers and wait steps listen for them.
func BuiltinApps() []App {
	app := func(id, name, prefix string, emits, consumes, caps []string) App {
		return App{
			ID:           id,
			Name:         name,
			API:          API{Prefix: prefix},
			Events:       Events{Emits: nonNil(slices.Clone(emits)), Consumes: nonNil(slices.Clone(consumes))},
			Capabilities: nonNil(slices.Clone(caps)),
		}
	}
	// The events the built-in apps emit (api.md section 3).
	processEvents := []string{
		"process.run.started", "process.run.completed", "process.run.failed",
		"process.run.rejected", "process.run.overdue", "process.run.loop_stopped",
		"process.run.paused", "process.run.resumed",
	}
	taskEvents := []string{"task.created", "task.completed", "task.assigned", "approval.requested", "approval.decided"}
	appEvents := []string{
		"docs.document.received", "docs.document.extracted", "docs.document.validated",
		"docs.document.approved", "docs.document.rejected",
	}
	crmEvents := []string{
		"crm.company.created", "crm.contact.created", "crm.deal.created", "crm.deal.stage_changed",
		"crm.deal.won", "crm.deal.lost", "crm.activity.logged",
	}
	invoicingEvents := []string{
		"invoicing.invoice.created", "invoicing.invoice.finalized", "invoicing.invoice.sent",
		"invoicing.invoice.paid", "invoicing.invoice.overdue", "invoicing.invoice.voided",
		"invoicing.payment.received",
	}
	boardEvents := []string{"boards.item.created", "boards.item.moved", "boards.item.completed"}
	usecaseEvents := []string{"usecases.adoption.changed"}
	others := slices.Concat(taskEvents, appEvents, crmEvents, invoicingEvents, boardEvents, usecaseEvents)
	return []App{
		app("processes", "Processes", "/v1/processes", processEvents, others, nil),
		app("tasks", "Tasks and approvals", "/v1/tasks", taskEvents, nil,
			[]string{TaskCreate, ApprovalRequest}),
		app("usecases", "Use cases", "/v1/use-cases", usecaseEvents, nil, nil),
		app("docs", "Documents", "/v1/docs", appEvents, nil,
			[]string{DocumentExtract, DocumentValidate, DocumentApprove, DocumentReject}),
		app("crm", "CRM", "/v1/crm", crmEvents, nil,
			[]string{CRMCompanyCreate, CRMContactCreate, CRMContactLookup, CRMDealCreate, CRMDealUpdate, CRMDealMove, CRMActivityLog}),
		app("invoicing", "Invoicing", "/v1/invoicing", invoicingEvents, nil,
			[]string{CustomerCreate, InvoiceCreate, InvoiceFinalize, InvoiceSend, InvoiceRemind, InvoiceVoid, InvoiceGet, PaymentRequest}),
		app("boards", "Boards", "/v1/boards", boardEvents, nil,
			[]string{BoardItemCreate, BoardItemMove, BoardItemUpdate}),
		app("decisions", "Decisions", "/v1/decisions", nil, nil, []string{DecisionEvaluate}),
		app("automation", "Automation settings", "/v1/automation", nil, nil, nil),
		app("capabilities", "Capabilities and connections", "/v1/capabilities", nil, nil, nil),
		// The access app sends sign-in codes and invitations; its outbox is
		// the built-in email.send provider.
		app("access", "Access", "/v1/workspace", nil, nil, []string{EmailSend}),
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
