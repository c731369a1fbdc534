package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

type boardView struct {
	ID          string       `json:"id"`
	WorkspaceID string       `json:"workspace_id"`
	Key         string       `json:"key"`
	Template    string       `json:"template"`
	Statuses    []statusView `json:"statuses"`
	Columns     []columnView `json:"columns"`
	Groups      []statusView `json:"groups"`
}

type statusView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Category  string `json:"category"`
	Position  int    `json:"position"`
	ItemCount int    `json:"item_count"`
}

type columnView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

type itemView struct {
	ID          string         `json:"id"`
	Key         string         `json:"key"`
	Title       string         `json:"title"`
	StatusID    string         `json:"status_id"`
	GroupID     *string        `json:"group_id"`
	AssigneeID  *string        `json:"assignee_id"`
	Values      map[string]any `json:"values"`
	Position    string         `json:"position"`
	CompletedAt *string        `json:"completed_at"`
}

func (s *testServer) newBoard(t *testing.T, token, body string) boardView {
	t.Helper()
	var b boardView
	s.do(t, "POST", "/v1/boards", token, body).want(t, http.StatusCreated).decode(t, &b)
	return b
}

func (s *testServer) newItem(t *testing.T, token, board, body string) itemView {
	t.Helper()
	var it itemView
	s.do(t, "POST", "/v1/boards/"+board+"/items", token, body).want(t, http.StatusCreated).decode(t, &it)
	return it
}

func (s *testServer) itemKeys(t *testing.T, token, path string) []string {
	t.Helper()
	var items []itemView
	s.do(t, "GET", path, token, nil).want(t, http.StatusOK).decode(t, &items)
	out := []string{}
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// TestBoardsHTTP walks a board's life over HTTP: a template's shape, parts,
// items with typed values, moves, lists from indexes, deletes refused while
// in use.
func TestBoardsHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	tok := admin.Token
	r := s.do(t, "POST", "/v1/boards", tok, `{"name": "Launch plan", "template": "project"}`).want(t, http.StatusCreated)
	var b boardView
	r.decode(t, &b)
	if loc := r.Header.Get("Location"); loc != "/api/v1/boards/"+b.ID {
		t.Errorf("Location %q", loc)
	}
	if b.Key != "LP" || b.WorkspaceID != admin.TenantID || len(b.Statuses) != 3 || len(b.Columns) != 5 || len(b.Groups) != 2 {
		t.Fatalf("board %+v", b)
	}
	s.do(t, "POST", "/v1/boards", tok, `{"name": "Other", "key": "LP"}`).want(t, http.StatusConflict)
	r = s.do(t, "POST", "/v1/boards", tok, `{"name": "", "key": "lp", "template": "kanban", "color": 1}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.color:extra_forbidden", "body.key:string_pattern_mismatch", "body.name:string_too_short", "body.template:enum"},
		violationsOf(t, r)); diff != "" {
		t.Errorf("bad board (-want +got):\n%s", diff)
	}
	s.do(t, "PATCH", "/v1/boards/"+b.ID, tok, `{"description": "Q3"}`).want(t, http.StatusOK)

	// Parts: a status added at the front, a column, a group.
	var st statusView
	s.do(t, "POST", "/v1/boards/"+b.ID+"/statuses", tok, `{"name": "Ideas", "category": "backlog", "position": 0}`).
		want(t, http.StatusCreated).decode(t, &st)
	var statuses []statusView
	s.do(t, "GET", "/v1/boards/"+b.ID+"/statuses", tok, nil).want(t, http.StatusOK).decode(t, &statuses)
	if statuses[0].ID != st.ID || statuses[0].Position != 0 || statuses[1].Position != 1 || len(statuses) != 4 {
		t.Errorf("statuses %+v", statuses)
	}
	s.do(t, "POST", "/v1/boards/"+b.ID+"/statuses", tok, `{"name": "x", "category": "later", "color": "red"}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "PATCH", "/v1/boards/"+b.ID+"/statuses/"+st.ID, tok, `{"name": "Someday", "position": 9}`).want(t, http.StatusOK).decode(t, &st)
	if st.Position != 3 || st.Name != "Someday" {
		t.Errorf("moved status %+v", st)
	}
	var col columnView
	s.do(t, "POST", "/v1/boards/"+b.ID+"/columns", tok, `{"name": "Size", "type": "dropdown", "settings": {"options": ["S", "M", "L"]}}`).
		want(t, http.StatusCreated).decode(t, &col)
	r = s.do(t, "POST", "/v1/boards/"+b.ID+"/columns", tok, `{"name": "Size", "type": "dropdown", "settings": {"choices": ["S"]}}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.settings.choices:extra_forbidden", "body.settings.options:missing"}, violationsOf(t, r)); diff != "" {
		t.Errorf("bad settings (-want +got):\n%s", diff)
	}
	s.do(t, "PATCH", "/v1/boards/"+b.ID+"/columns/"+col.ID, tok, `{"type": "text"}`).want(t, http.StatusUnprocessableEntity)

	// Items: keys from 1, typed values, defaults.
	todo, doing, done := b.Statuses[0].ID, b.Statuses[1].ID, b.Statuses[2].ID
	week := b.Groups[0].ID
	estimate := b.Columns[4].ID
	a := s.newItem(t, tok, b.ID, fmt.Sprintf(`{"title": "Write the brief", "group_id": %q, "assignee_id": "ana", "values": {%q: 3, %q: "M"}}`, week, estimate, col.ID))
	if a.Key != "LP-1" || a.StatusID != todo || a.Values[estimate] != 3.0 || a.Position == "" {
		t.Errorf("item %+v", a)
	}
	r = s.do(t, "POST", "/v1/boards/"+b.ID+"/items", tok, fmt.Sprintf(`{"title": %q, "status_id": "bst_x", "values": {%q: "three", %q: "XL"}}`,
		strings.Repeat("t", 301), estimate, col.ID)).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.title:string_too_long"}, violationsOf(t, r)); diff != "" {
		t.Errorf("bad item (schema first) (-want +got):\n%s", diff)
	}
	r = s.do(t, "POST", "/v1/boards/"+b.ID+"/items", tok, fmt.Sprintf(`{"title": %q, "status_id": "bst_x", "values": {%q: "three", %q: "XL"}}`,
		strings.Repeat("t", 300), estimate, col.ID)).want(t, http.StatusUnprocessableEntity)
	wantBad := []string{"body.status_id:value_error", "body.values." + col.ID + ":enum", "body.values." + estimate + ":type_error"}
	slices.Sort(wantBad)
	if diff := cmp.Diff(wantBad, violationsOf(t, r)); diff != "" {
		t.Errorf("bad item (-want +got):\n%s", diff)
	}
	// (The clock moves between creations so "newest first" is defined.)
	s.clock.Advance(time.Millisecond)
	bi := s.newItem(t, tok, b.ID, `{"title": "Book the venue", "assignee_id": "ben"}`)
	s.clock.Advance(time.Millisecond)
	c := s.newItem(t, tok, b.ID, fmt.Sprintf(`{"title": "Print the venue posters", "group_id": %q, "assignee_id": "ana", "index": 0}`, week))
	if bi.Key != "LP-2" || c.Key != "LP-3" {
		t.Errorf("keys %s %s", bi.Key, c.Key)
	}
	// Lists: by status in position order; by group, assignee and q.
	base := "/v1/boards/" + b.ID + "/items"
	for _, test := range []struct {
		query string
		want  []string
	}{
		{"?status_id=" + todo, []string{"LP-3", "LP-1", "LP-2"}},
		{"?status_id=" + todo + "&group_id=" + week, []string{"LP-3", "LP-1"}},
		{"?status_id=" + todo + "&assignee_id=ana", []string{"LP-3", "LP-1"}},
		{"?group_id=" + week, []string{"LP-3", "LP-1"}},
		{"?assignee_id=ben", []string{"LP-2"}},
		{"?group_id=" + week + "&assignee_id=ben", []string{}},
		{"", []string{"LP-3", "LP-2", "LP-1"}},
		{"?q=venue", []string{"LP-3", "LP-2"}},
		{"?q=VENUE+posters", []string{"LP-3"}},
		{"?q=lp-2", []string{"LP-2"}},
		{"?q=venue&assignee_id=ben", []string{"LP-2"}},
		{"?status_id=" + todo + "&limit=2", []string{"LP-3", "LP-1"}},
	} {
		if diff := cmp.Diff(test.want, s.itemKeys(t, tok, base+test.query)); diff != "" {
			t.Errorf("list %s (-want +got):\n%s", test.query, diff)
		}
	}
	r = s.do(t, "GET", base+"?status_id="+todo+"&limit=2", tok, nil).want(t, http.StatusOK)
	if next := r.Header.Get("X-Next-Cursor"); next == "" {
		t.Error("no next cursor")
	} else if diff := cmp.Diff([]string{"LP-2"}, s.itemKeys(t, tok, base+"?status_id="+todo+"&limit=2&cursor="+next)); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}
	s.do(t, "GET", base+"?status_id=bst_nope", tok, nil).want(t, http.StatusUnprocessableEntity)
	s.do(t, "GET", base+"?q=%20-%20", tok, nil).want(t, http.StatusUnprocessableEntity)

	// Moves: after another, to another status; completion.
	var moved itemView
	s.do(t, "PATCH", base+"/"+bi.ID, tok, fmt.Sprintf(`{"after_id": %q}`, c.ID)).want(t, http.StatusOK).decode(t, &moved)
	if diff := cmp.Diff([]string{"LP-3", "LP-2", "LP-1"}, s.itemKeys(t, tok, base+"?status_id="+todo)); diff != "" {
		t.Errorf("after a move (-want +got):\n%s", diff)
	}
	s.do(t, "PATCH", base+"/LP-1", tok, fmt.Sprintf(`{"status_id": %q}`, done)).want(t, http.StatusOK).decode(t, &moved)
	if moved.CompletedAt == nil || moved.StatusID != done {
		t.Errorf("done item %+v", moved)
	}
	moved = itemView{}
	s.do(t, "PATCH", base+"/LP-1", tok, fmt.Sprintf(`{"status_id": %q, "group_id": null, "values": {%q: null}}`, doing, estimate)).
		want(t, http.StatusOK).decode(t, &moved)
	if moved.CompletedAt != nil || moved.GroupID != nil || moved.Values[estimate] != nil || moved.Values[col.ID] != "M" {
		t.Errorf("reopened item %+v", moved)
	}
	s.do(t, "PATCH", base+"/"+a.ID, tok, fmt.Sprintf(`{"before_id": %q, "index": 1}`, c.ID)).want(t, http.StatusUnprocessableEntity)

	// Deletes: refused while in use, then with move_to.
	s.do(t, "DELETE", "/v1/boards/"+b.ID+"/statuses/"+todo, tok, nil).want(t, http.StatusConflict)
	s.do(t, "DELETE", "/v1/boards/"+b.ID+"/groups/"+week, tok, nil).want(t, http.StatusConflict)
	s.do(t, "DELETE", "/v1/boards/"+b.ID+"/statuses/"+todo+"?move_to="+doing, tok, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/boards/"+b.ID+"/statuses/"+todo, tok, nil).want(t, http.StatusNotFound)
	if diff := cmp.Diff([]string{"LP-1", "LP-3", "LP-2"}, s.itemKeys(t, tok, base+"?status_id="+doing)); diff != "" {
		t.Errorf("after move_to (-want +got):\n%s", diff)
	}
	s.do(t, "DELETE", "/v1/boards/"+b.ID+"/groups/"+week+"?move_to="+b.Groups[1].ID, tok, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/boards/"+b.ID+"/columns/"+col.ID, tok, nil).want(t, http.StatusNoContent)
	var got itemView
	s.do(t, "GET", base+"/"+a.ID, tok, nil).want(t, http.StatusOK).decode(t, &got)
	if _, ok := got.Values[col.ID]; ok {
		t.Errorf("a deleted column's value is shown: %v", got.Values)
	}
	s.do(t, "DELETE", base+"/"+a.ID, tok, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", base+"/"+a.ID, tok, nil).want(t, http.StatusNotFound)
	if it := s.newItem(t, tok, b.ID, `{"title": "after a delete"}`); it.Key != "LP-4" {
		t.Errorf("next key %s", it.Key)
	}
	s.do(t, "DELETE", "/v1/boards/"+b.ID, tok, nil).want(t, http.StatusNoContent)
	s.do(t, "GET", "/v1/boards/"+b.ID, tok, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", base+"/"+bi.ID, tok, nil).want(t, http.StatusNotFound)
}

// TestBoardsAccess: reading needs boards.read, changing boards.write; a key
// limited to other apps gets 403; another tenant's parts are 404 even
// under the caller's own board.
func TestBoardsAccess(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_a"}`).Token
	viewer := s.newKey(t, admin, `{"name": "v", "roles": ["viewer"]}`).Secret
	docsOnly := s.newKey(t, admin, `{"name": "d", "roles": ["admin"], "apps": ["docs"]}`).Secret
	b := s.newBoard(t, admin, `{"name": "Ops", "key": "OPS"}`)
	s.do(t, "GET", "/v1/boards/"+b.ID, viewer, nil).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/boards/"+b.ID+"/items", viewer, `{"title": "x"}`).want(t, http.StatusForbidden)
	s.do(t, "GET", "/v1/boards", docsOnly, nil).want(t, http.StatusForbidden)

	other := s.devLogin(t, `{"tenant_id": "ten_b"}`).Token
	ob := s.newBoard(t, other, `{"name": "Ops", "key": "OPS", "template": "agile"}`)
	oi := s.newItem(t, other, ob.ID, `{"title": "theirs"}`)
	mine := s.newItem(t, admin, b.ID, `{"title": "mine"}`)
	if mine.Key != "OPS-1" || oi.Key != "OPS-1" {
		t.Errorf("keys %s %s: each board counts from 1", mine.Key, oi.Key)
	}
	s.do(t, "POST", "/v1/boards", admin, `{"name": "x", "workspace_id": "ten_b"}`).want(t, http.StatusUnprocessableEntity)
	for _, test := range []struct{ method, path, body string }{
		{"GET", "/v1/boards/" + b.ID + "/items/" + oi.ID, ""},
		{"GET", "/v1/boards/" + b.ID + "/items/OPS-2", ""},
		{"PATCH", "/v1/boards/" + b.ID + "/items/" + oi.ID, `{"title": "mine now"}`},
		{"DELETE", "/v1/boards/" + b.ID + "/items/" + oi.ID, ""},
		{"GET", "/v1/boards/" + b.ID + "/statuses/" + ob.Statuses[0].ID, ""},
		{"PATCH", "/v1/boards/" + b.ID + "/statuses/" + ob.Statuses[0].ID, `{"name": "x"}`},
		{"DELETE", "/v1/boards/" + b.ID + "/statuses/" + ob.Statuses[0].ID, ""},
		{"GET", "/v1/boards/" + b.ID + "/columns/" + ob.Columns[0].ID, ""},
		{"PATCH", "/v1/boards/" + b.ID + "/columns/" + ob.Columns[0].ID, `{"name": "x"}`},
		{"DELETE", "/v1/boards/" + b.ID + "/columns/" + ob.Columns[0].ID, ""},
		{"GET", "/v1/boards/" + b.ID + "/groups/grp_x", ""},
	} {
		var body any
		if test.body != "" {
			body = test.body
		}
		s.do(t, test.method, test.path, admin, body).want(t, http.StatusNotFound)
	}
	// An item of another status cannot anchor a move.
	r := s.do(t, "PATCH", "/v1/boards/"+b.ID+"/items/"+mine.ID, admin, fmt.Sprintf(`{"after_id": %q}`, oi.ID)).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.after_id:value_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var theirs itemView
	s.do(t, "GET", "/v1/boards/"+ob.ID+"/items/"+oi.ID, other, nil).want(t, http.StatusOK).decode(t, &theirs)
	if theirs.Title != "theirs" {
		t.Errorf("their item changed: %+v", theirs)
	}
}

// TestBoardsProcessWaitsForResolution: a process opens a ticket with
// board.item.create and its wait step ends when the ticket is resolved
// (boards.item.completed for that item).
func TestBoardsProcessWaitsForResolution(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	b := s.newBoard(t, admin, `{"name": "Support", "key": "SUP", "template": "service"}`)
	proc := s.createProc(t, admin, `{
	  "name": "Ticket until resolved", "function": "operations", "trigger": {"type": "manual"},
	  "steps": [
	    {"key": "open", "type": "execute", "capability": "board.item.create",
	     "config": {"args": {"board_id": "SUP", "title": "${subject.label}", "values": {"Priority": "High", "Requester": "ana@example.com"}}}},
	    {"key": "resolved", "type": "wait", "config": {"event": "boards.item.completed", "filter": {"item_id": "${steps.open.item_id}"}}}
	  ]}`)
	var run runView
	s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", admin, `{"subject": {"type": "ticket", "label": "VPN is down"}}`).
		want(t, http.StatusCreated).decode(t, &run)
	run = s.awaitRun(t, admin, run.ID, "waiting", runStatusIs("waiting"))
	if st := run.step(t, "open"); st.ApprovalID != nil {
		s.do(t, "POST", "/v1/approvals/"+*st.ApprovalID+"/approve", admin, `{}`).want(t, http.StatusOK)
	}
	run = s.awaitRun(t, admin, run.ID, "waiting on resolution", func(r runView) bool {
		return r.Status == "waiting" && r.step(t, "resolved").Status == "waiting"
	})
	out, _ := run.step(t, "open").Output.(map[string]any)
	if out["key"] != "SUP-1" {
		t.Fatalf("open step output %v", out)
	}
	var it itemView
	s.do(t, "GET", "/v1/boards/"+b.ID+"/items/SUP-1", admin, nil).want(t, http.StatusOK).decode(t, &it)
	if it.Title != "VPN is down" || it.Values[b.Columns[0].ID] != "High" || it.Values[b.Columns[2].ID] == nil {
		t.Errorf("ticket %+v", it)
	}
	// Another ticket resolved does not end the wait; this one does.
	other := s.newItem(t, admin, b.ID, `{"title": "other"}`)
	resolved := b.Statuses[3].ID
	s.do(t, "PATCH", "/v1/boards/"+b.ID+"/items/"+other.ID, admin, fmt.Sprintf(`{"status_id": %q}`, resolved)).want(t, http.StatusOK)
	s.do(t, "PATCH", "/v1/boards/"+b.ID+"/items/"+it.ID, admin, fmt.Sprintf(`{"status_id": %q}`, b.Statuses[1].ID)).want(t, http.StatusOK)
	if r := s.getRun(t, admin, run.ID); r.Status != "waiting" {
		t.Fatalf("run %s before the ticket is resolved", r.Status)
	}
	s.do(t, "PATCH", "/v1/boards/"+b.ID+"/items/"+it.ID, admin, fmt.Sprintf(`{"status_id": %q}`, resolved)).want(t, http.StatusOK)
	run = s.awaitRun(t, admin, run.ID, "completed", runStatusIs("completed"))
	data, _ := run.step(t, "resolved").Output.(map[string]any)
	ev, _ := data["data"].(map[string]any)
	if ev["key"] != "SUP-1" || ev["status_category"] != "completed" {
		t.Errorf("wait output %v", data)
	}
}

// TestBoardsRouteTable: every boards route belongs to the boards app and
// needs boards.read to read, boards.write to change.
func TestBoardsRouteTable(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{})
	n := 0
	for _, r := range s.h.Routes() {
		if !strings.HasPrefix(r.Path, "/v1/boards") {
			continue
		}
		n++
		want := "boards.write"
		if r.Method == "GET" {
			want = "boards.read"
		}
		if r.App != "boards" || r.Perm != want || r.Public {
			t.Errorf("%s %s: app %q, permission %q, public %v", r.Method, r.Path, r.App, r.Perm, r.Public)
		}
	}
	if n != 25 {
		t.Errorf("%d boards routes, want 25", n)
	}
}
