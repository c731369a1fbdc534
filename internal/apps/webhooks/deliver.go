package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

var _ runengine.EventTap = (*Service)(nil)

// Payload is the body of a delivery: the event.
type Payload struct {
	ID     string         `json:"id"`
	Tenant string         `json:"tenant"`
	Name   string         `json:"name"`
	Data   map[string]any `json:"data"`
	At     time.Time      `json:"at"`
}

// Wants reports whether an active subscription of tenant names events
// called name.
func (s *Service) Wants(tenant, name string) bool {
	active, err := s.active(tenant)
	if err != nil {
		return true // Tap logs the error
	}
	for _, sub := range active {
		if matches(sub.Events, name) {
			return true
		}
	}
	return false
}

// Tap returns the writes of ev's deliveries, one per active subscription
// of its workspace whose events match its name; the run engine adds them
// to the transaction that emits ev. It reads nothing inside that
// transaction (the subscriptions are cached).
func (s *Service) Tap(ev *runengine.Event) (func(store.Txn) error, func()) {
	active, err := s.active(ev.Tenant)
	if err != nil {
		s.log.Error("webhooks: read subscriptions", "tenant", ev.Tenant, "error", err.Error())
		return nil, nil
	}
	var recs []*deliveryRecord
	var body []byte
	for _, sub := range active {
		if !matches(sub.Events, ev.Name) {
			continue
		}
		if body == nil {
			if body, err = json.Marshal(Payload{ID: ev.ID, Tenant: ev.Tenant, Name: ev.Name, Data: ev.Data, At: ev.At.UTC()}); err != nil {
				s.log.Error("webhooks: encode event", "event", ev.Name, "error", err.Error())
				return nil, nil
			}
		}
		at := ev.At.UTC()
		recs = append(recs, &deliveryRecord{Delivery: Delivery{ID: s.ids.New("whd", at), SubscriptionID: sub.ID, EventID: ev.ID,
			Event: ev.Name, Status: StatusPending, CreatedAt: at, NextAttemptAt: &at}, Body: string(body)})
	}
	if len(recs) == 0 {
		return nil, nil
	}
	raws := make([][]byte, len(recs))
	for i, d := range recs {
		if raws[i], err = json.Marshal(d); err != nil {
			return nil, nil
		}
	}
	tenant := ev.Tenant
	return func(tx store.Txn) error {
		for i, d := range recs {
			if err := deliveries.PutOver(tx, tenant, nil, d, raws[i]); err != nil {
				return err
			}
			if err := tx.Set(dueKey(d.CreatedAt, tenant, d.ID), nil); err != nil {
				return err
			}
		}
		return nil
	}, s.sched.wake
}

// Kick wakes the scheduler after an app's transaction emitted events.
func (s *Service) Kick() { s.sched.wake() }

// scheduler sleeps until the earliest due delivery and hands due ones to
// senders, at most cfg.PerTenant at a time per workspace.
type scheduler struct {
	s      *Service
	wakeCh chan struct{}
	quit   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	stopMu sync.Once

	mu       sync.Mutex
	inflight map[string]bool // due keys being sent
	busy     map[string]int  // tenant -> sends in flight
}

func newScheduler(s *Service) *scheduler {
	ctx, cancel := context.WithCancel(context.Background())
	return &scheduler{s: s, wakeCh: make(chan struct{}, 1), quit: make(chan struct{}), ctx: ctx, cancel: cancel,
		inflight: map[string]bool{}, busy: map[string]int{}}
}

func (sc *scheduler) wake() {
	select {
	case sc.wakeCh <- struct{}{}:
	default:
	}
}

func (sc *scheduler) start() {
	sc.once.Do(func() {
		sc.wg.Add(1)
		go func() { defer sc.wg.Done(); sc.loop() }()
	})
}

func (sc *scheduler) stop() {
	sc.stopMu.Do(func() {
		close(sc.quit)
		sc.cancel()
	})
	sc.wg.Wait()
}

func (sc *scheduler) loop() {
	var poll <-chan time.Time // nil: this node writes every delivery it sends
	if sc.s.cfg.Owns != nil {
		t := time.NewTicker(SharedPoll)
		defer t.Stop()
		poll = t.C
	}
	for {
		next, err := sc.fire()
		if err != nil && sc.ctx.Err() == nil {
			sc.s.log.Error("webhooks: scheduler", "error", err.Error())
		}
		var t clock.Timer
		var timerC <-chan time.Time
		if !next.IsZero() {
			t = sc.s.clock.NewTimer(next.Sub(sc.s.clock.Now()))
			timerC = t.C()
		}
		select {
		case <-sc.quit:
			if t != nil {
				t.Stop()
			}
			return
		case <-sc.wakeCh:
		case <-timerC:
		case <-poll:
		}
		if t != nil {
			t.Stop()
		}
	}
}

type dueItem struct {
	key        []byte
	tenant, id string
}

// fire starts the sends of due deliveries whose workspace has room and
// returns when the earliest entry still ahead is due (zero when none, or
// when it stopped at a full hand: a finished send wakes the loop). Entries
// of a workspace at its limit are passed over, so a backlog of one
// workspace never hides another's.
func (sc *scheduler) fire() (time.Time, error) {
	now := sc.s.clock.Now()
	var due []dueItem
	var next time.Time
	sc.mu.Lock()
	defer sc.mu.Unlock()
	err := sc.s.st.View(sc.ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "webhook-due"), KeysOnly: true}, func(key, _ []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil || len(parts) != 5 {
				return errors.Newf("webhooks: bad due key %q", key)
			}
			at := time.Unix(0, parts[2].(int64))
			if at.After(now) {
				next = at
				return store.ErrStop
			}
			tenant := parts[3].(string)
			if sc.inflight[string(key)] || sc.busy[tenant] >= sc.s.cfg.PerTenant {
				return nil
			}
			if owns := sc.s.cfg.Owns; owns != nil && !owns(parts[4].(string)) {
				return nil // another node's to send
			}
			d := dueItem{key: append([]byte(nil), key...), tenant: tenant, id: parts[4].(string)}
			sc.inflight[string(d.key)] = true
			sc.busy[tenant]++
			due = append(due, d)
			if len(due) >= 1000 {
				return store.ErrStop
			}
			return nil
		})
	})
	for _, d := range due {
		if err != nil { // hand nothing out: the next look sees them again
			sc.release(d)
			continue
		}
		sc.wg.Add(1)
		go func() {
			defer sc.wg.Done()
			sc.s.attempt(sc.ctx, d.key, d.tenant, d.id)
			sc.mu.Lock()
			sc.release(d)
			sc.mu.Unlock()
			sc.wake()
		}()
	}
	if err != nil {
		return time.Time{}, err
	}
	return next, nil
}

// release forgets a send; sc.mu is held.
func (sc *scheduler) release(d dueItem) {
	delete(sc.inflight, string(d.key))
	sc.busy[d.tenant]--
	if sc.busy[d.tenant] <= 0 {
		delete(sc.busy, d.tenant)
	}
}

// attempt sends a due delivery once and records the outcome: success,
// a retry at a later due time, or failure after RetryFor.
func (s *Service) attempt(ctx context.Context, key []byte, tenant, id string) {
	if id, ok := strings.CutPrefix(id, expirePrefix); ok {
		s.expire(ctx, key, tenant, id)
		return
	}
	var d *deliveryRecord
	var sub *stored
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		if d, err = deliveries.Get(r, tenant, id); err != nil {
			return err
		}
		sub, err = subs.Get(r, tenant, d.SubscriptionID)
		if errors.Is(err, store.ErrNotFound) {
			sub, err = nil, nil
		}
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		if ctx.Err() == nil {
			s.log.Error("webhooks: read delivery", "tenant", tenant, "delivery", id, "error", err.Error())
		}
		return
	}
	if d == nil || d.Status != StatusPending || sub == nil || !sub.Active {
		// Gone, done, or its subscription deleted or disabled: drop it.
		_ = s.st.Update(ctx, func(tx store.Txn) error {
			if d != nil && d.Status == StatusPending {
				msg := "webhook deleted or disabled"
				t := s.clock.Now().UTC()
				d.Status, d.LastError, d.NextAttemptAt, d.CompletedAt = StatusFailed, &msg, nil, &t
				if err := deliveries.Put(tx, tenant, d); err != nil {
					return err
				}
				if err := tx.Set(dueKey(t.Add(s.cfg.Keep), tenant, expirePrefix+d.ID), nil); err != nil {
					return err
				}
			}
			return tx.Delete(key)
		})
		return
	}
	sent := s.clock.Now().UTC()
	code, took, sendErr := s.send(ctx, sub, d, sent)
	if ctx.Err() != nil {
		return // closing: the due entry stays, the attempt is made again
	}
	now := s.clock.Now().UTC()
	d.Attempts++
	ms := took.Milliseconds()
	d.DurationMS = &ms
	d.ResponseCode = nil
	if code != 0 {
		d.ResponseCode = &code
	}
	outcome := OutcomeSucceeded
	var nextKey []byte
	if sendErr == nil {
		d.Status, d.LastError, d.NextAttemptAt, d.CompletedAt = StatusSucceeded, nil, nil, &now
	} else {
		msg := sendErr.Error()
		d.LastError = &msg
		if now.Sub(d.CreatedAt) >= s.cfg.RetryFor {
			outcome = OutcomeFailed
			d.Status, d.NextAttemptAt, d.CompletedAt = StatusFailed, nil, &now
		} else {
			outcome = OutcomeRetrying
			at := now.Add(s.backoff(d.Attempts))
			d.NextAttemptAt = &at
			nextKey = dueKey(at, tenant, d.ID)
		}
	}
	disabled := false
	err = s.st.Update(ctx, func(tx store.Txn) error {
		disabled = false
		if err := deliveries.Put(tx, tenant, d); err != nil {
			return err
		}
		if err := tx.Delete(key); err != nil {
			return err
		}
		if nextKey == nil { // finished: it leaves the log after Keep
			nextKey = dueKey(now.Add(s.cfg.Keep), tenant, expirePrefix+d.ID)
		}
		if err := tx.Set(nextKey, nil); err != nil {
			return err
		}
		cur, err := subs.Get(tx, tenant, sub.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case sendErr == nil && cur.FailingSince != nil:
			cur.FailingSince = nil
		case sendErr != nil && cur.FailingSince == nil:
			cur.FailingSince = &sent
		case sendErr != nil && cur.Active && now.Sub(*cur.FailingSince) >= s.cfg.RetryFor:
			before := cur.Subscription
			reason := fmt.Sprintf("deliveries failed for %s since %s", s.cfg.RetryFor, cur.FailingSince.UTC().Format(time.RFC3339))
			cur.Active, cur.DisabledReason, cur.UpdatedAt = false, &reason, now
			disabled = true
			if err := audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: audit.System, Action: "disable", Entity: "webhook",
				EntityID: cur.ID, Before: audit.Marshal(before), After: audit.Marshal(cur.Subscription), Reason: reason}); err != nil {
				return err
			}
		default:
			return nil
		}
		return subs.Put(tx, tenant, cur)
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("webhooks: record attempt", "tenant", tenant, "delivery", id, "error", err.Error())
		}
		return
	}
	if disabled {
		s.forget(tenant)
		s.log.Warn("webhooks: subscription disabled", "tenant", tenant, "webhook", sub.ID, "reason", *d.LastError)
	}
	if sendErr != nil {
		s.log.Info("webhooks: delivery failed", "tenant", tenant, "webhook", sub.ID, "delivery", d.ID,
			"attempt", d.Attempts, "outcome", outcome, "error", sendErr.Error())
	}
	if s.cfg.OnAttempt != nil {
		s.cfg.OnAttempt(tenant, &d.Delivery, outcome)
	}
}

// expire removes a finished delivery from the log.
func (s *Service) expire(ctx context.Context, key []byte, tenant, id string) {
	err := s.st.Update(ctx, func(tx store.Txn) error {
		if err := deliveries.Delete(tx, tenant, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.Delete(key)
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("webhooks: expire delivery", "tenant", tenant, "delivery", id, "error", err.Error())
		}
		return
	}
	if s.onExpire != nil {
		s.onExpire(id)
	}
}

// backoff is the delay before the attempt after attempts: full jitter
// below RetryBase * 2^(attempts-1), capped at RetryMax, and at least a
// tenth of the bound.
func (s *Service) backoff(attempts int) time.Duration {
	bound := s.cfg.RetryMax
	if attempts < 30 {
		if b := s.cfg.RetryBase << (attempts - 1); b > 0 && b < bound {
			bound = b
		}
	}
	lo := bound / 10
	return lo + rand.N(bound-lo+1)
}

// send posts the delivery's body, signed at t, and returns the status
// answered and the time taken; a non-2xx status is an error.
func (s *Service) send(ctx context.Context, sub *stored, d *deliveryRecord, t time.Time) (int, time.Duration, error) {
	body := []byte(d.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "bas-webhooks/1")
	req.Header.Set("Bas-Event", d.Event)
	req.Header.Set("Bas-Delivery", d.ID)
	req.Header.Set("Bas-Signature", Sign(sub.Secret, t, body))
	began := time.Now()
	resp, err := s.client.Do(req)
	took := time.Since(began)
	if err != nil {
		if errors.Is(err, errRefused) {
			return 0, took, errors.New("refused: the receiver's address is not public")
		}
		return 0, took, errors.New(cleanErr(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, took, errors.Newf("receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, took, nil
}

// cleanErr is a transport error without the request's URL.
func cleanErr(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}
