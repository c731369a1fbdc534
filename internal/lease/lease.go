// Package lease lets several engine nodes share one store safely: a node
// claims a named piece of work (a shard of runs, timers, schedules and
// event deliveries) through a lease kept in the store, with an owner, an
// expiry and a fencing token.
//
//   - Acquire claims a lease that is free, expired or already the
//     caller's; the token grows every time the lease changes hands.
//   - A node that dies stops renewing; at expiry another node acquires the
//     lease, with a larger token, and finishes the work.
//   - Check, called inside every write transaction that acts on the claim,
//     refuses the write unless the lease is still held with the caller's
//     token. Check reads the lease record in the transaction, so a
//     takeover that commits meanwhile makes the write conflict (the store's
//     optimistic concurrency), and the write's retry sees the new token and
//     is refused: a node paused past its expiry (a GC pause, a partition)
//     can never write over its successor, whatever the clocks say.
//   - Members and Balance spread shards over the live nodes by rendezvous
//     hashing, so a node joining or leaving moves only its share.
//
// Expiry is judged by each node's clock; clock skew between nodes shortens
// or lengthens a lease by the skew, but never breaks fencing. On one node
// (Badger) none of this is needed: the engine does not pay for leases
// there.
package lease

import (
	"cmp"
	"context"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// ErrHeld marks an Acquire refused because another owner holds the lease
// and it has not expired. It is errs.Conflict.
var ErrHeld = errors.Mark(errors.New("lease: held by another owner"), errs.Conflict)

// ErrFenced marks a write (Check) refused because the caller's lease is
// no longer the current one: it expired, or another owner took it over (a
// larger token), or a Reclaim refused because another owner took it or it
// was released. It is errs.Conflict.
var ErrFenced = errors.Mark(errors.New("lease: fenced off: the lease is no longer held with this token"), errs.Conflict)

// Lease is one claim.
type Lease struct {
	// Name is what is claimed ("shard/7").
	Name string `json:"name"`
	// Owner is the node holding it; empty once released.
	Owner string `json:"owner"`
	// Token is the fencing token: it grows each time the lease changes
	// hands and never goes back.
	Token int64 `json:"token"`
	// Expires is when the claim lapses unless renewed.
	Expires time.Time `json:"expires"`
}

// Held reports whether the lease is held by someone at now.
func (l Lease) Held(now time.Time) bool { return l.Owner != "" && now.Before(l.Expires) }

// Config configures a Manager.
type Config struct {
	// Store keeps the leases.
	Store store.Store
	// Clock judges expiry. Defaults to the wall clock.
	Clock clock.Clock
	// Owner names this node; it must be unique among the nodes.
	Owner string
	// TTL is how long a lease lasts without renewal. Defaults to 15s.
	TTL time.Duration
}

// Manager acquires, renews and releases leases for one owner.
type Manager struct {
	st    store.Store
	clock clock.Clock
	owner string
	ttl   time.Duration
}

// New returns a Manager for cfg.Owner.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Owner == "" {
		return nil, errors.New("lease: Config.Store and Config.Owner are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.TTL == 0 {
		cfg.TTL = 15 * time.Second
	}
	if cfg.TTL < 0 {
		return nil, errors.Newf("lease: Config.TTL %s is negative", cfg.TTL)
	}
	return &Manager{st: cfg.Store, clock: cfg.Clock, owner: cfg.Owner, ttl: cfg.TTL}, nil
}

// Owner is the node this manager claims for.
func (m *Manager) Owner() string { return m.owner }

// key is where the lease called name is kept.
func key(name string) []byte { return store.Key("_lease", name) }

// Get reads the lease called name (the zero Lease, with Name, when it was
// never acquired).
func Get(r store.Reader, name string) (Lease, error) {
	raw, err := r.Get(key(name))
	if errors.Is(err, store.ErrNotFound) {
		return Lease{Name: name}, nil
	}
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	if err := json.Unmarshal(raw, &l); err != nil {
		return Lease{}, errors.Wrapf(err, "lease: decode %q", name)
	}
	return l, nil
}

func put(tx store.Txn, l Lease) error {
	raw, err := json.Marshal(l)
	if err != nil {
		return errors.WithStack(err)
	}
	return tx.Set(key(l.Name), raw)
}

// Acquire claims name: when it is free or expired the claim gets the next
// token; when this owner holds it, it is renewed with its token. When
// another owner holds it, Acquire fails with ErrHeld.
func (m *Manager) Acquire(ctx context.Context, name string) (Lease, error) {
	var got Lease
	err := m.st.Update(ctx, func(tx store.Txn) error {
		now := m.clock.Now()
		cur, err := Get(tx, name)
		if err != nil {
			return err
		}
		switch {
		case cur.Owner == m.owner && cur.Held(now):
			// Renewal: same token.
		case cur.Held(now):
			return errors.Wrapf(ErrHeld, "lease %q is held by %s until %s", name, cur.Owner, cur.Expires.Format(time.RFC3339Nano))
		default:
			cur.Token++
		}
		cur.Owner, cur.Expires = m.owner, now.Add(m.ttl)
		got = cur
		return put(tx, cur)
	})
	return got, err
}

// Reclaim renews l, which this owner held with l.Token, even when it
// lapsed, provided nobody took it meanwhile: the store still names this
// owner with l.Token (another holder would have changed both, a release
// the owner). No other owner can have acted on the claim since, so the
// owner keeps it with its token, and what it holds in memory under it
// stays valid, instead of refusing writes until it acquires the lease
// anew with the next token. A lease another owner took, or that was
// released, fails with ErrFenced.
func (m *Manager) Reclaim(ctx context.Context, l Lease) (Lease, error) {
	var got Lease
	err := m.st.Update(ctx, func(tx store.Txn) error {
		cur, err := Get(tx, l.Name)
		if err != nil {
			return err
		}
		if cur.Owner != m.owner || cur.Token != l.Token {
			return errors.Wrapf(ErrFenced, "lease %q: held by %q with token %d; this claim has token %d",
				l.Name, cur.Owner, cur.Token, l.Token)
		}
		got = cur
		got.Expires = m.clock.Now().Add(m.ttl)
		return put(tx, got)
	})
	return got, err
}

// Release gives l up at once (its token is kept, so the next holder's is
// larger). Releasing a lease no longer held is not an error.
func (m *Manager) Release(ctx context.Context, l Lease) error {
	return m.st.Update(ctx, func(tx store.Txn) error {
		cur, err := Get(tx, l.Name)
		if err != nil {
			return err
		}
		if cur.Owner != m.owner || cur.Token != l.Token {
			return nil
		}
		cur.Owner, cur.Expires = "", time.Time{}
		return put(tx, cur)
	})
}

// Check refuses, with ErrFenced, a write acting on l unless l is still
// held by this owner with l.Token and has not expired. Call it in the
// transaction that writes: it reads the lease there, so a takeover
// committed while the transaction runs makes it conflict and run again,
// and the new run is refused.
func (m *Manager) Check(tx store.Txn, l Lease) error {
	cur, err := Get(tx, l.Name)
	if err != nil {
		return err
	}
	if cur.Owner != m.owner || cur.Token != l.Token || !cur.Held(m.clock.Now()) {
		err := errors.Wrapf(ErrFenced, "lease %q: held by %q with token %d until %s; this write came with token %d",
			l.Name, cur.Owner, cur.Token, cur.Expires.Format(time.RFC3339Nano), l.Token)
		if cur.Owner == m.owner && cur.Token == l.Token {
			err = errors.Mark(err, errLapsed) // nobody took it: Reclaim may renew it
		}
		return err
	}
	return nil
}

// errLapsed marks a Check refused only because the claim expired: the
// store still names this owner with its token.
var errLapsed = errors.New("lease lapsed")

// memberName is the lease a node holds while it is alive.
func memberName(owner string) string { return "member/" + owner }

// Heartbeat claims (or renews) this node's membership lease: a node is a
// member while it heartbeats more often than the TTL.
func (m *Manager) Heartbeat(ctx context.Context) (Lease, error) {
	return m.Acquire(ctx, memberName(m.owner))
}

// Members lists the owners whose membership lease is held at now, in key
// order.
func (m *Manager) Members(ctx context.Context) ([]string, error) {
	var out []string
	prefix := store.Key("_lease")
	err := m.st.View(ctx, func(r store.Reader) error {
		now := m.clock.Now()
		return r.Scan(store.ScanOptions{Prefix: prefix}, func(_, raw []byte) error {
			var l Lease
			if err := json.Unmarshal(raw, &l); err != nil {
				return errors.WithStack(err)
			}
			if strings.HasPrefix(l.Name, "member/") && l.Held(now) {
				out = append(out, l.Owner)
			}
			return nil
		})
	})
	return out, err
}

// ShardName is the lease name of shard i.
func ShardName(i int) string { return "shard/" + itoa(i) }

func itoa(i int) string { return strconv.Itoa(i) }

// Assign returns the member shard i belongs to among members, by
// rendezvous hashing: each member keeps its shards when others join or
// leave, and takes only its share of a leaving member's.
func Assign(members []string, i int) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		h := fnv.New64a()
		_, _ = h.Write([]byte(m))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(itoa(i)))
		if s := mix(h.Sum64()); best == "" || s > bestScore {
			best, bestScore = m, s
		}
	}
	return best
}

// mix spreads FNV's output (a finaliser of splitmix64), so that shards
// spread evenly over a handful of members.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Balance is one round of a node's shard upkeep: it heartbeats, reads the
// live members, releases the shards (of shards in all) that now belong to
// another member, and acquires or renews those that belong to it. A shard
// whose previous holder has not released it yet (it runs its own Balance
// soon, or its lease expires) is left for a later round. It returns the
// shard leases this node holds, and the first error met.
//
// A shard of held whose renewal or release failed (the store did not
// answer, the round's context ended) stays in the result with its lease as
// it was: the node still holds it until its expiry, and every write
// checks it. So a failed round never has a node give up a shard in its
// own view while keeping it in the store, to take it up again later with
// the same token as if nothing happened meanwhile. A held shard whose
// lease lapsed (the round came late) and that nobody took is reclaimed
// with its token (Reclaim): the node's work under it goes on undisturbed.
func (m *Manager) Balance(ctx context.Context, shards int, held map[int]Lease) (map[int]Lease, error) {
	if _, err := m.Heartbeat(ctx); err != nil {
		return held, err
	}
	members, err := m.Members(ctx)
	if err != nil {
		return held, err
	}
	out := map[int]Lease{}
	var first error
	for i := range shards {
		mine := Assign(members, i) == m.owner
		l, had := held[i]
		switch {
		case !mine && had:
			if err := m.Release(ctx, l); err != nil {
				out[i] = l
				first = cmp.Or(first, err)
			}
		case mine:
			if had {
				// Renewed, or reclaimed with its token when it lapsed
				// (a late round) and nobody took it.
				got, err := m.Reclaim(ctx, l)
				if err == nil {
					out[i] = got
					continue
				}
				if !errors.Is(err, ErrFenced) {
					out[i] = l
					first = cmp.Or(first, err)
					continue
				}
			}
			got, err := m.Acquire(ctx, ShardName(i))
			if errors.Is(err, ErrHeld) {
				continue
			}
			if err != nil {
				if had {
					out[i] = l
				}
				first = cmp.Or(first, err)
				continue
			}
			out[i] = got
		}
	}
	return out, first
}
