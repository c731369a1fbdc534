package boards

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestTemplates checks every template's starting shape against its golden
// file (ids replaced by their kind and place).
func TestTemplates(t *testing.T) {
	t.Parallel()
	for _, tpl := range Templates() {
		t.Run(tpl, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			d := b.board(t, BoardIn{Name: "Team " + tpl, Template: tpl})
			raw, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out := string(raw)
			out = strings.ReplaceAll(out, d.ID, "<board>")
			for i, s := range d.Statuses {
				out = strings.ReplaceAll(out, s.ID, fmt.Sprintf("<status %d>", i))
			}
			for i, c := range d.Columns {
				out = strings.ReplaceAll(out, c.ID, fmt.Sprintf("<column %d>", i))
			}
			for i, g := range d.Groups {
				out = strings.ReplaceAll(out, g.ID, fmt.Sprintf("<group %d>", i))
			}
			golden(t, "template_"+tpl+".golden", []byte(out+"\n"))
		})
	}
}

func violations(err error) []string {
	var out []string
	for _, v := range errs.Violations(err) {
		out = append(out, v.Where()+" "+v.Type)
	}
	return out
}

func TestBoardKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, test := range []struct {
		name, key string
		given     *string
		want      string
	}{
		{name: "Service desk", want: "SD"},
		{name: "Service desk", want: "SD2"},
		{name: "Marketing", want: "MARK"},
		{name: "x", want: "BOARD"},
		{name: "Ops", given: sp("OPS"), want: "OPS"},
		{name: "Ops", want: "OPS2"},
		{name: "9 lives of cats", want: "LOC"},
	} {
		d := b.board(t, BoardIn{Name: test.name, Key: test.given})
		if *d.Key != test.want {
			t.Errorf("%s: key %s, want %s", test.name, *d.Key, test.want)
		}
	}
	_, err := b.svc.CreateBoard(b.ctx, b.tenant, BoardIn{Name: "Again", Key: sp("OPS")})
	if !errors.Is(err, errs.Conflict) {
		t.Errorf("a taken key: %v, want a conflict", err)
	}
	_, err = b.svc.CreateBoard(b.ctx, b.tenant, BoardIn{Name: "Other", WorkspaceID: sp("ten_b")})
	if diff := cmp.Diff([]string{"workspace_id value_error"}, violations(err)); diff != "" {
		t.Errorf("another workspace (-want +got):\n%s", diff)
	}
	d, err := b.svc.CreateBoard(b.ctx, b.tenant, BoardIn{Name: "Mine", WorkspaceID: sp(b.tenant)})
	if err != nil || d.WorkspaceID != b.tenant {
		t.Errorf("own workspace: %v, %+v", err, d)
	}
}

func TestBoardBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, test := range []struct {
		name string
		in   BoardIn
		want []string
	}{
		{"name of 160", BoardIn{Name: strings.Repeat("n", 160)}, nil},
		{"name of 161", BoardIn{Name: strings.Repeat("n", 161)}, []string{"name string_too_long"}},
		{"blank name", BoardIn{Name: "  "}, []string{"name string_too_short"}},
		{"key of 10", BoardIn{Name: "a", Key: sp("ABCDEFGHIJ")}, nil},
		{"key of 11", BoardIn{Name: "a", Key: sp("ABCDEFGHIJK")}, []string{"key string_pattern_mismatch"}},
		{"key of 1", BoardIn{Name: "a", Key: sp("A")}, []string{"key string_pattern_mismatch"}},
		{"key lower case", BoardIn{Name: "a", Key: sp("Ab")}, []string{"key string_pattern_mismatch"}},
		{"template", BoardIn{Name: "a", Template: "kanban"}, []string{"template enum"}},
		{"all at once", BoardIn{Name: "", Key: sp("1A"), Template: "x"},
			[]string{"name string_too_short", "key string_pattern_mismatch", "template enum"}},
	} {
		_, err := b.svc.CreateBoard(b.ctx, b.tenant, test.in)
		if diff := cmp.Diff(test.want, violations(err)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.name, diff)
		}
	}
}

// TestConcurrentKeys creates 50 items at once: they get keys 1..50. Half
// go through a second service on the same store, as a second process
// would, so creations also meet in the store's conflict detection.
func TestConcurrentKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Ops", Key: sp("OPS")})
	svcs := []*Service{b.svc, New(Config{Store: b.st, Clock: b.clock, Events: b.sink})}
	var wg sync.WaitGroup
	keys := make([]string, 50)
	errsOut := make([]error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it, err := svcs[i%2].CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: fmt.Sprint("item ", i)})
			errsOut[i] = err
			if err == nil {
				keys[i] = it.Key
			}
		}()
	}
	testwait.Wait(t, &wg, "the concurrent changes returned")
	for i, err := range errsOut {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	var want []string
	for n := 1; n <= 50; n++ {
		want = append(want, fmt.Sprintf("OPS-%d", n))
	}
	slices.SortFunc(keys, func(a, b string) int { return len(a)*1000 + strings.Compare(a, b) - len(b)*1000 })
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	// Every item is in the first status, and the status counts them.
	st, err := b.svc.GetStatus(b.ctx, b.tenant, d.ID, d.Statuses[0].ID)
	if err != nil || st.ItemCount != 50 {
		t.Errorf("status count %d, %v", st.ItemCount, err)
	}
	// A deleted item's key is not given again.
	last, _ := b.svc.GetItem(b.ctx, b.tenant, d.ID, "OPS-50")
	if err := b.svc.DeleteItem(b.ctx, b.tenant, d.ID, last.ID); err != nil {
		t.Fatal(err)
	}
	if it := b.item(t, d.ID, ItemIn{Title: "after"}); it.Key != "OPS-51" {
		t.Errorf("after a delete the next key is %s, want OPS-51", it.Key)
	}
}

func TestValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Typed"})
	col := func(name, typ string, settings map[string]any) string {
		c, err := b.svc.CreateColumn(b.ctx, b.tenant, d.ID, ColumnIn{Name: name, Type: typ, Settings: settings})
		if err != nil {
			t.Fatalf("column %s: %v", name, err)
		}
		return c.ID
	}
	ids := map[string]string{
		"text":     col("Text", TypeText, map[string]any{"max_length": 5}),
		"number":   col("Number", TypeNumber, map[string]any{"min": 0, "max": 10}),
		"date":     col("Date", TypeDate, nil),
		"person":   col("Person", TypePerson, nil),
		"status":   col("Health", TypeStatus, map[string]any{"labels": []any{map[string]any{"name": "Good", "color": "#00FF00"}}}),
		"dropdown": col("Size", TypeDropdown, map[string]any{"options": []any{"S", "M"}}),
		"multi":    col("Tags", TypeDropdown, map[string]any{"options": []any{"a", "b"}, "multiple": true}),
		"checkbox": col("Done", TypeCheckbox, nil),
		"link":     col("Link", TypeLink, nil),
	}
	for _, test := range []struct {
		col      string
		value    any
		want     any    // stored value when accepted
		wantType string // violation type when refused
	}{
		{"text", "abcde", "abcde", ""},
		{"text", "abcdef", nil, "string_too_long"},
		{"text", 5, nil, "type_error"},
		{"number", 10.0, 10.0, ""},
		{"number", 0.0, 0.0, ""},
		{"number", 10.5, nil, "less_than_equal"},
		{"number", -0.1, nil, "greater_than_equal"},
		{"number", "3", nil, "type_error"},
		{"date", "2025-06-30", "2025-06-30", ""},
		{"date", "2025-06-30T10:00:00+02:00", "2025-06-30T08:00:00Z", ""},
		{"date", "2025-02-30", nil, "value_error"},
		{"date", true, nil, "type_error"},
		{"person", "usr_1", "usr_1", ""},
		{"person", " ", nil, "value_error"},
		{"person", strings.Repeat("p", 201), nil, "value_error"},
		{"status", "Good", "Good", ""},
		{"status", "Bad", nil, "enum"},
		{"dropdown", "M", "M", ""},
		{"dropdown", "L", nil, "enum"},
		{"dropdown", []any{"M"}, nil, "type_error"},
		{"multi", []any{"a", "b"}, []any{"a", "b"}, ""},
		{"multi", []any{"a", "a"}, nil, "value_error"},
		{"multi", []any{"c"}, nil, "enum"},
		{"multi", "a", nil, "type_error"},
		{"checkbox", true, true, ""},
		{"checkbox", "yes", nil, "type_error"},
		{"link", "https://example.com/x", "https://example.com/x", ""},
		{"link", "ftp://example.com", nil, "value_error"},
		{"link", "https://" + strings.Repeat("a", 2000), nil, "string_too_long"},
	} {
		name := fmt.Sprintf("%s %v", test.col, test.value)
		id := ids[test.col]
		it, err := b.svc.CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: "t", Values: map[string]any{id: test.value}})
		if test.wantType == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			got, _ := json.Marshal(it.Values[id])
			want, _ := json.Marshal(test.want)
			if string(got) != string(want) {
				t.Errorf("%s: stored %s, want %s", name, got, want)
			}
			continue
		}
		if diff := cmp.Diff([]string{"values." + id + " " + test.wantType}, violations(err)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	_, err := b.svc.CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: "t", Values: map[string]any{"bcl_nope": 1}})
	if diff := cmp.Diff([]string{"values.bcl_nope value_error"}, violations(err)); diff != "" {
		t.Errorf("unknown column (-want +got):\n%s", diff)
	}
}

func TestColumnSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Typed"})
	for _, test := range []struct {
		typ      string
		settings map[string]any
		want     []string
	}{
		{TypeText, map[string]any{"max_length": 5000}, nil},
		{TypeText, map[string]any{"max_length": 5001}, []string{"settings.max_length value_error"}},
		{TypeText, map[string]any{"options": []any{"a"}}, []string{"settings.options extra_forbidden"}},
		{TypeNumber, map[string]any{"min": 5, "max": 1}, []string{"settings.min value_error"}},
		{TypeNumber, map[string]any{"unit": 3}, []string{"settings.unit type_error"}},
		{TypeDate, map[string]any{"sla_hours": 8760}, nil},
		{TypeDate, map[string]any{"sla_hours": 0}, []string{"settings.sla_hours value_error"}},
		{TypeDropdown, nil, []string{"settings.options missing"}},
		{TypeDropdown, map[string]any{"options": []any{"a", "a"}}, []string{"settings.options.1 value_error"}},
		{TypeDropdown, map[string]any{"options": []any{}}, []string{"settings.options too_long"}},
		{TypeStatus, map[string]any{"labels": []any{map[string]any{"name": "x", "color": "red"}}}, []string{"settings.labels.0.color string_pattern_mismatch"}},
		{TypeCheckbox, map[string]any{"x": 1}, []string{"settings.x extra_forbidden"}},
		{TypeLink, nil, nil},
		{TypePerson, nil, nil},
	} {
		_, err := b.svc.CreateColumn(b.ctx, b.tenant, d.ID, ColumnIn{Name: "c", Type: test.typ, Settings: test.settings})
		if diff := cmp.Diff(test.want, violations(err)); diff != "" {
			t.Errorf("%s %v (-want +got):\n%s", test.typ, test.settings, diff)
		}
	}
}

// TestDeletesRefusedWhileInUse: a status or group holding items is a
// conflict to delete unless its items move elsewhere; the last status
// cannot go.
func TestDeletesRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Plan", Template: TemplateProject})
	todo, doing, done := d.Statuses[0].ID, d.Statuses[1].ID, d.Statuses[2].ID
	week, later := d.Groups[0].ID, d.Groups[1].ID
	var made []*Item
	for i := range 7 { // more than a batch (3)
		made = append(made, b.item(t, d.ID, ItemIn{Title: fmt.Sprint("task ", i), StatusID: &todo, GroupID: &week}))
	}
	if err := b.svc.DeleteStatus(b.ctx, b.tenant, d.ID, todo, ""); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete a status with items: %v, want a conflict", err)
	}
	if err := b.svc.DeleteGroup(b.ctx, b.tenant, d.ID, week, ""); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete a group with items: %v, want a conflict", err)
	}
	err := b.svc.DeleteStatus(b.ctx, b.tenant, d.ID, todo, "bst_nope")
	if diff := cmp.Diff([]string{"query.move_to value_error"}, violations(err)); diff != "" {
		t.Errorf("move_to elsewhere (-want +got):\n%s", diff)
	}
	// An empty status goes at once.
	if err := b.svc.DeleteStatus(b.ctx, b.tenant, d.ID, doing, ""); err != nil {
		t.Fatalf("delete an empty status: %v", err)
	}
	// With move_to the items move, in order, to the end of the other.
	b.item(t, d.ID, ItemIn{Title: "already done", StatusID: &done})
	if err := b.svc.DeleteStatus(b.ctx, b.tenant, d.ID, todo, done); err != nil {
		t.Fatalf("delete with move_to: %v", err)
	}
	items, _, err := b.svc.ListItems(b.ctx, b.tenant, d.ID, ItemFilter{StatusID: done}, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PLAN-8"}
	for _, it := range made {
		want = append(want, it.Key)
	}
	if diff := cmp.Diff(want, keysOf(items)); diff != "" {
		t.Errorf("items in done (-want +got):\n%s", diff)
	}
	for _, it := range items {
		if it.CompletedAt == nil {
			t.Errorf("%s moved into done has no completed_at", it.Key)
		}
	}
	if err := b.svc.DeleteGroup(b.ctx, b.tenant, d.ID, week, later); err != nil {
		t.Fatalf("delete a group with move_to: %v", err)
	}
	g, err := b.svc.GetGroup(b.ctx, b.tenant, d.ID, later)
	if err != nil || g.ItemCount != 7 {
		t.Errorf("later holds %d items, %v", g.ItemCount, err)
	}
	if err := b.svc.DeleteStatus(b.ctx, b.tenant, d.ID, done, ""); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete the last status: %v, want a conflict", err)
	}
	// Every moved item was announced with the move that made it.
	moved := 0
	for _, e := range b.sink.events(t) {
		if e.Name == EventItemMoved {
			moved++
		}
	}
	if moved != 14 {
		t.Errorf("%d moved events, want 14", moved)
	}
}

// snapshot returns every key and value of the tenant's items and lists.
func (b *bundle) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := b.st.View(b.ctx, func(rd store.Reader) error {
		return rd.Scan(store.ScanOptions{Prefix: store.Key(b.tenant)}, func(k, v []byte) error {
			out[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changedRecords returns the item records that differ between two
// snapshots.
func changedRecords(before, after map[string]string) []string {
	var out []string
	prefix := string(store.Key("ten_a", "r", "bitem"))
	for k, v := range after {
		if strings.HasPrefix(k, prefix) && before[k] != v {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok && strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// TestMoveTouchesOneRecord: placing an item anywhere in its status, or in
// another, rewrites that item alone.
func TestMoveTouchesOneRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Ops", Key: sp("OPS")})
	todo, doing := d.Statuses[0].ID, d.Statuses[1].ID
	var items []*Item
	for i := range 10 {
		items = append(items, b.item(t, d.ID, ItemIn{Title: fmt.Sprint("t", i)}))
	}
	order := func(status string) []string {
		got, _, err := b.svc.ListItems(b.ctx, b.tenant, d.ID, ItemFilter{StatusID: status}, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		return keysOf(got)
	}
	for _, test := range []struct {
		name string
		item int
		p    ItemPatch
		want []string // the order of todo after the move
	}{
		{"to the top", 5, ItemPatch{Placement: Placement{Index: ip(0)}},
			[]string{"OPS-6", "OPS-1", "OPS-2", "OPS-3", "OPS-4", "OPS-5", "OPS-7", "OPS-8", "OPS-9", "OPS-10"}},
		{"before another", 9, ItemPatch{Placement: Placement{BeforeID: &items[1].ID}},
			[]string{"OPS-6", "OPS-1", "OPS-10", "OPS-2", "OPS-3", "OPS-4", "OPS-5", "OPS-7", "OPS-8", "OPS-9"}},
		{"after another", 0, ItemPatch{Placement: Placement{AfterID: &items[8].ID}},
			[]string{"OPS-6", "OPS-10", "OPS-2", "OPS-3", "OPS-4", "OPS-5", "OPS-7", "OPS-8", "OPS-9", "OPS-1"}},
		{"to index 7 (walked from the end)", 1, ItemPatch{Placement: Placement{Index: ip(7)}},
			[]string{"OPS-6", "OPS-10", "OPS-3", "OPS-4", "OPS-5", "OPS-7", "OPS-8", "OPS-2", "OPS-9", "OPS-1"}},
		{"to index 2", 8, ItemPatch{Placement: Placement{Index: ip(2)}},
			[]string{"OPS-6", "OPS-10", "OPS-9", "OPS-3", "OPS-4", "OPS-5", "OPS-7", "OPS-8", "OPS-2", "OPS-1"}},
		{"to the end", 5, ItemPatch{Placement: Placement{Index: ip(99)}},
			[]string{"OPS-10", "OPS-9", "OPS-3", "OPS-4", "OPS-5", "OPS-7", "OPS-8", "OPS-2", "OPS-1", "OPS-6"}},
		{"to another status", 2, ItemPatch{StatusID: &doing},
			[]string{"OPS-10", "OPS-9", "OPS-4", "OPS-5", "OPS-7", "OPS-8", "OPS-2", "OPS-1", "OPS-6"}},
	} {
		before := b.snapshot(t)
		if _, err := b.svc.UpdateItem(b.ctx, b.tenant, d.ID, items[test.item].ID, test.p); err != nil {
			t.Fatalf("%s: %v", test.name, err)
		}
		if diff := cmp.Diff(test.want, order(todo)); diff != "" {
			t.Errorf("%s: order (-want +got):\n%s", test.name, diff)
		}
		if got := changedRecords(before, b.snapshot(t)); len(got) != 1 {
			t.Errorf("%s: %d item records changed, want 1", test.name, len(got))
		}
	}
	if diff := cmp.Diff([]string{"OPS-3"}, order(doing)); diff != "" {
		t.Errorf("doing (-want +got):\n%s", diff)
	}
	// Every violation of a patch is reported together.
	_, err := b.svc.UpdateItem(b.ctx, b.tenant, d.ID, items[0].ID, ItemPatch{Title: sp(""), StatusID: sp("bst_x"), GroupID: sp("bgr_x"),
		Values: map[string]any{"bcl_x": 1}})
	if diff := cmp.Diff([]string{"title string_too_short", "status_id value_error", "group_id value_error", "values.bcl_x value_error"},
		violations(err)); diff != "" {
		t.Errorf("bad patch (-want +got):\n%s", diff)
	}
	// An anchor in another status is refused, naming the field.
	_, err = b.svc.UpdateItem(b.ctx, b.tenant, d.ID, items[0].ID, ItemPatch{Placement: Placement{AfterID: &items[2].ID}})
	if diff := cmp.Diff([]string{"after_id value_error"}, violations(err)); diff != "" {
		t.Errorf("anchor elsewhere (-want +got):\n%s", diff)
	}
}

// TestCompletion: completed_at is set on entering a completed status and
// cleared on leaving one; the events say what happened.
func TestCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Desk", Key: sp("SUP"), Template: TemplateService})
	waiting, resolved, closed := d.Statuses[0].ID, d.Statuses[3].ID, d.Statuses[4].ID
	it := b.item(t, d.ID, ItemIn{Title: "Printer on fire", Values: map[string]any{d.Columns[3].ID: "2025-06-09"}})
	// Response due comes from its column's sla_hours (4); resolution due
	// was given.
	want := map[string]any{d.Columns[2].ID: "2025-06-02T13:00:00Z", d.Columns[3].ID: "2025-06-09"}
	if diff := cmp.Diff(want, it.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	for _, test := range []struct {
		to            string
		wantCompleted bool
	}{{resolved, true}, {closed, true}, {waiting, false}} {
		got, err := b.svc.UpdateItem(b.ctx, b.tenant, d.ID, it.ID, ItemPatch{StatusID: &test.to})
		if err != nil {
			t.Fatal(err)
		}
		if (got.CompletedAt != nil) != test.wantCompleted {
			t.Errorf("in %s: completed_at %v", test.to, got.CompletedAt)
		}
	}
	var names []string
	for _, e := range b.sink.events(t) {
		names = append(names, e.Name)
	}
	wantNames := []string{EventItemCreated, EventItemMoved, EventItemCompleted, EventItemMoved, EventItemMoved}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestLargeItemsMoveInSmallerBatches: when a batch of large items makes a
// transaction too large, deleting their status (or their board) goes on in
// smaller batches.
func TestLargeItemsMoveInSmallerBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := New(Config{Store: b.st, Clock: b.clock, Events: b.sink}) // batches of 500
	d := b.board(t, BoardIn{Name: "Big"})
	big := strings.Repeat("long description ", 1100) // about 18 KiB
	for range 100 {
		if _, err := svc.CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: "t", Description: &big}); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.DeleteStatus(b.ctx, b.tenant, d.ID, d.Statuses[0].ID, d.Statuses[1].ID); err != nil {
		t.Fatalf("delete with move_to: %v", err)
	}
	st, err := svc.GetStatus(b.ctx, b.tenant, d.ID, d.Statuses[1].ID)
	if err != nil || st.ItemCount != 100 {
		t.Fatalf("moved %d, %v", st.ItemCount, err)
	}
	if err := svc.DeleteBoard(b.ctx, b.tenant, d.ID); err != nil {
		t.Fatalf("delete the board: %v", err)
	}
	left := 0
	for k := range b.snapshot(t) {
		if strings.Contains(k, "bitem") || strings.Contains(k, spacePos) || strings.Contains(k, spaceCount) {
			left++
		}
	}
	if left != 0 {
		t.Errorf("%d keys of the board's items are left", left)
	}
}

// TestManyAtOneSpot: items placed again and again at one spot (right after
// one item) keep short keys, since a run of long keys is spaced out again,
// and keep their order.
func TestManyAtOneSpot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Pinned", Key: sp("PIN")})
	x := b.item(t, d.ID, ItemIn{Title: "x"})
	y := b.item(t, d.ID, ItemIn{Title: "y"})
	want := []string{x.Key}
	var tail []string
	for i := range 900 {
		it := b.item(t, d.ID, ItemIn{Title: fmt.Sprint("n", i), Placement: Placement{AfterID: &x.ID}})
		tail = append([]string{it.Key}, tail...)
		if len(it.Position) > respaceAbove {
			t.Fatalf("item %d got a key of %d characters: %s", i, len(it.Position), it.Position)
		}
	}
	want = append(append(want, tail...), y.Key)
	var got []*Item
	p := store.Page{Limit: 200}
	for {
		page, next, err := b.svc.ListItems(b.ctx, b.tenant, d.ID, ItemFilter{StatusID: d.Statuses[0].ID}, p)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	if diff := cmp.Diff(want, keysOf(got)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if !slices.IsSortedFunc(got, func(a, b *Item) int { return strings.Compare(a.Position, b.Position) }) {
		t.Error("positions out of order")
	}
}
