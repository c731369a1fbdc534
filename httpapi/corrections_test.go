package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestPatchesRefuseUnknownFields: every PATCH route answers a field it does
// not take with a 422 extra_forbidden and changes nothing.
func TestPatchesRefuseUnknownFields(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	var proc struct{ ID string }
	s.do(t, "POST", "/v1/processes", admin, invoiceProcess).want(t, http.StatusCreated).decode(t, &proc)
	typeID := s.invoiceType(t, admin)
	doc := s.uploadDoc(t, admin, typeID, "a.txt", invoiceText("INV-1", "1,200.00", "2024-03-02"))

	tests := []struct {
		path, body, read string
		want             []string
	}{
		{"/v1/workspace", `{"name": "Renamed", "profile": {"industry": "retail"}}`, "/v1/workspace",
			[]string{"body.profile:extra_forbidden"}},
		{"/v1/automation", `{"paused": true, "pause": true}`, "/v1/automation",
			[]string{"body.pause:extra_forbidden"}},
		{"/v1/processes/" + proc.ID + "/automation", `{"percent": 10, "zz": 1, "aa": 2}`, "/v1/processes/" + proc.ID + "/automation",
			[]string{"body.aa:extra_forbidden", "body.zz:extra_forbidden"}},
		{"/v1/processes/" + proc.ID, `{"name": "Renamed", "owner": "usr_x"}`, "/v1/processes/" + proc.ID,
			[]string{"body.owner:extra_forbidden"}},
		{"/v1/docs/types/" + typeID, `{"name": "Renamed", "color": "red"}`, "/v1/docs/types/" + typeID,
			[]string{"body.color:extra_forbidden"}},
		{"/v1/docs/documents/" + doc.ID + "/fields", `{"fields": {"total": "1.00"}, "reason": "x"}`, "/v1/docs/documents/" + doc.ID,
			[]string{"body.reason:extra_forbidden"}},
	}
	for _, test := range tests {
		before := s.do(t, "GET", test.read, admin, nil).want(t, http.StatusOK).Body
		r := s.do(t, "PATCH", test.path, admin, test.body).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff(test.want, violationsOf(t, r)); diff != "" {
			t.Errorf("PATCH %s violations (-want +got):\n%s", test.path, diff)
		}
		if after := s.do(t, "GET", test.read, admin, nil).want(t, http.StatusOK).Body; string(after) != string(before) {
			t.Errorf("PATCH %s changed the record:\nbefore %s\nafter  %s", test.path, before, after)
		}
	}
	// Every PATCH route of the table at the time of writing is covered; a
	// route added later needs its own case here.
	tested := map[string]bool{"/v1/workspace": true, "/v1/automation": true, "/v1/processes/:id/automation": true,
		"/v1/processes/:id": true, "/v1/docs/types/:id": true, "/v1/docs/documents/:id/fields": true}
	// TestWriteBodiesRefuseMalformedInput sends an unknown field to every
	// write route of the table whose record is strict.
	for _, rt := range s.h.Routes() {
		key := "PATCH " + rt.Path
		_, inMatrix := bodyField[key]
		if rt.Method == "PATCH" && !tested[rt.Path] && (!inMatrix || openBodies[key]) {
			t.Errorf("PATCH %s has no case here nor in the write-body matrix", rt.Path)
		}
	}
}

// TestDraftNameBound: a type made from a template takes a name of up to
// 200 characters (interface.md DraftIn), 201 is a 422.
func TestDraftNameBound(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	name := strings.Repeat("n", 200)
	var typ struct{ Name string }
	s.do(t, "POST", "/v1/docs/types/from-template", admin, `{"template_id": "receipt", "name": "`+name+`"}`).
		want(t, http.StatusCreated).decode(t, &typ)
	if typ.Name != name {
		t.Errorf("name %q, want the 200 characters given", typ.Name)
	}
	r := s.do(t, "POST", "/v1/docs/types/from-template", admin, `{"template_id": "receipt", "name": "`+name+`n"}`).
		want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.name:string_too_long"}, violationsOf(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestAppsListServedApps: /v1/apps lists a built-in app exactly when a route
// of the route table serves it.
func TestAppsListServedApps(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	served := map[string]bool{}
	for _, rt := range s.h.Routes() {
		served[rt.App] = true
	}
	var want []string
	for _, a := range capability.BuiltinApps() {
		if served[a.ID] {
			want = append(want, a.ID)
		}
	}
	var apps []capability.App
	s.do(t, "GET", "/v1/apps", admin, nil).want(t, http.StatusOK).decode(t, &apps)
	var got []string
	for _, a := range apps {
		got = append(got, a.ID)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
	if !slices.Contains(got, "processes") || !slices.Contains(got, "docs") {
		t.Errorf("served apps missing: %v", got)
	}
}

// TestAppsEmitOnlyEmittedEvents: every event a listed app says it emits is
// named by the code outside the app catalog (the place that emits it).
func TestAppsEmitOnlyEmittedEvents(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	named := map[string]bool{}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "examples" || d.Name() == "capability" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil {
					named[v] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var apps []capability.App
	s.do(t, "GET", "/v1/apps", admin, nil).want(t, http.StatusOK).decode(t, &apps)
	for _, a := range apps {
		for _, ev := range a.Events.Emits {
			if !named[ev] {
				t.Errorf("app %s lists %s, which nothing emits", a.ID, ev)
			}
		}
	}
}

// TestProcessSelfTriggerWarning: create and update answer with a warning
// when the trigger listens to an event the process's own runs emit.
func TestProcessSelfTriggerWarning(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	type answer struct {
		ID       string         `json:"id"`
		Warnings []violationOut `json:"warnings"`
	}
	steps := `[{"key": "note", "type": "human_task", "config": {"title": "Look"}}]`
	tests := []struct {
		name, trigger string
		want          []string
	}{
		{"own completion", `{"type": "event", "event": "process.run.completed"}`, []string{"body.trigger.event:self_trigger"}},
		{"own task", `{"type": "event", "event": "task.created"}`, []string{"body.trigger.event:self_trigger"}},
		{"another event", `{"type": "event", "event": "docs.document.validated"}`, []string{}},
		{"manual", `{"type": "manual"}`, []string{}},
	}
	for _, test := range tests {
		var a answer
		s.do(t, "POST", "/v1/processes", admin, `{"name": "`+test.name+`", "trigger": `+test.trigger+`, "steps": `+steps+`}`).
			want(t, http.StatusCreated).decode(t, &a)
		got := []string{}
		for _, w := range a.Warnings {
			got = append(got, w.Loc[0].(string)+"."+w.Loc[1].(string)+"."+w.Loc[2].(string)+":"+w.Type)
			if w.Msg == "" {
				t.Errorf("%s: warning without a message", test.name)
			}
		}
		if a.Warnings == nil || !cmp.Equal(test.want, got) {
			t.Errorf("%s: create warnings %v, want %v", test.name, got, test.want)
		}
		var u answer
		s.do(t, "PATCH", "/v1/processes/"+a.ID, admin, `{"description": "again"}`).want(t, http.StatusOK).decode(t, &u)
		if len(u.Warnings) != len(test.want) {
			t.Errorf("%s: update warnings %v, want %v", test.name, u.Warnings, test.want)
		}
	}
}
