package crm

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// ProviderID is the id of the CRM app's capability provider.
const ProviderID = "builtin.crm"

// Events returns the names of the events the CRM app emits.
func Events() []string {
	return []string{"crm.company.created", "crm.contact.created", "crm.deal.created", "crm.deal.stage_changed",
		"crm.deal.won", "crm.deal.lost", "crm.activity.logged"}
}

func capabilities() []string {
	return []string{capability.CRMCompanyCreate, capability.CRMContactCreate, capability.CRMContactLookup,
		capability.CRMDealCreate, capability.CRMDealUpdate, capability.CRMDealMove, capability.CRMActivityLog}
}

// Provider returns the capability provider of the CRM app: it fills
// crm.company.create, crm.contact.create, crm.contact.lookup,
// crm.deal.create, crm.deal.update, crm.deal.move and crm.activity.log for
// the tenant of each call. A create repeated with the same idempotency
// key (a retried step) returns the first result and creates nothing.
func (s *Service) Provider() capability.Provider { return provider{s} }

type provider struct{ s *Service }

var _ capability.Provider = provider{}

// Info describes the provider.
func (provider) Info() capability.Info {
	return capability.Info{ID: ProviderID, Name: "CRM", Kind: capability.KindBuiltin, Capabilities: capabilities()}
}

// Call performs one capability call in call.Tenant.
func (p provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	s := p.s
	if strings.TrimSpace(call.Tenant) == "" {
		return nil, errors.New("crm: a capability call without a tenant")
	}
	decode := func(v any) error {
		if err := json.Unmarshal(call.Args, v); err != nil {
			return errs.Invalidf([]any{"args"}, "type_error", "arguments do not decode: %v", err)
		}
		return nil
	}
	tenant, key := call.Tenant, call.IdempotencyKey
	switch call.Capability {
	case capability.CRMCompanyCreate:
		var a capability.CompanyCreateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		in := CompanyIn{Name: a.Name, Domain: opt(a.Domain), Industry: opt(a.Industry), Phone: opt(a.Phone),
			Website: opt(a.Website), OwnerID: opt(a.OwnerID)}
		return s.once(ctx, tenant, key, func(tx store.Txn) (any, error) {
			c, err := s.createCompanyTx(ctx, tx, tenant, in)
			if err != nil {
				return nil, err
			}
			return capability.CompanyCreateResult{CompanyID: c.ID}, nil
		})
	case capability.CRMContactCreate:
		var a capability.ContactCreateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		in := ContactIn{FirstName: a.FirstName, LastName: opt(a.LastName), Email: opt(a.Email), Phone: opt(a.Phone),
			Title: opt(a.Title), CompanyID: opt(a.CompanyID)}
		return s.once(ctx, tenant, key, func(tx store.Txn) (any, error) {
			c, err := s.createContactTx(ctx, tx, tenant, in)
			if err != nil {
				return nil, err
			}
			return capability.ContactCreateResult{ContactID: c.ID}, nil
		})
	case capability.CRMContactLookup:
		var a capability.ContactLookupArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		res, err := s.lookup(ctx, tenant, a)
		if err != nil {
			return nil, err
		}
		return marshal(res)
	case capability.CRMDealCreate:
		var a capability.DealCreateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		expected, err := closeDate(a.CloseDate)
		if err != nil {
			return nil, err
		}
		in := DealIn{Title: a.Title, AmountCents: a.AmountCents, Currency: opt(a.Currency), PipelineID: opt(a.PipelineID),
			StageID: opt(a.StageID), CompanyID: opt(a.CompanyID), ContactID: opt(a.ContactID), OwnerID: opt(a.OwnerID),
			ExpectedClose: expected}
		return s.once(ctx, tenant, key, func(tx store.Txn) (any, error) {
			d, err := s.createDealTx(ctx, tx, tenant, in)
			if err != nil {
				return nil, err
			}
			return capability.DealResult{DealID: d.ID, StageID: d.StageID, Status: d.Status}, nil
		})
	case capability.CRMDealUpdate:
		var a capability.DealUpdateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		expected, err := closeDate(a.CloseDate)
		if err != nil {
			return nil, err
		}
		in := DealPatch{Title: opt(a.Title), AmountCents: a.AmountCents, Currency: opt(a.Currency), StageID: opt(a.StageID),
			ExpectedClose: expected}
		d, err := s.UpdateDeal(ctx, tenant, a.DealID, in)
		if err != nil {
			return nil, err
		}
		return marshal(capability.DealResult{DealID: d.ID, StageID: d.StageID, Status: d.Status})
	case capability.CRMDealMove:
		var a capability.DealMoveArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		res, err := s.move(ctx, tenant, a)
		if err != nil {
			return nil, err
		}
		return marshal(res)
	case capability.CRMActivityLog:
		var a capability.ActivityLogArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		in := ActivityIn{Kind: a.Type, Subject: a.Subject, Body: opt(a.Body), DealID: opt(a.DealID),
			ContactID: opt(a.ContactID), CompanyID: opt(a.CompanyID)}
		if in.Kind == "" {
			in.Kind = "note"
		}
		return s.once(ctx, tenant, key, func(tx store.Txn) (any, error) {
			act, err := s.logActivityTx(tx, tenant, in)
			if err != nil {
				return nil, err
			}
			return capability.ActivityLogResult{ActivityID: act.ID}, nil
		})
	}
	return nil, errs.Invalidf([]any{"capability"}, "value_error", "the crm provider does not fill %s", call.Capability)
}

// once runs fn in a transaction that also keeps its result under the
// call's idempotency key; a call with a key already kept returns the
// result kept and runs nothing.
func (s *Service) once(ctx context.Context, tenant, key string, fn func(tx store.Txn) (any, error)) (json.RawMessage, error) {
	var out json.RawMessage
	k := store.Key(tenant, "crm", "call", key)
	err := s.update(ctx, func(tx store.Txn) error {
		if key != "" {
			raw, err := tx.Get(k)
			if err == nil {
				out = raw
				return nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		res, err := fn(tx)
		if err != nil {
			return err
		}
		out, err = json.Marshal(res)
		if err != nil {
			return errors.Wrap(err, "encode result")
		}
		if key == "" {
			return nil
		}
		return tx.Set(k, out)
	})
	return out, err
}

// move moves a deal to a stage of its pipeline named by id or by name.
func (s *Service) move(ctx context.Context, tenant string, a capability.DealMoveArgs) (*capability.DealMoveResult, error) {
	var out *capability.DealMoveResult
	err := s.update(ctx, func(tx store.Txn) error {
		d, err := deals.Get(tx, tenant, a.DealID)
		if err != nil {
			return err
		}
		from := d.StageID
		stageID := a.StageID
		if stageID == "" {
			p, err := pipelines.Get(tx, tenant, d.PipelineID)
			if err != nil {
				return err
			}
			for _, st := range p.Stages {
				if strings.EqualFold(strings.TrimSpace(st.Name), strings.TrimSpace(a.StageName)) {
					stageID = st.ID
					break
				}
			}
			if stageID == "" {
				return errs.Invalidf([]any{"args", "stage_name"}, "value_error", "pipeline %s has no stage named %q", p.Name, a.StageName)
			}
		}
		d, err = s.updateDealTx(ctx, tx, tenant, a.DealID, DealPatch{StageID: &stageID})
		if err != nil {
			return err
		}
		out = &capability.DealMoveResult{DealID: d.ID, StageID: d.StageID, FromStageID: from, Status: d.Status}
		if d.ClosedAt != nil {
			out.ClosedAt = d.ClosedAt.Format(time.RFC3339Nano)
		}
		return nil
	})
	return out, err
}

// maxLookup bounds the contacts crm.contact.lookup returns.
const maxLookup = 20

// lookup finds contacts by e-mail address (exact, case aside), name
// (prefix) and company name (prefix); every criterion given must hold.
func (s *Service) lookup(ctx context.Context, tenant string, a capability.ContactLookupArgs) (*capability.ContactLookupResult, error) {
	res := &capability.ContactLookupResult{Contacts: []capability.ContactMatch{}}
	err := s.view(ctx, func(r store.Reader) error {
		var cands []*Contact
		var err error
		page := store.Page{Limit: 200, Forward: true}
		switch {
		case a.Email != "":
			cands, _, err = searchPage(r, contacts, tenant, a.Email, page, contactTexts)
		case a.Name != "":
			cands, _, err = searchPage(r, contacts, tenant, a.Name, page, contactTexts)
		default:
			var cs []*Company
			cs, _, err = searchPage(r, companies, tenant, a.Company, store.Page{Limit: 10, Forward: true}, companyTexts)
			for _, c := range cs {
				if err != nil {
					break
				}
				var more []*Contact
				more, _, err = contacts.ListBy(r, tenant, "c", []any{c.ID}, store.Page{Limit: maxLookup})
				cands = append(cands, more...)
			}
		}
		if err != nil {
			return err
		}
		names := map[string]string{}
		for _, c := range cands {
			if len(res.Contacts) == maxLookup {
				break
			}
			if a.Email != "" && (c.Email == nil || !strings.EqualFold(*c.Email, strings.TrimSpace(a.Email))) {
				continue
			}
			if a.Name != "" && firstMatch(contactTexts(c), normalize(a.Name)) == "" {
				continue
			}
			m := capability.ContactMatch{ContactID: c.ID, FirstName: c.FirstName, LastName: deref(c.LastName), Email: deref(c.Email)}
			if c.CompanyID != nil {
				name, ok := names[*c.CompanyID]
				if !ok {
					if co, err := companies.Get(r, tenant, *c.CompanyID); err == nil {
						name = co.Name
					}
					names[*c.CompanyID] = name
				}
				m.Company = name
			}
			if a.Company != "" && !strings.HasPrefix(normalize(m.Company), normalize(a.Company)) {
				continue
			}
			res.Contacts = append(res.Contacts, m)
		}
		return nil
	})
	res.Found = len(res.Contacts) > 0
	return res, err
}

func closeDate(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil, errs.Invalidf([]any{"args", "close_date"}, "value_error", "must be a date YYYY-MM-DD")
	}
	return &t, nil
}

func opt(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func marshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return b, errors.Wrap(err, "encode result")
}

// App describes the CRM app: its API prefix, the events it emits and the
// capabilities it fills (the "crm" entry of capability.BuiltinApps).
func App() capability.App {
	return capability.App{ID: "crm", Name: "CRM", API: capability.API{Prefix: "/v1/crm"},
		Events: capability.Events{Emits: Events(), Consumes: []string{}}, Capabilities: capabilities()}
}
