package httpapi

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/binrec"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/klauspost/compress/s2"
)

// Idempotency keys (api.md section 1 and section 6). A POST with an
// Idempotency-Key runs its handler at most once per (tenant, principal,
// key) for 24 hours: the principal is the user for a session and the key
// for an API key, so a client that signs in again keeps its keys. The same
// key with the same request (method, path and body) replays the stored
// response without acting again; with another request it is a 409; while
// the first request is still running, a 409 too. Requests to public routes
// are scoped to the client's address and the request itself, so two
// callers never share a key there.
//
// A claim on a key lives in this process's memory only, shared by the
// Handlers of one workspace: it belongs to the process that made it, so a
// request that was in flight when the server died holds nothing after the
// restart, and its retry proceeds at once.
// Where the effect is a change of the run engine (run start, task
// completion, decision), the response is written in the same transaction
// as the change (runengine.KeepAnswer): a retry after any crash then
// returns the first answer, or acts exactly once when the first never
// committed, and the keyed request costs no commit of its own. Other
// routes mark the key as acted on in the transaction of their change
// (store.AlsoInUpdate) and store the response in one commit after the
// handler; a crash between the two leaves the mark, and a retry is a 409
// that says the request took effect, never a second effect.
//
// A stored response that holds a secret (a new API key, a session token,
// an invitation token; the handler says so with holdsSecret) is sealed
// with AES-GCM under a key derived from the caller's bearer token and the
// request, neither of which the store holds: only the credential that made
// the request can read it again, and another credential of the same
// principal gets a 409. Other responses are sealed under a key derived
// from the request alone.
//
// On a workspace that is its store's only writer (not a cluster node), a
// key that was never stored is told from memory (idemFilter), so a new
// keyed request reads nothing from the store before its commit (a read
// would wait for the commits in flight); a key that may have been stored
// is read as on a cluster node.
const (
	idempotencyTTL    = 24 * time.Hour
	maxIdempotencyKey = 255
	// idempotencySweep bounds the expired records one sweep removes;
	// idempotencySweepEvery spaces the sweeps of a tenant whose responses
	// are kept with the engine's changes (other keyed requests sweep as
	// they store their response).
	idempotencySweep      = 64
	idempotencySweepEvery = time.Minute
)

// States of a record: idemDone keeps a response; idemActed marks a key
// whose request changed the store but whose response was not kept (yet).
// Records of other states (an in-flight claim an older version stored) are
// claims of a previous process: they block nothing.
const (
	idemDone  = "done"
	idemActed = "acted"
)

// idemRecord is one kept response. It is stored in a binary form (see
// idemRecordV2); the JSON tags are the form records kept before it were
// stored in, which are still read.
type idemRecord struct {
	// ID is the digest of the scope and the key: the record's key holds
	// it, and a record read back has none.
	ID          string    `json:"id"`
	Fingerprint string    `json:"fingerprint"` // digest of method, path and body
	State       string    `json:"state"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Bound says the response holds a secret and is sealed under the
	// credential of the request that made it.
	Bound bool `json:"bound,omitempty"`
	// Sealed is the response (status, headers, body), sealed.
	Sealed []byte `json:"sealed,omitempty"`
}

var idempotencyRecords = &store.Collection[idemRecord]{
	Name: "idem",
	ID:   func(r *idemRecord) string { return r.ID },
	Indexes: []store.Index[idemRecord]{
		{Name: "expires", Values: func(r *idemRecord) [][]any { return [][]any{{r.ExpiresAt.UnixNano()}} }},
	},
	Decode: decodeIdemRecord,
}

// A record is stored in a binary form: the version byte idemRecordV2, its
// state (idemStateDone or idemStateActed), its flags (idemFlagBound), its
// expiry in Unix nanoseconds (8 bytes, big-endian), its fingerprint's 32
// bytes, then the sealed response as it is. Its id is in its key only. A
// run's start answer so keeps a record of about 660 bytes, where its JSON
// (two hex digests, the sealed response in base64) took about 1,060.
// Records kept before are JSON, which starts with '{'.
const (
	idemRecordV2   = 2
	idemStateDone  = 1
	idemStateActed = 2
	idemFlagBound  = 1
	// idemHeadLen is the size of the form before the sealed response.
	idemHeadLen = 3 + 8 + sha256.Size
)

var errMalformedRecord = errors.New("idempotency: malformed record")

// putIdemHead writes the form's head of a record (state, bound, expiry
// and fingerprint; see idemRecordV2) into b[:idemHeadLen]. The fingerprint
// must be a hex SHA-256 digest, as fingerprintOf makes it.
func putIdemHead(b []byte, state string, bound bool, expires time.Time, fingerprint string) error {
	b[0] = idemRecordV2
	switch state {
	case idemDone:
		b[1] = idemStateDone
	case idemActed:
		b[1] = idemStateActed
	default:
		return errors.Newf("idempotency: no stored form for the state %q", state)
	}
	b[2] = 0
	if bound {
		b[2] = idemFlagBound
	}
	binary.BigEndian.PutUint64(b[3:11], uint64(expires.UnixNano()))
	if len(fingerprint) != 2*sha256.Size {
		return errors.New("idempotency: a fingerprint is a hex SHA-256 digest")
	}
	for i := range sha256.Size {
		hi, lo := unhex(fingerprint[2*i]), unhex(fingerprint[2*i+1])
		if hi > 0xf || lo > 0xf {
			return errors.New("idempotency: a fingerprint is a hex SHA-256 digest")
		}
		b[11+i] = hi<<4 | lo
	}
	return nil
}

// unhex is the value of the lowercase hex digit c, or 0xff.
func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return 0xff
}

// decodeIdemRecord decodes a stored record, of either form. Its Sealed
// shares raw (a store's Get returns a copy).
func decodeIdemRecord(raw []byte) (*idemRecord, error) {
	if len(raw) > 0 && raw[0] == '{' {
		rec := new(idemRecord)
		if err := json.Unmarshal(raw, rec); err != nil {
			return nil, errors.Wrap(err, "idempotency: decode record")
		}
		return rec, nil
	}
	if len(raw) < idemHeadLen || raw[0] != idemRecordV2 || raw[2]&^idemFlagBound != 0 {
		return nil, errMalformedRecord
	}
	rec := &idemRecord{Bound: raw[2] == idemFlagBound,
		ExpiresAt:   time.Unix(0, int64(binary.BigEndian.Uint64(raw[3:11]))).UTC(),
		Fingerprint: hex.EncodeToString(raw[11:idemHeadLen])}
	switch raw[1] {
	case idemStateDone:
		rec.State = idemDone
	case idemStateActed:
		rec.State = idemActed
	default:
		return nil, errMalformedRecord
	}
	if len(raw) > idemHeadLen {
		rec.Sealed = raw[idemHeadLen:]
	}
	return rec, nil
}

// storedResponse is what a replay writes.
type storedResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
	// Newline says a newline follows Body (a JSON answer's end): an
	// engine's answer, shared by the replies held for it, is written
	// without a copy to add it. A kept response holds the newline in its
	// Body.
	Newline bool `json:"-"`
}

// newline is the end of a JSON answer (see storedResponse.Newline).
var newline = []byte{'\n'}

// writeBody writes resp's body, then its newline if it has one.
func (resp *storedResponse) writeBody(w io.Writer) {
	_, _ = w.Write(resp.Body)
	if resp.Newline {
		_, _ = w.Write(newline)
	}
}

// idemClaims are the keys whose requests this process is running on one
// workspace (its Handlers share them: idemShared), and when each tenant's
// expired records were last swept.
type idemClaims struct {
	mu    sync.Mutex
	keys  map[claimKey]struct{}
	swept map[string]time.Time
}

func (cl *idemClaims) claim(k claimKey) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, busy := cl.keys[k]; busy {
		return false
	}
	if cl.keys == nil {
		cl.keys = map[claimKey]struct{}{}
	}
	cl.keys[k] = struct{}{}
	return true
}

func (cl *idemClaims) release(k claimKey) {
	cl.mu.Lock()
	delete(cl.keys, k)
	cl.mu.Unlock()
}

// sweepDue reports whether tenant's expired records are due a sweep, and
// if so marks them swept at now.
func (cl *idemClaims) sweepDue(tenant string, now time.Time) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.swept == nil {
		cl.swept = map[string]time.Time{}
	}
	last, seen := cl.swept[tenant]
	if seen && now.Sub(last) < idempotencySweepEvery && !now.Before(last) {
		return false
	}
	if len(cl.swept) > 10000 { // bound the memory of many tenants
		clear(cl.swept)
	}
	cl.swept[tenant] = now
	// A tenant first seen is swept a minute later: a keyed request pays
	// no commit of its own.
	return seen
}

// idemRequest is one keyed request in flight.
type idemRequest struct {
	h                       *Handler
	tenant, id, fingerprint string
	// old is an expired or stale record under id, which the new one
	// replaces.
	old *idemRecord
	// found is the record lookup found to replay (a field, so that
	// lookup's read allocates nothing for it).
	found *idemRecord
	// openKey seals a response without a secret; boundKey makes the key
	// of one with (rarely needed, so made only then) of the bearer token
	// and the request's key, method, URI and body.
	openKey                 [sha256.Size]byte
	token, key, method, uri string
	body                    []byte
	// rec records the handler's response.
	rec responseRecorder
	// kept says the response was written with the engine's change;
	// acted that the acted mark was written with a change.
	kept, acted atomic.Bool
	// marks are the expiries of the acted marks this request wrote (one
	// per transaction that tried), by which taken tells its own mark from
	// another server's.
	mu    sync.Mutex
	marks []time.Time
}

// boundKey is the key that seals a response holding a secret.
func (r *idemRequest) boundKey() [sha256.Size]byte {
	return sealingKey(r.token, r.key, r.method, r.uri, r.body)
}

// recordID is the id of the record of key: the digest of the scope and
// the key, digest(scope, key). The scope is "user\x00{user}" for a
// session and "key\x00{key id}" for an API key (p), and on a public route
// (p nil) "public\x00{client address}\x00{fingerprint}", so that callers
// never meet each other's keys there. The scope's NULs are those digest
// puts between parts, so it is never built.
func recordID(p *access.Principal, r *http.Request, fingerprint, key string) string {
	switch {
	case p == nil:
		return digest("public", clientHost(r), fingerprint, key)
	case p.KeyID != "":
		return digest("key", p.KeyID, key)
	}
	return digest("user", p.UserID, key)
}

// claimKey is a claim on a key in flight: the tenant and the digest of the
// scope and the key.
type claimKey struct{ tenant, id string }

// idempotent runs c's handler at most once per Idempotency-Key (see above).
// route.go calls it for every POST that carries the header.
func (h *Handler) idempotent(c *request) error {
	key := c.R.Header.Get("Idempotency-Key")
	if n := utf8.RuneCountInString(key); n > maxIdempotencyKey {
		return errs.Invalidf([]any{"header", "Idempotency-Key"}, "string_too_long",
			"must be at most %d characters", maxIdempotencyKey)
	}
	body, err := c.Body()
	if err != nil {
		return err
	}
	uri := c.R.URL.RequestURI()
	fingerprint := fingerprintOf(c.R.Method, uri, body)
	req := &idemRequest{h: h, tenant: store.System, fingerprint: fingerprint, key: key, method: c.R.Method, uri: uri,
		body: body}
	req.id = recordID(c.P, c.R, fingerprint, key)
	if c.P != nil {
		req.tenant = c.P.Tenant
		req.token = strings.TrimSpace(strings.TrimPrefix(c.R.Header.Get("Authorization"), "Bearer "))
	}
	req.openKey = sealingKey("", key, c.R.Method, uri, body)

	claim := claimKey{req.tenant, req.id}
	if !h.idemClaims.claim(claim) {
		return errs.Conflictf("a request with this Idempotency-Key is still in progress")
	}
	defer h.idemClaims.release(claim)

	ctx := context.WithoutCancel(c.Context())
	prev, err := req.lookup(ctx)
	if err != nil {
		return err
	}
	if prev != nil {
		return req.replay(c, prev)
	}

	rec := &req.rec
	rec.status = http.StatusOK
	w, r := c.W, c.R
	c.W, c.idem = rec, req
	c.R = r.WithContext(store.AlsoInUpdate(r.Context(), req.markActed))
	err = c.route.fn(c)
	if _, taken := errors.If(err, func(e error) (any, bool) { return nil, e == errKeyTaken }); taken {
		// (errors.Is would take any conflict for it: errs marks them alike.)
		// Another server acted on the key first: answer as a retry there.
		c.W, c.R, c.idem = w, r, nil
		if prev, err = req.lookup(ctx); prev != nil {
			return req.replay(c, prev)
		}
		if err == nil || req.actedElsewhere(ctx) {
			// The other server's request has not kept its response yet.
			return errs.Conflictf("a request with this Idempotency-Key is still in progress")
		}
		return err
	}
	if err != nil {
		h.writeError(c, err)
	}
	c.W, c.R, c.idem = w, r, nil
	resp := rec.response()
	switch {
	case req.kept.Load() && err == nil:
		h.sweepIdempotencyEvery(ctx, req.tenant)
	// Bad input changes nothing, so a corrected retry may use the key
	// again; a server error may be retried too.
	case resp.Status < 500 && resp.Status != http.StatusUnprocessableEntity:
		if err := req.keep(ctx, resp, c.secret); err != nil {
			h.log.Error("idempotency: keeping the response failed", "request_id", requestID(c.Context()),
				"error", errors.FlattenDetails(err))
		}
	case req.acted.Load():
		req.release(ctx) // the key is free again for a retry
	}
	h.opts.Failpoints.beforeResponse(r, resp)
	writeRecorded(w, resp, false)
	return nil
}

// lookup returns the kept response to replay, or nil when the request is
// to run. Another request under the key is errs.Conflict.
func (r *idemRequest) lookup(ctx context.Context) (*idemRecord, error) {
	r.found = nil
	if f := r.h.idemFilter; f != nil && !f.mayHold(r.tenant, r.id) {
		return nil, nil // never stored: no read
	}
	now := r.h.ws.Clock().Now().UTC()
	err := r.h.ws.Store().View(ctx, func(rd store.Reader) error {
		rec, err := idempotencyRecords.Get(rd, r.tenant, r.id)
		switch {
		case errors.Is(err, errs.NotFound):
			return nil
		case err != nil:
			return err
		case (rec.State != idemDone && rec.State != idemActed) || !now.Before(rec.ExpiresAt):
			r.old = rec
			return nil
		case rec.Fingerprint != r.fingerprint:
			return errs.Conflictf("Idempotency-Key was already used with a different request")
		case rec.State == idemActed:
			return errs.Conflictf("a request with this Idempotency-Key took effect, but the server stopped before " +
				"its response was kept; read the result instead of retrying")
		}
		r.found = rec
		return nil
	})
	return r.found, err
}

// record seals resp into the record that keeps it, and returns it with
// its stored form.
func (r *idemRequest) record(resp storedResponse, secret bool) (*idemRecord, []byte, error) {
	key := r.openKey
	if secret {
		key = r.boundKey()
	}
	raw, err := appendSealed(make([]byte, idemHeadLen), key[:], resp, &r.h.responseBufs)
	if err != nil {
		return nil, nil, err
	}
	now := r.h.ws.Clock().Now().UTC()
	rec := &idemRecord{ID: r.id, Fingerprint: r.fingerprint, State: idemDone, ExpiresAt: now.Add(idempotencyTTL),
		Bound: secret, Sealed: raw[idemHeadLen:]}
	if err := putIdemHead(raw, rec.State, rec.Bound, rec.ExpiresAt, rec.Fingerprint); err != nil {
		return nil, nil, err
	}
	return rec, raw, nil
}

// keepOp returns the write of resp for the engine's transaction: it only
// writes (the engine's pipelined commits must not read), over the record
// lookup found.
//
// On a cluster node (whose commits are not pipelined) it first reads the
// record again: another server may have acted on the key since lookup (a
// client retried there when this server seemed dead, or sent the key to
// two servers at once), and then the change is refused with errKeyTaken,
// so that a key acts once whatever the servers; the request answers with
// the other's response (see idempotent).
func (r *idemRequest) keepOp(resp storedResponse) (func(store.Txn) error, error) {
	rec, raw, err := r.record(resp, false)
	if err != nil {
		return nil, err
	}
	r.stored(rec.ExpiresAt)
	shared := r.h.ws.Engine().Clustered()
	return func(tx store.Txn) error {
		if shared {
			if err := r.taken(tx); err != nil {
				return err
			}
		}
		r.kept.Store(true)
		return idempotencyRecords.PutOver(tx, r.tenant, r.old, rec, raw)
	}, nil
}

// actedElsewhere reports whether the key's record is an acted mark (of a
// request another server is still running).
func (r *idemRequest) actedElsewhere(ctx context.Context) bool {
	acted := false
	_ = r.h.ws.Store().View(ctx, func(rd store.Reader) error {
		rec, err := idempotencyRecords.Get(rd, r.tenant, r.id)
		acted = err == nil && rec.State == idemActed && rec.Fingerprint == r.fingerprint
		return nil
	})
	return acted
}

// taken refuses, with errKeyTaken, the change of tx when another server
// acted on the key since lookup (a cluster node checks it).
func (r *idemRequest) taken(tx store.Txn) error {
	cur, err := idempotencyRecords.Get(tx, r.tenant, r.id)
	switch {
	case errors.Is(err, errs.NotFound):
		return nil
	case err != nil:
		return err
	case r.old != nil && cur.State == r.old.State && cur.ExpiresAt.Equal(r.old.ExpiresAt):
		return nil // what lookup found
	case cur.State == idemActed && r.wrote(cur.ExpiresAt):
		return nil // this request's own mark, from an earlier change it made
	}
	return errKeyTaken
}

// wrote reports whether this request wrote an acted mark expiring at.
func (r *idemRequest) wrote(at time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.marks {
		if m.Equal(at) {
			return true
		}
	}
	return false
}

// errKeyTaken refuses the change of a keyed request on a cluster node when
// another server acted on its key first.
var errKeyTaken = errs.Conflictf("a request with this Idempotency-Key took effect on another server")

// markActed writes the acted mark in the transaction of a change the
// request makes (see store.AlsoInUpdate); on a cluster node, unless
// another server acted on the key first (taken).
func (r *idemRequest) markActed(tx store.Txn) error {
	if r.h.ws.Engine().Clustered() {
		if err := r.taken(tx); err != nil {
			return err
		}
	}
	now := r.h.ws.Clock().Now().UTC()
	r.stored(now.Add(idempotencyTTL))
	r.acted.Store(true)
	r.mu.Lock()
	r.marks = append(r.marks, now.Add(idempotencyTTL))
	r.mu.Unlock()
	rec := &idemRecord{ID: r.id, Fingerprint: r.fingerprint, State: idemActed, ExpiresAt: now.Add(idempotencyTTL)}
	raw := make([]byte, idemHeadLen)
	if err := putIdemHead(raw, rec.State, false, rec.ExpiresAt, rec.Fingerprint); err != nil {
		return err
	}
	return idempotencyRecords.PutRaw(tx, r.tenant, rec, raw)
}

// stored adds the key of a record expiring at expires to the workspace's
// filter of stored keys (see idemFilter): every write of its record calls
// it before the write can commit.
func (r *idemRequest) stored(expires time.Time) {
	if f := r.h.idemFilter; f != nil {
		f.add(r.tenant, r.id, expires)
	}
}

// release forgets the acted mark of a request whose response is not kept.
func (r *idemRequest) release(ctx context.Context) {
	err := r.h.ws.Store().Update(ctx, func(tx store.Txn) error {
		err := idempotencyRecords.Delete(tx, r.tenant, r.id)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		r.h.log.Error("idempotency: releasing a key failed", "error", errors.FlattenDetails(err))
	}
}

// keep stores resp after the handler, and sweeps a few expired records of
// the tenant.
func (r *idemRequest) keep(ctx context.Context, resp storedResponse, secret bool) error {
	rec, raw, err := r.record(resp, secret)
	if err != nil {
		return err
	}
	now := r.h.ws.Clock().Now().UTC()
	r.stored(rec.ExpiresAt)
	return r.h.ws.Store().Update(ctx, func(tx store.Txn) error {
		if err := idempotencyRecords.PutRaw(tx, r.tenant, rec, raw); err != nil {
			return err
		}
		return sweepIdempotency(tx, r.tenant, now, idempotencySweep)
	})
}

// sweepIdempotencyEvery sweeps tenant's expired records when a sweep is
// due (see idempotencySweepEvery).
func (h *Handler) sweepIdempotencyEvery(ctx context.Context, tenant string) {
	now := h.ws.Clock().Now().UTC()
	if !h.idemClaims.sweepDue(tenant, now) {
		return
	}
	err := h.ws.Store().Update(ctx, func(tx store.Txn) error { return sweepIdempotency(tx, tenant, now, idempotencySweep) })
	if err != nil {
		h.log.Error("idempotency: sweeping expired keys failed", "error", errors.FlattenDetails(err))
	}
}

// sweepIdempotency deletes up to limit expired records of tenant, oldest
// first. Index entries are (tenant, "i", "idem", "expires", unix nanos,
// id), as store.Collection lays them out; an entry whose record was
// replaced by a live one is only removed itself.
func sweepIdempotency(tx store.Txn, tenant string, now time.Time, limit int) error {
	prefix := store.Key(tenant, "i", idempotencyRecords.Name, "expires")
	type entry struct {
		key []byte
		id  string
	}
	var due []entry
	err := tx.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(key, _ []byte) error {
		parts, err := store.DecodeKey(key[len(prefix):])
		if err != nil || len(parts) != 2 {
			return errors.New("idempotency: malformed expiry index entry")
		}
		at, _ := parts[0].(int64)
		id, _ := parts[1].(string)
		if at > now.UnixNano() || len(due) == limit {
			return store.ErrStop
		}
		due = append(due, entry{key: append([]byte(nil), key...), id: id})
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range due {
		rec, err := idempotencyRecords.Get(tx, tenant, e.id)
		switch {
		case errors.Is(err, errs.NotFound) || (err == nil && now.Before(rec.ExpiresAt)):
			err = tx.Delete(e.key)
		case err == nil:
			err = idempotencyRecords.Delete(tx, tenant, e.id)
		}
		if err != nil && !errors.Is(err, errs.NotFound) {
			return err
		}
	}
	return nil
}

// engineContext returns the context to run c's engine command with: for
// a keyed request, the engine writes the response render makes of the
// command's answer in the same transaction as the change. The handler
// answers with answerWith and the same render, so what a replay returns is
// byte for byte what the first request got.
func (c *request) engineContext(render func(runengine.Answer) (storedResponse, error)) context.Context {
	req := c.idem
	if req == nil {
		return c.Context()
	}
	return runengine.KeepAnswer(c.Context(), func(a runengine.Answer) (func(store.Txn) error, error) {
		resp, err := render(a)
		if err != nil {
			return nil, err
		}
		c.rendered.Store(&keptAnswer{answer: a, resp: resp})
		return req.keepOp(resp)
	})
}

// keptAnswer is an engine command's answer and the response rendered of
// it, kept with the change.
type keptAnswer struct {
	answer runengine.Answer
	resp   storedResponse
}

// answerWith writes the response render makes of an engine command's
// answer (the one the engine kept, when it kept one of the same answer).
func (c *request) answerWith(render func(runengine.Answer) (storedResponse, error), a runengine.Answer) error {
	if k := c.rendered.Load(); k != nil && bytes.Equal(a.Run, k.answer.Run) && bytes.Equal(a.Task, k.answer.Task) &&
		bytes.Equal(a.Approval, k.answer.Approval) {
		writeRecorded(c.W, k.resp, false)
		return nil
	}
	resp, err := render(a)
	if err != nil {
		return err
	}
	writeRecorded(c.W, resp, false)
	return nil
}

// jsonResponse is a JSON response: status, Location (below the base path,
// the path location then id; none when location is empty) and an encoded
// body, which a newline follows (body is not copied: an engine's answer is
// shared).
func (c *request) jsonResponse(status int, location, id string, body []byte) storedResponse {
	values := make([]string, 2) // the two headers' values, in one allocation
	values[0] = "application/json"
	hdr := http.Header{"Content-Type": values[0:1:1]}
	if location != "" {
		values[1] = c.h.opts.BasePath + location + id
		hdr["Location"] = values[1:2:2]
	}
	return storedResponse{Status: status, Header: hdr, Body: body, Newline: true}
}

// holdsSecret marks c's response as holding a secret shown once (see
// idempotent): a replay goes only to the credential that made the request.
func (c *request) holdsSecret() { c.secret = true }

// clientHost is the address the request came from, without its port.
func clientHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// replay writes a kept response again.
func (r *idemRequest) replay(c *request, rec *idemRecord) error {
	key := r.openKey
	if rec.Bound {
		key = r.boundKey()
	}
	resp, err := open(key[:], rec.Sealed)
	switch {
	case err != nil && rec.Bound:
		// Only the same credential derives the key: the response holds a
		// secret, which no other credential may see.
		return errs.Conflictf("Idempotency-Key was already used by another credential, and its response holds a secret shown only to that credential")
	case err != nil:
		return errs.Conflictf("Idempotency-Key was already used with a different request")
	}
	writeRecorded(c.W, resp, true)
	return nil
}

// writeRecorded writes resp to w, with Idempotent-Replayed when it is a
// replay.
func writeRecorded(w http.ResponseWriter, resp storedResponse, replayed bool) {
	if rec, ok := w.(*responseRecorder); ok && !replayed && rec.adopt(resp) {
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.Status)
	resp.writeBody(w)
}

// digest is the hex SHA-256 of parts, each followed by a NUL.
func digest(parts ...string) string {
	var d partsDigest
	for _, p := range parts {
		d.addString(p)
	}
	return d.hex()
}

// fingerprintOf is digest(method, uri, string(body)), without copying body.
func fingerprintOf(method, uri string, body []byte) string {
	var d partsDigest
	d.addString(method)
	d.addString(uri)
	d.addBytes(body)
	return d.hex()
}

// partsDigest is the SHA-256 of parts, each followed by a NUL. While the
// parts fit in 512 bytes they are gathered on the stack and hashed at once;
// from the first part that does not fit they stream into a hash through a
// small buffer, so no part is ever copied whole.
type partsDigest struct {
	buf    [512]byte
	n      int
	stream *digestStream // nil while the parts fit in buf
}

// digestStream is the hash the parts stream into once they outgrow
// partsDigest's buffer, and its buffer for string parts.
type digestStream struct {
	h   hash.Hash
	buf [512]byte
}

func (d *partsDigest) addString(p string) { addPart(d, p) }

func (d *partsDigest) addBytes(p []byte) { addPart(d, p) }

// addPart adds p and its NUL.
func addPart[T string | []byte](d *partsDigest, p T) {
	if d.fits(len(p)) {
		d.n += copy(d.buf[d.n:], p)
	} else {
		streamInto(d.streaming(), p)
	}
	d.end()
}

// raw adds p without a NUL after it.
func (d *partsDigest) raw(p []byte) {
	if d.stream == nil && d.n+len(p) < len(d.buf) {
		d.n += copy(d.buf[d.n:], p)
		return
	}
	streamInto(d.streaming(), p)
}

// streamInto writes p into s's hash through s's buffer: p itself never
// reaches the hash (an interface), so it need not live on the heap.
func streamInto[T string | []byte](s *digestStream, p T) {
	for len(p) > 0 {
		n := copy(s.buf[:], p)
		s.h.Write(s.buf[:n])
		p = p[n:]
	}
}

// fits reports whether a part of n bytes and its NUL are gathered in buf.
func (d *partsDigest) fits(n int) bool {
	return d.stream == nil && d.n+n < len(d.buf)
}

// streaming returns the stream, begun with the parts gathered so far.
func (d *partsDigest) streaming() *digestStream {
	if d.stream == nil {
		d.stream = &digestStream{h: sha256.New()}
		d.stream.h.Write(d.stream.buf[:copy(d.stream.buf[:], d.buf[:d.n])])
	}
	return d.stream
}

// end ends a part with its NUL.
func (d *partsDigest) end() {
	if s := d.stream; s != nil {
		s.buf[0] = 0
		s.h.Write(s.buf[:1])
		return
	}
	d.buf[d.n] = 0
	d.n++
}

// sum returns the digest.
func (d *partsDigest) sum() [sha256.Size]byte {
	var sum [sha256.Size]byte
	if s := d.stream; s != nil {
		copy(sum[:], s.h.Sum(s.buf[:0]))
		return sum
	}
	return sha256.Sum256(d.buf[:d.n])
}

// hex returns the digest in hex (one allocation: the string).
func (d *partsDigest) hex() string {
	sum := d.sum()
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// sealingKey derives the AES-256 key of one request's stored response from
// the bearer token (empty for a response without a secret, and on public
// routes, where the request itself is the secret) and the request: the
// HMAC-SHA-256 (RFC 2104) under the token of the NUL-terminated parts
// "bas idempotency v1", key, method, uri and body. It is computed over
// partsDigest, so a request's key costs no allocation unless its parts
// outgrow the stack buffer.
func sealingKey(token, key, method, uri string, body []byte) [sha256.Size]byte {
	var k [sha256.BlockSize]byte
	if len(token) > len(k) {
		sum := sha256.Sum256([]byte(token))
		copy(k[:], sum[:])
	} else {
		copy(k[:], token)
	}
	var pad [sha256.BlockSize + sha256.Size]byte
	for i, b := range k {
		pad[i] = b ^ 0x36
	}
	var in partsDigest
	in.raw(pad[:sha256.BlockSize])
	in.addString("bas idempotency v1")
	in.addString(key)
	in.addString(method)
	in.addString(uri)
	in.addBytes(body)
	inner := in.sum()
	for i, b := range k {
		pad[i] = b ^ 0x5c
	}
	copy(pad[sha256.BlockSize:], inner[:])
	return sha256.Sum256(pad[:])
}

// maxPooledResponse bounds the buffers appendSealed keeps for the next response.
const maxPooledResponse = 64 << 10

// appendSealed appends resp to b, compressed and sealed under key; bufs
// (nil: none) keeps the buffers that hold a response uncompressed between
// calls.
func appendSealed(b, key []byte, resp storedResponse, bufs *sync.Pool) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	// The pool holds *[]byte: the pointer taken out goes back in, so that
	// putting the buffer back allocates nothing.
	var kept *[]byte
	var raw []byte
	if bufs != nil {
		if kept, _ = bufs.Get().(*[]byte); kept != nil {
			raw = (*kept)[:0]
		}
	}
	raw = appendResponse(slices.Grow(raw, responseSize(resp)), resp)
	if bufs != nil && cap(raw) <= maxPooledResponse {
		if kept == nil {
			kept = new([]byte)
		}
		*kept = raw
		defer bufs.Put(kept)
	}
	// One buffer holds the nonce, then the version and the compressed
	// response, sealed in place.
	ns, maxLen := aead.NonceSize(), s2.MaxEncodedLen(len(raw))
	start := len(b)
	b = slices.Grow(b, ns+1+maxLen+aead.Overhead())
	buf := b[start : start+ns+1+maxLen+aead.Overhead()]
	buf[ns] = responseV1
	n := len(s2.Encode(buf[ns+1:ns+1+maxLen], raw))
	nonce := buf[:ns]
	if _, err := rand.Read(nonce); err != nil {
		return nil, errors.Wrap(err, "draw a nonce")
	}
	sealed := aead.Seal(nonce, nonce, buf[ns:ns+1+n], nil)
	return b[:start+len(sealed)], nil
}

func open(key, sealed []byte) (storedResponse, error) {
	var resp storedResponse
	aead, err := newAEAD(key)
	if err != nil {
		return resp, err
	}
	if len(sealed) < aead.NonceSize() {
		return resp, errors.New("sealed response too short")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], nil)
	if err != nil {
		return resp, errors.Wrap(err, "open response")
	}
	if len(plain) > 0 && plain[0] == '{' {
		// A record kept before the binary form: JSON.
		return resp, errors.Wrap(json.Unmarshal(plain, &resp), "decode response")
	}
	return decodeResponse(plain)
}

// A kept response is sealed in a compact form (a JSON body, in JSON, was
// base64 twice over): the version byte responseV1, then, compressed as an
// S2 block (github.com/klauspost/compress/s2), the status, the number of
// header fields and each field's name, number of values and values, every
// number a uvarint and every string its length then its bytes, and last
// the body. A run's start answer of 880 bytes keeps about 530. Records kept
// earlier hold the response's JSON, which starts with '{'.
const responseV1 = 1

// responseSize is about the size of resp's binary form.
func responseSize(resp storedResponse) int {
	n := 3*binary.MaxVarintLen16 + len(resp.Body) + len(newline)
	for k, vs := range resp.Header {
		n += len(k) + 2*binary.MaxVarintLen16
		for _, v := range vs {
			n += len(v) + binary.MaxVarintLen16
		}
	}
	return n
}

// appendResponse appends resp's fields, uncompressed.
func appendResponse(b []byte, resp storedResponse) []byte {
	b = binary.AppendUvarint(b, uint64(resp.Status))
	b = binary.AppendUvarint(b, uint64(len(resp.Header)))
	for k, vs := range resp.Header {
		b = binrec.AppendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binrec.AppendString(b, v)
		}
	}
	b = append(b, resp.Body...)
	if resp.Newline {
		b = append(b, newline...)
	}
	return b
}

// maxKeptResponse bounds what decodeResponse allocates for a kept
// response: its record is one store value (at most 1 MiB), and the
// compressed form of a response of a write is far smaller than this.
const maxKeptResponse = 16 << 20

var errMalformedResponse = errors.New("decode response: malformed")

func decodeResponse(b []byte) (storedResponse, error) {
	var resp storedResponse
	bad := errMalformedResponse
	if len(b) == 0 || b[0] != responseV1 {
		return resp, bad
	}
	if n, err := s2.DecodedLen(b[1:]); err != nil || n > maxKeptResponse {
		return resp, bad
	}
	b, err := s2.Decode(nil, b[1:])
	if err != nil {
		return resp, errors.Wrap(err, "decode response")
	}
	r := binrec.New(b)
	status := r.Uvarint()
	fields := r.Count(2) // a name's length and its number of values
	if !r.OK() || status > 1<<31 {
		return resp, bad
	}
	resp.Status, resp.Header = int(status), make(http.Header, fields)
	for range fields {
		k := r.String()
		vs := make([]string, r.Count(1)) // each value's length
		for i := range vs {
			vs[i] = r.String()
		}
		if _, twice := resp.Header[k]; twice || !r.OK() {
			return resp, bad // a field twice: not the one form of its header
		}
		resp.Header[k] = vs
	}
	resp.Body = r.Rest()
	return resp, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, errors.Wrap(err, "aes")
	}
	aead, err := cipher.NewGCM(block)
	return aead, errors.Wrap(err, "gcm")
}

// responseRecorder captures a handler's response so it can be kept for
// replays before it is written. A response written whole by writeRecorded
// (an engine command's answer, rendered once) is kept as it is, without a
// copy.
type responseRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
	// whole is the body of a response written whole (adopted), and
	// newline whether a newline follows it.
	whole            []byte
	newline, adopted bool
}

func (r *responseRecorder) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

func (r *responseRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	if r.adopted {
		// More after a whole response: it goes on from a copy, so the
		// adopted body is never written to.
		r.body.Write(r.whole)
		if r.newline {
			r.body.Write(newline)
		}
		r.whole, r.newline, r.adopted = nil, false, false
	}
	return r.body.Write(b)
}

// adopt records resp as the whole response when nothing was written yet,
// and reports whether it did.
func (r *responseRecorder) adopt(resp storedResponse) bool {
	if r.wrote || len(r.header) > 0 {
		return false
	}
	r.header, r.status, r.wrote, r.whole, r.newline, r.adopted = resp.Header, resp.Status, true, resp.Body, resp.Newline, true
	return true
}

// response is what was recorded.
func (r *responseRecorder) response() storedResponse {
	if r.adopted {
		return storedResponse{Status: r.status, Header: r.header, Body: r.whole, Newline: r.newline}
	}
	return storedResponse{Status: r.status, Header: r.header, Body: r.body.Bytes()}
}
