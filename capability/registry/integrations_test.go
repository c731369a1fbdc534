package registry

import (
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/google/go-cmp/cmp"
)

func TestIntegrationCatalog(t *testing.T) {
	t.Parallel()
	systems := integrationCatalog()
	if len(systems) < 40 {
		t.Errorf("the integrations catalog has %d systems, want at least 40", len(systems))
	}
	std := map[string]bool{}
	for _, c := range Standard() {
		std[c.ID] = true
	}
	owner := map[string]string{}
	for i, s := range systems {
		if i > 0 && systems[i-1].ID >= s.ID {
			t.Errorf("catalog not sorted by id: %s before %s", systems[i-1].ID, s.ID)
		}
		if s.ID == "" || s.Name == "" || s.Note == "" {
			t.Errorf("%+v: id, name and note are required", s)
		}
		switch s.How {
		case HowNative, HowConnector, HowManual, HowComing:
		default:
			t.Errorf("%s: how %q", s.ID, s.How)
		}
		if s.How == HowComing && len(s.Provides) == 0 {
			t.Errorf("%s: a coming connector must say what it will provide", s.ID)
		}
		for _, c := range s.Provides {
			if !std[c] {
				t.Errorf("%s provides %q, which is not a standard capability", s.ID, c)
			}
		}
		// No two systems may claim one name.
		for _, n := range append([]string{s.ID, s.Name}, s.Aliases...) {
			k := normalizeName(n)
			if k == "" {
				t.Errorf("%s: alias %q normalizes to nothing", s.ID, n)
			}
			if o, ok := owner[k]; ok && o != s.ID {
				t.Errorf("%q is claimed by both %s and %s", n, o, s.ID)
			}
			owner[k] = s.ID
		}
	}
}

func TestIntegrations(t *testing.T) {
	t.Parallel()
	type row struct {
		ID         string
		App        string
		Recognized bool
		How        How
	}
	for _, test := range []struct {
		asked string
		want  row
	}{
		{"Xero", row{"xero", "Xero", true, HowComing}},
		{"xero", row{"xero", "Xero", true, HowComing}},
		{"  XERO ", row{"xero", "Xero", true, HowComing}},
		{"QuickBooks Online", row{"quickbooks", "QuickBooks", true, HowComing}},
		{"QBO", row{"quickbooks", "QuickBooks", true, HowComing}},
		{"quick-books", row{"quickbooks", "QuickBooks", true, HowComing}},
		{"Intuit QuickBooks Online Inc.", row{"quickbooks", "QuickBooks", true, HowComing}},
		{"NetSuite", row{"netsuite", "NetSuite", true, HowComing}},
		{"Oracle NetSuite", row{"netsuite", "NetSuite", true, HowComing}},
		{"SAP S/4HANA", row{"sap", "SAP", true, HowComing}},
		{"Sage Intacct", row{"sage", "Sage", true, HowComing}},
		{"Dynamics 365", row{"dynamics365", "Microsoft Dynamics 365", true, HowComing}},
		{"Business Central", row{"dynamics365", "Microsoft Dynamics 365", true, HowComing}},
		{"Salesforce", row{"salesforce", "Salesforce", true, HowComing}},
		{"SFDC", row{"salesforce", "Salesforce", true, HowComing}},
		{"HubSpot", row{"hubspot", "HubSpot", true, HowComing}},
		{"Pipedrive", row{"pipedrive", "Pipedrive", true, HowComing}},
		{"Zoho CRM", row{"zohocrm", "Zoho CRM", true, HowComing}},
		{"Slack", row{"slack", "Slack", true, HowComing}},
		{"MS Teams", row{"teams", "Microsoft Teams", true, HowComing}},
		{"microsoft teams", row{"teams", "Microsoft Teams", true, HowComing}},
		{"Gmail", row{"gmail", "Gmail", true, HowNative}},
		{"Google Workspace", row{"gmail", "Gmail", true, HowNative}},
		{"Outlook", row{"outlook", "Microsoft Outlook", true, HowNative}},
		{"Office 365", row{"outlook", "Microsoft Outlook", true, HowNative}},
		{"Google Drive", row{"googledrive", "Google Drive", true, HowComing}},
		{"Dropbox", row{"dropbox", "Dropbox", true, HowComing}},
		{"Box", row{"box", "Box", true, HowComing}},
		{"SharePoint", row{"sharepoint", "SharePoint", true, HowComing}},
		{"Shopify", row{"shopify", "Shopify", true, HowComing}},
		{"Stripe", row{"stripe", "Stripe", true, HowNative}},
		{"PayPal", row{"paypal", "PayPal", true, HowComing}},
		{"Square", row{"square", "Square", true, HowComing}},
		{"Jira", row{"jira", "Jira", true, HowComing}},
		{"Asana", row{"asana", "Asana", true, HowComing}},
		{"Trello", row{"trello", "Trello", true, HowComing}},
		{"Monday", row{"monday", "monday.com", true, HowComing}},
		{"monday.com", row{"monday", "monday.com", true, HowComing}},
		{"Notion", row{"notion", "Notion", true, HowComing}},
		{"Zendesk", row{"zendesk", "Zendesk", true, HowComing}},
		{"Intercom", row{"intercom", "Intercom", true, HowComing}},
		{"Freshdesk", row{"freshdesk", "Freshdesk", true, HowComing}},
		{"DocuSign", row{"docusign", "DocuSign", true, HowComing}},
		{"Adobe Sign", row{"adobesign", "Adobe Acrobat Sign", true, HowComing}},
		{"Bill.com", row{"billcom", "Bill.com", true, HowComing}},
		{"Expensify", row{"expensify", "Expensify", true, HowManual}},
		{"Ramp", row{"ramp", "Ramp", true, HowManual}},
		{"Brex", row{"brex", "Brex", true, HowManual}},
		{"Gusto", row{"gusto", "Gusto", true, HowComing}},
		{"ADP", row{"adp", "ADP", true, HowManual}},
		{"Workday", row{"workday", "Workday", true, HowComing}},
		{"BambooHR", row{"bamboohr", "BambooHR", true, HowComing}},
		{"Google Calendar", row{"googlecalendar", "Google Calendar", true, HowComing}},
		{"Twilio", row{"twilio", "Twilio", true, HowComing}},
		{"Mailchimp", row{"mailchimp", "Mailchimp", true, HowComing}},
		{"Airtable", row{"airtable", "Airtable", true, HowComing}},
		{"Zapier", row{"zapier", "Zapier", true, HowConnector}},
		{"Integromat", row{"make", "Make", true, HowConnector}},
		{"Power Automate", row{"powerautomate", "Microsoft Power Automate", true, HowConnector}},
		{"our own REST API", row{"", "our own REST API", false, HowManual}},
		{"Acme Legacy ERP", row{"", "Acme Legacy ERP", false, HowManual}},
	} {
		got := Integrations([]string{test.asked})
		if len(got) != 1 {
			t.Errorf("%q: %d entries, want 1", test.asked, len(got))
			continue
		}
		in := got[0]
		if diff := cmp.Diff(test.want, row{in.ID, in.App, in.Recognized, in.How}); diff != "" {
			t.Errorf("%q (-want +got):\n%s", test.asked, diff)
		}
		if in.Note == "" || in.Provides == nil {
			t.Errorf("%q: empty note or null provides: %+v", test.asked, in)
		}
	}
}

func TestIntegrationsList(t *testing.T) {
	t.Parallel()
	got := Integrations([]string{"Slack", "", "  ", "slack", "MS Teams", "Nope", "nope", "Xero"})
	var apps []string
	for _, in := range got {
		apps = append(apps, in.App)
	}
	if diff := cmp.Diff([]string{"Slack", "Microsoft Teams", "Nope", "Xero"}, apps); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
	if got := Integrations(nil); got == nil || len(got) != 0 {
		t.Errorf("Integrations(nil) = %#v, want an empty list", got)
	}
	if diff := cmp.Diff([]string{capability.ChatMessageSend}, got[0].Provides); diff != "" {
		t.Errorf("Slack provides (-want +got):\n%s", diff)
	}
	if n := len(KnownIntegrations()); n != len(integrationCatalog()) {
		t.Errorf("KnownIntegrations lists %d, want %d", n, len(integrationCatalog()))
	}
}
