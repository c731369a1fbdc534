package httpapi

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Idempotency keys (api.md section 1). A POST with an Idempotency-Key is
// claimed in the store before its handler runs: the record is kept per
// (tenant, credential, key) for 24 hours. The same key with the same
// request (method, path and body) replays the stored response without
// acting again; with another request it is a 409; while the first request
// is still running, a 409 too.
//
// The stored response may hold a secret (a new API key, a session token),
// and secrets are stored only as hashes. So the response is sealed with
// AES-GCM under a key derived from the caller's bearer token and the
// request, neither of which the store holds: only the request that made it
// can open it again.
const (
	idempotencyTTL = 24 * time.Hour
	// idempotencyLease is how long a claim blocks a second request; a
	// claim left behind by a crash lapses after it.
	idempotencyLease  = 10 * time.Minute
	maxIdempotencyKey = 255
	// idempotencySweep bounds the expired records one request removes.
	idempotencySweep = 8
)

const (
	idemInFlight = "in_flight"
	idemDone     = "done"
)

// idemRecord is one claimed Idempotency-Key.
type idemRecord struct {
	ID          string    `json:"id"`          // digest of the credential and the key
	Fingerprint string    `json:"fingerprint"` // digest of method, path and body
	State       string    `json:"state"`
	LeaseUntil  time.Time `json:"lease_until"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Sealed is the response (status, headers, body), sealed.
	Sealed []byte `json:"sealed,omitempty"`
}

var idempotencyRecords = &store.Collection[idemRecord]{
	Name: "idem",
	ID:   func(r *idemRecord) string { return r.ID },
	Indexes: []store.Index[idemRecord]{
		{Name: "expires", Values: func(r *idemRecord) [][]any { return [][]any{{r.ExpiresAt.UnixNano()}} }},
	},
}

// storedResponse is what a replay writes.
type storedResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

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
	tenant, scope, token := store.System, "anonymous", ""
	if c.P != nil {
		tenant, scope = c.P.Tenant, c.P.KeyID
		if scope == "" {
			scope = c.P.SessionID
		}
		token = strings.TrimSpace(strings.TrimPrefix(c.R.Header.Get("Authorization"), "Bearer "))
	}
	uri := c.R.URL.RequestURI()
	id := digest(scope, key)
	fingerprint := digest(c.R.Method, uri, string(body))
	sealKey := sealingKey(token, key, c.R.Method, uri, body)

	ctx := context.WithoutCancel(c.Context())
	prev, err := h.claimIdempotency(ctx, tenant, id, fingerprint)
	if err != nil {
		return err
	}
	if prev != nil {
		return h.replay(c, prev, sealKey)
	}

	rec := newResponseRecorder()
	w := c.W
	kept := false
	defer func() {
		if !kept { // the handler failed or panicked: free the key for a retry
			h.releaseIdempotency(ctx, tenant, id)
		}
	}()
	c.W = rec
	if err := c.route.fn(c); err != nil {
		h.writeError(c, err)
	}
	c.W = w
	resp := storedResponse{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
	// Bad input changes nothing, so a corrected retry may use the key
	// again; a server error may be retried too.
	if resp.Status < 500 && resp.Status != http.StatusUnprocessableEntity {
		if err := h.keepIdempotency(ctx, tenant, id, resp, sealKey); err != nil {
			h.log.Error("idempotency: keeping the response failed", "request_id", requestID(c.Context()),
				"error", errors.FlattenDetails(err))
		} else {
			kept = true
		}
	}
	writeRecorded(w, resp, false)
	return nil
}

// claimIdempotency claims id for a new request, or returns the finished
// record to replay. A different request under the key, or one still in
// flight, is errs.Conflict.
func (h *Handler) claimIdempotency(ctx context.Context, tenant, id, fingerprint string) (*idemRecord, error) {
	now := h.ws.Clock().Now().UTC()
	var prev *idemRecord
	err := h.ws.Store().Update(ctx, func(tx store.Txn) error {
		prev = nil
		rec, err := idempotencyRecords.Get(tx, tenant, id)
		switch {
		case errors.Is(err, errs.NotFound):
		case err != nil:
			return err
		case now.Before(rec.ExpiresAt):
			if rec.Fingerprint != fingerprint {
				return errs.Conflictf("Idempotency-Key was already used with a different request")
			}
			if rec.State == idemDone {
				prev = rec
				return nil
			}
			if now.Before(rec.LeaseUntil) {
				return errs.Conflictf("a request with this Idempotency-Key is still in progress")
			}
		}
		return idempotencyRecords.Put(tx, tenant, &idemRecord{ID: id, Fingerprint: fingerprint, State: idemInFlight,
			LeaseUntil: now.Add(idempotencyLease), ExpiresAt: now.Add(idempotencyTTL)})
	})
	return prev, err
}

// keepIdempotency stores the sealed response and sweeps a few expired
// records of the tenant.
func (h *Handler) keepIdempotency(ctx context.Context, tenant, id string, resp storedResponse, key []byte) error {
	sealed, err := seal(key, resp)
	if err != nil {
		return err
	}
	now := h.ws.Clock().Now().UTC()
	return h.ws.Store().Update(ctx, func(tx store.Txn) error {
		rec, err := idempotencyRecords.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		rec.State, rec.Sealed = idemDone, sealed
		if err := idempotencyRecords.Put(tx, tenant, rec); err != nil {
			return err
		}
		return sweepIdempotency(tx, tenant, now)
	})
}

// releaseIdempotency forgets a claim whose request did not finish.
func (h *Handler) releaseIdempotency(ctx context.Context, tenant, id string) {
	err := h.ws.Store().Update(ctx, func(tx store.Txn) error {
		err := idempotencyRecords.Delete(tx, tenant, id)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		h.log.Error("idempotency: releasing a key failed", "error", errors.FlattenDetails(err))
	}
}

// sweepIdempotency deletes up to idempotencySweep expired records of
// tenant, oldest first. Index entries are (tenant, "i", "idem", "expires",
// unix nanos, id), as store.Collection lays them out.
func sweepIdempotency(tx store.Txn, tenant string, now time.Time) error {
	prefix := store.Key(tenant, "i", idempotencyRecords.Name, "expires")
	var ids []string
	err := tx.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(key, _ []byte) error {
		parts, err := store.DecodeKey(key[len(prefix):])
		if err != nil || len(parts) != 2 {
			return errors.New("idempotency: malformed expiry index entry")
		}
		at, _ := parts[0].(int64)
		id, _ := parts[1].(string)
		if at > now.UnixNano() || len(ids) == idempotencySweep {
			return store.ErrStop
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := idempotencyRecords.Delete(tx, tenant, id); err != nil && !errors.Is(err, errs.NotFound) {
			return err
		}
	}
	return nil
}

// replay writes a kept response again.
func (h *Handler) replay(c *request, rec *idemRecord, key []byte) error {
	resp, err := open(key, rec.Sealed)
	if err != nil {
		// Only a request with the same token and body derives the key; the
		// fingerprint matched, so the token differs: not the same request.
		return errs.Conflictf("Idempotency-Key was already used with a different request")
	}
	writeRecorded(c.W, resp, true)
	return nil
}

func writeRecorded(w http.ResponseWriter, resp storedResponse, replayed bool) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sealingKey derives the AES-256 key of one request's stored response from
// the bearer token (empty on public routes, where the request itself is
// the secret) and the request.
func sealingKey(token, key, method, uri string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	for _, p := range [][]byte{[]byte("bas idempotency v1"), []byte(key), []byte(method), []byte(uri), body} {
		m.Write(p)
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

func seal(key []byte, resp storedResponse) ([]byte, error) {
	plain, err := json.Marshal(resp)
	if err != nil {
		return nil, errors.Wrap(err, "encode response")
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, errors.Wrap(err, "draw a nonce")
	}
	return aead.Seal(nonce, nonce, plain, nil), nil
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
	return resp, errors.Wrap(json.Unmarshal(plain, &resp), "decode response")
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
// replays before it is written.
type responseRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func newResponseRecorder() *responseRecorder {
	return &responseRecorder{header: http.Header{}, status: http.StatusOK}
}

func (r *responseRecorder) Header() http.Header { return r.header }

func (r *responseRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
