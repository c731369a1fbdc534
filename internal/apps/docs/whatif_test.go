package docs

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestWhatIfWorkflow asks how the invoice type would have decided the
// documents people decided had it approved clean ones and rejected ones
// with errors on its own: the report compares each with the person's
// decision, rule by rule, and changes nothing.
func TestWhatIfWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	upload := func(number, total string) *Document {
		inv := goodInvoice()
		inv.Number = number
		if total != "" {
			inv.Total = total
		}
		d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: number + ".txt", Data: inv.text()})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	good := upload("A-1", "")
	if _, err := b.svc.Approve(b.ctx, b.tenant, "usr_ap", good.ID, ApproveIn{}); err != nil {
		t.Fatal(err)
	}
	broken := upload("A-2", "1,250.00")
	if _, err := b.svc.Reject(b.ctx, b.tenant, "usr_ap", broken.ID, RejectIn{Note: "the total is wrong"}); err != nil {
		t.Fatal(err)
	}
	refused := upload("A-3", "")
	if _, err := b.svc.Reject(b.ctx, b.tenant, "usr_ap", refused.ID, RejectIn{Note: "not ours"}); err != nil {
		t.Fatal(err)
	}
	upload("A-4", "") // not decided
	events := len(b.sink.names(t))

	rep, err := b.svc.WhatIf(b.ctx, b.tenant, typ.ID, WhatIfIn{Workflow: &WorkflowIn{AutoApprove: ptr(true), OnError: ptr(OnErrorReject)}})
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	var rules []WhatIfRule
	for _, id := range ruleIDs(broken) {
		rules = append(rules, WhatIfRule{RuleID: id, Severity: SeverityError, Flagged: 1, Agreed: 1, AgreementRate: f(1)})
	}
	want := &WhatIfReport{TypeID: typ.ID, Documents: 4, Cases: 3, Outcomes: map[string]int{WhatIfApproved: 2, WhatIfRejected: 1, WhatIfReview: 0},
		Compared: 3, Agreed: 2, AgreementRate: f(2.0 / 3), Rules: rules,
		Differences:     []WhatIfDocument{{DocumentID: refused.ID, Title: refused.Title, Human: WhatIfRejected, Candidate: WhatIfApproved, Issues: []string{}}},
		DifferenceCount: 1}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if len(rules) == 0 {
		t.Fatal("the broken invoice raised no issue")
	}
	// The type as it is leaves every document to a person.
	rep, err = b.svc.WhatIf(b.ctx, b.tenant, typ.ID, WhatIfIn{Limit: MaxWhatIfLimit})
	if err != nil || rep.Compared != 0 || rep.Outcomes[WhatIfReview] != 3 || rep.AgreementRate != nil {
		t.Errorf("unchanged type: %+v, %v", rep, err)
	}
	if n := len(b.sink.names(t)); n != events {
		t.Errorf("the what-if emitted %d events", n-events)
	}
	got, err := b.svc.Get(b.ctx, b.tenant, refused.ID)
	if err != nil || got.Status != StatusRejected {
		t.Errorf("document after a what-if: %+v, %v", got, err)
	}

	for _, c := range []struct {
		name string
		in   WhatIfIn
		want []string
	}{
		{"limit above", WhatIfIn{Limit: MaxWhatIfLimit + 1}, []string{"limit:value_error"}},
		{"bad workflow", WhatIfIn{Workflow: &WorkflowIn{OnError: ptr("ignore")}}, []string{"workflow.on_error:enum"}},
	} {
		_, err := b.svc.WhatIf(b.ctx, b.tenant, typ.ID, c.in)
		var got []string
		for _, v := range errs.Violations(err) {
			got = append(got, v.Where()+":"+v.Type)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if _, err := b.svc.WhatIf(b.ctx, "tnt_other", typ.ID, WhatIfIn{}); !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant's type: %v", err)
	}
}

// TestWhatIfNullAsPatch: a what-if body's fields and workflow given as
// null make the candidate a PATCH of the same body would make: no fields,
// and the default workflow. The report equals that of a what-if of a type
// patched so, and differs from the report of the keys left out (which
// keep the type's own). Before, null was taken as left out.
func TestWhatIfNullAsPatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// decidedType is an invoice type whose documents a person approved
	// (a clean one) and rejected (one with a wrong total), and whose
	// workflow then became automatic.
	decidedType := func(t *testing.T, name string) *DocType {
		t.Helper()
		typ := b.invoiceType(t, nil)
		for _, approve := range []bool{true, false} {
			inv := goodInvoice()
			inv.Number = fmt.Sprint(name, "-", approve)
			if !approve {
				inv.Total = "1,250.00" // the type's rules find its total wrong
			}
			d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: inv.Number + ".txt", Data: inv.text()})
			if err != nil {
				t.Fatal(err)
			}
			if approve {
				_, err = b.svc.Approve(b.ctx, b.tenant, "usr_ap", d.ID, ApproveIn{})
			} else {
				_, err = b.svc.Reject(b.ctx, b.tenant, "usr_ap", d.ID, RejectIn{Note: "not ours"})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.svc.UpdateType(b.ctx, b.tenant, typ.ID, DocTypePatch{
			Workflow: &WorkflowIn{AutoApprove: ptr(true), OnError: ptr(OnErrorReject)}}); err != nil {
			t.Fatal(err)
		}
		return typ
	}
	for _, body := range []string{`{"fields": null}`, `{"workflow": null}`, `{"fields": null, "workflow": null}`} {
		t.Run(body, func(t *testing.T) {
			typ, twin := decidedType(t, "A"+body), decidedType(t, "B"+body)
			var in WhatIfIn
			if err := json.Unmarshal([]byte(body), &in); err != nil {
				t.Fatal(err)
			}
			got, err := b.svc.WhatIf(b.ctx, b.tenant, typ.ID, in)
			if err != nil {
				t.Fatal(err)
			}
			left, err := b.svc.WhatIf(b.ctx, b.tenant, typ.ID, WhatIfIn{})
			if err != nil {
				t.Fatal(err)
			}
			var p DocTypePatch
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatal(err)
			}
			if _, err := b.svc.UpdateType(b.ctx, b.tenant, twin.ID, p); err != nil {
				t.Fatal(err)
			}
			want, err := b.svc.WhatIf(b.ctx, b.tenant, twin.ID, WhatIfIn{})
			if err != nil {
				t.Fatal(err)
			}
			ignore := cmpopts.IgnoreFields(WhatIfReport{}, "TypeID", "Differences")
			if diff := cmp.Diff(want, got, ignore); diff != "" {
				t.Errorf("what-if of %s (-the patched type's +got):\n%s", body, diff)
			}
			if cmp.Equal(left, got, ignore) {
				t.Errorf("what-if of %s answered as the keys left out: %+v", body, got)
			}
		})
	}
}
