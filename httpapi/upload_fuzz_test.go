package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
)

// FuzzUpload: no multipart body makes a document upload answer 5xx or
// panic; whatever it is, the answer is a 201 or a 4xx.
func FuzzUpload(f *testing.F) {
	s := newTestServer(f, httpapi.Options{DevLogin: true, RateLimit: 1 << 20})
	admin := s.devLogin(f, `{}`).Token
	var typ struct{ ID string }
	s.do(f, "POST", "/v1/docs/types/from-template", admin, `{"template_id": "receipt"}`).want(f, http.StatusCreated).decode(f, &typ)
	part := func(headers, body string) string { return "--B\r\n" + headers + "\r\n\r\n" + body + "\r\n" }
	typePart := part(`Content-Disposition: form-data; name="type_id"`, typ.ID)
	file := part(`Content-Disposition: form-data; name="file"; filename="r.txt"`+"\r\nContent-Type: text/plain", "Total: 12.50\nDate: 2024-03-02")
	for _, seed := range []string{
		typePart + file + "--B--\r\n",
		file + typePart + "--B--\r\n",
		typePart + "--B--\r\n",
		file + "--B--\r\n",
		typePart + typePart + file + file + "--B--\r\n",
		typePart + part(`Content-Disposition: form-data; name="file"; filename="../../etc/passwd"`, "x") + "--B--\r\n",
		typePart + part(`Content-Disposition: form-data; name="file"; filename="`+strings.Repeat("a", 5000)+`.pdf"`, "%PDF-1.4\n") + "--B--\r\n",
		typePart + part(`Content-Disposition: form-data; name="file"; filename="x.pdf"`+"\r\nContent-Type: application/pdf", "%PDF-1.7\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF") + "--B--\r\n",
		typePart + part(`Content-Disposition: form-data; name="file"; filename="x.csv"`, "a,b\n\"1,2") + "--B--\r\n",
		strings.Repeat(part(`Content-Disposition: form-data; name="x"`, "y"), 200) + "--B--\r\n",
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nno end",
		"", "--B--", "garbage", "--B\r\n\r\n\r\n--B--\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := s.do(t, "POST", "/v1/docs/documents", admin, body, "Content-Type", "multipart/form-data; boundary=B")
		if r.Status != http.StatusCreated && (r.Status < 400 || r.Status >= 500) {
			t.Fatalf("upload of %q: status %d: %s", body, r.Status, r.Body)
		}
	})
}
