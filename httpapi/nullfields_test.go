package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bas-platform/bas/httpapi"
)

// TestNullOptionalFieldIsAbsent sends each body with its optional object
// and list fields left out and then given as null: both are taken, with
// the same answer (the fields that name the record or its time aside). A
// decision's schemas and thresholds null take their defaults, the AI
// connection's redact lists null are none (not the ones stored before). (A
// document type what-if's null clears as a PATCH's: TestWhatIfNullAsPatch.)
// roles, which a key may not be made without, still refuses null.
func TestNullOptionalFieldIsAbsent(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_null_fields"}`).Token
	for _, c := range []struct {
		name, method, path string
		absent, between    string // between, when set, is sent after absent
		null               string
		statusAbsent       int
		statusNull         int
		ignore             []string
	}{
		{name: "decision schemas and thresholds", method: "POST", path: "/v1/decisions",
			absent:       `{"name": "route-a", "description": "Route"}`,
			null:         `{"name": "route-b", "description": "Route", "input_schema": null, "output_schema": null, "thresholds": null}`,
			statusAbsent: http.StatusCreated, statusNull: http.StatusCreated, ignore: []string{"name", "id", "created_at"}},
		{name: "AI connection redact lists", method: "PUT", path: "/v1/ai/connection",
			absent:       `{"base_url": "http://localhost:11434/v1", "model": "m"}`,
			between:      `{"base_url": "http://localhost:11434/v1", "model": "m", "redact_fields": ["iban"], "redact_patterns": ["email"]}`,
			null:         `{"base_url": "http://localhost:11434/v1", "model": "m", "redact_fields": null, "redact_patterns": null}`,
			statusAbsent: http.StatusCreated, statusNull: http.StatusOK, ignore: []string{"created_at", "updated_at"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var absent, null map[string]any
			s.do(t, c.method, c.path, admin, c.absent).want(t, c.statusAbsent).decode(t, &absent)
			if c.between != "" {
				s.do(t, c.method, c.path, admin, c.between).want(t, http.StatusOK)
			}
			s.do(t, c.method, c.path, admin, c.null).want(t, c.statusNull).decode(t, &null)
			for _, k := range c.ignore {
				delete(absent, k)
				delete(null, k)
			}
			if diff := cmp.Diff(absent, null); diff != "" {
				t.Errorf("answer (-left out +null):\n%s", diff)
			}
		})
	}

	// roles null is refused: it is not "the default role".
	r := s.do(t, "POST", "/v1/api-keys", admin, `{"name": "ci", "roles": null}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.roles:type_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("roles null: violations (-want +got):\n%s", diff)
	}
	// Another type in a nullable field is still a type_error.
	r = s.do(t, "POST", "/v1/decisions", admin, `{"name": "route-c", "description": "Route", "input_schema": []}`).
		want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.input_schema:type_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("input_schema []: violations (-want +got):\n%s", diff)
	}
}
