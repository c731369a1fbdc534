package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/procstat"
)

// The memory figures of the security fixes (issue 20, items 1, 2 and 7).
// Each reports the bytes allocated per operation and the peak resident
// memory of the test process (VmHWM), so run each alone:
//
//	go test ./httpapi -run '^$' -bench BenchmarkBombPDFUpload -benchtime 3x

// BenchmarkBombPDFUpload uploads a PDF of a few hundred kilobytes whose
// content stream inflates to 100 MiB: a 422 within the extraction budget.
func BenchmarkBombPDFUpload(b *testing.B) {
	s := newTestServer(b, httpapi.Options{DevLogin: true})
	admin := benchLogin(b, s)
	typeID := benchType(b, s, admin)
	bomb := bombPDF(b, 100<<20)
	body, ct := benchMultipart(b, "bomb.pdf", bomb, "type_id", typeID)
	b.ReportAllocs()
	for b.Loop() {
		if st := benchPost(b, s, admin, "/v1/docs/documents", ct, body); st != http.StatusUnprocessableEntity {
			b.Fatalf("status %d", st)
		}
	}
	b.ReportMetric(float64(len(bomb)), "file-bytes")
	reportPeak(b)
}

// BenchmarkLargeEventsAndCockpit sends a 20 MiB event as multipart to the
// events route (415 before it is read), stores five events at the 64 KiB
// cap, and reads the cockpit four at a time.
func BenchmarkLargeEventsAndCockpit(b *testing.B) {
	s := newTestServer(b, httpapi.Options{DevLogin: true})
	admin := benchLogin(b, s)
	s.createProc(b, admin, `{"name": "On big", "trigger": {"type": "event", "event": "custom.big"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Look"}}]}`)
	big := []byte(`{"name":"custom.big","data":{"s":"` + strings.Repeat("x", 20<<20) + `"}}`)
	if st := benchPost(b, s, admin, "/v1/events", "multipart/form-data; boundary=x", big); st != http.StatusUnsupportedMediaType {
		b.Fatalf("multipart event: %d", st)
	}
	capped := []byte(`{"name":"custom.big","data":{"s":"` + strings.Repeat("x", 64<<10-8) + `"}}`)
	for range 5 {
		if st := benchPost(b, s, admin, "/v1/events", "application/json", capped); st != http.StatusAccepted {
			b.Fatalf("event: %d", st)
		}
	}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				st, n := benchGet(b, s, admin, "/v1/cockpit")
				if st != http.StatusOK {
					b.Errorf("cockpit: %d", st)
				}
				size = n
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(size), "cockpit-bytes")
	reportPeak(b)
}

// BenchmarkParallelUploads sends six 24 MiB uploads at once: four are
// read, two get 503.
func BenchmarkParallelUploads(b *testing.B) {
	s := newTestServer(b, httpapi.Options{DevLogin: true})
	admin := benchLogin(b, s)
	typeID := benchType(b, s, admin)
	file := bytes.Repeat([]byte("Total: 1\n"), 24<<20/9)
	body, ct := benchMultipart(b, "big.txt", file, "type_id", typeID)
	b.ReportAllocs()
	var refused int
	for b.Loop() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 6 {
			wg.Go(func() {
				if st := benchPost(b, s, admin, "/v1/docs/documents", ct, body); st == http.StatusServiceUnavailable {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
	reportPeak(b)
}

func benchLogin(b *testing.B, s *testServer) string {
	b.Helper()
	return s.devLogin(b, `{}`).Token
}

func benchType(b *testing.B, s *testServer, token string) string {
	b.Helper()
	var typ struct {
		ID string `json:"id"`
	}
	s.do(b, "POST", "/v1/docs/types/from-template", token, `{"template_id": "supplier_invoice"}`).decode(b, &typ)
	if typ.ID == "" {
		b.Fatal("no document type")
	}
	return typ.ID
}

func benchMultipart(b *testing.B, name string, file []byte, fields ...string) ([]byte, string) {
	b.Helper()
	return multipartBody(b, name, file, fields...)
}

// benchPost posts body and returns the status.
func benchPost(b *testing.B, s *testServer, token, path, ct string, body []byte) int {
	req, err := http.NewRequest("POST", s.srv.URL+s.h.BasePath()+path, bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ct)
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		b.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// benchGet gets path and returns the status and the body's size.
func benchGet(b *testing.B, s *testServer, token, path string) (int, int) {
	req, _ := http.NewRequest("GET", s.srv.URL+s.h.BasePath()+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		b.Error(err)
		return 0, 0
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n)
}

// reportPeak reports the process's peak resident memory in MiB.
func reportPeak(b *testing.B) {
	runtime.GC()
	if mem, err := procstat.Self(); err == nil && mem.Peak > 0 {
		b.ReportMetric(procstat.MiB(mem.Peak), "peak-RSS-MiB")
	}
}
