package ai

import (
	"context"
	"strconv"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// MonthUsage is a workspace's token usage in one calendar month (UTC), kept
// in the transaction that records each call.
type MonthUsage struct {
	// Month is "YYYY-MM".
	Month            string `json:"month"`
	Calls            int64  `json:"calls"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TotalTokens      int64  `json:"total_tokens"`
	// Budget is the connection's monthly_token_budget when the month was
	// last read (0: none).
	Budget int64 `json:"budget"`
	// WarnedAt is when ai.budget.warning was emitted this month, if it was.
	WarnedAt *time.Time `json:"warned_at"`
	// ExhaustedAt is when the first call was refused for the budget.
	ExhaustedAt *time.Time `json:"exhausted_at"`
}

var months = &store.Collection[MonthUsage]{
	Name: "aiusage", ID: func(u *MonthUsage) string { return u.Month }, NotFound: "no usage that month",
}

// Call is the record of one ai.* call: what was asked of which model, what
// it cost, and how it ended.
type Call struct {
	ID         string `json:"id"`
	Capability string `json:"capability"`
	Model      string `json:"model"`
	// RunID and StepKey name the run step that made the call, when one did.
	RunID   *string `json:"run_id"`
	StepKey *string `json:"step_key"`
	// Status is succeeded, invalid_answer, failed or refused (budget).
	Status   string    `json:"status"`
	Error    *string   `json:"error"`
	Attempts int       `json:"attempts"`
	Usage    Usage     `json:"usage"`
	At       time.Time `json:"at"`
	// IdempotencyKey is the call's key ("<run>/<step>/<attempt>").
	IdempotencyKey string `json:"idempotency_key"`
}

var calls = &store.Collection[Call]{
	Name: "aicall", ID: func(c *Call) string { return c.ID }, NotFound: "AI call not found",
}

// The statuses of a Call.
const (
	CallSucceeded     = "succeeded"
	CallInvalidAnswer = "invalid_answer"
	CallFailed        = "failed"
	CallRefused       = "refused"
)

func monthOf(t time.Time) string { return t.UTC().Format("2006-01") }

// Usage returns tenant's usage in month ("YYYY-MM"); a month without calls
// is all zeros. Budget is the current connection's.
func (s *Service) Usage(ctx context.Context, tenant, month string) (MonthUsage, error) {
	if _, err := time.Parse("2006-01", month); err != nil {
		return MonthUsage{}, errs.Invalidf([]any{"query", "month"}, "value_error", "must be a month as YYYY-MM")
	}
	u := MonthUsage{Month: month}
	err := s.st.View(ctx, func(r store.Reader) error {
		got, err := months.Get(r, tenant, month)
		switch {
		case err == nil:
			u = *got
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		c, err := connections.Get(r, tenant, connectionID)
		switch {
		case err == nil:
			u.Budget = c.MonthlyTokenBudget
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		return nil
	})
	return u, err
}

// Calls lists tenant's call records, newest first.
func (s *Service) Calls(ctx context.Context, tenant string, p store.Page) ([]*Call, string, error) {
	var out []*Call
	var next string
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		out, next, err = calls.List(r, tenant, p)
		return err
	})
	return out, next, err
}

// Call returns one call record.
func (s *Service) Call(ctx context.Context, tenant, id string) (*Call, error) {
	var out *Call
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		out, err = calls.Get(r, tenant, id)
		return err
	})
	return out, err
}

// checkBudget refuses a call when the month's tokens have reached the
// budget: the call is recorded as refused, ai.budget.exhausted is emitted
// the first time, and the error is errs.Forbidden (a run's step fails,
// it is not retried).
func (s *Service) checkBudget(ctx context.Context, tenant string, c *connection, rec Call) error {
	if c.MonthlyTokenBudget <= 0 {
		return nil
	}
	now := s.clock.Now().UTC()
	month := monthOf(now)
	var used int64
	var refused bool
	err := s.st.Update(ctx, func(tx store.Txn) error {
		u, err := months.Get(tx, tenant, month)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		if u.TotalTokens < c.MonthlyTokenBudget {
			return nil
		}
		refused, used = true, u.TotalTokens
		msg := budgetMessage(month, used, c.MonthlyTokenBudget)
		rec.ID, rec.Status, rec.Error, rec.At = s.ids.New("aic", now), CallRefused, &msg, now
		if err := calls.Put(tx, tenant, &rec); err != nil {
			return err
		}
		if u.ExhaustedAt == nil {
			u.ExhaustedAt = &now
			u.Budget = c.MonthlyTokenBudget
			if err := months.Put(tx, tenant, u); err != nil {
				return err
			}
			return s.events.Emit(tx, tenant, EventBudgetExhausted, map[string]any{"month": month,
				"total_tokens": u.TotalTokens, "budget": c.MonthlyTokenBudget})
		}
		return nil
	})
	if err != nil {
		return errors.Wrap(err, "check the AI token budget")
	}
	if refused {
		s.events.Kick()
		return errs.Forbiddenf("%s", budgetMessage(month, used, c.MonthlyTokenBudget))
	}
	return nil
}

func budgetMessage(month string, used, budget int64) string {
	return "the workspace's monthly AI token budget is used up: " + itoa(used) + " of " + itoa(budget) +
		" tokens used in " + month + "; raise monthly_token_budget with PUT /v1/ai/connection, or wait for next month"
}

// record writes the call record and adds its usage to the month, emitting
// ai.budget.warning when this call crosses warn_percent of the budget.
func (s *Service) record(ctx context.Context, tenant string, c *connection, rec Call) {
	now := s.clock.Now().UTC()
	month := monthOf(now)
	warned := false
	err := s.st.Update(ctx, func(tx store.Txn) error {
		rec.ID, rec.At = s.ids.New("aic", now), now
		if err := calls.Put(tx, tenant, &rec); err != nil {
			return err
		}
		u, err := months.Get(tx, tenant, month)
		switch {
		case errors.Is(err, store.ErrNotFound):
			u = &MonthUsage{Month: month}
		case err != nil:
			return err
		}
		u.Calls++
		u.PromptTokens += rec.Usage.PromptTokens
		u.CompletionTokens += rec.Usage.CompletionTokens
		u.TotalTokens += rec.Usage.TotalTokens
		u.Budget = c.MonthlyTokenBudget
		if b := c.MonthlyTokenBudget; b > 0 && u.WarnedAt == nil && u.TotalTokens*100 >= b*int64(c.WarnPercent) {
			u.WarnedAt = &now
			warned = true
			if err := s.events.Emit(tx, tenant, EventBudgetWarning, map[string]any{"month": month,
				"total_tokens": u.TotalTokens, "budget": b, "warn_percent": c.WarnPercent}); err != nil {
				return err
			}
		}
		return months.Put(tx, tenant, u)
	})
	if err != nil {
		// The answer was given; losing its accounting is logged, not
		// turned into a failed step that would ask the model again.
		s.log.Error("record AI usage", "tenant", tenant, "capability", rec.Capability, "error", err.Error())
		return
	}
	if warned {
		s.events.Kick()
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
