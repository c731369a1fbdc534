package httpapi

import (
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/apps/crm"
	"github.com/bas-platform/bas/internal/apps/webhooks"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/google/go-cmp/cmp"
)

// TestValidatedPutsFieldNamesUnderBody: validated puts a Validate's
// field-name locations under "body"; an input with a field named "body" (a
// CRM activity) gets ["body", "body"] for it, not a location taken for the
// body as a whole.
func TestValidatedPutsFieldNamesUnderBody(t *testing.T) {
	long, empty := strings.Repeat("a", crm.MaxBodyLen+1), ""
	for _, test := range []struct {
		name string
		v    any
		want [][]any
	}{
		{"activity body", &crm.ActivityIn{Kind: "note", Subject: "s", Body: &long}, [][]any{{"body", "body"}}},
		{"activity patch body", &crm.ActivityPatch{Body: &long}, [][]any{{"body", "body"}}},
		{"webhook url", &webhooks.Patch{URL: &empty}, [][]any{{"body", "url"}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			var got [][]any
			for _, v := range errs.Violations(validated(test.v)) {
				got = append(got, v.Loc)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("locations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInBodyWithBodyField: ["body"] is the field and goes under the body;
// a longer location under "body" and an empty one stay as they are.
func TestInBodyWithBodyField(t *testing.T) {
	err := errs.Validation(
		errs.Violation{Loc: []any{"body"}, Type: "a"},
		errs.Violation{Loc: []any{"body", "subject"}, Type: "b"},
		errs.Violation{Loc: []any{"deal_id"}, Type: "c"},
		errs.Violation{Loc: []any{}, Type: "d"})
	want := []errs.Violation{
		{Loc: []any{"body", "body"}, Type: "a"},
		{Loc: []any{"body", "subject"}, Type: "b"},
		{Loc: []any{"body", "deal_id"}, Type: "c"},
		{Loc: []any{}, Type: "d"}}
	if diff := cmp.Diff(want, errs.Violations(inBodyWithBodyField(err))); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	want[0].Loc = []any{"body"} // inBody takes ["body"] for the body as a whole
	if diff := cmp.Diff(want, errs.Violations(inBody(err))); diff != "" {
		t.Errorf("inBody violations (-want +got):\n%s", diff)
	}
}
