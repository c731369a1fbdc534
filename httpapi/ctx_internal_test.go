package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestJSONID: the id of a record that opens with it is read in place; any
// other shape (escapes, another first field, no id, bad JSON) falls back
// to decoding, with the same answer.
func TestJSONID(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{`{"id":"run_1","process_id":"prc_1"}`, "run_1"},
		{`{"id":""}`, ""},
		{`{"id":"a\"b","x":1}`, `a"b`},
		{`{"id":"a\u0062"}`, "ab"},
		{`{"process_id":"prc_1","id":"run_2"}`, "run_2"},
		{` {"id":"run_3"}`, "run_3"},
		{`{"x":1}`, ""},
		{`{"id":`, ""},
		{``, ""},
	} {
		if diff := cmp.Diff(tc.want, jsonID([]byte(tc.raw))); diff != "" {
			t.Errorf("jsonID(%s) (-want +got):\n%s", tc.raw, diff)
		}
	}
}

// TestMatchesPattern: a path fits a route pattern segment by segment, a
// parameter segment standing for any one segment; the segment counts must
// agree.
func TestMatchesPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"/v1/runs/:id/events", "/v1/runs/run_1/events", true},
		{"/v1/runs/:id/events", "/v1/runs/run_1/events/", true},
		{"/v1/runs/:id/events", "/v1/runs/run_1", false},
		{"/v1/runs/:id/events", "/v1/runs/run_1/events/x", false},
		{"/v1/runs/:id/events", "/v1/runs/run_1/event", false},
		{"/v1/console/*path", "/v1/console/app.js", true},
		{"/v1/health", "/v1/health", true},
		{"/v1/health", "/v1/healthz", false},
		{"/", "/", true},
		{"/", "/v1", false},
	} {
		if got := matchesPattern(tc.pattern, tc.path); got != tc.want {
			t.Errorf("matchesPattern(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

// TestIdempotencyDerivations: the fingerprint and the sealing key are the
// SHA-256 and HMAC-SHA-256 of the NUL-terminated parts, so records kept by
// earlier versions still match and open.
func TestIdempotencyDerivations(t *testing.T) {
	h := sha256.Sum256([]byte("POST\x00/v1/x?a=1\x00{}\x00"))
	if diff := cmp.Diff(hex.EncodeToString(h[:]), digest("POST", "/v1/x?a=1", "{}")); diff != "" {
		t.Errorf("digest (-want +got):\n%s", diff)
	}
	// Small parts are hashed from the stack, larger ones streamed: the
	// fingerprint of a request is the same either way.
	uri := "/v1/x?a=1"
	for _, tc := range []struct{ uri, body string }{
		{uri, "{}"}, {uri, strings.Repeat("b", 496)}, {uri, strings.Repeat("b", 497)}, {uri, strings.Repeat("b", 498)}, {uri, strings.Repeat("b", 600)},
		{uri, strings.Repeat("b", 1<<20)}, {"/v1/x?a=" + strings.Repeat("q", 1500), "{}"}, {uri, ""},
	} {
		want := sha256.Sum256([]byte("POST\x00" + tc.uri + "\x00" + tc.body + "\x00"))
		if diff := cmp.Diff(hex.EncodeToString(want[:]), fingerprintOf("POST", tc.uri, []byte(tc.body))); diff != "" {
			t.Errorf("fingerprintOf of a %d-byte uri and a %d-byte body (-want +got):\n%s", len(tc.uri), len(tc.body), diff)
		}
		if diff := cmp.Diff(hex.EncodeToString(want[:]), digest("POST", tc.uri, tc.body)); diff != "" {
			t.Errorf("digest of a %d-byte uri and a %d-byte body (-want +got):\n%s", len(tc.uri), len(tc.body), diff)
		}
	}
	long := sha256.Sum256([]byte(strings.Repeat("p\x00", 300)))
	if diff := cmp.Diff(hex.EncodeToString(long[:]), digest(strings.Split(strings.Repeat("p,", 300), ",")[:300]...)); diff != "" {
		t.Errorf("digest of 600 bytes (-want +got):\n%s", diff)
	}
	// The sealing key is crypto/hmac's HMAC-SHA-256 whatever the token's
	// length (the key block is 64 bytes: a longer token is hashed first)
	// and the parts' (streamed past the stack buffer).
	for _, tc := range []struct{ token, body string }{
		{"", `{"a":1}`}, {"tok", `{"a":1}`}, {strings.Repeat("t", 64), "{}"}, {strings.Repeat("t", 65), "{}"},
		{strings.Repeat("t", 200), ""}, {"tok", strings.Repeat("b", 400)}, {"tok", strings.Repeat("b", 414)},
		{"tok", strings.Repeat("b", 415)}, {"tok", strings.Repeat("b", 5000)},
	} {
		m := hmac.New(sha256.New, []byte(tc.token))
		m.Write([]byte("bas idempotency v1\x00k1\x00POST\x00/v1/x\x00" + tc.body + "\x00"))
		got := sealingKey(tc.token, "k1", "POST", "/v1/x", []byte(tc.body))
		if diff := cmp.Diff(m.Sum(nil), got[:]); diff != "" {
			t.Errorf("sealingKey with a %d-byte token and a %d-byte body (-want +got):\n%s", len(tc.token), len(tc.body), diff)
		}
	}
	if n := testing.AllocsPerRun(20, func() { sealingKey("tok", "k1", "POST", "/v1/x", []byte(`{"a":1}`)) }); n != 0 {
		t.Errorf("sealingKey of a small request: %v allocations, want 0", n)
	}
	// A record's id is digest(scope, key) with the scopes earlier versions
	// built, so their records still match.
	r := httptest.NewRequest("POST", "/v1/x", nil)
	r.RemoteAddr = "192.0.2.7:5000"
	for _, tc := range []struct {
		p     *access.Principal
		scope string
	}{
		{&access.Principal{UserID: "usr_1"}, "user\x00usr_1"},
		{&access.Principal{UserID: "usr_1", KeyID: "key_2"}, "key\x00key_2"},
		{nil, "public\x00192.0.2.7\x00fp"},
	} {
		if diff := cmp.Diff(digest(tc.scope, "k1"), recordID(tc.p, r, "fp", "k1")); diff != "" {
			t.Errorf("recordID of scope %q (-want +got):\n%s", tc.scope, diff)
		}
	}
}

// TestFingerprintCopiesNoBody: the fingerprint of a request with a 1 MiB
// body streams the body into the hash: a few small allocations, and no
// copy of the body.
func TestFingerprintCopiesNoBody(t *testing.T) {
	body := []byte(strings.Repeat("b", 1<<20))
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	allocs := testing.AllocsPerRun(runs, func() { fingerprintOf("POST", "/v1/x", body) })
	runtime.ReadMemStats(&after)
	if allocs > 3 {
		t.Errorf("%v allocations a fingerprint of a 1 MiB body, want at most 3", allocs)
	}
	if per := (after.TotalAlloc - before.TotalAlloc) / (runs + 1); per > 4<<10 {
		t.Errorf("%d bytes allocated a fingerprint of a 1 MiB body, want at most 4 KiB", per)
	}
	if allocs := testing.AllocsPerRun(runs, func() { fingerprintOf("POST", "/v1/x", body[:200]) }); allocs > 1 {
		t.Errorf("%v allocations a fingerprint of a small body, want 1 (the hex)", allocs)
	}
}

// TestIdemRecordForms: a record is stored in its binary form and read back
// as it was (without its id, which is its key's); a record kept in the
// earlier JSON form (as encoding/json wrote it) is read as before; a cut,
// garbled or unknown form is an error; a state or fingerprint the form
// cannot hold is refused.
func TestIdemRecordForms(t *testing.T) {
	at := time.Date(2026, 11, 26, 5, 4, 3, 120_000_001, time.UTC)
	for _, rec := range []idemRecord{
		{Fingerprint: digest("POST", "/v1/x", "{}"), State: idemDone, ExpiresAt: at, Sealed: []byte{0, 1, 2, 0xfe, 0xff, 'a'}},
		{Fingerprint: digest("b"), State: idemDone, ExpiresAt: at.Add(time.Nanosecond), Bound: true, Sealed: make([]byte, 1000)},
		{Fingerprint: digest("b"), State: idemActed, ExpiresAt: at.Truncate(time.Second)},
	} {
		raw := append(make([]byte, idemHeadLen), rec.Sealed...)
		if err := putIdemHead(raw, rec.State, rec.Bound, rec.ExpiresAt, rec.Fingerprint); err != nil {
			t.Fatal(err)
		}
		got, err := decodeIdemRecord(raw)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&rec, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("binary form read back (-want +got):\n%s", diff)
		}
		if len(raw) != idemHeadLen+len(rec.Sealed) {
			t.Errorf("binary form of %d bytes, want %d", len(raw), idemHeadLen+len(rec.Sealed))
		}
		for n := range idemHeadLen {
			if _, err := decodeIdemRecord(raw[:n]); err == nil {
				t.Errorf("read a record cut to %d bytes", n)
			}
		}
		for i, b := range map[int]byte{0: 9, 1: 0, 2: 2} {
			bad := slices.Clone(raw)
			bad[i] = b
			if _, err := decodeIdemRecord(bad); err == nil {
				t.Errorf("read a record with byte %d set to %d", i, b)
			}
		}

		old := rec
		old.ID = digest("ten", "key")
		js, err := json.Marshal(&old)
		if err != nil {
			t.Fatal(err)
		}
		got, err = decodeIdemRecord(js)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&old, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("JSON form read back (-want +got):\n%s", diff)
		}
		if _, err := decodeIdemRecord(js[:len(js)-1]); err == nil {
			t.Error("read a JSON record cut short")
		}
	}
	head := make([]byte, idemHeadLen)
	if err := putIdemHead(head, "claimed", false, at, digest("a")); err == nil {
		t.Error("stored a state the form has no code for")
	}
	for _, fp := range []string{"f", digest("a")[1:], strings.ToUpper(digest("a")), digest("a")[:63] + "g"} {
		if err := putIdemHead(head, idemDone, false, at, fp); err == nil {
			t.Errorf("stored the fingerprint %q", fp)
		}
	}
}

// TestReadBody: a body is read whole whether its length is announced,
// unknown, or announced wrong, up to one byte past the limit; a body that
// ends before its announced length is an error.
func TestReadBody(t *testing.T) {
	const limit = 8
	for _, tc := range []struct {
		name    string
		body    string
		length  int64
		want    string
		wantErr bool
	}{
		{"announced", `{"a":1}`, 7, `{"a":1}`, false},
		{"empty", ``, 0, ``, false},
		{"unknown length", `{"a":1}`, -1, `{"a":1}`, false},
		{"longer than announced", `{"a":12}`, 3, `{"a":12}`, false},
		{"longer than announced, past the limit", `0123456789`, 3, `012345678`, false},
		{"announced past the limit", `0123456789`, 10, `012345678`, false},
		{"at the limit", `01234567`, 8, `01234567`, false},
		{"shorter than announced", `{"a"`, 7, ``, true},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		r.ContentLength = tc.length
		got, err := readBody(r, limit)
		if (err != nil) != tc.wantErr || string(got) != tc.want {
			t.Errorf("%s: readBody = %q, %v; want %q (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestReadBodyPresizeBound: a buffer is sized from the announced length
// only up to maxPresizedBody; a larger body, announced and within the
// limit, is read whole as it comes, and announcing it allocates nothing
// of its size before it comes.
func TestReadBodyPresizeBound(t *testing.T) {
	const limit = 32 << 20
	for _, n := range []int{maxPresizedBody, maxPresizedBody + 1} {
		body := strings.Repeat("b", n)
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		first := &firstReadLen{ReadCloser: r.Body}
		r.Body = first
		if got, err := readBody(r, limit); err != nil || string(got) != body {
			t.Errorf("a body of %d bytes, announced: read %d bytes, %v", n, len(got), err)
		}
		if presized, want := first.n >= n, n <= maxPresizedBody; presized != want {
			t.Errorf("a body of %d bytes, announced: read into a buffer of its size = %v, want %v (first read of %d bytes)",
				n, presized, want, first.n)
		}
	}
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"a":1}`))
	r.ContentLength = 16 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readBody(r, limit)
	runtime.ReadMemStats(&after)
	if err != nil || string(got) != `{"a":1}` {
		t.Errorf("readBody = %q, %v", got, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("a body announced as 16 MiB, 7 bytes sent: %d bytes allocated, want at most 1 MiB", n)
	}
}

// firstReadLen is a body that notes the size of the buffer it is first
// read into.
type firstReadLen struct {
	io.ReadCloser
	n int
}

func (f *firstReadLen) Read(p []byte) (int, error) {
	if f.n == 0 {
		f.n = len(p)
	}
	return f.ReadCloser.Read(p)
}

// TestQueryParsedOnce: a request's query is parsed once and shared by its
// readers (the dispatch's id check, Page, the handler); sealing a cursor,
// which leaves limit and cursor out of the list's tag, changes a copy, so
// the readers after it still see them.
func TestQueryParsedOnce(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/process-runs?process_id=prc_1&limit=5&cursor=abc", nil)
	c := &request{R: r, h: &Handler{}}
	q := c.Query()
	next := c.sealCursor("inner")
	if reflect.ValueOf(c.Query()).UnsafePointer() != reflect.ValueOf(q).UnsafePointer() {
		t.Error("the query was parsed again")
	}
	got := map[string]string{"process_id": q.Get("process_id"), "limit": q.Get("limit"), "cursor": q.Get("cursor")}
	if diff := cmp.Diff(map[string]string{"process_id": "prc_1", "limit": "5", "cursor": "abc"}, got); diff != "" {
		t.Errorf("the query after a cursor was sealed (-want +got):\n%s", diff)
	}
	if inner, ok := c.openCursor(next); !ok || inner != "inner" {
		t.Errorf("the sealed cursor opened as %q, %v; want inner, true", inner, ok)
	}
}
