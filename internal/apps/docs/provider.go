package docs

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// ProviderID is the id of the docs app's capability provider.
const ProviderID = "builtin.docs"

// Provider returns the capability provider of the docs app: it fills
// document.extract, document.validate, document.approve and
// document.reject for the tenant of each call.
func (s *Service) Provider() capability.Provider { return provider{s} }

type provider struct{ s *Service }

var _ capability.Provider = provider{}

// App describes the docs app: its API prefix, the events it emits and the
// capabilities it fills. It is the "docs" entry of capability.BuiltinApps;
// Info does not repeat it, since the registry lists built-in apps itself
// and logs a provider app whose id is a built-in one.
func App() capability.App {
	return capability.App{
		ID: "docs", Name: "Documents", API: capability.API{Prefix: "/v1/docs"},
		Events: capability.Events{Emits: Events(), Consumes: []string{}}, Capabilities: capabilities(),
	}
}

func capabilities() []string {
	return []string{capability.DocumentExtract, capability.DocumentValidate, capability.DocumentApprove, capability.DocumentReject}
}

// Info describes the provider.
func (provider) Info() capability.Info {
	return capability.Info{ID: ProviderID, Name: "Documents", Kind: capability.KindBuiltin, Capabilities: capabilities()}
}

// Call performs one capability call in call.Tenant.
func (p provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	s := p.s
	if strings.TrimSpace(call.Tenant) == "" {
		return nil, errors.New("docs: a capability call without a tenant")
	}
	decode := func(v any) error {
		if err := json.Unmarshal(call.Args, v); err != nil {
			return errs.Invalidf([]any{"args"}, "type_error", "arguments do not decode: %v", err)
		}
		return nil
	}
	var out any
	switch call.Capability {
	case capability.DocumentExtract:
		var a capability.DocumentArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		d, err := s.Get(ctx, call.Tenant, a.DocumentID)
		if err != nil {
			return nil, err
		}
		res := capability.DocumentExtractResult{DocumentID: d.ID, Status: d.Status, Fields: map[string]any{},
			Extracted: map[string]capability.ExtractedField{}}
		for k, v := range d.Extracted {
			res.Fields[k] = v.Value
			ef := capability.ExtractedField{Value: v.Value, Text: v.Text}
			if v.Page != nil {
				ef.Page, ef.Start, ef.End = *v.Page, *v.Start, *v.End
			}
			res.Extracted[k] = ef
		}
		out = res
	case capability.DocumentValidate:
		var a capability.DocumentArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		d, err := s.Revalidate(ctx, call.Tenant, a.DocumentID)
		if err != nil {
			return nil, err
		}
		res := capability.DocumentValidateResult{DocumentID: d.ID, Status: d.Status,
			Validation: capability.DocumentValidation{Status: ValidationPassed, Issues: []capability.ValidationIssue{}}}
		if d.Validation != nil {
			res.Validation.Status = d.Validation.Status
			for _, is := range d.Validation.Issues {
				ci := capability.ValidationIssue{RuleID: is.RuleID, Severity: is.Severity, Message: is.Message, Evidence: is.Evidence}
				if is.Field != nil {
					ci.Field = *is.Field
				}
				res.Validation.Issues = append(res.Validation.Issues, ci)
			}
		}
		out = res
	case capability.DocumentApprove:
		var a capability.DocumentApproveArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		d, err := s.Approve(ctx, call.Tenant, "", a.DocumentID, ApproveIn{Note: nonEmpty(a.Note)})
		if err != nil {
			// A retried call finds the document already approved: done.
			if cur, gerr := s.Get(ctx, call.Tenant, a.DocumentID); gerr == nil && cur.Status == StatusApproved {
				d, err = cur, nil
			}
		}
		if err != nil {
			return nil, err
		}
		out = capability.DocumentStatusResult{DocumentID: d.ID, Status: d.Status}
	case capability.DocumentReject:
		var a capability.DocumentRejectArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		d, err := s.Reject(ctx, call.Tenant, "", a.DocumentID, RejectIn{Note: a.Reason})
		if err != nil {
			if cur, gerr := s.Get(ctx, call.Tenant, a.DocumentID); gerr == nil && cur.Status == StatusRejected {
				d, err = cur, nil
			}
		}
		if err != nil {
			return nil, err
		}
		out = capability.DocumentStatusResult{DocumentID: d.ID, Status: d.Status}
	default:
		return nil, errs.Invalidf([]any{"capability"}, "value_error", "the docs provider does not fill %s", call.Capability)
	}
	b, err := json.Marshal(out)
	return b, errors.Wrap(err, "encode result")
}

func nonEmpty(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}
