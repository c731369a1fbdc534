package crm

import (
	"context"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
)

// ActivityFilter selects activities; at most one field may be set.
type ActivityFilter struct {
	DealID    string
	ContactID string
	CompanyID string
}

// LogActivity records an activity (occurred_at defaults to now) and emits
// crm.activity.logged.
func (s *Service) LogActivity(ctx context.Context, tenant string, in ActivityIn) (*Activity, error) {
	var out *Activity
	err := s.update(ctx, func(tx store.Txn) error {
		a, err := s.logActivityTx(tx, tenant, in)
		out = a
		return err
	})
	return out, err
}

func (s *Service) logActivityTx(tx store.Txn, tenant string, in ActivityIn) (*Activity, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if err := refs(tx, tenant, nil, clean(in.CompanyID), clean(in.ContactID), clean(in.DealID)); err != nil {
		return nil, err
	}
	now := s.now()
	a := &Activity{ID: s.ids.New(prefixActivity, now), Kind: in.Kind, Subject: strings.TrimSpace(in.Subject), Body: in.Body,
		DealID: clean(in.DealID), ContactID: clean(in.ContactID), CompanyID: clean(in.CompanyID), OccurredAt: now,
		CreatedAt: now, UpdatedAt: now}
	if in.OccurredAt != nil {
		a.OccurredAt = in.OccurredAt.UTC()
	}
	if err := activities.Put(tx, tenant, a); err != nil {
		return nil, err
	}
	return a, s.emit(tx, tenant, "crm.activity.logged", a, "activity_id", a.ID, nil)
}

// GetActivity returns one activity.
func (s *Service) GetActivity(ctx context.Context, tenant, id string) (*Activity, error) {
	var out *Activity
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		out, err = activities.Get(r, tenant, id)
		return err
	})
	return out, err
}

// ListActivities returns a page of activities, newest first by
// occurred_at.
func (s *Service) ListActivities(ctx context.Context, tenant string, f ActivityFilter, p store.Page) ([]*Activity, string, error) {
	index, values, err := choose([]filterValue{{"deal_id", f.DealID, "d"}, {"contact_id", f.ContactID, "k"},
		{"company_id", f.CompanyID, "c"}}, nil)
	if err != nil {
		return nil, "", err
	}
	if index == "" {
		index = "t"
	}
	var out []*Activity
	var next string
	err = s.view(ctx, func(r store.Reader) error {
		var err error
		out, next, err = activities.ListBy(r, tenant, index, values, p)
		return err
	})
	return out, next, err
}

// UpdateActivity applies a patch.
func (s *Service) UpdateActivity(ctx context.Context, tenant, id string, in ActivityPatch) (*Activity, error) {
	var out *Activity
	err := s.update(ctx, func(tx store.Txn) error {
		a, err := activities.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if err := refs(tx, tenant, nil, clean(in.CompanyID), clean(in.ContactID), clean(in.DealID)); err != nil {
			return err
		}
		if in.Kind != nil {
			a.Kind = *in.Kind
		}
		if in.Subject != nil {
			a.Subject = strings.TrimSpace(*in.Subject)
		}
		switch {
		case in.Body != nil:
			a.Body = in.Body
		case nulled(in.Null, "body"):
			a.Body = nil
		}
		set(&a.DealID, in.DealID, in.Null, "deal_id")
		set(&a.ContactID, in.ContactID, in.Null, "contact_id")
		set(&a.CompanyID, in.CompanyID, in.Null, "company_id")
		if in.OccurredAt != nil {
			a.OccurredAt = in.OccurredAt.UTC()
		}
		a.UpdatedAt = s.now()
		out = a
		return activities.Put(tx, tenant, a)
	})
	return out, err
}

// DeleteActivity deletes an activity.
func (s *Service) DeleteActivity(ctx context.Context, tenant, id string) error {
	return s.update(ctx, func(tx store.Txn) error { return activities.Delete(tx, tenant, id) })
}
