package invoicing

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// withEngine wires the app to a real run engine on b's store: its timers
// and its outbox.
func withEngine(t *testing.T, b *bundle) {
	t.Helper()
	procs := process.NewService(process.Config{Store: b.st, Clock: b.clk})
	reg := registry.New(registry.Config{Store: b.st, Clock: b.clk})
	eng, err := runengine.New(runengine.Config{Store: b.st, Clock: b.clk, Capabilities: reg, Processes: procs})
	if err != nil {
		t.Fatal(err)
	}
	b.s = New(Config{Store: b.st, Clock: b.clk, Mailer: b.mail, Timers: eng, Events: eng.Internal().(EventSink)})
	eng.HandleTimers(TimerCollect, b.s.HandleTimer)
	eng.HandleTimers(TimerOnboard, b.s.HandleTimer)
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
}

func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestCollectionRetriesAReminder: a reminder the email provider could not
// take is tried again by the engine; the invoice becomes overdue with it,
// and the schedule goes on after the retry.
func TestCollectionRetriesAReminder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	withEngine(t, b)
	ctx := context.Background()
	if _, err := b.s.UpdateAccount(ctx, tenant, AccountPatch{Reminders: &RemindersIn{DaysAfterDue: &[]int{1, 3}}}); err != nil {
		t.Fatal(err)
	}
	c := b.customer(t, CustomerIn{Name: "Flaky Mail Ltd", Email: ptr("ap@flaky.example")})
	inv, err := b.s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: c.ID, DaysUntilDue: ptr(0),
		Lines: []LineIn{{Description: "x", Quantity: 1, UnitAmountCents: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Finalize(ctx, tenant, inv.ID); err != nil {
		t.Fatal(err)
	}
	b.mail.mu.Lock()
	b.mail.fails = 1
	b.mail.mu.Unlock()
	get := func() *Invoice {
		got, err := b.s.Invoice(ctx, tenant, inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	b.clk.Advance(15 * time.Hour) // 2026-03-03T00:00: overdue, day-1 reminder; the mail fails
	await(t, "the failed attempt", func() bool {
		b.mail.mu.Lock()
		defer b.mail.mu.Unlock()
		return b.mail.fails == 0
	})
	if got := get(); got.Collection != CollectionCurrent || got.RemindersSent != 0 {
		t.Errorf("after the failure: %s, %d reminders", got.Collection, got.RemindersSent)
	}
	b.clk.Advance(runengine.AppTimerRetry)
	await(t, "the retried reminder", func() bool { return get().RemindersSent == 1 })
	got := get()
	if got.Collection != CollectionReminding || got.NextCollectionAt == nil ||
		!got.NextCollectionAt.Equal(time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("after the retry: %s, next %v", got.Collection, got.NextCollectionAt)
	}
	b.clk.Advance(2 * 24 * time.Hour)
	await(t, "the day-3 reminder", func() bool { return get().RemindersSent == 2 })
	if b.mail.count() != 2 {
		t.Errorf("%d mails", b.mail.count())
	}
}

// TestOnboardingByTheClock: connect, and the clock completes onboarding.
func TestOnboardingByTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	withEngine(t, b)
	ctx := context.Background()
	a, err := b.s.Connect(ctx, tenant)
	if err != nil || a.Status != AccountOnboarding {
		t.Fatalf("connect: %+v, %v", a, err)
	}
	b.clk.Advance(59 * time.Second)
	if a, _ := b.s.Account(ctx, tenant); a.Status != AccountOnboarding {
		t.Errorf("before a minute: %s", a.Status)
	}
	b.clk.Advance(time.Second)
	await(t, "connected", func() bool {
		a, err := b.s.Account(ctx, tenant)
		return err == nil && a.Status == AccountConnected && a.ChargesEnabled && a.PayoutsEnabled
	})
	c := b.customer(t, CustomerIn{Name: "After"})
	if c.PaymentsCustomerID == nil {
		t.Error("a customer made while connected has no payments customer id")
	}
}
