package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/httpapi/client"
)

// newServer serves a workspace in memory as the example server does, with
// development login, and returns a client signed in as the demo admin.
func newServer(t *testing.T) (*client.ClientWithResponses, string) {
	t.Helper()
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true,
		Clock: bas.NewFakeClock(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	srv := httptest.NewServer(httpapi.New(ws, httpapi.Options{DevLogin: true}))
	t.Cleanup(srv.Close)
	anon, err := client.New(srv.URL+"/api", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := anon.DevLoginWithResponse(context.Background(), nil, client.DevLoginIn{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(r.HTTPResponse, r.Body); err != nil || r.JSON201 == nil {
		t.Fatalf("dev-login: %v %s", err, r.Body)
	}
	c, err := client.New(srv.URL+"/api", r.JSON201.Token)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

func TestClientIdempotentCreate(t *testing.T) {
	c, _ := newServer(t)
	ctx := context.Background()
	key := client.NewIdempotencyKey()
	var ids []string
	for range 2 {
		r, err := c.CompanyCreateWithResponse(ctx, &client.CompanyCreateParams{IdempotencyKey: &key},
			client.CompanyIn{Name: "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Check(r.HTTPResponse, r.Body); err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() != http.StatusCreated || r.JSON201 == nil {
			t.Fatalf("status %d: %s", r.StatusCode(), r.Body)
		}
		ids = append(ids, r.JSON201.Id)
	}
	if ids[0] != ids[1] {
		t.Errorf("a retry with the same key made a second company: %v", ids)
	}
	// The editor form of the key does the same.
	r, err := c.CompanyCreateWithResponse(ctx, nil, client.CompanyIn{Name: "Acme"}, client.WithIdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON201 == nil || r.JSON201.Id != ids[0] {
		t.Errorf("WithIdempotencyKey: %s, want company %s", r.Body, ids[0])
	}
	list, err := c.CompaniesListWithResponse(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(*list.JSON200); n != 1 {
		t.Errorf("%d companies, want 1", n)
	}
}

func TestClientPaging(t *testing.T) {
	c, _ := newServer(t)
	ctx := context.Background()
	var want []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		r, err := c.CompanyCreateWithResponse(ctx, nil, client.CompanyIn{Name: name})
		if err != nil || r.JSON201 == nil {
			t.Fatalf("create %s: %v %s", name, err, r.Body)
		}
		want = append(want, name)
	}
	pages := 0
	limit := 2
	var got []string
	for co, err := range client.All(ctx, func(ctx context.Context, cursor *string) ([]client.Company, *http.Response, error) {
		pages++
		r, err := c.CompaniesListWithResponse(ctx, &client.CompaniesListParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		if err := client.Check(r.HTTPResponse, r.Body); err != nil {
			return nil, nil, err
		}
		return *r.JSON200, r.HTTPResponse, nil
	}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, co.Name)
	}
	if pages != 3 {
		t.Errorf("%d pages of 2 for 5 companies, want 3", pages)
	}
	slicesSort(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("companies (-want +got):\n%s", d)
	}
	// A break stops fetching.
	pages = 0
	for range client.All(ctx, func(ctx context.Context, cursor *string) ([]int, *http.Response, error) {
		pages++
		return []int{1, 2}, &http.Response{Header: http.Header{"X-Next-Cursor": {"more"}}}, nil
	}) {
		break
	}
	if pages != 1 {
		t.Errorf("%d pages fetched after a break, want 1", pages)
	}
}

func slicesSort(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestClientErrors(t *testing.T) {
	c, base := newServer(t)
	ctx := context.Background()
	tests := []struct {
		name string
		do   func() (*http.Response, []byte, error)
		want client.APIError
	}{
		{"not found", func() (*http.Response, []byte, error) {
			r, err := c.CompanyGetWithResponse(ctx, "co_missing")
			return r.HTTPResponse, r.Body, err
		}, client.APIError{Status: 404, Detail: "company not found"}},
		{"validation", func() (*http.Response, []byte, error) {
			r, err := c.CompanyCreateWithResponse(ctx, nil, client.CompanyIn{Name: ""})
			return r.HTTPResponse, r.Body, err
		}, client.APIError{Status: 422, Violations: []client.Violation{{Loc: []any{"body", "name"},
			Msg: "must be at least 1 character", Type: "string_too_short"}}}},
		{"not authenticated", func() (*http.Response, []byte, error) {
			anon, _ := client.New(base+"/api", "")
			r, err := anon.CompaniesListWithResponse(ctx, nil)
			return r.HTTPResponse, r.Body, err
		}, client.APIError{Status: 401, Detail: "not authenticated"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, err := tc.do()
			if err != nil {
				t.Fatal(err)
			}
			err = client.Check(resp, body)
			var got *client.APIError
			if !errors.As(err, &got) {
				t.Fatalf("Check = %v, want an *APIError", err)
			}
			if d := cmp.Diff(tc.want, *got); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
		})
	}
}

// TestGeneratedUpToDate regenerates the client from the golden document
// and compares it with client.gen.go (go generate ./httpapi/client
// rewrites it). It needs the pinned oapi-codegen from the module proxy.
func TestGeneratedUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs oapi-codegen")
	}
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.Command("go", "run", "./internal/gen", "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if s := stderr.String(); strings.Contains(s, "dial tcp") || strings.Contains(s, "lookup ") {
			t.Skipf("oapi-codegen not available offline: %s", s)
		}
		t.Fatalf("generate: %v: %s", err, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("client.gen.go is not what the golden document generates: run go generate ./httpapi/client")
	}
}

// TestClientTaskComplete completes a task through the client: the answer
// is the task completed (a Task, as API.md says), also when the run goes
// on at once to a step that makes the next task.
func TestClientTaskComplete(t *testing.T) {
	c, _ := newServer(t)
	ctx := context.Background()
	p, err := c.ProcessCreateWithBodyWithResponse(ctx, nil, "application/json", strings.NewReader(`{"name": "Two tasks",
		"trigger": {"type": "manual"}, "steps": [{"key": "one", "type": "human_task", "config": {"title": "One"}},
		{"key": "two", "type": "human_task", "config": {"title": "Two"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(p.HTTPResponse, p.Body); err != nil || p.JSON201 == nil {
		t.Fatalf("create: %v %s", err, p.Body)
	}
	var in client.StartIn
	in.Subject.Type, in.Subject.Label = "case", "C-1"
	r, err := c.RunStartWithResponse(ctx, p.JSON201.Id, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(r.HTTPResponse, r.Body); err != nil || r.JSON201 == nil {
		t.Fatalf("start: %v %s", err, r.Body)
	}
	open := "open"
	tasks, err := c.TaskListWithResponse(ctx, &client.TaskListParams{Status: &open})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(tasks.HTTPResponse, tasks.Body); err != nil || tasks.JSON200 == nil || len(*tasks.JSON200) != 1 {
		t.Fatalf("open tasks: %v %s", err, tasks.Body)
	}
	task := (*tasks.JSON200)[0]
	done, err := c.TaskCompleteWithResponse(ctx, task.Id, nil, client.CompleteIn{Action: "complete"})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(done.HTTPResponse, done.Body); err != nil || done.JSON200 == nil {
		t.Fatalf("complete: %v %s", err, done.Body)
	}
	type answer struct{ ID, Step, Status string }
	want := answer{task.Id, "one", "completed"}
	if diff := cmp.Diff(want, answer{done.JSON200.Id, done.JSON200.StepKey, done.JSON200.Status}); diff != "" {
		t.Errorf("complete answered (-want +got):\n%s", diff)
	}
}
