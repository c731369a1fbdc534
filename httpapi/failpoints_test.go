//go:build failpoints

package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/bas-platform/bas/httpapi"
)

// abortOnce is a BeforeResponse failpoint that drops the connection of the
// first keyed request (after its change committed) and keeps the answer
// the client never got.
type abortOnce struct {
	mu     sync.Mutex
	fired  bool
	status int
	body   []byte
}

func (a *abortOnce) hook(_ *http.Request, status int, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fired {
		return
	}
	a.fired, a.status, a.body = true, status, bytes.Clone(body)
	panic(http.ErrAbortHandler)
}

// seen returns what the hook kept.
func (a *abortOnce) seen() (fired bool, status int, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fired, a.status, a.body
}

// TestFailpointBetweenCommitAndResponse drops the connection of a keyed
// request after its change committed and before the answer was written,
// for a run start (whose answer commits with the engine's change) and a
// CRM company (whose answer is kept after its change): the client gets no
// answer, retries with the same key and gets the first answer, byte for
// byte, and there is one run or company.
func TestFailpointBetweenCommitAndResponse(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		path func(s *testServer, token string) string
		body string
		list string // lists what the request made
	}{
		{name: "run start",
			path: func(s *testServer, token string) string {
				var proc struct{ ID string }
				s.do(t, "POST", "/v1/processes", token, `{"name": "Ask", "trigger": {"type": "manual"},
				  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look"}}]}`).
					want(t, http.StatusCreated).decode(t, &proc)
				return "/v1/processes/" + proc.ID + "/start"
			},
			body: `{"subject": {"type": "po", "label": "PO-1"}}`, list: "/v1/process-runs"},
		{name: "CRM company",
			path: func(*testServer, string) string { return "/v1/crm/companies" },
			body: `{"name": "Acme"}`, list: "/v1/crm/companies"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			fp := &abortOnce{}
			s := newTestServer(t, httpapi.Options{DevLogin: true, Failpoints: httpapi.Failpoints{BeforeResponse: fp.hook}})
			admin := s.devLogin(t, `{}`).Token
			path := test.path(s, admin)

			req, err := http.NewRequest("POST", s.srv.URL+s.h.BasePath()+path, strings.NewReader(test.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "k1")
			// A new connection: net/http's client resends a keyed request
			// by itself when a reused connection drops before the answer.
			fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			if resp, err := fresh.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("the first request was answered %d; the failpoint should have dropped it", resp.StatusCode)
			}
			fired, status, first := fp.seen()
			if !fired || status != http.StatusCreated {
				t.Fatalf("failpoint fired %v with status %d, want 201", fired, status)
			}

			r := s.do(t, "POST", path, admin, test.body, "Idempotency-Key", "k1").want(t, http.StatusCreated)
			if !bytes.Equal(r.Body, first) || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("retry answered (replayed %q)\n%s\nwant the first answer\n%s", r.Header.Get("Idempotent-Replayed"), r.Body, first)
			}
			var made []struct{ ID string }
			s.do(t, "GET", test.list, admin, nil).want(t, http.StatusOK).decode(t, &made)
			if len(made) != 1 {
				t.Errorf("%s lists %d records, want 1", test.list, len(made))
			}
		})
	}
}
