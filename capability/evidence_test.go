package capability_test

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/google/go-cmp/cmp"
)

func TestEvidenceJSON(t *testing.T) {
	t.Parallel()
	text, page, start, end := "1,250.00", 1, 10, 18
	for _, test := range []struct {
		name string
		ev   capability.Evidence
		want string
	}{
		{name: "a record's field, missing", ev: capability.Evidence{Field: "po_number"},
			want: `{"field":"po_number","present":false,"found":null}`},
		{name: "a record's field, compared", ev: capability.Evidence{Field: "total", Present: true, Found: 12000, Expected: 11900,
			Values: map[string]any{"sum": 11900}},
			want: `{"field":"total","present":true,"found":12000,"expected":11900,"values":{"sum":11900}}`},
		{name: "a document's text", ev: capability.Evidence{Text: &text, Page: &page, Start: &start, End: &end,
			Values: map[string]any{"difference": 5000}},
			want: `{"text":"1,250.00","page":1,"start":10,"end":18,"values":{"difference":5000}}`},
		{name: "a field not found", ev: capability.Evidence{Searched: []string{"label Total"}, Values: map[string]any{"pages_searched": 1}},
			want: `{"searched":["label Total"],"values":{"pages_searched":1}}`},
		{name: "duplicates", ev: capability.Evidence{Text: &text, Documents: []string{"doc_1"}},
			want: `{"text":"1,250.00","documents":["doc_1"]}`},
		{name: "nothing", want: `{}`},
	} {
		got, err := json.Marshal(test.ev)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(test.want, string(got)); diff != "" {
			t.Errorf("%s: JSON (-want +got):\n%s", test.name, diff)
		}
		// What is stored reads back the same.
		var back capability.Evidence
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(back)
		if diff := cmp.Diff(string(got), string(again)); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", test.name, diff)
		}
	}
}

func TestIssueJSON(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name  string
		issue capability.Issue
		want  string
	}{
		{name: "a record's field", issue: capability.Issue{RuleID: "required:po_number", Field: capability.IssueField("po_number"),
			Severity: "error", Message: "po_number is required", Evidence: capability.Evidence{Field: "po_number"}},
			want: `{"rule_id":"required:po_number","field":"po_number","severity":"error","message":"po_number is required",` +
				`"evidence":{"field":"po_number","present":false,"found":null}}`},
		{name: "the whole record", issue: capability.Issue{RuleID: "text:document", Field: capability.IssueField(""),
			Severity: "error", Message: "the file has no text", Evidence: capability.Evidence{Values: map[string]any{"pages": 1}}},
			want: `{"rule_id":"text:document","field":null,"severity":"error","message":"the file has no text",` +
				`"evidence":{"values":{"pages":1}}}`},
		{name: "nothing", want: `{"rule_id":"","field":null,"severity":"","message":"","evidence":{}}`},
	} {
		got, err := json.Marshal(test.issue)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(test.want, string(got)); diff != "" {
			t.Errorf("%s: JSON (-want +got):\n%s", test.name, diff)
		}
		// What is stored reads back the same.
		var back capability.Issue
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(back)
		if diff := cmp.Diff(string(got), string(again)); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", test.name, diff)
		}
	}
}
