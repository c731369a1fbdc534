package invoicing

import (
	"context"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// accountID is the id of a tenant's one account record.
const accountID = "account"

var accounts = &store.Collection[Account]{
	Name:     "invacct",
	ID:       func(*Account) string { return accountID },
	NotFound: "payments account not found",
}

// defaultReminderDays is the reminder schedule of a new account.
var defaultReminderDays = []int{1, 7, 14}

// defaultAccount is a tenant's account before anything changed it.
func (s *Service) defaultAccount(ctx context.Context, tenant string) *Account {
	name := "My business"
	if s.cfg.WorkspaceName != nil {
		if n, err := s.cfg.WorkspaceName(ctx, tenant); err == nil && strings.TrimSpace(n) != "" {
			name = strings.TrimSpace(n)
		}
	}
	return &Account{Mode: ModeSimulated, Status: AccountNotConnected, DefaultCurrency: "USD", BusinessName: name,
		Reminders: Reminders{Enabled: true, DaysAfterDue: append([]int(nil), defaultReminderDays...)}}
}

// account reads the tenant's account within r, or its defaults.
func (s *Service) account(ctx context.Context, r store.Reader, tenant string) (*Account, error) {
	a, err := accounts.Get(r, tenant, accountID)
	if errors.Is(err, errs.NotFound) {
		return s.defaultAccount(ctx, tenant), nil
	}
	return a, err
}

// Account returns the tenant's payments account.
func (s *Service) Account(ctx context.Context, tenant string) (*Account, error) {
	var a *Account
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		a, err = s.account(ctx, r, tenant)
		return err
	})
	return a, err
}

// UpdateAccount applies a patch to the business fields, reminders and tax.
// Reminder changes apply to invoices from their next collection step on.
func (s *Service) UpdateAccount(ctx context.Context, tenant string, p AccountPatch) (*Account, error) {
	if err := errs.Validation(p.Validate()...); err != nil {
		return nil, err
	}
	var out *Account
	err := s.st.Update(ctx, func(tx store.Txn) error {
		a, err := s.account(ctx, tx, tenant)
		if err != nil {
			return err
		}
		if p.BusinessName != nil {
			a.BusinessName = strings.TrimSpace(*p.BusinessName)
		}
		if p.SupportEmail != nil || containsStr(p.Clear, "support_email") {
			a.SupportEmail = p.SupportEmail
		}
		if p.DefaultCurrency != nil {
			a.DefaultCurrency = *p.DefaultCurrency
		}
		if r := p.Reminders; r != nil {
			if r.Enabled != nil {
				a.Reminders.Enabled = *r.Enabled
			}
			if r.DaysAfterDue != nil {
				a.Reminders.DaysAfterDue = append([]int{}, (*r.DaysAfterDue)...)
			}
			if r.Template != nil || p.clearTemplate {
				a.Reminders.Template = r.Template
			}
		}
		if t := p.Tax; t != nil {
			if t.DefaultRatePercent != nil {
				a.Tax.DefaultRatePercent = *t.DefaultRatePercent
			}
			if t.TaxID != nil || p.clearTaxID {
				a.Tax.TaxID = t.TaxID
			}
		}
		out = a
		return accounts.Put(tx, tenant, a)
	})
	return out, err
}

// Connect walks the simulated account on: not_connected -> onboarding (the
// clock completes it after Config.OnboardingDelay) -> connected, with
// charges and payouts enabled. Connecting an account that is onboarding or
// connected returns it unchanged.
func (s *Service) Connect(ctx context.Context, tenant string) (*Account, error) {
	var out *Account
	err := s.st.Update(ctx, func(tx store.Txn) error {
		a, err := s.account(ctx, tx, tenant)
		if err != nil {
			return err
		}
		out = a
		if a.Status != AccountNotConnected {
			return nil
		}
		ready := s.now().Add(s.cfg.OnboardingDelay)
		a.Status = AccountOnboarding
		if s.cfg.Timers != nil {
			if err := s.cfg.Timers.SetTimer(tx, tenant, TimerOnboard, accountID, ready); err != nil {
				return err
			}
		}
		return accounts.Put(tx, tenant, a)
	})
	return out, err
}

// finishOnboarding completes a simulated onboarding when its timer is due.
func (s *Service) finishOnboarding(ctx context.Context, t runengine.AppTimer) error {
	return s.st.Update(ctx, func(tx store.Txn) error {
		if err := t.Clear(tx); err != nil {
			return err
		}
		a, err := s.account(ctx, tx, t.Tenant)
		if err != nil || a.Status != AccountOnboarding {
			return err
		}
		a.Status, a.ChargesEnabled, a.PayoutsEnabled = AccountConnected, true, true
		a.PaymentsAccountID = ptr(s.ids.New("acct_sim", s.now()))
		return accounts.Put(tx, t.Tenant, a)
	})
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
