package httpapi_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/google/go-cmp/cmp"
)

// TestJSONRoutesTakeJSONOnly: a JSON route refuses another content type
// with 415 before it reads the body, so the upload limit never applies to
// it; JSON beyond the JSON limit is a 413; no Content-Type reads as JSON.
func TestJSONRoutesTakeJSONOnly(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true, MaxBodyBytes: 1 << 10})
	admin := s.devLogin(t, `{}`)
	event := `{"name":"custom.ping","data":{"x":1}}`
	big := `{"name":"custom.ping","data":{"x":"` + strings.Repeat("a", 2<<10) + `"}}`
	tests := []struct {
		name, ct, body string
		want           int
	}{
		{"json", "application/json", event, http.StatusAccepted},
		{"json with charset", "application/json; charset=utf-8", event, http.StatusAccepted},
		{"no content type", "", event, http.StatusAccepted},
		{"multipart", "multipart/form-data; boundary=x", event, http.StatusUnsupportedMediaType},
		{"multipart beyond the JSON limit", "multipart/form-data; boundary=x", big, http.StatusUnsupportedMediaType},
		{"form", "application/x-www-form-urlencoded", "name=custom.ping", http.StatusUnsupportedMediaType},
		{"text", "text/plain", event, http.StatusUnsupportedMediaType},
		{"json beyond the JSON limit", "application/json", big, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(t, "POST", "/v1/events", admin.Token, tt.body, "Content-Type", tt.ct)
			r.want(t, tt.want)
			if tt.want == http.StatusUnsupportedMediaType {
				if got := r.detail(t); got != "this endpoint takes application/json bodies" {
					t.Errorf("detail %q", got)
				}
			}
		})
	}
	// A body-less POST passes whatever its Content-Type says.
	s.do(t, "POST", "/v1/auth/logout", admin.Token, nil, "Content-Type", "text/plain").want(t, http.StatusNoContent)
}

// TestKeysMatchExactly: a key that names a field only when case is ignored
// is an unknown field, and a key twice in one object is a 422, so what the
// schema validated is what is decoded.
func TestKeysMatchExactly(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name, path, body string
		want             []violation
	}{
		{"case variant beside the field", "/v1/events", `{"name":"custom.ok","NAME":"Bad Name!! ../x"}`,
			[]violation{{Loc: []any{"body", "NAME"}, Msg: `is not a field; keys are case-sensitive (did you mean "name"?)`, Type: "extra_forbidden"}}},
		{"case variant alone", "/v1/events", `{"Name":"Bad Name!! ../x"}`,
			[]violation{
				{Loc: []any{"body", "Name"}, Msg: `is not a field; keys are case-sensitive (did you mean "name"?)`, Type: "extra_forbidden"},
				{Loc: []any{"body", "name"}, Msg: "is required", Type: "missing"},
			}},
		{"duplicate key", "/v1/events", `{"name":"custom.ok","name":"Bad Name!! ../x"}`,
			[]violation{{Loc: []any{"body", "name"}, Msg: "appears more than once in this object; send each key once", Type: "value_error"}}},
		{"duplicate key deep in free data", "/v1/events", `{"name":"custom.ok","data":{"a":[{"b":1,"b":2}]}}`,
			[]violation{{Loc: []any{"body", "data", "a", 0.0, "b"}, Msg: "appears more than once in this object; send each key once", Type: "value_error"}}},
		{"case variant of a nested field", "/v1/processes", `{"name":"p","trigger":{"type":"manual"},"steps":[{"key":"a","type":"wait","config":{"duration":"1h"},"KEY":"` + long + `"}]}`,
			[]violation{{Loc: []any{"body", "steps", 0.0, "KEY"}, Msg: `is not a field; keys are case-sensitive (did you mean "key"?)`, Type: "extra_forbidden"}}},
		{"duplicate in a process body", "/v1/processes", `{"name":"p","name":"` + long + `"}`,
			[]violation{{Loc: []any{"body", "name"}, Msg: "appears more than once in this object; send each key once", Type: "value_error"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got struct{ Detail []violation }
			s.do(t, "POST", tt.path, admin.Token, tt.body).want(t, http.StatusUnprocessableEntity).decode(t, &got)
			if diff := cmp.Diff(tt.want, got.Detail); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// violation is a 422 detail item as a client decodes it.
type violation struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// TestBrokenBodyIs400: a body that ends before its Content-Length is a 400
// with a reason, not a 500.
func TestBrokenBodyIs400(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"name":"custom.pi`
	fmt.Fprintf(conn, "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n%s", admin.Token, body)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", resp.StatusCode, raw)
	}
	if want := `{"detail":"the request body could not be read: it ended early or broke off"}` + "\n"; string(raw) != want {
		t.Errorf("body %s, want %s", raw, want)
	}
	if strings.Contains(s.logs.String(), "internal error") {
		t.Errorf("logged an internal error:\n%s", s.logs.String())
	}
}

// bombPDF is a one-page PDF of a few kilobytes whose Flate content stream
// inflates to size bytes of text operators.
func bombPDF(t testing.TB, size int) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	unit := []byte(strings.Repeat("BT /F1 12 Tf 72 700 Td (A) Tj ET\n", 2000))
	for w := 0; w < size; w += len(unit) {
		_, _ = zw.Write(unit[:min(len(unit), size-w)])
	}
	_ = zw.Close()
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", z.Len(), z.Bytes()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// TestDocsUploadOverBudget: a PDF whose content inflates past the
// extraction budget (8 MiB a stream) is a 422 naming the bound, and
// nothing is stored.
func TestDocsUploadOverBudget(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	typeID := s.invoiceType(t, admin)
	bomb := bombPDF(t, 16<<20)
	r := s.upload(t, admin, "/v1/docs/documents", "bomb.pdf", bomb, "type_id", typeID).want(t, http.StatusUnprocessableEntity)
	var got struct{ Detail []violation }
	r.decode(t, &got)
	want := []violation{{Loc: []any{"body", "file"}, Type: "value_error",
		Msg: "the file is too costly to read: object 4's stream inflates to more than 8388608 bytes (the limit of one stream)"}}
	if diff := cmp.Diff(want, got.Detail); diff != "" {
		t.Errorf("%d-byte bomb (-want +got):\n%s", len(bomb), diff)
	}
	var list []any
	s.do(t, "GET", "/v1/docs/documents", admin, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 0 {
		t.Errorf("stored %d documents", len(list))
	}
	// Just inside the budget, the same kind of file is read.
	s.upload(t, admin, "/v1/docs/documents", "ok.pdf", bombPDF(t, 1<<20), "type_id", typeID).want(t, http.StatusCreated)
}

// TestEventsRouteTakesCustomNamesOnly: names of a namespace an app or the
// engine owns are a 422 and start nothing; other names are published, and
// the event and the runs it starts record who emitted it.
func TestEventsRouteTakesCustomNamesOnly(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	member := s.newKey(t, admin, `{"name": "m", "roles": ["member"]}`)
	for _, name := range []string{"docs.document.validated", "process.run.completed", "task.completed", "approval.decided",
		"crm.deal.won", "invoicing.invoice.paid", "boards.item.moved", "usecases.x", "ai.x", "webhook.x"} {
		r := s.do(t, "POST", "/v1/events", member.Secret, map[string]any{"name": name, "data": map[string]any{"total": 1}})
		r.want(t, http.StatusUnprocessableEntity)
		ns, _, _ := strings.Cut(name, ".")
		want := `[{"loc":["body","name"],"msg":"events named ` + ns + `.* are emitted only by the workspace itself; use a name of your own (custom.*, or your product's namespace)","type":"value_error"}]`
		var got struct{ Detail json.RawMessage }
		r.decode(t, &got)
		if string(got.Detail) != want {
			t.Errorf("%s: %s", name, got.Detail)
		}
	}
	proc := s.createProc(t, admin, `{"name": "On ping", "trigger": {"type": "event", "event": "custom.ping"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Look"}}]}`)
	for _, name := range []string{"custom.ping", "docsx.ping", "supplier.replied"} {
		s.do(t, "POST", "/v1/events", member.Secret, map[string]any{"name": name}).want(t, http.StatusAccepted)
	}
	out := s.emit(t, member.Secret, "custom.ping", map[string]any{"n": 1})
	if len(out.Runs) != 1 {
		t.Fatalf("started %d runs", len(out.Runs))
	}
	var run struct {
		ProcessID string `json:"process_id"`
		Trigger   struct {
			EventID   string         `json:"event_id"`
			EmittedBy string         `json:"emitted_by"`
			Data      map[string]any `json:"data"`
		} `json:"trigger"`
	}
	s.do(t, "GET", "/v1/process-runs/"+out.Runs[0].ID, admin, nil).want(t, http.StatusOK).decode(t, &run)
	if run.ProcessID != proc.ID || run.Trigger.EventID != out.EventID || run.Trigger.EmittedBy != member.ID || run.Trigger.Data["n"] != 1.0 {
		t.Errorf("run trigger %+v, want emitted by %s", run.Trigger, member.ID)
	}
}

// TestRunDataBounds: event data and a task's fields have size caps, and
// lists and the cockpit leave a run's trigger data out.
func TestRunDataBounds(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	s.createProc(t, admin, `{"name": "On big", "trigger": {"type": "event", "event": "custom.big"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Look", "fields": [{"key": "note", "label": "Note"}]}}]}`)
	// {"s":"..."} is 8 bytes beside the string.
	data := func(n int) map[string]any { return map[string]any{"s": strings.Repeat("x", n-8)} }
	r := s.do(t, "POST", "/v1/events", admin, map[string]any{"name": "custom.big", "data": data(64<<10 + 1)}).want(t, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"loc":["body","data"],"msg":"event data may be at most 65536 bytes of JSON; this is 65537","type":"too_long"`) {
		t.Errorf("outside: %s", r.Body)
	}
	// A label taken from the event's data is cut to 200 characters.
	long := s.emit(t, admin, "custom.big", map[string]any{"title": strings.Repeat("é", 201)})
	if len(long.Runs) != 1 || long.Runs[0].Subject.Label != strings.Repeat("é", 200) {
		t.Errorf("subject from a long title: %+v", long.Runs)
	}
	out := s.emit(t, admin, "custom.big", data(64<<10))
	if len(out.Runs) != 1 {
		t.Fatalf("started %d runs", len(out.Runs))
	}
	runID := out.Runs[0].ID
	// The list and the cockpit leave the 64 KiB out; the run has it.
	for _, path := range []string{"/v1/process-runs", "/v1/cockpit"} {
		r := s.do(t, "GET", path, admin, nil).want(t, http.StatusOK)
		if len(r.Body) > 8<<10 || !strings.Contains(string(r.Body), runID) {
			t.Errorf("%s: %d bytes", path, len(r.Body))
		}
	}
	if r := s.do(t, "GET", "/v1/process-runs/"+runID, admin, nil).want(t, http.StatusOK); len(r.Body) < 64<<10 {
		t.Errorf("the run: %d bytes", len(r.Body))
	}
	// A task's fields beyond 256 KiB are a 422.
	run := s.awaitRun(t, admin, runID, "waiting", runStatusIs("waiting"))
	taskID := *run.step(t, "t").TaskID
	note := func(n int) map[string]any {
		return map[string]any{"action": "complete", "fields": map[string]any{"note": strings.Repeat("y", n-11)}} // {"note":""}
	}
	r = s.do(t, "POST", "/v1/tasks/"+taskID+"/complete", admin, note(256<<10+1)).want(t, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"loc":["body","fields"],"msg":"the fields are 262145 bytes of JSON; a step's output may be at most 262144","type":"too_long"`) {
		t.Errorf("outside: %s", r.Body)
	}
	s.do(t, "POST", "/v1/tasks/"+taskID+"/complete", admin, note(256<<10)).want(t, http.StatusOK)
	// Lists show a step output beyond 4 KiB as its size only.
	s.awaitRun(t, admin, runID, "completed", runStatusIs("completed"))
	var list []struct {
		ID    string `json:"id"`
		Steps []struct {
			Output map[string]any `json:"output"`
		} `json:"steps"`
	}
	s.do(t, "GET", "/v1/process-runs", admin, nil).want(t, http.StatusOK).decode(t, &list)
	want := map[string]any{"omitted": "larger than 4096 bytes; GET the run for it", "bytes": float64(256<<10 + 58)} // {"fields":{"note":...},"outcome":"complete"}
	if len(list) != 2 || list[0].ID != runID || len(list[0].Steps) != 1 {
		t.Fatalf("list %+v", list)
	}
	if diff := cmp.Diff(want, list[0].Steps[0].Output); diff != "" {
		t.Errorf("listed output (-want +got):\n%s", diff)
	}
	if r := s.do(t, "GET", "/v1/process-runs/"+runID, admin, nil).want(t, http.StatusOK); len(r.Body) < 256<<10 {
		t.Errorf("the run: %d bytes", len(r.Body))
	}
}

// TestKeyScope: an API key acts only on the keys it made (not on its
// creator's), a child key expires no later than its parent and is
// revoked with it, and a person holds at most MaxKeysPerUser keys.
func TestKeyScope(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	adminKey := s.newKey(t, admin, `{"name": "ops", "roles": ["admin"]}`)
	limited := s.newKey(t, admin, `{"name": "scanner", "roles": ["admin"], "apps": ["docs", "access"]}`)

	// The limited key cannot read or revoke its creator's admin key.
	for _, m := range []string{"GET", "DELETE"} {
		r := s.do(t, m, "/v1/api-keys/"+adminKey.ID, limited.Secret, nil).want(t, http.StatusForbidden)
		if d := r.detail(t); d != "an API key acts only on the keys it made" {
			t.Errorf("%s: %q", m, d)
		}
	}
	s.do(t, "GET", "/v1/auth/me", adminKey.Secret, nil).want(t, http.StatusOK)
	// It lists and revokes only what it made.
	child := s.newKey(t, limited.Secret, `{"name": "child", "roles": ["viewer"], "apps": ["docs"]}`)
	var list []struct {
		ID          string `json:"id"`
		ParentKeyID string `json:"parent_key_id"`
	}
	s.do(t, "GET", "/v1/api-keys", limited.Secret, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 1 || list[0].ID != child.ID || list[0].ParentKeyID != limited.ID {
		t.Errorf("the key's list: %+v", list)
	}
	s.do(t, "GET", "/v1/api-keys/"+child.ID, limited.Secret, nil).want(t, http.StatusOK)

	// A 1-day key makes a key without expiry: the child expires with it.
	day := s.newKey(t, admin, `{"name": "day", "roles": ["member"], "expires_days": 1}`)
	var kid struct {
		testKey
		ExpiresAt *string `json:"expires_at"`
	}
	s.do(t, "POST", "/v1/api-keys", day.Secret, `{"name": "kid", "roles": ["member"]}`).want(t, http.StatusCreated).decode(t, &kid)
	if want := testStart.Add(24 * time.Hour).Format(time.RFC3339); kid.ExpiresAt == nil || *kid.ExpiresAt != want {
		t.Errorf("child expires_at %v, want %s", kid.ExpiresAt, want)
	}
	grandkid := s.newKey(t, kid.Secret, `{"name": "grandkid", "roles": ["viewer"]}`)
	s.do(t, "GET", "/v1/auth/me", grandkid.Secret, nil).want(t, http.StatusOK)
	// Revoking the parent revokes its children and theirs.
	s.do(t, "DELETE", "/v1/api-keys/"+day.ID, admin, nil).want(t, http.StatusNoContent)
	for _, k := range []string{day.Secret, kid.Secret, grandkid.Secret} {
		s.do(t, "GET", "/v1/auth/me", k, nil).want(t, http.StatusUnauthorized)
	}
	s.do(t, "GET", "/v1/api-keys/"+kid.ID, admin, nil).want(t, http.StatusNotFound)

	// Keys per person: the admin holds 3 keys now (ops, scanner, and the
	// child scanner made); up to 50 it may make more, then 409.
	for i := 3; i < 50; i++ {
		s.newKey(t, admin, fmt.Sprintf(`{"name": "k%d", "roles": ["viewer"]}`, i))
	}
	r := s.do(t, "POST", "/v1/api-keys", admin, `{"name": "one too many", "roles": ["viewer"]}`).want(t, http.StatusConflict)
	if d := r.detail(t); d != "you hold 50 API keys, the most one person may; revoke one you no longer use" {
		t.Errorf("detail %q", d)
	}
}

// TestPublicRateLimits: sign-in emails and code tries are limited per
// email address, invitation accepts per invitation, and every public POST
// per client address; each answers 429 with Retry-After, and time
// refills the budget.
func TestPublicRateLimits(t *testing.T) {
	t.Run("per email address", func(t *testing.T) {
		s := newTestServer(t, httpapi.Options{DevLogin: true})
		admin := s.devLogin(t, `{}`)
		for range 10 {
			s.do(t, "POST", "/v1/auth/email", "", map[string]any{"email": admin.Email}).want(t, http.StatusAccepted)
		}
		r := s.do(t, "POST", "/v1/auth/email", "", map[string]any{"email": strings.ToUpper(admin.Email)}).want(t, http.StatusTooManyRequests)
		if d, ra := r.detail(t), r.Header.Get("Retry-After"); d != "too many requests for this email address or invitation; retry later" || ra != "360" {
			t.Errorf("detail %q, Retry-After %q", d, ra)
		}
		var mails []any
		s.do(t, "GET", "/v1/outbox?limit=200", admin.Token, nil).want(t, http.StatusOK).decode(t, &mails)
		if len(mails) != 10 {
			t.Errorf("%d mails sent, want 10", len(mails))
		}
		s.do(t, "POST", "/v1/auth/email", "", map[string]any{"email": "someone.else@example.com"}).want(t, http.StatusAccepted)
		s.clock.Advance(6 * time.Minute)
		s.do(t, "POST", "/v1/auth/email", "", map[string]any{"email": admin.Email}).want(t, http.StatusAccepted)
		s.do(t, "POST", "/v1/auth/email", "", map[string]any{"email": admin.Email}).want(t, http.StatusTooManyRequests)
	})
	t.Run("code tries per address, accepts per invitation", func(t *testing.T) {
		s := newTestServer(t, httpapi.Options{AddressRateLimit: 3})
		for range 3 {
			s.do(t, "POST", "/v1/auth/code", "", `{"email": "a@example.com", "code": "000000"}`).want(t, http.StatusUnauthorized)
		}
		s.do(t, "POST", "/v1/auth/code", "", `{"email": "a@example.com", "code": "000000"}`).want(t, http.StatusTooManyRequests)
		tok := "/v1/invitations/basi_00000000" + strings.Repeat("0", 32) + "/accept"
		for range 3 {
			s.do(t, "POST", tok, "", `{}`).want(t, http.StatusNotFound)
		}
		s.do(t, "POST", tok, "", `{}`).want(t, http.StatusTooManyRequests)
	})
	t.Run("per client address", func(t *testing.T) {
		s := newTestServer(t, httpapi.Options{DevLogin: true, PublicRateLimit: 4, AddressRateLimit: -1})
		s.devLogin(t, `{}`)
		for i := range 3 {
			s.do(t, "POST", "/v1/auth/email", "", map[string]any{"email": fmt.Sprintf("p%d@example.com", i)}).want(t, http.StatusAccepted)
		}
		r := s.do(t, "POST", "/v1/auth/dev-login", "", `{}`).want(t, http.StatusTooManyRequests)
		if d, ra := r.detail(t), r.Header.Get("Retry-After"); d != "too many sign-in requests from this address; retry later" || ra != "15" {
			t.Errorf("detail %q, Retry-After %q", d, ra)
		}
		s.do(t, "GET", "/healthz", "", nil).want(t, http.StatusOK)
		s.clock.Advance(15 * time.Second)
		s.devLogin(t, `{}`)
	})
}

// TestRateLimitPerPerson: the sessions and keys of one person share one
// budget, so minting keys does not multiply it; another person has its own.
func TestRateLimitPerPerson(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	var keys []string
	for i := range 3 {
		keys = append(keys, s.newKey(t, admin.Token, fmt.Sprintf(`{"name": "k%d"}`, i)).Secret)
	}
	s2 := &testServer{ws: s.ws, h: httpapi.New(s.ws, httpapi.Options{DevLogin: true, RateLimit: 2}), clock: s.clock, logs: s.logs}
	s2.srv = httptest.NewServer(s2.h)
	t.Cleanup(s2.srv.Close)
	s2.do(t, "GET", "/v1/auth/me", admin.Token, nil).want(t, http.StatusOK)
	s2.do(t, "GET", "/v1/auth/me", keys[0], nil).want(t, http.StatusOK)
	for _, k := range append(keys, admin.Token) {
		s2.do(t, "GET", "/v1/auth/me", k, nil).want(t, http.StatusTooManyRequests)
	}
	other := s.devLogin(t, `{"email": "other@example.com"}`)
	s2.do(t, "GET", "/v1/auth/me", other.Token, nil).want(t, http.StatusOK)
}

// TestSecretsAreNotCached: every answer, those that carry a session, a key
// or an invitation token first, says Cache-Control: no-store.
func TestSecretsAreNotCached(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	r := s.do(t, "POST", "/v1/auth/dev-login", "", `{}`).want(t, http.StatusCreated)
	var sess testSession
	r.decode(t, &sess)
	for _, r := range []*testResponse{
		r,
		s.do(t, "POST", "/v1/api-keys", sess.Token, `{"name": "k"}`).want(t, http.StatusCreated),
		s.do(t, "POST", "/v1/invitations", sess.Token, `{"email": "new@example.com", "roles": ["member"]}`).want(t, http.StatusCreated),
		s.do(t, "GET", "/v1/auth/me", sess.Token, nil).want(t, http.StatusOK),
		s.do(t, "GET", "/v1/nothing", "", nil).want(t, http.StatusNotFound),
	} {
		if got := r.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s: Cache-Control %q", r.method, r.path, got)
		}
	}
}

// TestDevSessionsNeedDevLogin: a session the development login made stops
// working on a server that runs without it; keys keep working.
func TestDevSessionsNeedDevLogin(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	sess := s.devLogin(t, `{}`)
	key := s.newKey(t, sess.Token, `{"name": "k"}`)
	prod := &testServer{ws: s.ws, h: httpapi.New(s.ws, httpapi.Options{}), clock: s.clock, logs: s.logs}
	prod.srv = httptest.NewServer(prod.h)
	t.Cleanup(prod.srv.Close)
	r := prod.do(t, "GET", "/v1/auth/me", sess.Token, nil).want(t, http.StatusUnauthorized)
	if d := r.detail(t); d != "this session was made by the development login, which this server does not offer; sign in again" {
		t.Errorf("detail %q", d)
	}
	prod.do(t, "GET", "/v1/auth/me", key.Secret, nil).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/auth/me", sess.Token, nil).want(t, http.StatusOK)
}

// TestStaticCRLFRefusedAtCreate: a line break written into a mail header
// of a process (email.send's subject, to, cc, reply_to; a follow-up's
// subject) is a 422 when the process is saved; a reference is checked
// when the mail is sent.
func TestStaticCRLFRefusedAtCreate(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	send := func(args string) string {
		return `{"name": "Mail", "trigger": {"type": "manual"}, "steps": [{"key": "m", "type": "execute", "capability": "email.send",
		  "config": {"args": ` + args + `}}]}`
	}
	msg := "must be one line: a line break here would add mail headers"
	tests := []struct {
		name, body string
		want       []violation
	}{
		{"subject", send(`{"to": "a@example.com", "subject": "Hi\r\nBcc: all@example.com", "body": "x"}`),
			[]violation{{Loc: []any{"body", "steps", 0.0, "config", "args", "subject"}, Msg: msg, Type: "value_error"}}},
		{"subject around a reference", send(`{"to": "a@example.com", "subject": "Pay ${subject.label}\nBcc: x@example.com", "body": "x"}`),
			[]violation{{Loc: []any{"body", "steps", 0.0, "config", "args", "subject"}, Msg: msg, Type: "value_error"}}},
		{"a recipient in a list", send(`{"to": ["a@example.com", "b@example.com\r\nBcc: c@example.com"], "subject": "Hi", "body": "x"}`),
			[]violation{{Loc: []any{"body", "steps", 0.0, "config", "args", "to", 1.0}, Msg: msg, Type: "value_error"}}},
		{"follow-up subject", `{"name": "Chase", "trigger": {"type": "manual"}, "steps": [{"key": "f", "type": "follow_up",
		  "config": {"to": "a@example.com", "subject": "Chase\nBcc: x@example.com", "body": "Please.", "every": "24h"}}]}`,
			[]violation{{Loc: []any{"body", "steps", 0.0, "config", "subject"}, Msg: msg, Type: "value_error"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got struct{ Detail []violation }
			s.do(t, "POST", "/v1/processes", admin, tt.body).want(t, http.StatusUnprocessableEntity).decode(t, &got)
			if diff := cmp.Diff(tt.want, got.Detail); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	s.do(t, "POST", "/v1/processes", admin, send(`{"to": "a@example.com", "subject": "${subject.label}", "body": "Line 1\nLine 2"}`)).
		want(t, http.StatusCreated)
}

// TestUploadConcurrency: an upload beyond MaxConcurrentUploads in progress
// is a 503 with Retry-After, before its body is read; a broken upload body
// is a 400.
func TestUploadConcurrency(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := newTestServerWith(t, httpapi.Options{DevLogin: true, MaxConcurrentUploads: 1}, func(h *httpapi.Handler) {
		h.UploadForTest("POST", "/v1/test/upload", "", "", func(c *httpapi.Ctx) error {
			entered <- struct{}{}
			<-release
			return c.NoContent()
		})
	})
	// A failing test must not leave the upload blocked (the server's Close
	// would wait for it).
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free)
	admin := s.devLogin(t, `{}`).Token
	typeID := s.invoiceType(t, admin)
	body, ct := multipartBody(t, "a.txt", []byte("Total: 1"), "type_id", typeID)

	done := make(chan *testResponse, 1)
	go func() { done <- s.do(t, "POST", "/v1/test/upload", admin, body, "Content-Type", ct) }()
	testwait.Recv(t, entered, "the first upload reached the handler")
	r := s.do(t, "POST", "/v1/docs/documents", admin, body, "Content-Type", ct).want(t, http.StatusServiceUnavailable)
	if d, ra := r.detail(t), r.Header.Get("Retry-After"); d != "too many uploads are in progress; retry shortly" || ra != "1" {
		t.Errorf("detail %q, Retry-After %q", d, ra)
	}
	// JSON routes are not held up.
	s.do(t, "GET", "/v1/docs/documents", admin, nil).want(t, http.StatusOK)
	free()
	testwait.Recv(t, done, "the first upload was answered").want(t, http.StatusNoContent)
	// The slot is free again.
	s.do(t, "POST", "/v1/docs/documents", admin, body, "Content-Type", ct).want(t, http.StatusCreated)

	// A multipart body cut short answers 400.
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/docs/documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		admin, ct, len(body), body[:len(body)/2])
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("truncated upload: %d %s", resp.StatusCode, raw)
	}
}
