package crm

import (
	"context"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// DealFilter selects deals. At most one field may be set, except OwnerID
// with PipelineID, StageID or Status.
type DealFilter struct {
	PipelineID string
	StageID    string
	// Status is open, won or lost (the kind of the deal's stage).
	Status    string
	CompanyID string
	ContactID string
	OwnerID   string
	// Q lists the deals whose title starts with it (case and punctuation
	// aside), in alphabetical order of the titles.
	Q string
}

// CreateDeal opens a deal and emits crm.deal.created (and crm.deal.won or
// crm.deal.lost when it starts in a won or lost stage). Without stage_id
// it lands in the first open stage of pipeline_id, or of the default
// pipeline.
func (s *Service) CreateDeal(ctx context.Context, tenant string, in DealIn) (*Deal, error) {
	var out *Deal
	err := s.update(ctx, func(tx store.Txn) error {
		d, err := s.createDealTx(ctx, tx, tenant, in)
		out = d
		return err
	})
	return out, err
}

func (s *Service) createDealTx(ctx context.Context, tx store.Txn, tenant string, in DealIn) (*Deal, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if err := s.checkOwner(ctx, tenant, clean(in.OwnerID), "owner_id"); err != nil {
		return nil, err
	}
	p, st, err := s.placeTx(tx, tenant, clean(in.PipelineID), clean(in.StageID))
	if err != nil {
		return nil, err
	}
	if err := refs(tx, tenant, nil, clean(in.CompanyID), clean(in.ContactID), nil); err != nil {
		return nil, err
	}
	now := s.now()
	d := &Deal{ID: s.ids.New(prefixDeal, now), Title: strings.TrimSpace(in.Title), Currency: DefaultCurrency,
		PipelineID: p.ID, StageID: st.ID, Status: st.Kind, CompanyID: clean(in.CompanyID), ContactID: clean(in.ContactID),
		OwnerID: clean(in.OwnerID), ExpectedClose: utc(in.ExpectedClose), CreatedAt: now, UpdatedAt: now}
	if in.AmountCents != nil {
		d.AmountCents = *in.AmountCents
	}
	if in.Currency != nil {
		d.Currency = *in.Currency
	}
	if st.Kind != KindOpen {
		d.ClosedAt = &now
	}
	if err := deals.Put(tx, tenant, d); err != nil {
		return nil, err
	}
	if err := addStat(tx, tenant, d, 1); err != nil {
		return nil, err
	}
	extra := stageData(st)
	if err := s.emit(tx, tenant, "crm.deal.created", d, "deal_id", d.ID, extra); err != nil {
		return nil, err
	}
	return d, s.emitClosed(tx, tenant, d, "", st)
}

// placeTx resolves where a deal goes: stageID (which must be of
// pipelineID when both are given), else pipelineID's first open stage,
// else the default pipeline's.
func (s *Service) placeTx(tx store.Txn, tenant string, pipelineID, stageID *string) (*Pipeline, Stage, error) {
	if stageID != nil {
		p, st, err := stageOf(tx, tenant, *stageID, "stage_id")
		if err != nil {
			return nil, Stage{}, err
		}
		if pipelineID != nil && p.ID != *pipelineID {
			return nil, Stage{}, errs.Invalidf([]any{"stage_id"}, "value_error", "stage %s is not a stage of pipeline %s", *stageID, *pipelineID)
		}
		return p, st, nil
	}
	var p *Pipeline
	var err error
	if pipelineID != nil {
		p, err = pipelines.Get(tx, tenant, *pipelineID)
		if errors.Is(err, errs.NotFound) {
			return nil, Stage{}, errs.Invalidf([]any{"pipeline_id"}, "value_error", "no pipeline %s", *pipelineID)
		}
	} else {
		p, err = s.defaultPipelineTx(tx, tenant)
	}
	if err != nil {
		return nil, Stage{}, err
	}
	st, ok := p.firstOpen()
	if !ok {
		return nil, Stage{}, errs.Conflictf("pipeline %s has no open stage", p.ID)
	}
	return p, st, nil
}

func stageData(st Stage) map[string]any {
	return map[string]any{"stage_name": st.Name, "stage_kind": st.Kind, "probability": st.Probability}
}

// emitClosed emits crm.deal.won or crm.deal.lost when a deal enters a won
// or lost stage from a stage of another kind.
func (s *Service) emitClosed(tx store.Txn, tenant string, d *Deal, fromKind string, st Stage) error {
	if st.Kind == fromKind || st.Kind == KindOpen {
		return nil
	}
	return s.emit(tx, tenant, "crm.deal."+st.Kind, d, "deal_id", d.ID, stageData(st))
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// GetDeal returns one deal.
func (s *Service) GetDeal(ctx context.Context, tenant, id string) (*Deal, error) {
	var out *Deal
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		out, err = deals.Get(r, tenant, id)
		return err
	})
	return out, err
}

// ListDeals returns a page of deals, newest first (alphabetical with Q).
func (s *Service) ListDeals(ctx context.Context, tenant string, f DealFilter, p store.Page) ([]*Deal, string, error) {
	if f.Status != "" && f.Status != KindOpen && f.Status != KindWon && f.Status != KindLost {
		return nil, "", errs.Invalidf([]any{"query", "status"}, "enum", "must be one of open, won, lost")
	}
	index, values, err := choose([]filterValue{{"pipeline_id", f.PipelineID, "p"}, {"stage_id", f.StageID, "s"},
		{"status", f.Status, "st"}, {"company_id", f.CompanyID, "c"}, {"contact_id", f.ContactID, "k"},
		{"owner_id", f.OwnerID, "o"}, {"q", f.Q, "q"}},
		map[string]string{"pipeline_id+owner_id": "op", "stage_id+owner_id": "os", "status+owner_id": "ost"})
	if err != nil {
		return nil, "", err
	}
	if len(values) == 2 {
		values[0], values[1] = values[1], values[0] // the owner leads those indexes
	}
	return listPage(ctx, s, deals, tenant, index, values, f.Q, p, dealTexts)
}

// UpdateDeal applies a patch. A new stage_id moves the deal within its
// pipeline (a stage of another pipeline is a 422, unless pipeline_id
// names that pipeline); pipeline_id alone moves it to that pipeline's
// first open stage. A move emits crm.deal.stage_changed, and
// crm.deal.won or crm.deal.lost when it enters a won or lost stage;
// closed_at is set then, and cleared when the deal reopens. A null
// stage_id or pipeline_id is ignored.
func (s *Service) UpdateDeal(ctx context.Context, tenant, id string, in DealPatch) (*Deal, error) {
	var out *Deal
	err := s.update(ctx, func(tx store.Txn) error {
		d, err := s.updateDealTx(ctx, tx, tenant, id, in)
		out = d
		return err
	})
	return out, err
}

func (s *Service) updateDealTx(ctx context.Context, tx store.Txn, tenant, id string, in DealPatch) (*Deal, error) {
	d, err := deals.Get(tx, tenant, id)
	if err != nil {
		return nil, err
	}
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if in.OwnerID != nil {
		if err := s.checkOwner(ctx, tenant, clean(in.OwnerID), "owner_id"); err != nil {
			return nil, err
		}
	}
	old := *d
	oldP, err := pipelines.Get(tx, tenant, d.PipelineID)
	if err != nil {
		return nil, errors.Wrapf(err, "the pipeline of deal %s", d.ID)
	}
	oldStage, _ := oldP.stage(d.StageID)
	newStage := oldStage
	pipelineID, stageID := clean(in.PipelineID), clean(in.StageID)
	switch {
	case pipelineID != nil && *pipelineID != d.PipelineID:
		p, st, err := s.placeTx(tx, tenant, pipelineID, stageID)
		if err != nil {
			return nil, err
		}
		d.PipelineID, newStage = p.ID, st
	case stageID != nil && *stageID != d.StageID:
		p, st, err := stageOf(tx, tenant, *stageID, "stage_id")
		if err != nil {
			return nil, err
		}
		if p.ID != d.PipelineID {
			return nil, errs.Invalidf([]any{"stage_id"}, "value_error",
				"stage %s is of another pipeline than the deal's (%s); give pipeline_id to move it there", *stageID, d.PipelineID)
		}
		newStage = st
	}
	if err := refs(tx, tenant, nil, clean(in.CompanyID), clean(in.ContactID), nil); err != nil {
		return nil, err
	}
	if in.Title != nil {
		d.Title = strings.TrimSpace(*in.Title)
	}
	if in.AmountCents != nil {
		d.AmountCents = *in.AmountCents
	}
	if in.Currency != nil {
		d.Currency = *in.Currency
	}
	set(&d.CompanyID, in.CompanyID, in.Null, "company_id")
	set(&d.ContactID, in.ContactID, in.Null, "contact_id")
	set(&d.OwnerID, in.OwnerID, in.Null, "owner_id")
	switch {
	case in.ExpectedClose != nil:
		d.ExpectedClose = utc(in.ExpectedClose)
	case nulled(in.Null, "expected_close"):
		d.ExpectedClose = nil
	}
	now := s.now()
	d.StageID, d.Status = newStage.ID, newStage.Kind
	if newStage.Kind != oldStage.Kind {
		d.ClosedAt = nil
		if newStage.Kind != KindOpen {
			d.ClosedAt = &now
		}
	}
	d.UpdatedAt = now
	if err := deals.Put(tx, tenant, d); err != nil {
		return nil, err
	}
	if old.StageID != d.StageID || old.Currency != d.Currency || old.AmountCents != d.AmountCents {
		if err := addStat(tx, tenant, &old, -1); err != nil {
			return nil, err
		}
		if err := addStat(tx, tenant, d, 1); err != nil {
			return nil, err
		}
	}
	if old.StageID != d.StageID {
		extra := stageData(newStage)
		extra["from_stage_id"], extra["from_stage_name"], extra["from_stage_kind"] = old.StageID, oldStage.Name, oldStage.Kind
		extra["from_pipeline_id"] = old.PipelineID
		if err := s.emit(tx, tenant, "crm.deal.stage_changed", d, "deal_id", d.ID, extra); err != nil {
			return nil, err
		}
		if err := s.emitClosed(tx, tenant, d, oldStage.Kind, newStage); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// DeleteDeal deletes a deal, takes it off its stage's counters and
// unlinks (sets to null) the deal_id of its activities, in one
// transaction.
func (s *Service) DeleteDeal(ctx context.Context, tenant, id string) error {
	return tooManyLinks(s.update(ctx, func(tx store.Txn) error {
		d, err := deals.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := deals.Delete(tx, tenant, id); err != nil {
			return err
		}
		if err := addStat(tx, tenant, d, -1); err != nil {
			return err
		}
		now := s.now()
		return unlink(tx, tenant, activities, "d", id, func(a *Activity) { a.DealID, a.UpdatedAt = nil, now })
	}))
}
