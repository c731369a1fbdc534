package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/bounded"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Caller sends capability calls; the access service sends sign-in codes and
// invitations through it as email.send calls with the arguments
// {to, subject, body}. The capability registry satisfies it.
type Caller interface {
	Call(ctx context.Context, call capability.Call) (json.RawMessage, error)
}

// Config configures New.
type Config struct {
	// Store is where tenants, people, keys and sessions live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings (an email that could not be sent). Defaults
	// to discarding them. Secrets are never logged.
	Logger *slog.Logger
	// Mailer sends email.send calls. Without it, email sign-in answers
	// errs.Unavailable and invitations are created without being sent.
	Mailer Caller
	// Apps returns the ids of the apps beside the built-in ones (plugin
	// apps) that keys and invitations may be limited to. Defaults to none.
	Apps func() []string
	// SessionTTL is how long a session token works. Defaults to 7 days.
	SessionTTL time.Duration
	// CodeTTL is how long an email sign-in code works. Defaults to 15
	// minutes.
	CodeTTL time.Duration
	// Shared tells that other processes write Store too (the nodes of a
	// cluster): Authenticate then reads the credential and its person from
	// the store on every request. Otherwise every change of access goes
	// through this service, which drops what Authenticate kept whenever it
	// writes, and a request whose credential and person are kept reads
	// nothing.
	Shared bool
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Apps == nil {
		c.Apps = func() []string { return nil }
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 7 * 24 * time.Hour
	}
	if c.CodeTTL <= 0 {
		c.CodeTTL = 15 * time.Minute
	}
	return c
}

// Lifetimes and bounds that are part of the contract.
const (
	// InvitationTTL is how long an invitation can be accepted.
	InvitationTTL = 7 * 24 * time.Hour
	// BreakGlassTTL is how long a break-glass grant lasts, whatever
	// expires_days says.
	BreakGlassTTL = 24 * time.Hour
	// MaxCodeTries is how many wrong codes burn a sign-in code.
	MaxCodeTries = 5
)

// Service is the access service: tenants (workspaces), people, sessions,
// API keys, invitations, workspace settings and the widening-change queue.
// It is safe for concurrent use.
type Service struct {
	cfg   Config
	st    store.Store
	clock clock.Clock
	log   *slog.Logger

	mu    sync.RWMutex
	kinds map[string]*changeKind

	ids ids.Generator // makes the ids of the records and audit entries it writes

	decoded decodedRecords // what Authenticate decoded, by stored bytes
	writes  *writeCount    // the service's writes; nil when Config.Shared
}

// maxDecoded bounds each cache of decodedRecords.
const maxDecoded = 4096

// decodedRecords keeps the credentials and users Authenticate decoded,
// each with the stored bytes it was decoded from. On a shared store every
// request still reads the record's bytes in its own transaction and reuses
// the decoded record only when they are the same, so a revocation,
// sign-out, role change or expiry takes effect on the next request,
// whichever node wrote it: only the JSON decoding is saved. When this
// service is the store's only writer of access records, an entry also
// carries the write count it was read at (see writeCount) and serves
// without a read while no write began since. Decoded records are shared
// and never modified.
type decodedRecords struct {
	creds decodedCache[credential] // by lookup
	users decodedCache[user]       // by tenant \x00 user id
}

// credential returns the credential stored under lookup.
func (d *decodedRecords) credential(r store.Reader, lookup string, at uint64) (*credential, error) {
	return d.creds.read(r, credentials, store.System, lookup, lookup, at)
}

// user returns the user id of tenant.
func (d *decodedRecords) user(r store.Reader, tenant, id string, at uint64) (*user, error) {
	return d.users.read(r, users, tenant, id, tenant+"\x00"+id, at)
}

// decodedCache keeps records of one collection as decoded, by a key of
// their own, at most maxDecoded.
type decodedCache[T any] struct {
	mu sync.Mutex
	m  map[string]decodedEntry[T]
}

type decodedEntry[T any] struct {
	raw []byte // the stored bytes v was decoded from
	v   *T
	at  uint64 // the write count it is current at; noWrites when unknown
}

// read returns the record id of tenant in coll, kept under k: decoded
// again only when its stored bytes changed, and kept as current at write
// count at.
func (c *decodedCache[T]) read(r store.Reader, coll *store.Collection[T], tenant, id, k string, at uint64) (*T, error) {
	raw, err := coll.GetRaw(r, tenant, id)
	if err != nil {
		c.mu.Lock()
		delete(c.m, k)
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	changed := !ok || !bytes.Equal(e.raw, raw)
	if changed {
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return nil, errors.Wrapf(err, "decode %s", coll.Name)
		}
		e = decodedEntry[T]{raw: bytes.Clone(raw), v: v}
	}
	if changed || e.at != at {
		e.at = at
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]decodedEntry[T]{}
		}
		bounded.MakeRoom(c.m, maxDecoded)
		c.m[k] = e
		c.mu.Unlock()
	}
	return e.v, nil
}

// current returns the record kept under k when it is current at write
// count at.
func (c *decodedCache[T]) current(k string, at uint64) (*T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || e.at != at {
		return nil, false
	}
	return e.v, true
}

// New returns the access service on cfg.Store and registers the change kinds
// of access itself (admin keys and invitations, turning four-eyes off).
func New(cfg Config) *Service {
	cfg = cfg.withDefaults()
	s := &Service{cfg: cfg, st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, kinds: map[string]*changeKind{}}
	if !cfg.Shared {
		s.writes = new(writeCount)
		s.st = &countingStore{Store: cfg.Store, n: s.writes}
	}
	s.registerOwnKinds()
	return s
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

// viewPage reads one page of records with list in a read transaction and
// returns each as view shows it (a key or invitation past its expiry as
// expired, a person with the grants live now).
func viewPage[T, V any](ctx context.Context, st store.Store, list func(store.Reader) ([]*T, string, error), view func(*T) *V) ([]*V, string, error) {
	var (
		out  []*V
		next string
	)
	err := st.View(ctx, func(r store.Reader) error {
		records, n, err := list(r)
		if err != nil {
			return err
		}
		for _, rec := range records {
			out = append(out, view(rec))
		}
		next = n
		return nil
	})
	return out, next, err
}

// viewOne reads one record with get in a read transaction and returns it as
// view shows it.
func viewOne[T, V any](ctx context.Context, st store.Store, get func(store.Reader) (*T, error), view func(*T) *V) (*V, error) {
	var out *V
	err := st.View(ctx, func(r store.Reader) error {
		rec, err := get(r)
		if err != nil {
			return err
		}
		out = view(rec)
		return nil
	})
	return out, err
}

// Secrets. Every secret is a kind tag, an 8-character lookup part and 32
// more characters: 40 base32 characters, 200 random bits, of which the
// lookup part (shown as a key's prefix) holds 40 and the rest 160. Only the
// SHA-256 of the whole secret is stored, under the lookup part.
const (
	tagKey        = "bask_"
	tagSession    = "bass_"
	tagInvitation = "basi_"
	tagLen        = 5
	lookupLen     = tagLen + 8
	secretLen     = tagLen + 40
)

// Credential kinds.
const (
	credKey        = "key"
	credSession    = "session"
	credInvitation = "invitation"
)

// credential is what a secret resolves to. It lives under store.System,
// keyed by the secret's lookup part, so Authenticate is one point read for
// an API key and two (the credential, the person) for a session.
type credential struct {
	ID       string `json:"id"` // the lookup part
	Kind     string `json:"kind"`
	Tenant   string `json:"tenant"`
	RecordID string `json:"record_id"` // the key or invitation id; empty for sessions
	UserID   string `json:"user_id"`
	Email    string `json:"email"`
	// Roles and Apps are a key's grant (sessions read the person's).
	Roles []string `json:"roles,omitempty"`
	Apps  []string `json:"apps"`
	Hash  string   `json:"hash"` // hex SHA-256 of the whole secret
	// Pending keys wait for a second admin and do not authenticate yet.
	Pending bool `json:"pending,omitempty"`
	// Revoked invitations keep their credential, so accepting one says so.
	Revoked bool `json:"revoked,omitempty"`
	// Dev marks a session made by the development login.
	Dev       bool       `json:"dev,omitempty"`
	ExpiresAt *time.Time `json:"expires_at"`
}

var credentials = &store.Collection[credential]{
	Name:     "cred",
	ID:       func(c *credential) string { return c.ID },
	NotFound: "credential not found",
	Indexes: []store.Index[credential]{
		// Sessions are swept when they expire; keys and invitations are
		// records people see and stay until revoked.
		{Name: "expires", Values: func(c *credential) [][]any {
			if c.Kind != credSession || c.ExpiresAt == nil {
				return nil
			}
			return [][]any{{c.ExpiresAt.UnixNano()}}
		}},
	},
}

// newSecret returns a fresh secret of kind tag, its lookup part and hash.
func newSecret(tag string) (secret, lookup, hash string) {
	secret = tag + ids.Token(25)
	return secret, secret[:lookupLen], hashSecret(secret)
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// parseSecret splits a presented secret into its tag and lookup part; ok is
// false when it cannot be one of ours.
func parseSecret(secret string) (tag, lookup string, ok bool) {
	if len(secret) != secretLen {
		return "", "", false
	}
	tag = secret[:tagLen]
	switch tag {
	case tagKey, tagSession, tagInvitation:
	default:
		return "", "", false
	}
	for i := tagLen; i < len(secret); i++ {
		c := secret[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return "", "", false
		}
	}
	return tag, secret[:lookupLen], true
}

// sameSecret compares a presented secret with a stored hash in constant
// time.
// It allocates nothing (it runs on every authenticated request).
func sameSecret(secret, hash string) bool {
	var sum [sha256.Size]byte
	if len(secret) <= 64 {
		var buf [64]byte
		sum = sha256.Sum256(append(buf[:0], secret...))
	} else {
		sum = sha256.Sum256([]byte(secret))
	}
	var enc [2 * sha256.Size]byte
	hex.Encode(enc[:], sum[:])
	if len(hash) != len(enc) {
		return false
	}
	var diff byte
	for i, b := range enc {
		diff |= b ^ hash[i]
	}
	return subtle.ConstantTimeByteEq(diff, 0) == 1
}

// putNewCredential stores c under a fresh secret of tag and returns the
// secret. A lookup part already taken (one chance in 2^40) draws again.
func putNewCredential(tx store.Txn, tag string, c *credential) (string, error) {
	for {
		secret, lookup, hash := newSecret(tag)
		taken, err := credentials.Exists(tx, store.System, lookup)
		if err != nil {
			return "", err
		}
		if taken {
			continue
		}
		c.ID, c.Hash = lookup, hash
		if err := credentials.Put(tx, store.System, c); err != nil {
			return "", err
		}
		return secret, nil
	}
}

func errNotAuthenticated() error { return errs.Unauthenticatedf("not authenticated") }

// Authenticate resolves a session token or API key to its principal. An
// unknown, malformed, expired, revoked or not yet approved one is
// errs.Unauthenticated. On a shared store (Config.Shared) it reads the store
// every time (one point read for a key, two for a session), so a revocation
// or logout is effective at once on every node. Otherwise it reads the
// store only when the service wrote anything since it last read this
// credential and person (see writeCount): a revocation or logout, being
// such a write, is effective at once too.
func (s *Service) Authenticate(ctx context.Context, token string) (*Principal, error) {
	tag, lookup, ok := parseSecret(token)
	if !ok || tag == tagInvitation {
		return nil, errNotAuthenticated()
	}
	now := s.now()
	at := noWrites
	if s.writes != nil {
		at = s.writes.now()
		if c, u, ok := s.decoded.kept(lookup, at); ok {
			return s.principal(token, c, now, func(string, string) (*user, error) { return u, nil })
		}
	}
	var p *Principal
	err := s.st.View(ctx, func(r store.Reader) error {
		c, err := s.decoded.credential(r, lookup, at)
		if errors.Is(err, errs.NotFound) {
			return errNotAuthenticated()
		}
		if err != nil {
			return err
		}
		p, err = s.principal(token, c, now, func(tenant, id string) (*user, error) {
			return s.decoded.user(r, tenant, id, at)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// principal is who credential c (presented as token) stands for at now;
// user reads a session's person.
func (s *Service) principal(token string, c *credential, now time.Time, user func(tenant, id string) (*user, error)) (*Principal, error) {
	if !sameSecret(token, c.Hash) || c.Pending || expired(c.ExpiresAt, now) {
		return nil, errNotAuthenticated()
	}
	switch c.Kind {
	case credKey:
		p := newPrincipal(c.Tenant, c.UserID, c.Email, c.Roles, c.Apps)
		p.KeyID, p.KeyExpiresAt = c.RecordID, c.ExpiresAt
		return p, nil
	case credSession:
		u, err := user(c.Tenant, c.UserID)
		if errors.Is(err, errs.NotFound) {
			return nil, errNotAuthenticated()
		}
		if err != nil {
			return nil, err
		}
		// effectiveRoles is a new sorted list: the principal takes it.
		roles := u.effectiveRoles(now)
		p := &Principal{Tenant: c.Tenant, UserID: u.ID, Email: u.Email, Roles: roles, Apps: cloneApps(u.Apps),
			Perms: PermissionsOf(roles), SessionID: c.ID, DevSession: c.Dev}
		return p, nil
	}
	return nil, errNotAuthenticated()
}

func newPrincipal(tenant, user, email string, roles, apps []string) *Principal {
	return &Principal{
		Tenant: tenant, UserID: user, Email: email,
		Roles: sorted(clone(roles)), Apps: cloneApps(apps), Perms: PermissionsOf(roles),
	}
}

func expired(at *time.Time, now time.Time) bool { return at != nil && !now.Before(*at) }

// sweepLimit bounds the expired records one sign-in removes.
const sweepLimit = 32

// sweep removes up to sweepLimit expired sessions and as many expired
// sign-in codes. It runs after sign-ins, so the tables stay bounded
// without a janitor.
func (s *Service) sweep(ctx context.Context) {
	now := s.now()
	err := s.st.Update(ctx, func(tx store.Txn) error {
		creds, err := expiredIDs(tx, credentials.Name, now)
		if err != nil {
			return err
		}
		codes, err := expiredIDs(tx, signins.Name, now)
		if err != nil {
			return err
		}
		for _, id := range creds {
			if err := credentials.Delete(tx, store.System, id); err != nil {
				return err
			}
		}
		for _, id := range codes {
			if err := signins.Delete(tx, store.System, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("access: sweeping expired sessions failed", slog.String("error", err.Error()))
	}
}

// expiredIDs reads the "expires" index of a System collection, whose
// entries are (tenant, "i", collection, "expires", unix nanos, id) as
// store.Collection lays them out, and returns up to sweepLimit ids that
// expired by now, oldest first.
func expiredIDs(r store.Reader, collection string, now time.Time) ([]string, error) {
	prefix := store.Key(store.System, "i", collection, "expires")
	var out []string
	err := r.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(key, _ []byte) error {
		parts, err := store.DecodeKey(key[len(prefix):])
		if err != nil {
			return err
		}
		if len(parts) != 2 {
			return errors.Newf("access: malformed expiry index entry in %s", collection)
		}
		at, ok1 := parts[0].(int64)
		id, ok2 := parts[1].(string)
		if !ok1 || !ok2 {
			return errors.Newf("access: malformed expiry index entry in %s", collection)
		}
		if at > now.UnixNano() || len(out) == sweepLimit {
			return store.ErrStop
		}
		out = append(out, id)
		return nil
	})
	return out, err
}

// normEmail is the form emails are compared and stored in.
func normEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }
