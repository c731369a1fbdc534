package crm

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// DefaultPipelineName is the name of the pipeline every workspace starts
// with.
const DefaultPipelineName = "Sales"

// defaultStages returns the default pipeline's stages, in order.
func defaultStages() []StageIn {
	return []StageIn{
		{Name: "Lead", Probability: ptr(10)},
		{Name: "Qualified", Probability: ptr(25)},
		{Name: "Proposal", Probability: ptr(50)},
		{Name: "Negotiation", Probability: ptr(75)},
		{Name: "Won", Probability: ptr(100), Kind: ptr(KindWon)},
		{Name: "Lost", Probability: ptr(0), Kind: ptr(KindLost)},
	}
}

func ptr[T any](v T) *T { return &v }

func (s *Service) newStage(in StageIn, at time.Time) Stage {
	return Stage{ID: s.ids.New(prefixStage, at), Name: strings.TrimSpace(in.Name), Probability: in.probability(), Kind: in.kind()}
}

func (s *Service) newPipeline(name string, stages []StageIn, isDefault bool, at time.Time) *Pipeline {
	p := &Pipeline{ID: s.ids.New(prefixPipeline, at), Name: strings.TrimSpace(name), IsDefault: isDefault, CreatedAt: at, UpdatedAt: at}
	for _, in := range stages {
		p.Stages = append(p.Stages, s.newStage(in, at))
	}
	p.renumber()
	return p
}

// defaultPipelineTx returns tenant's default pipeline, creating it the
// first time it is needed.
func (s *Service) defaultPipelineTx(tx store.Txn, tenant string) (*Pipeline, error) {
	p, err := pipelines.Lookup(tx, tenant, "default", "default")
	if !errors.Is(err, errs.NotFound) {
		return p, err
	}
	p = s.newPipeline(DefaultPipelineName, defaultStages(), true, s.now())
	return p, pipelines.Put(tx, tenant, p)
}

// DefaultPipeline returns tenant's default sales pipeline (Lead,
// Qualified, Proposal, Negotiation, Won, Lost), created the first time it
// is read.
func (s *Service) DefaultPipeline(ctx context.Context, tenant string) (*Pipeline, error) {
	var p *Pipeline
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		p, err = pipelines.Lookup(r, tenant, "default", "default")
		return err
	})
	if !errors.Is(err, errs.NotFound) {
		return p, err
	}
	err = s.st.Update(ctx, func(tx store.Txn) error {
		var err error
		p, err = s.defaultPipelineTx(tx, tenant)
		return err
	})
	return p, err
}

// ListPipelines returns a page of tenant's pipelines, oldest first (the
// default one, made first, leads).
func (s *Service) ListPipelines(ctx context.Context, tenant string, p store.Page) ([]*Pipeline, string, error) {
	if _, err := s.DefaultPipeline(ctx, tenant); err != nil {
		return nil, "", err
	}
	p.Forward = true
	var out []*Pipeline
	var next string
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		out, next, err = pipelines.List(r, tenant, p)
		return err
	})
	return out, next, err
}

// GetPipeline returns one pipeline with its stages.
func (s *Service) GetPipeline(ctx context.Context, tenant, id string) (*Pipeline, error) {
	var p *Pipeline
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		p, err = pipelines.Get(r, tenant, id)
		return err
	})
	return p, err
}

// CreatePipeline creates a pipeline with its stages in the order given
// (a stage's position, if any, is ignored here).
func (s *Service) CreatePipeline(ctx context.Context, tenant string, in PipelineIn) (*Pipeline, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	p := s.newPipeline(in.Name, in.Stages, false, s.now())
	if err := s.st.Update(ctx, func(tx store.Txn) error { return pipelines.Put(tx, tenant, p) }); err != nil {
		return nil, err
	}
	return p, nil
}

// UpdatePipeline renames a pipeline.
func (s *Service) UpdatePipeline(ctx context.Context, tenant, id string, in PipelinePatch) (*Pipeline, error) {
	return s.changePipeline(ctx, tenant, id, func(tx store.Txn, p *Pipeline) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if in.Name != nil {
			p.Name = strings.TrimSpace(*in.Name)
		}
		return nil
	})
}

// DeletePipeline deletes a pipeline that holds no deal. The default
// pipeline, or one holding deals, is a conflict.
func (s *Service) DeletePipeline(ctx context.Context, tenant, id string) error {
	return s.st.Update(ctx, func(tx store.Txn) error {
		p, err := pipelines.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if p.IsDefault {
			return errs.Conflictf("the default pipeline cannot be deleted")
		}
		for _, st := range p.Stages {
			if err := stageEmpty(tx, tenant, st); err != nil {
				return errs.Conflictf("the pipeline holds deals; move or delete them first")
			}
		}
		return pipelines.Delete(tx, tenant, id)
	})
}

// stageEmpty returns a conflict when the stage holds a deal.
func stageEmpty(r store.Reader, tenant string, st Stage) error {
	m, err := readStats(r, tenant, st.ID)
	if err != nil {
		return err
	}
	if len(m) > 0 {
		return errs.Conflictf("stage %s holds deals; move or delete them first", st.Name)
	}
	return nil
}

// AddStage adds a stage to a pipeline at its position (default the end).
func (s *Service) AddStage(ctx context.Context, tenant, pipelineID string, in StageIn) (*Pipeline, error) {
	return s.changePipeline(ctx, tenant, pipelineID, func(tx store.Txn, p *Pipeline) error {
		vs := in.Validate()
		pos := len(p.Stages)
		if in.Position != nil {
			pos = *in.Position
		}
		var c check
		if len(p.Stages) >= MaxStages {
			c.add("too_long", "a pipeline has at most 50 stages", "stages")
		}
		if pos > len(p.Stages) {
			c.add("less_than_equal", "must be at most "+strconv.Itoa(len(p.Stages))+" (the number of stages)", "position")
		}
		if err := errs.Validation(append(vs, c.vs...)...); err != nil {
			return err
		}
		p.Stages = slices.Insert(p.Stages, pos, s.newStage(in, s.now()))
		p.renumber()
		return nil
	})
}

// UpdateStage renames a stage, changes its probability or moves it.
func (s *Service) UpdateStage(ctx context.Context, tenant, pipelineID, stageID string, in StagePatch) (*Pipeline, error) {
	return s.changePipeline(ctx, tenant, pipelineID, func(tx store.Txn, p *Pipeline) error {
		i := slices.IndexFunc(p.Stages, func(st Stage) bool { return st.ID == stageID })
		if i < 0 {
			return errs.NotFoundf("stage not found")
		}
		vs := in.Validate()
		if in.Position != nil && *in.Position >= len(p.Stages) {
			vs = append(vs, errs.Violation{Loc: []any{"position"}, Msg: "must be at most " + strconv.Itoa(len(p.Stages)-1), Type: "less_than_equal"})
		}
		if err := errs.Validation(vs...); err != nil {
			return err
		}
		st := p.Stages[i]
		if in.Name != nil {
			st.Name = strings.TrimSpace(*in.Name)
		}
		if in.Probability != nil {
			st.Probability = *in.Probability
		}
		p.Stages[i] = st
		if in.Position != nil && *in.Position != i {
			p.Stages = slices.Delete(p.Stages, i, i+1)
			p.Stages = slices.Insert(p.Stages, *in.Position, st)
		}
		p.renumber()
		return nil
	})
}

// DeleteStage deletes a stage that holds no deal; one holding deals, or
// the last open stage of a pipeline, is a conflict.
func (s *Service) DeleteStage(ctx context.Context, tenant, pipelineID, stageID string) (*Pipeline, error) {
	return s.changePipeline(ctx, tenant, pipelineID, func(tx store.Txn, p *Pipeline) error {
		i := slices.IndexFunc(p.Stages, func(st Stage) bool { return st.ID == stageID })
		if i < 0 {
			return errs.NotFoundf("stage not found")
		}
		if err := stageEmpty(tx, tenant, p.Stages[i]); err != nil {
			return err
		}
		rest := slices.Delete(slices.Clone(p.Stages), i, i+1)
		if !slices.ContainsFunc(rest, func(st Stage) bool { return st.Kind == KindOpen }) {
			return errs.Conflictf("a pipeline keeps at least one open stage")
		}
		p.Stages = rest
		p.renumber()
		return nil
	})
}

// changePipeline loads a pipeline (404 first), lets fn change it and
// stores it.
func (s *Service) changePipeline(ctx context.Context, tenant, id string, fn func(store.Txn, *Pipeline) error) (*Pipeline, error) {
	var out *Pipeline
	err := s.st.Update(ctx, func(tx store.Txn) error {
		p, err := pipelines.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := fn(tx, p); err != nil {
			return err
		}
		p.UpdatedAt = s.now()
		out = p
		return pipelines.Put(tx, tenant, p)
	})
	return out, err
}

// Board returns a pipeline's columns in stage order: each with at most
// limit deals of its stage (newest first, default 50) and the stage's
// counters, which cover every deal in it.
func (s *Service) Board(ctx context.Context, tenant, pipelineID string, limit int) ([]BoardColumn, error) {
	if limit <= 0 {
		limit = defaultCountPerPage
	}
	var out []BoardColumn
	err := s.view(ctx, func(r store.Reader) error {
		p, err := pipelines.Get(r, tenant, pipelineID)
		if err != nil {
			return err
		}
		out = make([]BoardColumn, 0, len(p.Stages))
		for _, st := range p.Stages {
			ds, _, err := deals.ListBy(r, tenant, "s", []any{st.ID}, store.Page{Limit: limit})
			if err != nil {
				return err
			}
			totals, sum, err := stageTotals(r, tenant, st)
			if err != nil {
				return err
			}
			if ds == nil {
				ds = []*Deal{}
			}
			out = append(out, BoardColumn{Stage: st, Deals: ds, TotalCents: sum[1], Count: sum[0],
				WeightedCents: weighted(sum[1], st.Probability), Totals: totals})
		}
		return nil
	})
	return out, err
}

// stageOf returns the pipeline holding stage id, or a 422 at loc.
func stageOf(r store.Reader, tenant, id string, loc ...any) (*Pipeline, Stage, error) {
	p, err := pipelines.Lookup(r, tenant, "stage", id)
	if errors.Is(err, errs.NotFound) {
		return nil, Stage{}, errs.Invalidf(loc, "value_error", "no stage %s", id)
	}
	if err != nil {
		return nil, Stage{}, err
	}
	st, _ := p.stage(id)
	return p, st, nil
}

func encodeCursor(suffix []byte) string { return base64.RawURLEncoding.EncodeToString(suffix) }

func decodeCursor(c string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 {
		return nil, store.ErrBadCursor
	}
	return b, nil
}
