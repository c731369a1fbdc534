package invoicing

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const tenant = "ten_inv"

// mailbox is an email.send provider that keeps what it is asked to send,
// once per idempotency key.
type mailbox struct {
	mu    sync.Mutex
	sent  map[string]capability.EmailSendArgs
	keys  []string
	fails int // fail this many calls first (the provider is down)
}

func (m *mailbox) Call(_ context.Context, call capability.Call) (json.RawMessage, error) {
	var a capability.EmailSendArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fails > 0 {
		m.fails--
		return nil, errs.Unavailablef("the mail server is down")
	}
	if m.sent == nil {
		m.sent = map[string]capability.EmailSendArgs{}
	}
	if _, dup := m.sent[call.IdempotencyKey]; !dup {
		m.keys = append(m.keys, call.IdempotencyKey)
	}
	m.sent[call.IdempotencyKey] = a
	return json.RawMessage(`{"message_id":"msg_1","status":"queued"}`), nil
}

func (m *mailbox) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}

// crm is a small stand-in for the CRM app: companies and deals are keys in
// the same store, so the check reads real data.
type crm struct{ st store.Store }

func (c crm) add(t *testing.T, tenant, kind, id string) {
	t.Helper()
	if err := c.st.Update(context.Background(), func(tx store.Txn) error {
		return tx.Set(store.Key(tenant, "test-crm", kind, id), nil)
	}); err != nil {
		t.Fatal(err)
	}
}

func (c crm) exists(ctx context.Context, tenant, kind, id string) error {
	return c.st.View(ctx, func(r store.Reader) error {
		if _, err := r.Get(store.Key(tenant, "test-crm", kind, id)); err != nil {
			return errs.NotFoundf("%s not found", kind)
		}
		return nil
	})
}

func (c crm) CompanyExists(ctx context.Context, tenant, id string) error {
	return c.exists(ctx, tenant, "company", id)
}

func (c crm) DealExists(ctx context.Context, tenant, id string) error {
	return c.exists(ctx, tenant, "deal", id)
}

type bundle struct {
	st   store.Store
	clk  *clock.Fake
	mail *mailbox
	crm  crm
	s    *Service
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &bundle{st: st, clk: clock.NewFake(t0), mail: &mailbox{}, crm: crm{st}}
	b.s = New(Config{Store: st, Clock: b.clk, Mailer: b.mail, Companies: b.crm, PublicURL: "https://bas.example/api/"})
	return b
}

func (b *bundle) customer(t *testing.T, in CustomerIn) *Customer {
	t.Helper()
	c, err := b.s.CreateCustomer(context.Background(), tenant, in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
