package ai_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/ai"
	"github.com/bas-platform/bas/internal/ai/aitest"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

const apiKey = "sk-test-0123456789abcdef"

type event struct {
	Tenant, Name string
	Data         any
}

type sink struct {
	mu  sync.Mutex
	evs []event
}

func (s *sink) Emit(_ store.Txn, tenant, name string, data any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, event{tenant, name, data})
	return nil
}
func (s *sink) Kick() {}

func (s *sink) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.evs {
		out = append(out, e.Tenant+" "+e.Name)
	}
	return out
}

type env struct {
	svc   *ai.Service
	srv   *aitest.Server
	st    store.Store
	clock *clock.Fake
	ev    *sink
	p     capability.Provider
}

func setup(t testing.TB, in ai.ConnectionIn) *env {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv := aitest.New(apiKey)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if p := srv.Problems(); len(p) > 0 {
			t.Errorf("malformed requests: %v", p)
		}
	})
	fc := clock.NewFake(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	ev := &sink{}
	svc, err := ai.New(ai.Config{Store: st, Key: make([]byte, 32), Clock: fc, Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	if in.BaseURL == "" {
		in.BaseURL = srv.BaseURL()
	}
	if in.Model == "" {
		in.Model = "test-model"
	}
	if in.APIKey == nil {
		k := apiKey
		in.APIKey = &k
	}
	if _, _, err := svc.SetConnection(context.Background(), "t1", "admin", in); err != nil {
		t.Fatal(err)
	}
	return &env{svc: svc, srv: srv, st: st, clock: fc, ev: ev, p: svc.Provider()}
}

func (e *env) call(capID string, args any) (map[string]any, error) {
	raw, _ := json.Marshal(args)
	out, err := e.p.Call(context.Background(), capability.Call{Tenant: "t1", Capability: capID, Args: raw, IdempotencyKey: "run/step/1"})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func ptr[T any](v T) *T { return &v }

const email = "Hello,\nplease find attached our invoice.\nInvoice number: INV-2026-0042\nTotal: EUR 1,250.00\nIBAN: DE89 3704 0044 0532 0130 00\nBest, Jane (jane@acme.example)"

func TestClassifyRequestAndAnswer(t *testing.T) {
	e := setup(t, ai.ConnectionIn{})
	e.srv.Push(aitest.Cue{Content: `{"label":"invoice","confidence":0.93,"reason":"It sends an invoice."}`, PromptTokens: 120, CompletionTokens: 18})
	got, err := e.call(capability.AIClassify, capability.AIClassifyArgs{Text: email,
		Labels: []capability.AILabel{{Label: "invoice", Description: "a supplier invoice"}, {Label: "question"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"label": "invoice", "confidence": 0.93, "reason": "It sends an invoice.",
		"ai": map[string]any{"provider": "connector.openai", "model": "test-model", "attempts": 1.0,
			"usage": map[string]any{"prompt_tokens": 120.0, "completion_tokens": 18.0, "total_tokens": 138.0}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Stream || r.Authorization != "Bearer "+apiKey || r.Model != "test-model" || r.SchemaName() != "classify" ||
		!r.ResponseFormat.JSONSchema.Strict || !strings.Contains(r.Text(), "INV-2026-0042") {
		t.Errorf("request %+v", r)
	}
	var sch map[string]any
	_ = json.Unmarshal(r.ResponseFormat.JSONSchema.Schema, &sch)
	labels := sch["properties"].(map[string]any)["label"].(map[string]any)["enum"]
	if d := cmp.Diff([]any{"invoice", "question"}, labels); d != "" {
		t.Errorf("label enum (-want +got):\n%s", d)
	}
	u, err := e.svc.Usage(context.Background(), "t1", "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if u.Calls != 1 || u.TotalTokens != 138 || u.PromptTokens != 120 {
		t.Errorf("usage %+v", u)
	}
	calls, _, err := e.svc.Calls(context.Background(), "t1", store.Page{Limit: 10})
	if err != nil || len(calls) != 1 || calls[0].Status != ai.CallSucceeded || calls[0].Usage.TotalTokens != 138 {
		t.Errorf("calls %+v %v", calls, err)
	}
}

func TestExtractEvidence(t *testing.T) {
	e := setup(t, ai.ConnectionIn{})
	e.srv.Push(aitest.Cue{Content: `{"fields":{"invoice_number":{"quote":"INV-2026-0042"},"total":{"quote":"EUR 1,250.00"},"po":{"quote":null}}}`})
	got, err := e.call(capability.AIExtract, capability.AIExtractArgs{Text: email, Fields: []capability.AIField{
		{Key: "invoice_number", Label: "Invoice number", Required: true},
		{Key: "total", Label: "Total", Type: "money"},
		{Key: "po", Label: "PO number", Required: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(email, "INV-2026-0042") // ASCII: bytes are code points
	tstart := strings.Index(email, "EUR 1,250.00")
	want := map[string]any{
		"invoice_number": map[string]any{"value": "INV-2026-0042", "text": "INV-2026-0042", "start": float64(start), "end": float64(start + 13)},
		"total":          map[string]any{"value": 125000.0, "text": "EUR 1,250.00", "start": float64(tstart), "end": float64(tstart + 12)},
	}
	if d := cmp.Diff(want, got["values"]); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]any{"po"}, got["missing"]); d != "" {
		t.Errorf("missing (-want +got):\n%s", d)
	}
}

func TestInvalidAnswersAreRetryableFailures(t *testing.T) {
	args := capability.AIExtractArgs{Text: email, Fields: []capability.AIField{{Key: "invoice_number", Label: "Invoice number"}}}
	for _, tc := range []struct {
		name string
		cue  aitest.Cue
	}{
		{"not JSON", aitest.Cue{Content: `{"fields": {"invoice_number": `}},
		{"wrong shape", aitest.Cue{Content: `{"fields":{"invoice_number":"INV-2026-0042"}}`}},
		{"unknown field", aitest.Cue{Content: `{"fields":{"invoice_number":{"quote":"INV-2026-0042"}},"extra":1}`}},
		{"quote not in the text", aitest.Cue{Content: `{"fields":{"invoice_number":{"quote":"INV-9999"}}}`}},
		{"body not a completion", aitest.Cue{Body: `<html>gateway</html>`}},
		{"no choices", aitest.Cue{Body: `{"id":"x","choices":[]}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, ai.ConnectionIn{MaxRetries: ptr(0)})
			e.srv.Push(tc.cue)
			_, err := e.call(capability.AIExtract, args)
			if !errors.Is(err, ai.ErrInvalidAnswer) || !errors.Is(err, errs.Unavailable) {
				t.Fatalf("err = %v; want an invalid answer, retryable", err)
			}
		})
	}
	t.Run("classify label not offered", func(t *testing.T) {
		e := setup(t, ai.ConnectionIn{})
		e.srv.Push(aitest.Cue{Content: `{"label":"spam","confidence":0.5,"reason":"x"}`})
		_, err := e.call(capability.AIClassify, capability.AIClassifyArgs{Text: "x", Labels: []capability.AILabel{{Label: "a"}, {Label: "b"}}})
		if !errors.Is(err, ai.ErrInvalidAnswer) {
			t.Fatalf("err = %v", err)
		}
		calls, _, _ := e.svc.Calls(context.Background(), "t1", store.Page{Limit: 10})
		if len(calls) != 1 || calls[0].Status != ai.CallInvalidAnswer || calls[0].Usage.TotalTokens != 15 {
			t.Errorf("the invalid answer's tokens are recorded: %+v", calls)
		}
	})
}

// waitTimer waits until the code under test has started a timer on the
// fake clock.
func waitTimer(t *testing.T, fc *clock.Fake, n int) {
	t.Helper()
	testwait.Until(t, "a timer started on the fake clock", func() bool { return fc.Timers() >= n })
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	e := setup(t, ai.ConnectionIn{MaxRetries: ptr(2)})
	e.srv.Push(aitest.Cue{Status: 429, RetryAfter: "7"}, aitest.Cue{Status: 503},
		aitest.Cue{Content: `{"subject":"Re: invoice","text":"Thank you, we received it."}`})
	done := make(chan error, 1)
	var got map[string]any
	go func() {
		var err error
		got, err = e.call(capability.AIDraft, capability.AIDraftArgs{Kind: "reply", Brief: "Thank the sender."})
		done <- err
	}()
	waitTimer(t, e.clock, 1)
	e.clock.Advance(6 * time.Second)
	if n := len(e.srv.Requests()); n != 1 {
		t.Fatalf("%d requests before Retry-After passed", n)
	}
	e.clock.Advance(time.Second) // 7s: the retry goes
	waitTimer(t, e.clock, 1)     // the 503 without Retry-After backs off 2s
	e.clock.Advance(2 * time.Second)
	if err := testwait.Recv(t, done, "the draft was answered"); err != nil {
		t.Fatal(err)
	}
	if got["text"] != "Thank you, we received it." || got["ai"].(map[string]any)["attempts"] != 3.0 {
		t.Errorf("got %v", got)
	}
}

func TestRateLimitBeyondTheWaitEndsRateLimited(t *testing.T) {
	e := setup(t, ai.ConnectionIn{MaxRetries: ptr(3)})
	e.srv.Push(aitest.Cue{Status: 429, RetryAfter: "120"})
	_, err := e.call(capability.AIComplete, capability.AICompleteArgs{Prompt: "hi"})
	var rl *errs.RateLimit
	if !errors.Is(err, errs.RateLimited) || !errors.As(err, &rl) || rl.RetryAfter != 120*time.Second {
		t.Fatalf("err = %v; want rate limited after 120s", err)
	}
}

func TestTimeoutAndPermanentStatuses(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		e := setup(t, ai.ConnectionIn{TimeoutSeconds: ptr(1), MaxRetries: ptr(0)})
		e.srv.Push(aitest.Cue{Hang: true})
		_, err := e.call(capability.AIComplete, capability.AICompleteArgs{Prompt: "hi"})
		if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "within 1s") {
			t.Fatalf("err = %v", err)
		}
	})
	for _, tc := range []struct {
		code int
		kind error
	}{{401, errs.Forbidden}, {400, errs.Invalid}, {404, errs.Invalid}} {
		t.Run(strings.ToLower(errs.Kind(tc.kind).Error()), func(t *testing.T) {
			e := setup(t, ai.ConnectionIn{MaxRetries: ptr(3)})
			e.srv.Push(aitest.Cue{Status: tc.code})
			_, err := e.call(capability.AIComplete, capability.AICompleteArgs{Prompt: "hi"})
			if !errors.Is(err, tc.kind) || len(e.srv.Requests()) != 1 {
				t.Fatalf("%d: err = %v after %d requests; want %v, not retried", tc.code, err, len(e.srv.Requests()), tc.kind)
			}
		})
	}
}

func TestBudgetWarnsThenStops(t *testing.T) {
	e := setup(t, ai.ConnectionIn{MonthlyTokenBudget: ptr(int64(100)), WarnPercent: ptr(50)})
	args := capability.AICompleteArgs{Prompt: "hi"}
	e.srv.Push(aitest.Cue{Content: "a", PromptTokens: 40, CompletionTokens: 9}) // 49: below 50%
	if _, err := e.call(capability.AIComplete, args); err != nil {
		t.Fatal(err)
	}
	if n := e.ev.names(); len(n) != 0 {
		t.Fatalf("events %v", n)
	}
	e.srv.Push(aitest.Cue{Content: "b", PromptTokens: 1, CompletionTokens: 0}) // 50: just at 50%
	if _, err := e.call(capability.AIComplete, args); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"t1 ai.budget.warning"}, e.ev.names()); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	e.srv.Push(aitest.Cue{Content: "c", PromptTokens: 40, CompletionTokens: 9}) // 99: just inside
	if _, err := e.call(capability.AIComplete, args); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(aitest.Cue{Content: "d", PromptTokens: 1, CompletionTokens: 0}) // 100: the budget
	if _, err := e.call(capability.AIComplete, args); err != nil {
		t.Fatal(err)
	}
	_, err := e.call(capability.AIComplete, args)
	if !errors.Is(err, errs.Forbidden) || !strings.Contains(err.Error(), "monthly AI token budget is used up: 100 of 100 tokens used in 2026-11") {
		t.Fatalf("err = %v", err)
	}
	if n := len(e.srv.Requests()); n != 4 {
		t.Errorf("%d requests; the refused call must not reach the model", n)
	}
	if d := cmp.Diff([]string{"t1 ai.budget.warning", "t1 ai.budget.exhausted"}, e.ev.names()); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	// Next month the budget is fresh.
	e.clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if _, err := e.call(capability.AIComplete, args); err != nil {
		t.Fatalf("next month: %v", err)
	}
}

func TestRedaction(t *testing.T) {
	e := setup(t, ai.ConnectionIn{RedactFields: []string{"iban", "customer_name"}, RedactPatterns: []string{"email"}})
	e.srv.Push(aitest.Cue{Content: `{"fields":{"invoice_number":{"quote":"INV-2026-0042"}}}`},
		aitest.Cue{Content: `{"subject":"s","text":"Dear customer, thanks."}`})
	got, err := e.call(capability.AIExtract, capability.AIExtractArgs{Text: email, Fields: []capability.AIField{{Key: "invoice_number", Label: "Invoice number"}}})
	if err != nil {
		t.Fatal(err)
	}
	if v := got["values"].(map[string]any)["invoice_number"].(map[string]any); v["start"] != float64(strings.Index(email, "INV-2026-0042")) {
		t.Errorf("offsets shift under redaction: %v", v)
	}
	if _, err := e.call(capability.AIDraft, capability.AIDraftArgs{Kind: "reply", Brief: "Write to Jane Roe about her invoice.",
		Data: map[string]any{"customer_name": "Jane Roe", "amount": 1250}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.srv.Requests() {
		for _, secret := range []string{"DE89 3704", "jane@acme.example", "Jane Roe"} {
			if strings.Contains(r.Text(), secret) {
				t.Errorf("%q left the workspace:\n%s", secret, r.Text())
			}
		}
	}
	if !strings.Contains(e.srv.Requests()[1].Text(), "1250") {
		t.Errorf("unredacted data is missing from the prompt")
	}
}

func TestConnectionKeepsTheKeySealed(t *testing.T) {
	e := setup(t, ai.ConnectionIn{})
	c, err := e.svc.Connection(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if !c.APIKeySet || c.APIKeyLast4 == nil || *c.APIKeyLast4 != "cdef" {
		t.Errorf("connection %+v", c)
	}
	out, _ := json.Marshal(c)
	if strings.Contains(string(out), apiKey) {
		t.Errorf("the key is returned: %s", out)
	}
	// Nothing stored holds the key in the clear.
	err = e.st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{}, func(k, v []byte) error {
			if strings.Contains(string(v), apiKey) || strings.Contains(string(v), "0123456789abcdef") {
				t.Errorf("%q holds the key in the clear", k)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Another tenant has no connection; the provider says how to make one.
	_, err = e.p.Call(context.Background(), capability.Call{Tenant: "t2", Capability: capability.AIComplete, Args: json.RawMessage(`{"prompt":"x"}`)})
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "PUT /v1/ai/connection") {
		t.Errorf("err = %v", err)
	}
	// Health per workspace.
	hc := e.p.(capability.HealthChecker)
	for tenant, want := range map[string]string{"t1": "connected", "t2": "not_configured"} {
		if h := hc.Health(capability.WithTenant(context.Background(), tenant)); h.Status != want {
			t.Errorf("%s: health %+v; want %s", tenant, h, want)
		}
	}
}

func TestConnectionInBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   ai.ConnectionIn
		bad  bool
	}{
		{"https", ai.ConnectionIn{BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini"}, false},
		{"ftp", ai.ConnectionIn{BaseURL: "ftp://x/v1", Model: "m"}, true},
		{"credentials", ai.ConnectionIn{BaseURL: "https://u:p@x/v1", Model: "m"}, true},
		{"query", ai.ConnectionIn{BaseURL: "https://x/v1?a=1", Model: "m"}, true},
		{"model spaces", ai.ConnectionIn{BaseURL: "https://x/v1", Model: " m"}, true},
	} {
		if got := len(tc.in.Validate()) > 0; got != tc.bad {
			t.Errorf("%s: invalid = %v, want %v", tc.name, got, tc.bad)
		}
	}
}

// TestRealServer runs against a real OpenAI-compatible server (Ollama,
// vLLM, llama.cpp's server, a hosted API) when BAS_AI_BASE_URL is set;
// BAS_AI_MODEL and BAS_AI_API_KEY configure it.
func TestRealServer(t *testing.T) {
	base := os.Getenv("BAS_AI_BASE_URL")
	if base == "" {
		t.Skip("BAS_AI_BASE_URL is not set")
	}
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := ai.New(ai.Config{Store: st, Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	model := os.Getenv("BAS_AI_MODEL")
	if model == "" {
		model = "llama3.2"
	}
	in := ai.ConnectionIn{BaseURL: base, Model: model, TimeoutSeconds: ptr(120)}
	if k := os.Getenv("BAS_AI_API_KEY"); k != "" {
		in.APIKey = &k
	}
	if _, _, err := svc.SetConnection(context.Background(), "t1", "admin", in); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(capability.AIClassifyArgs{Text: email, Labels: []capability.AILabel{{Label: "invoice"}, {Label: "complaint"}}})
	out, err := svc.Provider().Call(context.Background(), capability.Call{Tenant: "t1", Capability: capability.AIClassify, Args: raw})
	if err != nil {
		t.Fatal(err)
	}
	var r capability.AIClassifyResult
	if err := json.Unmarshal(out, &r); err != nil || r.Label != "invoice" {
		t.Errorf("classified %s (%v)", out, err)
	}
}
