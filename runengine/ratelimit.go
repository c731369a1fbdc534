package runengine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/refs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// RateLimit bounds the capability calls runs make: at most Limit calls per
// Per, for each tenant, and for each value of Key when set.
type RateLimit struct {
	// Capability is a capability id (crm.contact.create), or a provider's
	// prefix ending in a dot (crm.) for all of its capabilities.
	Capability string
	// Key, when set, is a path of the call's arguments (args.customer_id):
	// each value has its own limit (a call without one shares the empty
	// value's).
	Key string
	// Limit calls per Per.
	Limit int
	Per   time.Duration
}

func (l RateLimit) matches(capID string) bool {
	if strings.HasSuffix(l.Capability, ".") {
		return strings.HasPrefix(capID, l.Capability)
	}
	return l.Capability == capID
}

// String describes the limit as logs and errors name it: "rate limit of
// crm.lead.sync: 10 per 1s per args.customer_id".
func (l RateLimit) String() string {
	s := fmt.Sprintf("rate limit of %s: %d per %s", l.Capability, l.Limit, l.Per)
	if l.Key != "" {
		s += " per " + l.Key
	}
	return s
}

// limiter keeps a token bucket per tenant, limit and key value. A call
// over the limit reserves the next free slot (the bucket goes below zero)
// and its run waits for it in the due-time index, so waiting runs are
// served in the order they came and none polls. Across a restart, the
// slots reserved are kept in the store (rateWait), and Close keeps the
// buckets that are not full (saveBuckets).
type limiter struct {
	limits  []RateLimit
	mu      sync.Mutex
	buckets map[bucketKey]*bucket
}

type bucketKey struct {
	tenant string
	limit  int
	key    string
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets is how many buckets the limiter keeps before it forgets the
// full ones (which it can make again as they were).
const maxBuckets = 10000

func newLimiter(limits []RateLimit) (*limiter, error) {
	if len(limits) == 0 {
		return nil, nil
	}
	for i, l := range limits {
		if l.Limit <= 0 || l.Per <= 0 || l.Capability == "" {
			return nil, errors.Newf("runengine: RateLimits[%d] needs a Capability, a Limit and a Per above zero", i)
		}
	}
	return &limiter{limits: limits, buckets: map[bucketKey]*bucket{}}, nil
}

// take takes a slot for a call of capID with args by tenant at now: it
// returns 0 when the call may go now, else how long to wait for the slot
// it reserved, and the limit's description.
func (l *limiter) take(tenant, capID string, args any, now time.Time) (time.Duration, string) {
	var wait time.Duration
	var why string
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, lim := range l.limits {
		if !lim.matches(capID) {
			continue
		}
		k := bucketKey{tenant: tenant, limit: i, key: lim.keyOf(args)}
		b := l.bucket(k, now)
		b.tokens = min(float64(lim.Limit), lim.tokensAt(b, now))
		b.at = now
		b.tokens--
		if b.tokens < 0 {
			if w := time.Duration(-b.tokens / lim.rate()); w > wait {
				wait, why = w, lim.String()
			}
		}
	}
	return wait, why
}

// rate is how many tokens l's buckets gain per nanosecond.
func (l RateLimit) rate() float64 { return float64(l.Limit) / float64(l.Per) }

// tokensAt is the tokens b holds at t under l, before l.Limit caps them.
func (l RateLimit) tokensAt(b *bucket, t time.Time) float64 {
	return b.tokens + float64(t.Sub(b.at))*l.rate()
}

// keyOf is the value of l's Key in a call's args, as text: "" when l has
// no Key or the args none.
func (l RateLimit) keyOf(args any) string {
	if l.Key == "" {
		return ""
	}
	v, ok := refs.Lookup(map[string]any{"args": args}, l.Key)
	if !ok {
		return ""
	}
	s, _ := refs.Text(v)
	return s
}

// keysOf is, by Key path, the value in a call's args of the Key of each
// limit a call of capID draws from that has one (see keyOf); nil when
// none has.
func (l *limiter) keysOf(capID string, args any) map[string]string {
	var keys map[string]string
	for _, lim := range l.limits {
		if lim.Key != "" && lim.matches(capID) {
			if keys == nil {
				keys = map[string]string{}
			}
			keys[lim.Key] = lim.keyOf(args)
		}
	}
	return keys
}

// bucket returns k's bucket, made full at now when there is none; l.mu is
// held.
func (l *limiter) bucket(k bucketKey, now time.Time) *bucket {
	b := l.buckets[k]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.forgetFull(now)
		}
		b = &bucket{tokens: float64(l.limits[k.limit].Limit), at: now}
		l.buckets[k] = b
	}
	return b
}

// reserved takes back a slot reserved at at before the engine opened (see
// rateWait): each bucket the call of capID draws from is empty at at, so
// no call takes a slot before the reserved ones. A bucket the call did
// not wait for was not empty then; it is made so all the same, which
// holds the limit, at worst for one call longer.
func (l *limiter) reserved(w rateWait, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, lim := range l.limits {
		if !lim.matches(w.Cap) {
			continue
		}
		k := bucketKey{tenant: w.tenant, limit: i}
		if lim.Key != "" {
			v, ok := w.Keys[lim.Key]
			if !ok { // a limit the call was not made under
				continue
			}
			k.key = v
		}
		b := l.bucket(k, now)
		if lim.tokensAt(b, w.at) > 0 {
			b.tokens, b.at = 0, w.at
		}
	}
}

// maxPer is the longest Per of the limits: a slot reserved that long ago
// no longer counts.
func (l *limiter) maxPer() time.Duration {
	var p time.Duration
	for _, lim := range l.limits {
		p = max(p, lim.Per)
	}
	return p
}

// forgetFull drops the buckets that are full at now.
func (l *limiter) forgetFull(now time.Time) {
	for k, b := range l.buckets {
		lim := l.limits[k.limit]
		if lim.tokensAt(b, now) >= float64(lim.Limit) {
			delete(l.buckets, k)
		}
	}
}

// rateWait is a slot a rate limit reserved for a run's call, kept in the
// store while the run waits for it, so that the engine opening next takes
// it back (limiter.reserved) before any call takes a slot: the calls made
// once the runs waiting for theirs are resumed stay within the limits.
// Its key is rateWaitKey; it is written with the wait's timer and deleted
// when the timer fires, or when the run is cancelled or paused while it
// waits (see dropRateSlot).
type rateWait struct {
	// Cap is the capability called; Keys the values of the limits' Key
	// paths in its args.
	Cap  string            `json:"cap"`
	Keys map[string]string `json:"keys,omitempty"`

	tenant string
	at     time.Time // the time of the slot, when the run's wait ends
}

// rateWaitKey is the key of the slot reserved at at for a call of the
// run: (System, "ratewait", unix-nanos, tenant, run-id).
func rateWaitKey(at time.Time, tenant, runID string) []byte {
	return store.Key(store.System, "ratewait", at.UnixNano(), tenant, runID)
}

// rateToken is the wait token of a rate limit's wait ending at at; the
// time it holds names the slot's rateWaitKey.
func rateToken(at time.Time) string { return "rate-" + strconv.FormatInt(at.UnixNano(), 10) }

// rateTokenTime is the time of a rateToken, false for another token (or
// one of the form before, which kept no rateWait).
func rateTokenTime(token string) (time.Time, bool) {
	s, ok := strings.CutPrefix(token, "rate-")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, n).UTC(), true
}

// rateLimited makes the step wait, in the due-time index, for the slot a
// rate limit reserved for its call, and reports whether it must; the call
// made when the wait ends uses the reservation.
func (x *exec) rateLimited(st *StepRun, capID string, args any) bool {
	if st.internal.RateReserved {
		st.internal.RateReserved = false
		x.dirty = true
		return false
	}
	lim := x.w.e.limiter
	if lim == nil {
		return false
	}
	wait, why := lim.take(x.r.Tenant, capID, args, x.now)
	if wait <= 0 {
		return false
	}
	at := x.now.Add(wait)
	st.internal.RateReserved = true
	token := rateToken(at)
	st.internal.WaitToken = token
	x.addTimer(at, token)
	if x.w.e.cluster == nil { // a node's limiter counts its own calls
		val, _ := json.Marshal(rateWait{Cap: capID, Keys: lim.keysOf(capID, args)}) // strings only
		x.fx.ops = append(x.fx.ops, setKey(rateWaitKey(at, x.r.Tenant, x.r.ID), val))
	}
	x.wait(st, StepRunning)
	x.r.WaitingReason = why
	return true
}

// rateWaitOver deletes the rateWait of a rate limit's wait whose timer,
// token, fired.
func (x *exec) rateWaitOver(token string) {
	if at, ok := rateTokenTime(token); ok {
		x.fx.ops = append(x.fx.ops, deleteKey(rateWaitKey(at, x.r.Tenant, x.r.ID)))
	}
}

// dropRateSlot gives up the slot a rate limit reserved for the next call
// of st, the run's current step, if it holds one: its rateWait is deleted
// in this change, and the call, if the run makes it after all (a paused
// run resumed), takes a new slot then. The slot given up passes unused; it
// is not given back to the bucket, whose later slots are reserved already.
func (x *exec) dropRateSlot(st *StepRun) {
	if !st.internal.RateReserved {
		return
	}
	st.internal.RateReserved = false
	x.rateWaitOver(st.internal.WaitToken)
	x.dirty = true
}

// openRateWaits takes back, before the engine's first call, the buckets
// the last Close kept (see saveBuckets) and the slots reserved for the
// calls of runs still waiting for theirs (see rateWait), and deletes the
// kept buckets and the rateWaits that no longer count. An engine without
// rate limits, or a cluster's node (whose limiter counts its own calls and
// keeps none), deletes them all: none counts, and no Open would read them
// again. A kept bucket or slot that cannot be decoded is logged and
// deleted rather than failing the Open: the limit then counts the calls it
// still knows of.
func (e *Engine) openRateWaits(ctx context.Context) error {
	lim := e.limiter
	if e.cluster != nil {
		lim = nil
	}
	now := e.now()
	var old time.Time // a rateWait at or before old no longer counts
	if lim != nil {
		old = now.Add(-lim.maxPer())
	}
	var gone [][]byte
	err := e.st.View(ctx, func(r store.Reader) error {
		raw, err := r.Get(bucketsKey)
		switch {
		case err == nil:
			if lim != nil {
				var saved []savedBucket
				if err := json.Unmarshal(raw, &saved); err != nil {
					e.log.Warn("runengine: the rate limit buckets the last Close kept cannot be decoded; they are dropped and the buckets start full",
						"error", err)
				} else {
					lim.restore(saved, now)
				}
			}
			gone = append(gone, bucketsKey)
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "ratewait")}, func(key, val []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil || len(parts) != 5 {
				e.log.Warn("runengine: a kept rate limit slot has a key that cannot be decoded; it is dropped",
					"key", fmt.Sprintf("%q", key))
				gone = append(gone, bytes.Clone(key))
				return nil
			}
			nanos, _ := parts[2].(int64)
			tenant, _ := parts[3].(string)
			w := rateWait{tenant: tenant, at: time.Unix(0, nanos).UTC()}
			if lim == nil || !w.at.After(old) {
				gone = append(gone, bytes.Clone(key))
				return nil
			}
			if err := json.Unmarshal(val, &w); err != nil {
				e.log.Warn("runengine: a kept rate limit slot cannot be decoded; it is dropped and no longer counts",
					"tenant", tenant, "error", err)
				gone = append(gone, bytes.Clone(key))
				return nil
			}
			lim.reserved(w, now)
			return nil
		})
	})
	if err != nil {
		return errors.Wrap(err, "runengine: read rate waits")
	}
	if len(gone) == 0 {
		return nil
	}
	err = e.deleteKeys(ctx, gone)
	return errors.Wrap(err, "runengine: delete rate waits")
}

// deleteKeys deletes keys from the store in one commit.
func (e *Engine) deleteKeys(ctx context.Context, keys [][]byte) error {
	return e.st.Update(ctx, func(tx store.Txn) error { return deleteAll(tx, keys) })
}

// deleteAll deletes keys in tx.
func deleteAll(tx store.Txn, keys [][]byte) error {
	for _, k := range keys {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// bucketsKey holds the buckets Close kept for the next Open.
var bucketsKey = store.Key(store.System, "ratebuckets")

// savedBucket is a bucket that is not full, as Close keeps it.
type savedBucket struct {
	Tenant string `json:"tenant"`
	// Limit is the limit's String: a bucket of a limit changed since is
	// not taken back.
	Limit  string    `json:"limit"`
	Key    string    `json:"key,omitempty"`
	Tokens float64   `json:"tokens"`
	At     time.Time `json:"at"`
}

// saved returns the buckets that are not full at now.
func (l *limiter) saved(now time.Time) []savedBucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []savedBucket
	for k, b := range l.buckets {
		lim := l.limits[k.limit]
		if lim.tokensAt(b, now) < float64(lim.Limit) {
			out = append(out, savedBucket{Tenant: k.tenant, Limit: lim.String(), Key: k.key, Tokens: b.tokens, At: b.at})
		}
	}
	return out
}

// restore takes back the buckets saved returned, those of the limits
// still configured.
func (l *limiter) restore(saved []savedBucket, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	index := make(map[string]int, len(l.limits))
	for i, lim := range l.limits {
		index[lim.String()] = i
	}
	for _, sb := range saved {
		if i, ok := index[sb.Limit]; ok {
			b := l.bucket(bucketKey{tenant: sb.Tenant, limit: i, key: sb.Key}, now)
			b.tokens, b.at = sb.Tokens, sb.At
		}
	}
}

// saveBuckets keeps the limiter's buckets that are not full for the next
// Open, once the workers stopped: the calls just made count after a
// restart too. A crash keeps none (only the rateWaits).
func (e *Engine) saveBuckets() {
	lim := e.limiter
	if lim == nil || e.cluster != nil {
		return
	}
	saved := lim.saved(e.now())
	if len(saved) == 0 {
		return
	}
	val, err := json.Marshal(saved)
	if err == nil {
		err = e.st.Update(context.Background(), func(tx store.Txn) error { return tx.Set(bucketsKey, val) })
	}
	if err != nil {
		e.log.Error("keep the rate limits' buckets", "error", err)
	}
}
