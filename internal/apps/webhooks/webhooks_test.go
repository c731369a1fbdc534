package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// VerifyBasSignature is the verification snippet of httpapi/API.md,
// verbatim (TestSnippetIsDocumented keeps them equal).
//
// --- snippet start
// VerifyBasSignature checks a bas webhook request: header is its
// Bas-Signature header, body its raw body, secret the webhook's secret.
func VerifyBasSignature(secret, header string, body []byte, now time.Time) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("no timestamp in Bas-Signature")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside the 5-minute window: a replay?")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("signature does not match")
}

// --- snippet end

func TestSnippetIsDocumented(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("webhooks_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(src), "// --- snippet start\n")
	snippet, _, _ := strings.Cut(rest, "\n// --- snippet end")
	doc, err := os.ReadFile("../../../httpapi/API.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), snippet) {
		t.Errorf("httpapi/API.md does not hold the verification snippet of webhooks_test.go verbatim")
	}
}

// fakeResolver answers from a table.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

type bundle struct {
	st       store.Store
	clock    *clock.Fake
	svc      *Service
	attempts chan string
}

func setup(t *testing.T, cfg Config, before ...func(*Service)) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{st: st, clock: clock.NewFake(time.Now().UTC().Truncate(time.Second)), attempts: make(chan string, 100)}
	cfg.Store, cfg.Clock = st, b.clock
	cfg.OnAttempt = func(_ string, _ *Delivery, outcome string) { b.attempts <- outcome }
	if cfg.Resolver == nil {
		cfg.Resolver = fakeResolver{}
	}
	b.svc, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range before {
		fn(b.svc)
	}
	b.svc.Open()
	t.Cleanup(func() { b.svc.Close(); _ = st.Close() })
	return b
}

// emit writes an event's deliveries as the run engine does: in a
// transaction, then the after hook.
func (b *bundle) emit(t *testing.T, tenant, name string) string {
	t.Helper()
	ev := &runengine.Event{ID: "evt_" + strconv.FormatInt(b.clock.Now().UnixNano(), 36), Tenant: tenant, Name: name,
		Data: map[string]any{"number": "INV-000001"}, At: b.clock.Now()}
	op, after := b.svc.Tap(ev)
	if op == nil {
		t.Fatalf("no delivery for %s", name)
	}
	if err := b.st.Update(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	after()
	return ev.ID
}

func loopback() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} }

func TestRetriesUntilTheReceiverAnswers(t *testing.T) {
	t.Parallel()
	expired := make(chan string, 1)
	b := setup(t, Config{Allow: loopback(), RetryBase: 30 * time.Second}, func(s *Service) {
		s.onExpire = func(id string) { expired <- id }
	})
	type seen struct {
		event, delivery string
		verified        bool
	}
	got := make(chan seen, 10)
	var secret string
	calls := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, r.ContentLength)
		_, _ = r.Body.Read(body)
		err := VerifyBasSignature(secret, r.Header.Get("Bas-Signature"), body, b.clock.Now())
		calls++
		if calls <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		got <- seen{r.Header.Get("Bas-Event"), r.Header.Get("Bas-Delivery"), err == nil}
	}))
	defer recv.Close()
	ctx := context.Background()
	sub, err := b.svc.Create(ctx, "ten_a", "usr_1", In{URL: recv.URL + "/hook", Events: []string{"invoicing.*"}})
	if err != nil {
		t.Fatal(err)
	}
	secret = sub.Secret
	if op, _ := b.svc.Tap(&runengine.Event{ID: "evt_x", Tenant: "ten_a", Name: "crm.deal.won", At: b.clock.Now()}); op != nil {
		t.Errorf("an event the subscription does not name was delivered")
	}
	b.emit(t, "ten_a", "invoicing.invoice.paid")
	var outcomes []string
	var requests []seen
	for i := range 3 {
		requests = append(requests, testwait.Recv(t, got, fmt.Sprintf("attempt %d reached the receiver", i+1)))
		outcomes = append(outcomes, testwait.Recv(t, b.attempts, fmt.Sprintf("attempt %d was recorded", i+1)))
		if i < 2 {
			b.clock.Advance(30 * time.Second << i) // the bound of attempt i+1's delay
		}
	}
	if diff := cmp.Diff([]string{OutcomeRetrying, OutcomeRetrying, OutcomeSucceeded}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	for _, r := range requests {
		if !r.verified || r.event != "invoicing.invoice.paid" || r.delivery != requests[0].delivery {
			t.Errorf("request %+v: want verified, the same delivery, event invoicing.invoice.paid", r)
		}
	}
	list, _, err := b.svc.Deliveries(ctx, "ten_a", sub.ID, store.Page{})
	if err != nil || len(list) != 1 {
		t.Fatalf("deliveries = %v, %v; want one", list, err)
	}
	d := list[0]
	if d.Status != StatusSucceeded || d.Attempts != 3 || d.ResponseCode == nil || *d.ResponseCode != 200 || d.LastError != nil || d.DurationMS == nil {
		t.Errorf("delivery = %+v; want succeeded after 3 attempts, 200, no error", d)
	}
	s, err := b.svc.Get(ctx, "ten_a", sub.ID)
	if err != nil || s.FailingSince != nil || !s.Active {
		t.Errorf("subscription after a success = %+v, %v; want active and not failing", s, err)
	}
	// Another tenant sees none of it.
	if _, _, err := b.svc.Deliveries(ctx, "ten_b", sub.ID, store.Page{}); !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant's deliveries: %v, want not found", err)
	}
	// A finished delivery leaves the log after Keep (30 days).
	b.clock.Advance(30*24*time.Hour - time.Minute)
	select {
	case id := <-expired:
		t.Fatalf("delivery %s expired before 30 days", id)
	default:
	}
	b.clock.Advance(2 * time.Minute)
	if id := testwait.Recv(t, expired, "the delivery expired after 30 days"); id != d.ID {
		t.Errorf("expired %s, want %s", id, d.ID)
	}
	if list, _, err = b.svc.Deliveries(ctx, "ten_a", sub.ID, store.Page{}); err != nil || len(list) != 0 {
		t.Errorf("deliveries after 30 days = %v, %v; want none", list, err)
	}
}

func TestFailsAfterRetryForAndDisablesTheSubscription(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Allow: loopback(), RetryBase: time.Hour, RetryMax: 4 * time.Hour})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer recv.Close()
	ctx := context.Background()
	sub, err := b.svc.Create(ctx, "ten_a", "usr_1", In{URL: recv.URL, Events: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	b.emit(t, "ten_a", "boards.item.created")
	var outcomes []string
	for {
		o := testwait.Recv(t, b.attempts, fmt.Sprintf("attempt %d was recorded", len(outcomes)+1))
		outcomes = append(outcomes, o)
		if o != OutcomeRetrying {
			break
		}
		b.clock.Advance(4 * time.Hour)
	}
	if last := outcomes[len(outcomes)-1]; last != OutcomeFailed || len(outcomes) < 2 {
		t.Fatalf("outcomes %v; want retries then failed", outcomes)
	}
	list, _, _ := b.svc.Deliveries(ctx, "ten_a", sub.ID, store.Page{})
	if d := list[0]; d.Status != StatusFailed || d.ResponseCode == nil || *d.ResponseCode != 500 || d.LastError == nil || d.NextAttemptAt != nil {
		t.Errorf("delivery = %+v; want failed with 500", d)
	}
	s, _ := b.svc.Get(ctx, "ten_a", sub.ID)
	if s.Active || s.DisabledReason == nil {
		t.Errorf("subscription = %+v; want disabled with a reason", s)
	}
	// A disabled subscription gets no more deliveries; redelivery is refused.
	if op, _ := b.svc.Tap(&runengine.Event{ID: "evt_y", Tenant: "ten_a", Name: "boards.item.created", At: b.clock.Now()}); op != nil {
		t.Errorf("a disabled subscription was delivered to")
	}
	if _, err := b.svc.Redeliver(ctx, "ten_a", sub.ID, list[0].ID); !errors.Is(err, errs.Conflict) {
		t.Errorf("redeliver to a disabled webhook: %v, want conflict", err)
	}
	// Enabling it again forgets the failures; redelivery makes a new delivery.
	on := true
	if s, err = b.svc.Update(ctx, "ten_a", "usr_1", sub.ID, Patch{Active: &on}); err != nil || !s.Active || s.FailingSince != nil {
		t.Fatalf("enable = %+v, %v", s, err)
	}
	d, err := b.svc.Redeliver(ctx, "ten_a", sub.ID, list[0].ID)
	if err != nil || d.RedeliveryOf == nil || *d.RedeliveryOf != list[0].ID || d.Status != StatusPending {
		t.Errorf("redeliver = %+v, %v", d, err)
	}
	if o := testwait.Recv(t, b.attempts, "the redelivery was attempted"); o != OutcomeRetrying {
		t.Errorf("redelivery outcome %s, want retrying", o)
	}
}

func TestAddressGuard(t *testing.T) {
	t.Parallel()
	res := fakeResolver{
		"hooks.example.com":  {netip.MustParseAddr("93.184.216.34")},
		"internal.example":   {netip.MustParseAddr("10.1.2.3")},
		"mixed.example":      {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("192.168.1.1")},
		"localhost":          {netip.MustParseAddr("127.0.0.1")},
		"metadata.example":   {netip.MustParseAddr("169.254.169.254")},
		"v6local.example":    {netip.MustParseAddr("fe80::1")},
		"mapped.example":     {netip.MustParseAddr("::ffff:127.0.0.1")},
		"ula.example":        {netip.MustParseAddr("fd00:ec2::254")},
		"cgnat.example":      {netip.MustParseAddr("100.100.100.200")},
		"public-v6.example":  {netip.MustParseAddr("2606:4700::1111")},
		"unspecified.exampl": {netip.MustParseAddr("0.0.0.0")},
	}
	for _, test := range []struct {
		name, url string
		allow     []netip.Prefix
		ok        bool
	}{
		{"public name", "https://hooks.example.com/bas", nil, true},
		{"public v6", "https://public-v6.example/", nil, true},
		{"public literal", "http://93.184.216.34:8080/x", nil, true},
		{"loopback literal", "http://127.0.0.1/x", nil, false},
		{"loopback v6 literal", "http://[::1]/x", nil, false},
		{"localhost", "http://localhost:9000/x", nil, false},
		{"name resolving to a private address", "https://internal.example/x", nil, false},
		{"one private address among public ones", "https://mixed.example/x", nil, false},
		{"metadata", "http://metadata.example/latest", nil, false},
		{"metadata literal", "http://169.254.169.254/latest", nil, false},
		{"link-local v6", "http://v6local.example/", nil, false},
		{"v4-mapped loopback", "http://mapped.example/", nil, false},
		{"unique local v6", "http://ula.example/", nil, false},
		{"shared address space", "http://cgnat.example/", nil, false},
		{"unspecified", "http://unspecified.exampl/", nil, false},
		{"unresolvable", "https://nowhere.example/", nil, false},
		{"ftp", "ftp://hooks.example.com/x", nil, false},
		{"no host", "https:///x", nil, false},
		{"credentials", "https://u:p@hooks.example.com/x", nil, false},
		{"loopback allowed by the host", "http://127.0.0.1:9000/x", loopback(), true},
		{"localhost allowed by the host", "http://localhost:9000/x", loopback(), true},
		{"allowing loopback allows no private range", "https://internal.example/x", loopback(), false},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(Config{Store: nopStore{}, Resolver: res, Allow: test.allow})
			if err != nil {
				t.Fatal(err)
			}
			err = s.guardURL(context.Background(), test.url)
			if (err == nil) != test.ok {
				t.Fatalf("guard(%s) = %v, want ok=%v", test.url, err, test.ok)
			}
			if err != nil {
				vs := errs.Violations(err)
				if len(vs) != 1 || !cmp.Equal(vs[0].Loc, []any{"url"}) || vs[0].Type != "value_error" {
					t.Errorf("violations %v; want one value_error at url", vs)
				}
			}
		})
	}
}

// nopStore is a Store the guard tests never reach.
type nopStore struct{ store.Store }

func TestRedirectToAPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	hits := make(chan struct{}, 10)
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits <- struct{}{} }))
	defer inside.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(inside.URL, "http://"), ":")
	// The receiver is allowed (127.0.0.2 is admitted); it redirects to a
	// name resolving to 127.0.0.1, which is not.
	recv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://inside.example:"+port+"/", http.StatusTemporaryRedirect)
	}))
	recv.Listener.Close()
	l, err := netListen("127.0.0.2:0")
	if err != nil {
		t.Skip("no 127.0.0.2 here:", err)
	}
	recv.Listener = l
	recv.Start()
	defer recv.Close()
	b := setup(t, Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Resolver: fakeResolver{"inside.example": {netip.MustParseAddr("127.0.0.1")}}})
	ctx := context.Background()
	sub, err := b.svc.Create(ctx, "ten_a", "usr_1", In{URL: recv.URL, Events: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	b.emit(t, "ten_a", "crm.deal.won")
	if o := testwait.Recv(t, b.attempts, "the redirected delivery was attempted"); o != OutcomeRetrying {
		t.Errorf("outcome %s, want retrying", o)
	}
	list, _, _ := b.svc.Deliveries(ctx, "ten_a", sub.ID, store.Page{})
	if d := list[0]; d.LastError == nil || !strings.Contains(*d.LastError, "refused") {
		t.Errorf("delivery = %+v; want refused", d)
	}
	select {
	case <-hits:
		t.Errorf("the redirect reached the refused address")
	default:
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	events := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "crm.deal.won"
		}
		return out
	}
	for _, test := range []struct {
		name string
		in   In
		want []string // "loc type"
	}{
		{"ok", In{URL: "https://x.example/" + long(MaxURLLen-18), Events: events(MaxEvents)}, nil},
		{"url too long", In{URL: "https://x.example/" + long(MaxURLLen-17), Events: []string{"*"}}, []string{"url string_too_long"}},
		{"no events", In{URL: "https://x.example/", Events: []string{}}, []string{"events too_short"}},
		{"too many events", In{URL: "https://x.example/", Events: events(MaxEvents + 1)}, []string{"events too_long"}},
		{"bad patterns", In{URL: "", Events: []string{"invoicing.*", "crm.*.won", "Crm", "*", long(MaxEventLen + 1)}},
			[]string{"url string_too_short", "events.1 string_pattern_mismatch", "events.2 string_pattern_mismatch", "events.4 string_too_long"}},
		{"event at its bound", In{URL: "https://x.example/", Events: []string{long(MaxEventLen)}}, nil},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, v := range test.in.Validate() {
				got = append(got, v.Where()+" "+v.Type)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		patterns []string
		name     string
		want     bool
	}{
		{[]string{"*"}, "crm.deal.won", true},
		{[]string{"invoicing.*"}, "invoicing.invoice.paid", true},
		{[]string{"invoicing.*"}, "invoicingx.paid", false},
		{[]string{"invoicing.invoice.*"}, "invoicing.invoice.paid", true},
		{[]string{"crm.deal.won"}, "crm.deal.won", true},
		{[]string{"crm.deal.won"}, "crm.deal.lost", false},
		{[]string{"crm.deal.lost", "crm.deal.won"}, "crm.deal.won", true},
	} {
		if got := matches(test.patterns, test.name); got != test.want {
			t.Errorf("matches(%v, %s) = %v, want %v", test.patterns, test.name, got, test.want)
		}
	}
}

func TestASlowReceiverHoldsOnlyItsWorkspace(t *testing.T) {
	t.Parallel()
	// An attempt lasts longer than the test: the slow receiver's slot must
	// not be freed by its timeout on a loaded machine.
	b := setup(t, Config{Allow: loopback(), PerTenant: 1, Timeout: 10 * time.Minute})
	release := make(chan struct{})
	slowHit := make(chan struct{}, 4)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowHit <- struct{}{}
		<-release
	}))
	defer slow.Close()
	defer close(release)
	fastHit := make(chan string, 4)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fastHit <- r.Header.Get("Bas-Event")
	}))
	defer fast.Close()
	ctx := context.Background()
	if _, err := b.svc.Create(ctx, "ten_slow", "usr_1", In{URL: slow.URL, Events: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Create(ctx, "ten_fast", "usr_1", In{URL: fast.URL, Events: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	b.emit(t, "ten_slow", "crm.deal.won")
	testwait.Recv(t, slowHit, "the slow receiver was called") // ten_slow's one slot is taken until release
	b.emit(t, "ten_slow", "crm.deal.lost")
	b.emit(t, "ten_fast", "crm.deal.won")
	if got := testwait.Recv(t, fastHit, "the fast receiver was called"); got != "crm.deal.won" {
		t.Errorf("fast workspace got %s", got)
	}
	select {
	case <-slowHit:
		t.Errorf("the slow workspace had two deliveries in flight with PerTenant 1")
	default:
	}
}

func TestAtMostMaxSubscriptions(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	in := In{URL: "https://93.184.216.34/hook", Events: []string{"*"}}
	for i := range MaxSubscriptions {
		if _, err := b.svc.Create(ctx, "ten_a", "usr_1", in); err != nil {
			t.Fatalf("subscription %d: %v", i+1, err)
		}
	}
	if _, err := b.svc.Create(ctx, "ten_a", "usr_1", in); !errors.Is(err, errs.Conflict) {
		t.Errorf("subscription %d: %v, want conflict", MaxSubscriptions+1, err)
	}
	if _, err := b.svc.Create(ctx, "ten_b", "usr_1", in); err != nil {
		t.Errorf("another workspace's first: %v", err)
	}
}
