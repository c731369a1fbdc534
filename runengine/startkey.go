package runengine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// IdempotencyWindow is how long a start's idempotency key returns the run
// it started (StartParams.IdempotencyKey); after it the key starts a new
// run.
const IdempotencyWindow = 24 * time.Hour

const (
	maxIdempotencyKey = 255
	// startKeySweep bounds the expired keys one idempotent start removes.
	startKeySweep = 8
)

// check reports what is wrong with p.
func (p StartParams) check() []errs.Violation {
	vs := missing("tenant", p.Tenant, "process_id", p.ProcessID)
	if p.Priority != "" && !slices.Contains(Priorities, p.Priority) {
		vs = append(vs, errs.Violation{Loc: []any{"priority"}, Msg: "must be one of: " + strings.Join(Priorities, ", "),
			Type: "enum"})
	}
	vs = append(vs, p.Subject.check()...)
	if len(p.IdempotencyKey) > maxIdempotencyKey {
		vs = append(vs, errs.Violation{Loc: []any{"idempotency_key"}, Msg: "must be at most 255 bytes",
			Type: "string_too_long"})
	}
	return vs
}

// check reports what is wrong with a start's subject, at ["subject",
// "type"] and ["subject", "label"]: a subject is given whole (both parts)
// or not at all, and each part takes at most MaxSubjectLen characters.
func (s Subject) check() []errs.Violation {
	if s == (Subject{}) {
		return nil
	}
	var vs []errs.Violation
	for _, f := range []struct{ name, v string }{{"type", s.Type}, {"label", s.Label}} {
		switch n := utf8.RuneCountInString(f.v); {
		case n == 0:
			vs = append(vs, errs.Violation{Loc: []any{"subject", f.name}, Msg: "is required when the subject's other part is given", Type: "missing"})
		case n > MaxSubjectLen:
			vs = append(vs, errs.Violation{Loc: []any{"subject", f.name}, Msg: fmt.Sprintf("must be at most %d characters", MaxSubjectLen), Type: "string_too_long"})
		}
	}
	return vs
}

// missing reports each of the fields, given as name and value pairs,
// whose value is empty.
func missing(fields ...string) []errs.Violation {
	var vs []errs.Violation
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			vs = append(vs, errs.Violation{Loc: []any{fields[i]}, Msg: "is required", Type: "missing"})
		}
	}
	return vs
}

// startKeyRecord is what a start's idempotency key holds: the run it
// started and when.
type startKeyRecord struct {
	RunID string    `json:"run_id"`
	At    time.Time `json:"at"`
}

// startKeyKey is where a tenant's idempotency key is kept.
func startKeyKey(tenant, key string) []byte { return store.Key(tenant, "start-key", key) }

// startKeyDue indexes the keys by time, so expired ones are found without
// a scan of every key.
func startKeyDue(at time.Time, tenant, key string) []byte {
	return store.Key(store.System, "start-key-due", at, tenant, key)
}

// claimStartKey takes the in-process lock of p's idempotency key and reads
// it. When the key started a run within IdempotencyWindow, that run is
// returned (the lock is released). Otherwise the caller holds the lock
// until its start is durable and writes ops in the start's commit (they
// read keys): they remove up to startKeySweep expired keys, whose locks
// they hold too. A caller passes its tenant's door (startGate) before it
// claims the key, never the other way round: one holding a key while it
// waits at the door would stall a start of that key holding the slot.
func (e *Engine) claimStartKey(ctx context.Context, p StartParams) (unlock func(), first *Run, ops []func(store.Txn) error, err error) {
	unlock, err = e.startKeys.lock(ctx, p.Tenant+"\x00"+p.IdempotencyKey)
	if err != nil {
		return nil, nil, nil, err
	}
	now := e.now()
	var rec *startKeyRecord
	type expired struct {
		due    []byte
		tenant string
		name   string
		at     time.Time
	}
	var old []expired
	err = e.st.View(ctx, func(r store.Reader) error {
		raw, err := r.Get(startKeyKey(p.Tenant, p.IdempotencyKey))
		switch {
		case err == nil:
			rec = new(startKeyRecord)
			if err := json.Unmarshal(raw, rec); err != nil {
				return errors.Wrap(err, "decode a start's idempotency key")
			}
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		until := store.Key(store.System, "start-key-due", now.Add(-IdempotencyWindow))
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "start-key-due"), KeysOnly: true},
			func(key, _ []byte) error {
				if string(key) >= string(until) || len(old) == startKeySweep {
					return store.ErrStop
				}
				parts, err := store.DecodeKey(key)
				if err != nil || len(parts) != 5 {
					return errors.Newf("runengine: bad start key index %q", key)
				}
				at, _ := parts[2].(int64)
				tenant, _ := parts[3].(string)
				name, _ := parts[4].(string)
				old = append(old, expired{due: append([]byte(nil), key...), tenant: tenant, name: name,
					at: time.Unix(0, at).UTC()})
				return nil
			})
	})
	if err == nil && rec != nil && now.Sub(rec.At) < IdempotencyWindow {
		unlock()
		first, err = e.GetRun(ctx, p.Tenant, rec.RunID)
		switch {
		case err != nil:
			return nil, nil, nil, err
		case first.ProcessID != p.ProcessID:
			return nil, nil, nil, errs.Conflictf("idempotency key already started a run of another process")
		}
		return nil, first, nil, nil
	}
	if err != nil {
		unlock()
		return nil, nil, nil, err
	}
	// Sweep: an expired key is removed with its index entry, unless a start
	// holds it (that start rewrites it).
	var unlocks []func()
	for _, x := range old {
		if x.tenant == p.Tenant && x.name == p.IdempotencyKey {
			ops = append(ops, deleteKey(x.due)) // the start rewrites the key itself
			continue
		}
		u, ok := e.startKeys.tryLock(x.tenant + "\x00" + x.name)
		if !ok {
			continue
		}
		unlocks = append(unlocks, u)
		due, key, at := x.due, startKeyKey(x.tenant, x.name), x.at
		ops = append(ops, func(tx store.Txn) error {
			if err := tx.Delete(due); err != nil {
				return err
			}
			// The key goes only when it still holds the start this
			// entry indexes (a later start rewrote it otherwise).
			raw, err := tx.Get(key)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return nil
			case err != nil:
				return err
			}
			var rec startKeyRecord
			if json.Unmarshal(raw, &rec) == nil && !rec.At.Equal(at) {
				return nil
			}
			return tx.Delete(key)
		})
	}
	own := unlock
	return func() {
		for _, u := range unlocks {
			u()
		}
		own()
	}, nil, ops, nil
}

// startKeyWrite is the write of a start's idempotency key and its index
// entry, in the commit of the start. On a cluster node it first reads the
// key again: another node may have started a run with it since
// claimStartKey (its lock is this process's only), and then the start is
// refused with errStartKeyTaken.
func (e *Engine) startKeyWrite(tenant, key, runID string) func(store.Txn) error {
	at := e.now()
	raw, err := json.Marshal(startKeyRecord{RunID: runID, At: at})
	shared := e.cluster != nil
	return func(tx store.Txn) error {
		if err != nil {
			return err
		}
		if shared {
			cur, err := tx.Get(startKeyKey(tenant, key))
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return err
			default:
				var rec startKeyRecord
				if json.Unmarshal(cur, &rec) == nil && rec.RunID != runID && at.Sub(rec.At) < IdempotencyWindow {
					return errStartKeyTaken
				}
			}
		}
		if err := tx.Set(startKeyKey(tenant, key), raw); err != nil {
			return err
		}
		return tx.Set(startKeyDue(at, tenant, key), nil)
	}
}

// errStartKeyTaken refuses a start on a cluster node whose idempotency key
// another node used first; Start then answers with that node's run.
var errStartKeyTaken = errs.Conflictf("idempotency key already started a run on another node")

// isErr reports whether err is target or wraps it. errors.Is would not
// do for errors made by errs: it takes any two of one kind (two
// conflicts) for the same.
func isErr(err, target error) bool {
	_, ok := errors.If(err, func(e error) (any, bool) { return nil, e == target })
	return ok
}

// keyedRun returns the run p's idempotency key started (see
// errStartKeyTaken).
func (e *Engine) keyedRun(ctx context.Context, p StartParams) (*Run, error) {
	var rec startKeyRecord
	err := e.st.View(ctx, func(r store.Reader) error {
		raw, err := r.Get(startKeyKey(p.Tenant, p.IdempotencyKey))
		if err != nil {
			return err
		}
		return errors.Wrap(json.Unmarshal(raw, &rec), "decode a start's idempotency key")
	})
	if err != nil {
		return nil, err
	}
	first, err := e.GetRun(ctx, p.Tenant, rec.RunID)
	if err == nil && first.ProcessID != p.ProcessID {
		return nil, errs.Conflictf("idempotency key already started a run of another process")
	}
	return first, err
}

// keyLocks are in-process locks by name: two starts with one idempotency
// key are made one after the other, so the second finds the first's key.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when released
}

// lock waits for name to be free and takes it.
func (l *keyLocks) lock(ctx context.Context, name string) (func(), error) {
	for {
		unlock, ok, wait := l.take(name)
		if ok {
			return unlock, nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, errors.WithStack(ctx.Err())
		}
	}
}

// tryLock takes name when it is free.
func (l *keyLocks) tryLock(name string) (func(), bool) {
	unlock, ok, _ := l.take(name)
	return unlock, ok
}

func (l *keyLocks) take(name string) (unlock func(), ok bool, wait <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch, busy := l.held[name]; busy {
		return nil, false, ch
	}
	if l.held == nil {
		l.held = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	l.held[name] = ch
	return func() {
		l.mu.Lock()
		delete(l.held, name)
		l.mu.Unlock()
		close(ch)
	}, true, nil
}
