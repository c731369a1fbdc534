package boards

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// ProviderID is the id of the boards app's capability provider.
const ProviderID = "builtin.boards"

// Provider returns the capability provider of the boards app: it fills
// board.item.create, board.item.move and board.item.update for the tenant
// of each call. Boards may be named by id or key, statuses and groups by
// id or name, columns in values by id or name (names case-insensitive),
// items by id or key ("OPS-12"), so a process can be written before the
// board's ids are known.
func (s *Service) Provider() capability.Provider { return provider{s} }

type provider struct{ s *Service }

var _ capability.Provider = provider{}

func capabilities() []string {
	return []string{capability.BoardItemCreate, capability.BoardItemMove, capability.BoardItemUpdate}
}

// App describes the boards app: its API prefix, the events it emits and
// the capabilities it fills (the "boards" entry of capability.BuiltinApps).
func App() capability.App {
	return capability.App{
		ID: "boards", Name: "Boards", API: capability.API{Prefix: "/v1/boards"},
		Events: capability.Events{Emits: Events(), Consumes: []string{}}, Capabilities: capabilities(),
	}
}

// Info describes the provider.
func (provider) Info() capability.Info {
	return capability.Info{ID: ProviderID, Name: "Boards", Kind: capability.KindBuiltin, Capabilities: capabilities()}
}

// Call performs one capability call in call.Tenant.
func (p provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	s := p.s
	if strings.TrimSpace(call.Tenant) == "" {
		return nil, errors.New("boards: a capability call without a tenant")
	}
	decode := func(v any) error {
		if err := json.Unmarshal(call.Args, v); err != nil {
			return errs.Invalidf([]any{"args"}, "type_error", "arguments do not decode: %v", err)
		}
		return nil
	}
	var out any
	switch call.Capability {
	case capability.BoardItemCreate:
		var a capability.BoardItemCreateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		r, err := s.boardRef(ctx, call.Tenant, a.BoardID)
		if err != nil {
			return nil, err
		}
		in := ItemIn{Title: a.Title, AssigneeID: optional(a.AssigneeID), Values: valuesByID(r, a.Values)}
		if a.StatusID != "" {
			in.StatusID = ptr(statusRef(r, a.StatusID))
		}
		if a.GroupID != "" {
			in.GroupID = ptr(groupRef(r, a.GroupID))
		}
		it, err := s.createItem(ctx, call.Tenant, r.ID, in, call.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		out = capability.BoardItemCreateResult{ItemID: it.ID, Key: it.Key}
	case capability.BoardItemMove:
		var a capability.BoardItemMoveArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		r, it, err := s.itemRef(ctx, call.Tenant, a.ItemID)
		if err != nil {
			return nil, err
		}
		p := ItemPatch{StatusID: ptr(statusRef(r, a.StatusID)), Placement: Placement{Index: a.Position}}
		if a.GroupID != "" {
			p.GroupID = ptr(groupRef(r, a.GroupID))
		}
		moved, err := s.UpdateItem(ctx, call.Tenant, r.ID, it.ID, p)
		if err != nil {
			return nil, err
		}
		out = capability.BoardItemMoveResult{ItemID: moved.ID, StatusID: moved.StatusID}
	case capability.BoardItemUpdate:
		var a capability.BoardItemUpdateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		r, it, err := s.itemRef(ctx, call.Tenant, a.ItemID)
		if err != nil {
			return nil, err
		}
		p := ItemPatch{Description: a.Description, AssigneeID: a.AssigneeID, Values: valuesByID(r, a.Values)}
		if a.Title != "" {
			p.Title = &a.Title
		}
		changed, err := s.UpdateItem(ctx, call.Tenant, r.ID, it.ID, p)
		if err != nil {
			return nil, err
		}
		out = capability.BoardItemUpdateResult{ItemID: changed.ID, Key: changed.Key, StatusID: changed.StatusID}
	default:
		return nil, errs.Invalidf([]any{"capability"}, "value_error", "the boards provider does not fill %s", call.Capability)
	}
	b, err := json.Marshal(out)
	return b, errors.Wrap(err, "encode result")
}

// boardRef loads a board by id or key.
func (s *Service) boardRef(ctx context.Context, tenant, ref string) (*record, error) {
	var r *record
	err := s.st.View(ctx, func(rd store.Reader) error {
		var err error
		if strings.HasPrefix(ref, "brd_") {
			r, err = boardsC.Get(rd, tenant, ref)
		} else {
			r, err = boardsC.Lookup(rd, tenant, "key", strings.ToUpper(strings.TrimSpace(ref)))
		}
		return err
	})
	return r, err
}

// itemRef loads an item by id or key ("OPS-12") with its board.
func (s *Service) itemRef(ctx context.Context, tenant, ref string) (*record, *Item, error) {
	var r *record
	var it *Item
	err := s.st.View(ctx, func(rd store.Reader) error {
		if strings.HasPrefix(ref, "itm_") {
			var err error
			if it, err = itemsC.Get(rd, tenant, ref); err != nil {
				return err
			}
			r, err = boardsC.Get(rd, tenant, it.BoardID)
			if errors.Is(err, errs.NotFound) {
				return errs.NotFoundf("item not found")
			}
			return err
		}
		k, n, ok := strings.Cut(strings.ToUpper(strings.TrimSpace(ref)), "-")
		num, perr := strconv.ParseInt(n, 10, 64)
		if !ok || perr != nil {
			return errs.NotFoundf("item not found")
		}
		var err error
		if r, err = boardsC.Lookup(rd, tenant, "key", k); err != nil {
			if errors.Is(err, errs.NotFound) {
				return errs.NotFoundf("item not found")
			}
			return err
		}
		it, err = itemsC.Lookup(rd, tenant, "num", r.ID, num)
		return err
	})
	return r, it, err
}

// statusRef returns the id of the status ref names (by id, else by name);
// an unknown ref is returned as is, for validation to refuse.
func statusRef(r *record, ref string) string {
	for _, st := range r.Statuses {
		if st.ID == ref {
			return ref
		}
	}
	for _, st := range r.Statuses {
		if strings.EqualFold(st.Name, strings.TrimSpace(ref)) {
			return st.ID
		}
	}
	return ref
}

func groupRef(r *record, ref string) string {
	for _, g := range r.Groups {
		if g.ID == ref {
			return ref
		}
	}
	for _, g := range r.Groups {
		if strings.EqualFold(g.Name, strings.TrimSpace(ref)) {
			return g.ID
		}
	}
	return ref
}

// valuesByID maps the keys of values naming a column by name to its id.
func valuesByID(r *record, values map[string]any) map[string]any {
	if values == nil {
		return nil
	}
	out := make(map[string]any, len(values))
	for k, v := range values {
		id := k
		if c, _ := r.column(k); c == nil {
			for _, col := range r.Columns {
				if strings.EqualFold(col.Name, strings.TrimSpace(k)) {
					id = col.ID
					break
				}
			}
		}
		out[id] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
