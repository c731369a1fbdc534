package runengine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// heldMail fills email.send: its first call answers at once, each later
// one tells entered and answers what the test sends on answer.
type heldMail struct {
	calls   atomic.Int32
	entered chan struct{}
	answer  chan error
}

func (p *heldMail) Info() capability.Info {
	return capability.Info{ID: "test.heldmail", Name: "Held mail", Kind: capability.KindBuiltin, Capabilities: []string{"email.send"}}
}

func (p *heldMail) Call(ctx context.Context, _ capability.Call) (json.RawMessage, error) {
	if p.calls.Add(1) == 1 {
		return json.RawMessage(`{"message_id":"msg_1","status":"queued"}`), nil
	}
	p.entered <- struct{}{}
	select {
	case err := <-p.answer:
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"message_id":"msg_2","status":"queued"}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestFollowUpReplyWhileAReminderIsOnItsWay: a reply that comes while a
// reminder's call is in flight ends the step once that call answers, and
// reminders_sent counts the reminder if it went out. A reminder that
// failed then is not counted and neither retried nor failing the run.
func TestFollowUpReplyWhileAReminderIsOnItsWay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer error
		want   float64
	}{
		{"the reminder went out", nil, 2},
		{"the reminder failed", errs.Forbiddenf("the mailbox refused it"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			mail := &heldMail{entered: make(chan struct{}, 1), answer: make(chan error, 1)}
			if err := b.reg.Register(mail); err != nil {
				t.Fatal(err)
			}
			def := b.create(t, `{"type":"manual"}`, `[{"key":"chase","type":"follow_up","config":{"to":"ap@supplier.example",
				"subject":"Invoice ${subject.label}","body":"Please pay.","every":"1h","max_reminders":3,
				"until_event":"payment.received"}},
				{"key":"next","type":"execute","capability":"test.echo","config":{"args":{"x":1}}}]`)
			id := b.start(t, def.ID)
			b.waitRun(t, id, "waiting", stepStatus("chase", runengine.StepWaiting))
			b.advance(time.Hour)
			testwait.Recv(t, mail.entered, "the second reminder sent")
			if _, err := b.eng.Publish(context.Background(), runengine.PublishParams{Tenant: tenant, Name: "payment.received",
				Data: map[string]any{"invoice": "INV-1"}}); err != nil {
				t.Fatal(err)
			}
			// The reply is taken (the step keeps it) while the reminder is
			// still on its way.
			b.waitRun(t, id, "replied", func(r *runengine.Run) bool {
				out, _ := r.Steps[0].Output.(map[string]any)
				return out["replied"] == true
			})
			mail.answer <- tc.answer
			r := b.waitRun(t, id, "completed", status(runengine.RunCompleted))
			out := r.Steps[0].Output.(map[string]any)
			want := map[string]any{"replied": true, "reminders_sent": tc.want, "reply": map[string]any{"invoice": "INV-1"}}
			delete(out, "event_id")
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("follow-up output (-want +got):\n%s", diff)
			}
			if got := mail.calls.Load(); got != 2 {
				t.Errorf("reminders sent = %d, want 2", got)
			}
			if r.Steps[1].Status != runengine.StepCompleted {
				t.Errorf("next step %s", r.Steps[1].Status)
			}
		})
	}
}
