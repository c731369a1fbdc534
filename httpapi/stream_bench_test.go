package httpapi_test

import (
	"testing"

	"github.com/bas-platform/bas/httpapi"
)

// BenchmarkStreamDelivery measures an event's way from POST /v1/events to
// a client reading GET /v1/stream over loopback HTTP: the publish, its
// commit, the hub and the stream's write.
func BenchmarkStreamDelivery(b *testing.B) {
	s := newTestServer(b, httpapi.Options{DevLogin: true})
	admin := s.devLogin(b, `{"tenant_id": "ten_sse_bench"}`).Token
	st := s.openStream(b, admin, "?names=bench.*", "")
	for b.Loop() {
		s.do(b, "POST", "/v1/events", admin, `{"name": "bench.tick", "data": {}}`).want(b, 202)
		if f, ok := st.next(b); !ok || f.Event != "bench.tick" {
			b.Fatalf("stream: %+v %v", f, ok)
		}
	}
}
