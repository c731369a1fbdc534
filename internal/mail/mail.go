// Package mail is the built-in provider of the email.send capability: an
// outbox. Each message is validated and written to its tenant's outbox in
// the store, where List (and GET /v1/outbox) reads it; nothing leaves the
// process. Development and tests read sign-in codes and invitations there;
// production binds email.send to a provider that delivers.
//
// A call repeated with the same idempotency key returns the first call's
// result and writes nothing, so a retried step never sends twice.
//
// A call of a run's step (the run engine's) does not commit its message:
// the provider hands the write to the engine (internal/callwrites), which
// commits it in the transaction of the step's result. Other calls commit
// their own, several arriving together in one transaction.
package mail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/batch"
	"github.com/bas-platform/bas/internal/bounded"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// ProviderID is the outbox provider's id.
const ProviderID = "builtin.email"

// Bounds of a message, as the catalog's email.send schema states them.
const (
	MaxRecipients = 50
	MaxAddress    = 320
	MaxSubject    = 300
	MaxBody       = 100_000
)

// Message is one email in a tenant's outbox.
type Message struct {
	ID        string    `json:"id"`
	To        []string  `json:"to"`
	Cc        []string  `json:"cc"`
	Subject   string    `json:"subject"`
	Body      string    `json:"body"`
	ReplyTo   *string   `json:"reply_to"`
	CreatedAt time.Time `json:"created_at"`
	// IdempotencyKey is the key of the call that sent it; a second call
	// with the same key sends nothing.
	IdempotencyKey string `json:"idempotency_key"`
}

var messages = &store.Collection[Message]{
	Name:     "mail",
	ID:       func(m *Message) string { return m.ID },
	Decode:   decodeMessage,
	NotFound: "message not found",
	Indexes: []store.Index[Message]{
		{Name: "idem", Unique: true, Values: func(m *Message) [][]any {
			if m.IdempotencyKey == "" {
				return nil
			}
			return [][]any{{m.IdempotencyKey}}
		}},
	},
}

// Provider is the built-in email.send provider: the outbox.
type Provider struct {
	st    store.Store
	clock clock.Clock

	ids ids.Generator // makes the ids of the records and audit entries it writes

	sends batch.Leader[*pendingSend] // calls written together, one commit per batch

	decoded decodedArgs // arguments decoded before, by their bytes

	recheck keysToCheck // keys to look up before a run's call hands its write (see hand)
}

// Bounds of decodedArgs: the argument documents kept and the size of each.
const (
	maxDecodedArgs     = 256
	maxDecodedArgBytes = 4096
)

// decodedArgs keeps the arguments of recent calls decoded and checked, by
// their bytes: a process step with fixed arguments sends the same bytes on
// every run, which are then decoded and checked once. Only valid arguments
// are kept; the decoded values are shared and never modified.
type decodedArgs struct {
	mu sync.Mutex
	m  map[string]*capability.EmailSendArgs
}

// args returns raw decoded and checked (see decodeArgs), from the kept
// ones when raw was decoded before.
func (d *decodedArgs) args(raw json.RawMessage) (*capability.EmailSendArgs, error) {
	if len(raw) > maxDecodedArgBytes {
		return decodeArgs(raw)
	}
	d.mu.Lock()
	a, ok := d.m[string(raw)]
	d.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := decodeArgs(raw)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*capability.EmailSendArgs{}
	}
	bounded.MakeRoom(d.m, maxDecodedArgs)
	d.m[string(raw)] = a
	return a, nil
}

var _ capability.Provider = (*Provider)(nil)

// NewProvider returns the outbox provider on st; clk stamps messages
// (clock.Real{} when nil).
func NewProvider(st store.Store, clk clock.Clock) *Provider {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Provider{st: st, clock: clk}
}

var _ registry.ResultsMatchCatalog = (*Provider)(nil)

// ResultsMatchCatalog tells the registry that the results of Call match
// the catalog's EmailSendResult schema (a message id and "queued"; the
// package's tests check them against it).
func (p *Provider) ResultsMatchCatalog() {}

// Info describes the provider.
func (p *Provider) Info() capability.Info {
	return capability.Info{ID: ProviderID, Name: "Outbox", Kind: capability.KindBuiltin,
		Capabilities: []string{capability.EmailSend}}
}

// Call sends one email: it validates the arguments (every violation,
// located under "args") and writes the message to the call's tenant's
// outbox. A call whose idempotency key was seen returns the first result.
func (p *Provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	if call.Capability != capability.EmailSend {
		return nil, errs.Invalidf([]any{"capability"}, "value_error", "the outbox provides only %s, not %s",
			capability.EmailSend, call.Capability)
	}
	if call.Tenant == "" || call.Tenant == store.System {
		return nil, errors.New("mail: a call needs a tenant")
	}
	args, err := p.decoded.args(call.Args)
	if err != nil {
		return nil, err
	}
	var msg *Message
	w := callwrites.From(ctx)
	switch {
	case store.HasAlsoInUpdate(ctx):
		// The caller's write must commit with this message alone.
		err = p.st.Update(ctx, func(tx store.Txn) error {
			var err error
			msg, err = p.write(tx, call, args, p.clock.Now().UTC())
			return err
		})
	case w != nil && call.IdempotencyKey != "":
		msg, err = p.hand(ctx, w, call, args)
	default:
		msg, err = p.queue(ctx, call, args)
	}
	if err != nil {
		return nil, err
	}
	return appendResult(make([]byte, 0, 48+len(msg.ID)), msg.ID), nil
}

// JoinsWrites marks the outbox a callwrites.Joiner: a call the engine
// makes (a Writes in its context, an idempotency key) hands its message
// to the commit of the step's result and does nothing else.
func (p *Provider) JoinsWrites(callwrites.Mark) {}

// appendResult appends the result of a call that queued message id: the
// JSON encoding/json writes for capability.EmailSendResult{MessageID: id,
// Status: "queued"} (TestResultJSONMatchesMarshal).
func appendResult(b []byte, id string) json.RawMessage {
	b = append(b, `{"message_id":`...)
	b = jsonvalue.AppendString(b, id)
	return append(b, `,"status":"queued"}`...)
}

// hand makes call's message and hands its write to the run engine (w),
// which commits it with the step's result: the message, the step's
// completion and the rest of the step's changes are then one transaction.
// A crash before it leaves no message, and the step, made again on resume
// with the same key, writes it then.
//
// Only a call of that step writes the key, and the engine makes it again
// only once the commit that would have written it failed or never
// happened, so no commit in flight writes it and there is nothing to look
// up first. One case remains: a message under the key committed on its
// own (by a version of the outbox that committed its messages itself,
// before a crash). The write's unique index entry then refuses it, which
// fails the step's change alone; the engine reloads the run and makes the
// call again, and this time, the key being marked, the call answers the
// message found, as any repeated call does. A call the engine says is New
// (a run's first calls: no call with its key was made before) is written
// without looking at the key's entry.
func (p *Provider) hand(ctx context.Context, w *callwrites.Writes, call capability.Call, args *capability.EmailSendArgs) (*Message, error) {
	if p.recheck.has(call.Tenant, call.IdempotencyKey) {
		var prev *Message
		err := p.st.View(ctx, func(r store.Reader) error {
			var err error
			prev, err = messages.Lookup(r, call.Tenant, "idem", call.IdempotencyKey)
			if errors.Is(err, errs.NotFound) {
				return nil
			}
			return err
		})
		if err != nil || prev != nil {
			return prev, err
		}
	}
	msg, raw, err := p.newMessage(call, args, p.clock.Now().UTC())
	if err != nil {
		return nil, err
	}
	tenant, key := call.Tenant, call.IdempotencyKey
	if w.New { // no call with the key was made before: nothing to refuse
		w.Add(func(tx store.Txn) error { return messages.PutNew(tx, tenant, msg, raw) })
		return msg, nil
	}
	w.Add(func(tx store.Txn) error {
		err := messages.PutOver(tx, tenant, nil, msg, raw)
		if errors.Is(err, errs.Conflict) {
			p.recheck.mark(tenant, key)
		}
		return err
	})
	return msg, nil
}

// keysToCheck are the idempotency keys under which a handed write found a
// message: the next call with one looks it up first (see hand).
type keysToCheck struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// maxKeysToCheck bounds keysToCheck (a key is dropped once looked up).
const maxKeysToCheck = 4096

// mark marks tenant's key. A key dropped to keep the bound is marked again
// when its write is refused again.
func (k *keysToCheck) mark(tenant, key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]struct{}{}
	}
	bounded.MakeRoom(k.m, maxKeysToCheck)
	k.m[tenant+"\x00"+key] = struct{}{}
}

// has reports whether tenant's key is marked, and unmarks it.
func (k *keysToCheck) has(tenant, key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.m) == 0 {
		return false
	}
	id := tenant + "\x00" + key
	_, ok := k.m[id]
	delete(k.m, id)
	return ok
}

// newMessage makes call's message, new, and its record's bytes.
func (p *Provider) newMessage(call capability.Call, args *capability.EmailSendArgs, now time.Time) (*Message, []byte, error) {
	msg := &Message{ID: p.ids.New("msg", now), To: trimAll(args.To), Cc: trimAll(args.CC), Subject: args.Subject,
		Body: args.Body, CreatedAt: now, IdempotencyKey: call.IdempotencyKey}
	if r := strings.TrimSpace(args.ReplyTo); r != "" {
		msg.ReplyTo = &r
	}
	return msg, msg.appendRecord(make([]byte, 0, msg.recordSize())), nil
}

// write writes call's message in tx, or returns the message an earlier
// call with its idempotency key wrote.
//
// The write itself finds an earlier call: the idempotency key's unique
// index entry, which it checks before writing anything, is then taken
// (one read of the entry for a new key, the usual case).
func (p *Provider) write(tx store.Txn, call capability.Call, args *capability.EmailSendArgs, now time.Time) (*Message, error) {
	msg, raw, err := p.newMessage(call, args, now)
	if err != nil {
		return nil, err
	}
	// The id is new: there is no stored message to read back first.
	err = messages.PutOver(tx, call.Tenant, nil, msg, raw)
	if call.IdempotencyKey != "" && errors.Is(err, errs.Conflict) {
		return messages.Lookup(tx, call.Tenant, "idem", call.IdempotencyKey)
	}
	return msg, err
}

// pendingSend is one call in the outbox's queue, with its answer.
type pendingSend struct {
	call capability.Call
	args *capability.EmailSendArgs
	msg  *Message
	err  error
}

// queue writes call's message together with the messages of the calls
// that arrive while another batch commits: one transaction (one sync of
// the disk) for all of them. Each call keeps its own answer; calls with
// one idempotency key in one batch write one message, as they would one
// after the other.
func (p *Provider) queue(ctx context.Context, call capability.Call, args *capability.EmailSendArgs) (*Message, error) {
	ps := &pendingSend{call: call, args: args}
	p.sends.Do(ps, func(batch []*pendingSend) { p.writeBatch(context.WithoutCancel(ctx), batch) })
	return ps.msg, ps.err
}

// writeBatch writes batch in one transaction and answers each call.
func (p *Provider) writeBatch(ctx context.Context, batch []*pendingSend) {
	err := p.st.Update(ctx, func(tx store.Txn) error {
		now := p.clock.Now().UTC()
		for _, ps := range batch {
			msg, err := p.write(tx, ps.call, ps.args, now)
			if err != nil {
				return err
			}
			ps.msg = msg
		}
		return nil
	})
	if err != nil {
		for _, ps := range batch {
			ps.msg, ps.err = nil, err
		}
	}
}

func trimAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// decodeArgs decodes and checks email.send arguments (the catalog's
// EmailSendArgs), reporting every violation at once. The registry checks
// them against the catalog's schema before a call arrives; this keeps a
// direct call from writing a malformed message.
func decodeArgs(raw json.RawMessage) (*capability.EmailSendArgs, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, errs.Invalidf([]any{"args"}, "type_error", "must be a JSON object")
	}
	var vs []errs.Violation
	add := func(typ, msg string, loc ...any) {
		vs = append(vs, errs.Violation{Loc: append([]any{"args"}, loc...), Msg: msg, Type: typ})
	}
	var a capability.EmailSendArgs
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var err error
		switch name {
		case "to":
			err = json.Unmarshal(fields[name], &a.To)
		case "cc":
			err = json.Unmarshal(fields[name], &a.CC)
		case "subject":
			a.Subject, err = decodeString(fields[name])
		case "body":
			a.Body, err = decodeString(fields[name])
		case "reply_to":
			a.ReplyTo, err = decodeString(fields[name])
		default:
			add("extra_forbidden", "is not an argument of email.send", name)
			continue
		}
		if err != nil {
			add("type_error", "has the wrong type", name)
		}
	}
	for _, name := range []string{"to", "subject", "body"} {
		if _, ok := fields[name]; !ok {
			add("missing", "is required", name)
		}
	}
	checkList := func(name string, list []string, min int) {
		switch {
		case len(list) < min:
			add("too_short", fmt.Sprintf("must have at least %d address", min), name)
		case len(list) > MaxRecipients:
			add("too_long", fmt.Sprintf("must have at most %d addresses", MaxRecipients), name)
		}
		for i, addr := range list {
			if !validAddress(addr) {
				add("value_error", "must be an email address", name, i)
			}
		}
	}
	if _, ok := fields["to"]; ok {
		checkList("to", a.To, 1)
	}
	checkList("cc", a.CC, 0)
	if _, ok := fields["subject"]; ok {
		switch {
		case strings.TrimSpace(a.Subject) == "":
			add("string_too_short", "must not be blank", "subject")
		case utf8.RuneCountInString(a.Subject) > MaxSubject:
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxSubject), "subject")
		case strings.ContainsAny(a.Subject, "\r\n"):
			add("value_error", "must be one line", "subject")
		}
	}
	if utf8.RuneCountInString(a.Body) > MaxBody {
		add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxBody), "body")
	}
	if a.ReplyTo != "" && !validAddress(a.ReplyTo) {
		add("value_error", "must be an email address", "reply_to")
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	return &a, nil
}

// decodeString decodes raw, one JSON value of a valid document, as a
// string: a plain one (no escapes, valid UTF-8) without a decoder.
func decodeString(raw json.RawMessage) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' &&
		bytes.IndexByte(raw[1:n-1], '\\') < 0 && bytes.IndexByte(raw[1:n-1], '"') < 0 && utf8.Valid(raw[1:n-1]) {
		return string(raw[1 : n-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// validAddress reports whether s is a plain address (no display name).
func validAddress(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > MaxAddress {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}

// List returns one page of tenant's outbox, newest first, and the next
// cursor.
func List(ctx context.Context, st store.Store, tenant string, page store.Page) ([]*Message, string, error) {
	var (
		out  []*Message
		next string
	)
	err := st.View(ctx, func(r store.Reader) error {
		var err error
		out, next, err = messages.List(r, tenant, page)
		return err
	})
	return out, next, err
}
