package boards

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestAppIsTheBuiltinEntry(t *testing.T) {
	t.Parallel()
	i := slices.IndexFunc(capability.BuiltinApps(), func(a capability.App) bool { return a.ID == "boards" })
	if diff := cmp.Diff(capability.BuiltinApps()[i], App()); diff != "" {
		t.Errorf("App() and capability.BuiltinApps disagree (-builtin +app):\n%s", diff)
	}
}

// TestProvider: board.item.create, .move and .update name boards, statuses,
// groups, columns and items by id or by name/key; a retried create makes
// one item.
func TestProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Support", Key: sp("SUP"), Template: TemplateService})
	p := b.svc.Provider()
	call := func(capID, args, idem string) (map[string]any, error) {
		raw, err := p.Call(b.ctx, capability.Call{Tenant: b.tenant, Capability: capID, Args: json.RawMessage(args), IdempotencyKey: idem})
		if err != nil {
			return nil, err
		}
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out, nil
	}
	create := `{"board_id": "sup", "title": "VPN down", "status_id": "in progress", "values": {"priority": "High"}}`
	first, err := call(capability.BoardItemCreate, create, "run_1/open/1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := call(capability.BoardItemCreate, create, "run_1/open/1")
	if err != nil || again["item_id"] != first["item_id"] || first["key"] != "SUP-1" {
		t.Errorf("retried create: %v then %v, %v", first, again, err)
	}
	it, err := b.svc.GetItem(b.ctx, b.tenant, d.ID, "SUP-1")
	if err != nil {
		t.Fatal(err)
	}
	if it.StatusID != d.Statuses[1].ID || it.Values[d.Columns[0].ID] != "High" {
		t.Errorf("created %+v", it)
	}
	out, err := call(capability.BoardItemMove, `{"item_id": "SUP-1", "status_id": "Resolved"}`, "")
	if err != nil || out["status_id"] != d.Statuses[3].ID {
		t.Errorf("move: %v, %v", out, err)
	}
	out, err = call(capability.BoardItemUpdate, `{"item_id": "`+it.ID+`", "title": "VPN down in Lisbon", "values": {"Requester": "ana@example.com"}}`, "")
	if err != nil || out["key"] != "SUP-1" {
		t.Errorf("update: %v, %v", out, err)
	}
	it, _ = b.svc.GetItem(b.ctx, b.tenant, d.ID, it.ID)
	if it.Title != "VPN down in Lisbon" || it.Values[d.Columns[1].ID] != "ana@example.com" || it.CompletedAt == nil {
		t.Errorf("updated %+v", it)
	}
	for _, test := range []struct {
		capID, args string
		kind        error
	}{
		{capability.BoardItemCreate, `{"board_id": "NOPE", "title": "x"}`, errs.NotFound},
		{capability.BoardItemCreate, `{"board_id": "SUP", "title": "x", "status_id": "Limbo"}`, errs.Invalid},
		{capability.BoardItemMove, `{"item_id": "SUP-99", "status_id": "Closed"}`, errs.NotFound},
		{capability.BoardItemMove, `{"item_id": "itm_nope", "status_id": "Closed"}`, errs.NotFound},
		{capability.BoardItemUpdate, `{"item_id": "SUP-1", "values": {"Priority": "Whenever"}}`, errs.Invalid},
	} {
		if _, err := call(test.capID, test.args, ""); !errors.Is(err, test.kind) {
			t.Errorf("%s %s: %v, want %v", test.capID, test.args, err, test.kind)
		}
	}
	// Another tenant cannot reach the board.
	_, err = p.Call(b.ctx, capability.Call{Tenant: "ten_b", Capability: capability.BoardItemMove, Args: json.RawMessage(`{"item_id": "` + it.ID + `", "status_id": "Closed"}`)})
	if !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant's move: %v", err)
	}
}

// TestPartBounds checks the bounds of parts and items just inside and just
// outside.
func TestPartBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.board(t, BoardIn{Name: "Bounds"})
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, test := range []struct {
		name string
		do   func() error
		want []string
	}{
		{"status name 80", func() error {
			_, err := b.svc.CreateStatus(b.ctx, b.tenant, d.ID, StatusIn{Name: long(80), Category: CategoryStarted})
			return err
		}, nil},
		{"status name 81, bad category and color", func() error {
			_, err := b.svc.CreateStatus(b.ctx, b.tenant, d.ID, StatusIn{Name: long(81), Category: "done", Color: sp("#12345")})
			return err
		}, []string{"name string_too_long", "category enum", "color string_pattern_mismatch"}},
		{"group name 81", func() error {
			_, err := b.svc.CreateGroup(b.ctx, b.tenant, d.ID, GroupIn{Name: long(81), Position: ip(-1)})
			return err
		}, []string{"name string_too_long", "position greater_than_equal"}},
		{"column type", func() error {
			_, err := b.svc.CreateColumn(b.ctx, b.tenant, d.ID, ColumnIn{Name: "c", Type: "formula"})
			return err
		}, []string{"type enum"}},
		{"title 300", func() error {
			_, err := b.svc.CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: long(300)})
			return err
		}, nil},
		{"title 301, two placements", func() error {
			_, err := b.svc.CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: long(301), Placement: Placement{Index: ip(0), AfterID: sp("itm_x")}})
			return err
		}, []string{"title string_too_long", "index value_error"}},
		{"description 20000", func() error {
			_, err := b.svc.CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: "t", Description: sp(long(20000))})
			return err
		}, nil},
		{"description 20001", func() error {
			_, err := b.svc.CreateItem(b.ctx, b.tenant, d.ID, ItemIn{Title: "t", Description: sp(long(20001))})
			return err
		}, []string{"description string_too_long"}},
		{"q 200", func() error {
			_, _, err := b.svc.ListItems(b.ctx, b.tenant, d.ID, ItemFilter{Q: long(200)}, storePage())
			return err
		}, nil},
		{"q 201", func() error {
			_, _, err := b.svc.ListItems(b.ctx, b.tenant, d.ID, ItemFilter{Q: long(201)}, storePage())
			return err
		}, []string{"query.q string_too_long"}},
	} {
		if diff := cmp.Diff(test.want, violations(test.do())); diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.name, diff)
		}
	}
	// 50 statuses at most.
	dd, _ := b.svc.GetBoard(b.ctx, b.tenant, d.ID)
	for n := len(dd.Statuses); n < MaxStatuses; n++ {
		if _, err := b.svc.CreateStatus(b.ctx, b.tenant, d.ID, StatusIn{Name: "s", Category: CategoryStarted}); err != nil {
			t.Fatalf("status %d: %v", n+1, err)
		}
	}
	if _, err := b.svc.CreateStatus(b.ctx, b.tenant, d.ID, StatusIn{Name: "s", Category: CategoryStarted}); !errors.Is(err, errs.Conflict) {
		t.Errorf("status 51: %v, want a conflict", err)
	}
}
