package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/s2"
)

// TestSealReusesItsBuffer: with a pool, appendSealed keeps the buffer of the
// uncompressed response between calls and allocates nothing to keep it:
// it allocates the cipher and its answer, nothing else.
func TestSealReusesItsBuffer(t *testing.T) {
	if raceDetector {
		t.Skip("under -race a sync.Pool drops some of what it is given back")
	}
	derived := sealingKey("", "k1", "POST", "/v1/x", []byte(`{"a":1}`))
	key := derived[:]
	resp := storedResponse{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
		Body: []byte(`{"id":"run_1","status":"running"}`)}
	var bufs sync.Pool
	pooled := testing.AllocsPerRun(100, func() {
		if _, err := appendSealed(nil, key, resp, &bufs); err != nil {
			t.Fatal(err)
		}
	})
	cipher := testing.AllocsPerRun(100, func() {
		if _, err := newAEAD(key); err != nil {
			t.Fatal(err)
		}
	})
	if pooled > cipher+1 {
		t.Errorf("appendSealed allocates %v times with a pool, want %v (the cipher's) + 1 (the sealed answer)", pooled, cipher)
	}
}

// TestSealedResponseForms: a kept response opens to what was sealed, in
// the binary form, and a record kept in the earlier JSON form still opens;
// a record sealed under another key or cut short does not.
func TestSealedResponseForms(t *testing.T) {
	derived := sealingKey("", "k1", "POST", "/v1/x", []byte(`{"a":1}`))
	key := derived[:]
	tests := []struct {
		name string
		resp storedResponse
	}{
		{"run start", storedResponse{Status: http.StatusCreated, Header: http.Header{
			"Content-Type": {"application/json"}, "Location": {"/api/v1/process-runs/run_1"}},
			Body: []byte("{\"id\":\"run_1\"}\n")}},
		{"several values, empty body", storedResponse{Status: http.StatusNoContent, Header: http.Header{
			"Vary": {"A", "B", ""}, "X-Empty": {}}, Body: []byte{}}},
		{"no header", storedResponse{Status: http.StatusOK, Header: http.Header{}, Body: []byte("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed, err := appendSealed(nil, key, tt.resp, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := open(key, sealed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.resp, got); diff != "" {
				t.Errorf("opened (-want +got):\n%s", diff)
			}
			other := sealingKey("", "k2", "POST", "/v1/x", nil)
			if _, err := open(other[:], sealed); err == nil {
				t.Error("another key opened the response")
			}

			// The earlier form: the response's JSON, sealed.
			plain, err := json.Marshal(tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			aead, err := newAEAD(key)
			if err != nil {
				t.Fatal(err)
			}
			nonce := make([]byte, aead.NonceSize())
			_, _ = rand.Read(nonce)
			got, err = open(key, aead.Seal(nonce, nonce, plain, nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.resp, got); diff != "" {
				t.Errorf("opened the JSON form (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeResponseMalformed: a cut or garbled binary form is an error,
// never a panic.
func TestDecodeResponseMalformed(t *testing.T) {
	resp := storedResponse{Status: 201, Header: http.Header{"Location": {"/a"}}, Body: []byte("b")}
	full := append([]byte{responseV1}, s2.Encode(nil, appendResponse(nil, resp))...)
	if got, err := decodeResponse(full); err != nil || !cmp.Equal(got, resp) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, resp)
	}
	for n := range len(full) {
		if _, err := decodeResponse(full[:n]); err == nil {
			t.Errorf("decoded %d of %d bytes", n, len(full))
		}
	}
	overlong := append([]byte{responseV1}, s2.Encode(nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})...)
	if _, err := decodeResponse(overlong); err == nil {
		t.Error("decoded an overlong status")
	}
	for _, fields := range [][]byte{{201, 1, 0x20}, {201, 1, 1, 'L', 9}, {201, 9}} {
		if _, err := decodeResponse(append([]byte{responseV1}, s2.Encode(nil, fields)...)); err == nil {
			t.Errorf("decoded the fields %v, cut short", fields)
		}
	}
	if _, err := decodeResponse([]byte{9, 200, 1}); err == nil {
		t.Error("decoded an unknown version")
	}
	huge := append([]byte{responseV1}, s2.Encode(nil, make([]byte, maxKeptResponse+1))...)
	if _, err := decodeResponse(huge); err == nil {
		t.Error("decoded a response over maxKeptResponse")
	}
	atBound := append([]byte{responseV1}, s2.Encode(nil, appendResponse(nil, storedResponse{Status: 200, Body: make([]byte, maxKeptResponse-16)}))...)
	if _, err := decodeResponse(atBound); err != nil {
		t.Errorf("refused a response within maxKeptResponse: %v", err)
	}
}

// FuzzDecodeResponse: any bytes decode to a response or an error, never
// a panic or an allocation past maxKeptResponse; what decodes encodes back
// to the same bytes before compression.
func FuzzDecodeResponse(f *testing.F) {
	resp := storedResponse{Status: 201, Header: http.Header{"Location": {"/a"}, "X": {"1", "2"}}, Body: []byte(`{"id":"r"}`)}
	f.Add(append([]byte{responseV1}, s2.Encode(nil, appendResponse(nil, resp))...))
	f.Add([]byte{responseV1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{9, 200, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeResponse(b)
		if err != nil {
			return
		}
		raw, err := s2.Decode(nil, b[1:])
		if err != nil {
			t.Fatalf("decoded a response from bytes s2 refuses: %v", err)
		}
		if len(got.Body) > len(raw) {
			t.Fatalf("body of %d bytes from %d decoded", len(got.Body), len(raw))
		}
		// One field at most: its order cannot differ.
		if again := appendResponse(nil, got); len(got.Header) <= 1 && !bytes.Equal(again, raw) {
			t.Fatalf("decoded %x, encoded back %x", raw, again)
		}
	})
}

// TestDecodeResponseOneForm: a kept response has one stored form: a
// padded varint, or a header field twice, is refused (encoding/binary's
// AppendUvarint, the one encoder ever to write these records, writes no
// padding, and an http.Header no name twice).
func TestDecodeResponseOneForm(t *testing.T) {
	t.Parallel()
	s := func(b ...byte) []byte { return append([]byte{0xc9, 0x01}, b...) } // status 201
	for name, raw := range map[string][]byte{
		"padded status":       {0xc9, 0x81, 0x00, 0},
		"padded field count":  s(0x80, 0x00),
		"padded name length":  s(1, 0x81, 0x00, 'X', 1, 1, '1'),
		"padded value length": s(1, 1, 'X', 1, 0x81, 0x00, '1'),
		"a field twice":       s(2, 1, 'X', 1, 1, '1', 1, 'X', 1, 1, '2'),
	} {
		b := append([]byte{responseV1}, s2.Encode(nil, raw)...)
		if got, err := decodeResponse(b); err == nil {
			t.Errorf("%s: decoded %+v; want an error", name, got)
		}
	}
	good := storedResponse{Status: 201, Header: http.Header{"X": {"1"}}, Body: []byte("b")}
	got, err := decodeResponse(append([]byte{responseV1}, s2.Encode(nil, appendResponse(nil, good))...))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(good, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestIdempotencyOwnMarkOnCluster: on a cluster node, a keyed request
// whose handler makes two changes writes its acted mark in both: the
// second finds the first's mark and takes it for its own, not for
// another server's; a mark this request did not write refuses the change.
func TestIdempotencyOwnMarkOnCluster(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	ws, err := bas.Open(context.Background(), bas.Options{Dir: t.TempDir(), PostgresDSN: dsn,
		PostgresSchema: pgtest.Schema(t, dsn), Cluster: true, NodeID: "a"}) // the default lease TTL: one of 1s lapses on a loaded machine
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := New(ws, Options{})
	req := &idemRequest{h: h, tenant: "acme", id: "idem_1", fingerprint: digest("f")}
	ctx := store.AlsoInUpdate(t.Context(), req.markActed)
	for i := range 2 {
		if err := ws.Store().Update(ctx, func(tx store.Txn) error { return tx.Set(store.Key("acme", "x", i), nil) }); err != nil {
			t.Fatalf("change %d of the request: %v", i+1, err)
		}
	}
	other := &idemRequest{h: h, tenant: "acme", id: "idem_1", fingerprint: digest("f")} // the same request on another server
	err = ws.Store().Update(store.AlsoInUpdate(t.Context(), other.markActed), func(store.Txn) error { return nil })
	if err != errKeyTaken {
		t.Fatalf("another request's change under the key: %v, want errKeyTaken", err)
	}
}

// TestResponseRecorderAdopts: a response written whole to a recorder that
// holds nothing yet is kept as it is, without a copy; anything written
// after it goes on from a copy, so the adopted body is never written to;
// a recorder a handler already wrote to records as before.
func TestResponseRecorderAdopts(t *testing.T) {
	body := make([]byte, 0, 64)
	body = append(body, `{"id":"run_1"}`...)
	resp := storedResponse{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}

	var whole responseRecorder
	writeRecorded(&whole, resp, false)
	if got := whole.response(); &got.Body[0] != &body[0] || got.Status != http.StatusCreated {
		t.Errorf("a whole response was copied or lost its status: %+v", got)
	}

	var more responseRecorder
	writeRecorded(&more, resp, false)
	_, _ = more.Write([]byte("\n"))
	if diff := cmp.Diff(`{"id":"run_1"}`+"\n", string(more.response().Body)); diff != "" {
		t.Errorf("body after a later write (-want +got):\n%s", diff)
	}
	if got := string(body[:cap(body)][len(body)]); got != "\x00" {
		t.Errorf("the adopted body's spare capacity was written to: %q", got)
	}

	var started responseRecorder
	started.Header().Set("X-A", "1")
	writeRecorded(&started, resp, false)
	got := started.response()
	if diff := cmp.Diff(storedResponse{Status: http.StatusCreated, Body: body,
		Header: http.Header{"Content-Type": {"application/json"}, "X-A": {"1"}}}, got); diff != "" {
		t.Errorf("a recorder with a header set (-want +got):\n%s", diff)
	}
	if &got.Body[0] == &body[0] {
		t.Error("a recorder with a header set shares the body")
	}

	var replay responseRecorder
	writeRecorded(&replay, resp, true)
	if diff := cmp.Diff("true", replay.response().Header.Get("Idempotent-Replayed")); diff != "" {
		t.Errorf("a replay written to a recorder (-want +got):\n%s", diff)
	}
}

// TestJSONResponseNewline: a JSON answer's body is followed by a newline
// without a copy of the body (an engine's answer, shared by the replies
// held for it): written to the client, adopted by a recorder and written
// to after, and kept then replayed, every path gives the body and one
// newline, and the body given is never written to.
func TestJSONResponseNewline(t *testing.T) {
	body := make([]byte, 0, 64)
	body = append(body, `{"id":"run_1"}`...)
	want := `{"id":"run_1"}` + "\n"
	c := &request{h: &Handler{opts: Options{BasePath: "/api"}}}
	resp := c.jsonResponse(http.StatusCreated, "/v1/process-runs/", "run_1", body)
	if &resp.Body[0] != &body[0] {
		t.Error("the body was copied")
	}

	written := func(resp storedResponse, replayed bool) string {
		w := httptest.NewRecorder()
		writeRecorded(w, resp, replayed)
		return w.Body.String()
	}
	if diff := cmp.Diff(want, written(resp, false)); diff != "" {
		t.Errorf("written to the client (-want +got):\n%s", diff)
	}

	var adopted responseRecorder
	writeRecorded(&adopted, resp, false)
	kept := adopted.response()
	if &kept.Body[0] != &body[0] || !kept.Newline {
		t.Errorf("an adopted answer was copied or lost its newline: %+v", kept)
	}
	key := sealingKey("", "k1", "POST", "/v1/x", nil)
	sealed, err := appendSealed(nil, key[:], kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := open(key[:], sealed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, written(opened, true)); diff != "" {
		t.Errorf("kept and replayed (-want +got):\n%s", diff)
	}

	var more responseRecorder
	writeRecorded(&more, resp, false)
	_, _ = more.Write([]byte("more"))
	if diff := cmp.Diff(storedResponse{Status: http.StatusCreated, Header: resp.Header, Body: []byte(want + "more")},
		more.response()); diff != "" {
		t.Errorf("written to after an adopted answer (-want +got):\n%s", diff)
	}
	if got := string(body[:cap(body)][len(body)]); got != "\x00" {
		t.Errorf("the body's spare capacity was written to: %q", got)
	}
}

// FuzzDecodeIdemRecord: any stored bytes decode to a record or an error,
// never a panic; a record decoded from the binary form encodes back to
// the same bytes.
func FuzzDecodeIdemRecord(f *testing.F) {
	head := make([]byte, idemHeadLen)
	if err := putIdemHead(head, idemDone, true, time.Unix(1, 2), digest("f")); err != nil {
		f.Fatal(err)
	}
	f.Add(append(head, 1, 2, 3))
	f.Add(head)
	f.Add([]byte(`{"id":"a","fingerprint":"b","state":"done","expires_at":"2026-01-01T00:00:00Z","sealed":"AAE="}`))
	f.Add([]byte{idemRecordV2})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeIdemRecord(b)
		if err != nil || b[0] == '{' {
			return
		}
		again := append(make([]byte, idemHeadLen), rec.Sealed...)
		if err := putIdemHead(again, rec.State, rec.Bound, rec.ExpiresAt, rec.Fingerprint); err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded %x, encoded back %x", b, again)
		}
	})
}

// BenchmarkDecodeResponse decodes a kept run start's answer.
func BenchmarkDecodeResponse(b *testing.B) {
	resp := storedResponse{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/process-runs/run_1"}},
		Body: bytes.Repeat([]byte(`{"id":"run_01M8BC2B1PJY6SG31WR4B5AYYP"}`), 20)}
	raw := append([]byte{responseV1}, s2.Encode(nil, appendResponse(nil, resp))...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeResponse(raw); err != nil {
			b.Fatal(err)
		}
	}
}
