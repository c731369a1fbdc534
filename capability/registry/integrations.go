package registry

import (
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/bas-platform/bas/capability"
)

// How says how a business system works with the workspace.
type How string

// The ways a system integrates.
const (
	// HowNative: the workspace does what processes use the system for
	// with its built-in apps; no connector is needed.
	HowNative How = "native"
	// HowConnector: a connector that ships with bas reaches it (the webhook
	// connector, NewWebhook).
	HowConnector How = "connector"
	// HowManual: no connector; people do those steps as human tasks, or a
	// plugin written for the system fills its capabilities.
	HowManual How = "manual"
	// HowComing: a connector is declared but not built yet (it is listed by
	// GET /v1/connections as "coming").
	HowComing How = "coming"
)

// Integration says how one business system a person names works with the
// workspace (GET /v1/integrations).
type Integration struct {
	// ID is the system's short id ("quickbooks"), the <name> of a gap's
	// "connector:<name>"; empty when the name is not recognized.
	ID string `json:"id"`
	// App is the system's name ("QuickBooks"), or the name as asked when it
	// is not recognized.
	App string `json:"app"`
	// Recognized is false for names the catalog does not know.
	Recognized bool `json:"recognized"`
	// How is native, connector, manual or coming.
	How How `json:"how"`
	// Provides lists the capabilities it fills (or would, once coming).
	Provides []string `json:"provides"`
	// Note says what to do, in a sentence or two.
	Note string `json:"note"`
}

// system is one entry of the integrations catalog.
type system struct {
	ID       string
	Name     string
	Aliases  []string
	How      How
	Provides []string
	Note     string
}

// integrationCatalog lists the business systems people name, sorted by id;
// a test checks that no two claim one name.
func integrationCatalog() []system {
	// What systems of a kind fill.
	erpCaps := []string{capability.ERPPurchaseOrder, capability.ERPGoodsReceipt, capability.ERPSupplierGet, capability.ERPBillCreate, capability.LedgerPost}
	accountingCaps := []string{capability.ERPSupplierGet, capability.ERPBillCreate, capability.LedgerPost, capability.CustomerCreate, capability.InvoiceCreate, capability.InvoiceSend, capability.InvoiceGet}
	crmCaps := []string{capability.CRMCompanyCreate, capability.CRMContactCreate, capability.CRMContactLookup, capability.CRMDealCreate, capability.CRMDealUpdate, capability.CRMActivityLog}
	boardCaps := []string{capability.BoardItemCreate, capability.BoardItemMove}
	coming := func(id, name string, aliases []string, provides []string, what string) system {
		return system{ID: id, Name: name, Aliases: aliases, How: HowComing, Provides: slices.Clone(provides),
			Note: "The " + name + " connector is coming; " + what + " Until then a plugin (plugins/sdk) or a webhook connector to your own integration can fill these capabilities."}
	}
	webhook := func(id, name string, aliases []string) system {
		return system{ID: id, Name: name, Aliases: aliases, How: HowConnector, Provides: []string{},
			Note: "Use the webhook connector: point it at a " + name + " webhook and bind any capability to it; the workflow there receives the call's arguments and answers with its result."}
	}
	manual := func(id, name string, aliases []string, note string) system {
		return system{ID: id, Name: name, Aliases: aliases, How: HowManual, Provides: []string{}, Note: note}
	}
	out := []system{
		manual("adp", "ADP", []string{"adp workforce now", "adp run"},
			"No ADP connector is planned; payroll steps are human tasks, and employee lookups can come from an HR system with a connector (BambooHR, Workday) or a plugin."),
		coming("adobesign", "Adobe Acrobat Sign", []string{"adobe sign", "acrobat sign", "echosign", "adobe esign"},
			[]string{capability.ESignRequest}, "it will send documents out for signature."),
		coming("airtable", "Airtable", nil, boardCaps, "it will create and move records as board items."),
		coming("asana", "Asana", nil, slices.Concat(boardCaps, []string{capability.TaskCreate}), "it will create and move tasks."),
		coming("bamboohr", "BambooHR", []string{"bamboo hr", "bamboo"}, []string{capability.HREmployeeGet}, "it will look up employees."),
		coming("billcom", "Bill.com", []string{"bill", "bill com", "billcom ap", "bill.com ap"},
			[]string{capability.ERPSupplierGet, capability.ERPBillCreate}, "it will read vendors and book bills for payment."),
		coming("box", "Box", []string{"box.com", "box drive"}, []string{capability.StorageFilePut}, "it will store files."),
		manual("brex", "Brex", nil,
			"No Brex connector is planned; card spend reaches the ledger through your accounting system. Reconciliation steps are human tasks."),
		coming("clickup", "ClickUp", []string{"click up"}, slices.Concat(boardCaps, []string{capability.TaskCreate}), "it will create and move tasks."),
		coming("docusign", "DocuSign", []string{"docu sign", "docusign esignature"}, []string{capability.ESignRequest},
			"it will send documents out for signature."),
		coming("dropbox", "Dropbox", []string{"dropbox business"}, []string{capability.StorageFilePut}, "it will store files."),
		coming("dynamics365", "Microsoft Dynamics 365", []string{"dynamics 365", "dynamics", "d365", "ms dynamics",
			"microsoft dynamics", "business central", "dynamics 365 business central", "dynamics nav", "navision",
			"dynamics ax", "dynamics 365 finance"}, erpCaps, "it will read purchase orders, receipts and vendors, book bills and post journals."),
		manual("excel", "Microsoft Excel", []string{"excel", "ms excel", "xlsx"},
			"Spreadsheets are not a system of record the workspace connects to; a plugin can serve one as a provider (examples/provider answers erp.purchase_order.get from a CSV file)."),
		manual("expensify", "Expensify", nil,
			"No Expensify connector is planned; approved reports reach the ledger through your accounting system, and expense review steps are human tasks."),
		coming("freshbooks", "FreshBooks", []string{"fresh books"}, []string{capability.CustomerCreate, capability.InvoiceCreate, capability.InvoiceSend, capability.InvoiceGet},
			"it will create, send and read invoices. The built-in invoicing app does this natively meanwhile."),
		coming("freshdesk", "Freshdesk", []string{"fresh desk", "freshservice"}, []string{capability.TicketCreate}, "it will open tickets."),
		{ID: "gmail", Name: "Gmail", Aliases: []string{"google mail", "googlemail", "google workspace", "g suite", "gsuite", "google apps"},
			How: HowNative, Provides: []string{capability.EmailSend},
			Note: "email.send is built in: every message goes to the workspace outbox. To deliver through Gmail, register an email.send provider that relays through Google Workspace's SMTP relay, and bind it."},
		coming("googlecalendar", "Google Calendar", []string{"gcal", "google cal"}, []string{capability.CalendarEventNew},
			"it will create events and invite attendees."),
		manual("googlesheets", "Google Sheets", []string{"gsheets", "sheets", "google spreadsheets"},
			"Spreadsheets are not a system of record the workspace connects to; a plugin can serve one as a provider (examples/provider answers erp.purchase_order.get from a CSV file)."),
		coming("googledrive", "Google Drive", []string{"gdrive", "google docs", "drive", "shared drives"}, []string{capability.StorageFilePut},
			"it will store files."),
		coming("gusto", "Gusto", nil, []string{capability.HREmployeeGet}, "it will look up employees."),
		coming("hubspot", "HubSpot", []string{"hub spot", "hubspot crm", "hubspot sales hub"}, crmCaps,
			"it will create and find companies, contacts and deals and log activities. The built-in CRM does this natively meanwhile."),
		coming("intercom", "Intercom", nil, []string{capability.TicketCreate, capability.CRMContactLookup}, "it will open tickets and find contacts."),
		coming("jira", "Jira", []string{"atlassian jira", "jira software", "jira cloud", "jira service management", "jsm",
			"jira service desk"}, slices.Concat([]string{capability.TicketCreate}, boardCaps), "it will open issues and move them across the board."),
		coming("mailchimp", "Mailchimp", []string{"mail chimp", "mandrill", "mailchimp transactional"}, []string{capability.EmailSend, capability.CRMContactCreate},
			"it will send transactional e-mail and add contacts to audiences."),
		webhook("make", "Make", []string{"make.com", "integromat"}),
		coming("monday", "monday.com", []string{"monday", "monday com", "mondaycom", "monday work management"}, boardCaps,
			"it will create and move items on boards."),
		webhook("n8n", "n8n", []string{"n8n.io", "n 8 n"}),
		coming("netsuite", "NetSuite", []string{"oracle netsuite", "net suite", "ns"}, erpCaps,
			"it will read purchase orders, receipts and vendors, book bills and post journals."),
		coming("notion", "Notion", nil, slices.Concat(boardCaps, []string{capability.StorageFilePut}), "it will add and move database items and store pages."),
		coming("odoo", "Odoo", []string{"openerp"}, slices.Concat(erpCaps, crmCaps), "it will cover purchasing, accounting and CRM."),
		coming("onedrive", "OneDrive", []string{"one drive", "onedrive for business"}, []string{capability.StorageFilePut}, "it will store files."),
		{ID: "outlook", Name: "Microsoft Outlook", Aliases: []string{"outlook", "office 365", "microsoft 365", "o365", "m365",
			"exchange", "exchange online", "hotmail", "ms outlook"},
			How: HowNative, Provides: []string{capability.EmailSend},
			Note: "email.send is built in: every message goes to the workspace outbox. To deliver through Microsoft 365, register an email.send provider that relays through Exchange Online SMTP, and bind it. Calendar events need the Outlook Calendar connector (coming)."},
		coming("outlookcalendar", "Outlook Calendar", []string{"microsoft calendar", "exchange calendar", "office 365 calendar"},
			[]string{capability.CalendarEventNew}, "it will create events and invite attendees."),
		coming("paypal", "PayPal", []string{"pay pal", "braintree"}, []string{capability.PaymentRequest}, "it will request payments."),
		coming("pipedrive", "Pipedrive", []string{"pipe drive"}, crmCaps,
			"it will create and find organizations, people and deals and log activities."),
		webhook("powerautomate", "Microsoft Power Automate", []string{"power automate", "microsoft flow", "ms flow"}),
		coming("quickbooks", "QuickBooks", []string{"quickbooks online", "qbo", "qb", "intuit quickbooks", "quickbooks desktop",
			"quick books", "intuit"}, accountingCaps, "it will read vendors, book bills, post journals and create invoices."),
		manual("ramp", "Ramp", nil,
			"No Ramp connector is planned; spend reaches the ledger through your accounting system, and bill approval steps are human tasks."),
		coming("rippling", "Rippling", nil, []string{capability.HREmployeeGet}, "it will look up employees."),
		coming("sage", "Sage", []string{"sage intacct", "intacct", "sage 50", "sage 100", "sage 200", "sage x3",
			"sage business cloud", "sage accounting"}, accountingCaps, "it will read vendors, book bills, post journals and create invoices."),
		coming("salesforce", "Salesforce", []string{"sfdc", "sales cloud", "salesforce crm", "salesforce sales cloud", "sf"}, crmCaps,
			"it will create and find accounts, contacts and opportunities and log activities. The built-in CRM does this natively meanwhile."),
		coming("sap", "SAP", []string{"sap s/4hana", "s/4hana", "s4hana", "sap s4", "sap erp", "sap ecc", "sap business one", "sap b1",
			"sap business bydesign", "sap bydesign"}, erpCaps, "it will read purchase orders, goods receipts and vendors, book invoices and post journals."),
		coming("sendgrid", "SendGrid", []string{"send grid", "twilio sendgrid"}, []string{capability.EmailSend}, "it will deliver e-mail."),
		coming("servicenow", "ServiceNow", []string{"service now", "snow"}, []string{capability.TicketCreate}, "it will open incidents and requests."),
		coming("sharepoint", "SharePoint", []string{"share point", "sharepoint online"}, []string{capability.StorageFilePut}, "it will store files in document libraries."),
		coming("shopify", "Shopify", []string{"shopify plus"}, []string{capability.CommerceOrderGet, capability.CommerceOrderList, capability.CRMContactLookup},
			"it will read orders and customers."),
		coming("slack", "Slack", nil, []string{capability.ChatMessageSend}, "it will post messages to channels."),
		coming("square", "Square", []string{"square pos", "square payments"}, []string{capability.PaymentRequest, capability.CommerceOrderGet, capability.CommerceOrderList},
			"it will request payments and read orders."),
		{ID: "stripe", Name: "Stripe", Aliases: []string{"stripe payments", "stripe billing", "stripe invoicing"},
			How: HowNative, Provides: []string{capability.CustomerCreate, capability.InvoiceCreate, capability.InvoiceFinalize, capability.InvoiceSend, capability.InvoiceVoid, capability.InvoiceGet, capability.PaymentRequest},
			Note: "The built-in invoicing app covers customers, invoices and payment requests; connect its payments account (simulated mode until connected) to take payments."},
		coming("teams", "Microsoft Teams", []string{"ms teams", "msteams", "teams", "microsoft teams chat"}, []string{capability.ChatMessageSend},
			"it will post messages to channels."),
		coming("trello", "Trello", nil, boardCaps, "it will create and move cards."),
		coming("twilio", "Twilio", []string{"twilio sms", "twilio messaging"}, []string{capability.SMSSend}, "it will send text messages."),
		webhook("webhook", "Webhook", []string{"webhooks", "http", "https", "rest", "rest api", "api", "custom api", "custom app",
			"in-house system", "in house", "homegrown", "own system"}),
		coming("woocommerce", "WooCommerce", []string{"woo commerce", "woo", "wordpress shop"}, []string{capability.CommerceOrderGet, capability.CommerceOrderList},
			"it will read orders."),
		coming("workday", "Workday", []string{"workday hcm", "workday financials"}, []string{capability.HREmployeeGet, capability.ERPSupplierGet},
			"it will look up employees and suppliers."),
		coming("xero", "Xero", []string{"xero accounting"}, slices.Concat(accountingCaps, []string{capability.ERPPurchaseOrder}),
			"it will read purchase orders and contacts, book bills, post journals and create invoices."),
		webhook("zapier", "Zapier", []string{"zaps"}),
		coming("zendesk", "Zendesk", []string{"zen desk", "zendesk support"}, []string{capability.TicketCreate, capability.CRMContactLookup},
			"it will open tickets and find requesters."),
		coming("zohocrm", "Zoho CRM", []string{"zoho", "zoho one"}, crmCaps,
			"it will create and find accounts, contacts and deals and log activities."),
		coming("zohobooks", "Zoho Books", []string{"zoho invoice"}, accountingCaps,
			"it will read vendors, book bills, post journals and create invoices."),
	}
	aiCaps := []string{capability.AIClassify, capability.AIComplete, capability.AIDraft, capability.AIExtract}
	out = append(out,
		system{ID: "openai", Name: "OpenAI", Aliases: []string{"chatgpt", "gpt", "openai api", "azure openai", "mistral", "groq", "openrouter"},
			How: HowConnector, Provides: aiCaps,
			Note: "The AI connector (connector.openai) speaks the chat-completions protocol: configure the workspace's model with PUT /v1/ai/connection (base URL, model, API key) and bind the ai.* capabilities to it."},
		system{ID: "ollama", Name: "Ollama", Aliases: []string{"vllm", "llama.cpp", "llamacpp", "lm studio", "local llm", "local model"},
			How: HowConnector, Provides: aiCaps,
			Note: "Local model servers speak the chat-completions protocol: point the AI connection (PUT /v1/ai/connection) at http://localhost:11434/v1 (Ollama) or your server's /v1, without an API key, and bind the ai.* capabilities to connector.openai."})
	slices.SortFunc(out, func(a, b system) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// recognizer maps normalized names and aliases to catalog entries.
type recognizer struct {
	systems []system
	byKey   map[string]int
}

var integrationIndex = sync.OnceValue(func() *recognizer {
	rc := &recognizer{systems: integrationCatalog(), byKey: map[string]int{}}
	for i, s := range rc.systems {
		for _, n := range append([]string{s.ID, s.Name}, s.Aliases...) {
			if k := normalizeName(n); k != "" {
				if _, dup := rc.byKey[k]; !dup {
					rc.byKey[k] = i
				}
			}
		}
	}
	return rc
})

// normalizeName keeps only letters and digits, lower-cased: "MS Teams",
// "ms-teams" and "msteams" are one name.
func normalizeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func (rc *recognizer) find(name string) (system, bool) {
	if i, ok := rc.byKey[normalizeName(name)]; ok {
		return rc.systems[i], true
	}
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	// Words dropped from a name not recognized as is ("QuickBooks Online
	// Inc." is QuickBooks).
	filler := []string{"inc", "ltd", "llc", "gmbh", "online", "cloud", "app", "software", "the", "platform", "com", "io", "suite"}
	kept := words[:0]
	for _, w := range words {
		if !slices.Contains(filler, w) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return system{}, false
	}
	if i, ok := rc.byKey[strings.Join(kept, "")]; ok {
		return rc.systems[i], true
	}
	return system{}, false
}

func (s system) integration() Integration {
	return Integration{ID: s.ID, App: s.Name, Recognized: true, How: s.How,
		Provides: nonNil(slices.Clone(s.Provides)), Note: s.Note}
}

// Integrations says, for each name asked (in order; blank names skipped, a
// system asked twice listed once), how that business system works with the
// workspace. Names are recognized case-, space- and punctuation-
// insensitively, with aliases ("QBO", "MS Teams", "Dynamics 365"). An
// unknown name is listed with recognized false, how manual and a note on
// what can be done.
func Integrations(names []string) []Integration {
	rc := integrationIndex()
	out := []Integration{}
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if s, ok := rc.find(n); ok {
			if seen[s.ID] {
				continue
			}
			seen[s.ID] = true
			out = append(out, s.integration())
			continue
		}
		k := "?" + normalizeName(n)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Integration{App: n, Recognized: false, How: HowManual, Provides: []string{},
			Note: "\"" + n + "\" is not a system the workspace knows. People can do its steps as human tasks; " +
				"to automate them, its vendor (or you) can write a plugin with plugins/sdk, or point a webhook connector at your own integration."})
	}
	return out
}

// KnownIntegrations returns the whole integrations catalog, sorted by id.
func KnownIntegrations() []Integration {
	rc := integrationIndex()
	out := make([]Integration, len(rc.systems))
	for i, s := range rc.systems {
		out[i] = s.integration()
	}
	slices.SortFunc(out, func(a, b Integration) int { return strings.Compare(a.ID, b.ID) })
	return out
}
