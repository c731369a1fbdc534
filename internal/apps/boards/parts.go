package boards

import (
	"context"
	"slices"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// place moves the element at from to position to (clamped to the end).
func place[T any](list []T, from, to int) []T {
	v := list[from]
	list = slices.Delete(list, from, from+1)
	if to > len(list) {
		to = len(list)
	}
	return slices.Insert(list, to, v)
}

func at(list int, pos *int) int {
	if pos == nil || *pos > list {
		return list
	}
	return *pos
}

// ---- statuses -------------------------------------------------------------

// ListStatuses returns a board's statuses in position order.
func (s *Service) ListStatuses(ctx context.Context, tenant, boardID string) ([]Status, error) {
	d, err := s.GetBoard(ctx, tenant, boardID)
	if err != nil {
		return nil, err
	}
	return d.Statuses, nil
}

// GetStatus returns one status of a board.
func (s *Service) GetStatus(ctx context.Context, tenant, boardID, id string) (*Status, error) {
	d, err := s.GetBoard(ctx, tenant, boardID)
	if err != nil {
		return nil, err
	}
	for i := range d.Statuses {
		if d.Statuses[i].ID == id {
			return &d.Statuses[i], nil
		}
	}
	return nil, errs.NotFoundf("status not found")
}

// CreateStatus adds a status at in.Position (last by default).
func (s *Service) CreateStatus(ctx context.Context, tenant, boardID string, in StatusIn) (*Status, error) {
	var id string
	d, err := s.editBoard(ctx, tenant, boardID, func(r *record) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if len(r.Statuses) >= MaxStatuses {
			return errs.Conflictf("a board has at most %d statuses", MaxStatuses)
		}
		st := s.newStatus(in, 0, s.now())
		id = st.ID
		r.Statuses = slices.Insert(r.Statuses, at(len(r.Statuses), in.Position), st)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return findStatus(d, id), nil
}

func findStatus(d *Detail, id string) *Status {
	for i := range d.Statuses {
		if d.Statuses[i].ID == id {
			return &d.Statuses[i]
		}
	}
	return nil
}

// UpdateStatus renames, recolors, recategorizes or moves a status. A new
// category applies to items as they next move: completed_at changes when an
// item enters or leaves a completed status.
func (s *Service) UpdateStatus(ctx context.Context, tenant, boardID, id string, p StatusPatch) (*Status, error) {
	d, err := s.editBoard(ctx, tenant, boardID, func(r *record) error {
		st, i := r.status(id)
		if st == nil {
			return errs.NotFoundf("status not found")
		}
		if err := errs.Validation(p.Validate()...); err != nil {
			return err
		}
		if p.Name != nil {
			st.Name = trim(*p.Name)
		}
		if p.Category != nil {
			st.Category = *p.Category
		}
		if p.Color != nil {
			st.Color = upper(*p.Color)
		}
		if p.Position != nil {
			r.Statuses = place(r.Statuses, i, *p.Position)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return findStatus(d, id), nil
}

// DeleteStatus deletes a status. One that holds items is a conflict unless
// moveTo names another status of the board: its items then move there (to
// the end, in their order), in batches, before the status goes. The last
// status of a board cannot be deleted.
func (s *Service) DeleteStatus(ctx context.Context, tenant, boardID, id, moveTo string) error {
	return s.deletePart(ctx, tenant, boardID, id, moveTo, partStatus)
}

// ---- columns --------------------------------------------------------------

// ListColumns returns a board's columns in position order.
func (s *Service) ListColumns(ctx context.Context, tenant, boardID string) ([]Column, error) {
	d, err := s.GetBoard(ctx, tenant, boardID)
	if err != nil {
		return nil, err
	}
	return d.Columns, nil
}

// GetColumn returns one column of a board.
func (s *Service) GetColumn(ctx context.Context, tenant, boardID, id string) (*Column, error) {
	d, err := s.GetBoard(ctx, tenant, boardID)
	if err != nil {
		return nil, err
	}
	return findColumn(d, id)
}

func findColumn(d *Detail, id string) (*Column, error) {
	for i := range d.Columns {
		if d.Columns[i].ID == id {
			return &d.Columns[i], nil
		}
	}
	return nil, errs.NotFoundf("column not found")
}

// CreateColumn adds a typed column at in.Position (last by default).
func (s *Service) CreateColumn(ctx context.Context, tenant, boardID string, in ColumnIn) (*Column, error) {
	var id string
	d, err := s.editBoard(ctx, tenant, boardID, func(r *record) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if len(r.Columns) >= MaxColumns {
			return errs.Conflictf("a board has at most %d columns", MaxColumns)
		}
		c := s.newColumn(in, 0, s.now())
		id = c.ID
		r.Columns = slices.Insert(r.Columns, at(len(r.Columns), in.Position), c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return findColumn(d, id)
}

// UpdateColumn renames a column, replaces its settings (checked against
// its type; null clears them) or moves it. Values items already hold are
// kept as they are.
func (s *Service) UpdateColumn(ctx context.Context, tenant, boardID, id string, p ColumnPatch) (*Column, error) {
	d, err := s.editBoard(ctx, tenant, boardID, func(r *record) error {
		c, i := r.column(id)
		if c == nil {
			return errs.NotFoundf("column not found")
		}
		vs := p.Validate()
		if p.Settings != nil || p.n.null["settings"] {
			vs = append(vs, checkSettings(c.Type, p.Settings, "settings")...)
		}
		if err := errs.Validation(vs...); err != nil {
			return err
		}
		if p.Name != nil {
			c.Name = trim(*p.Name)
		}
		if p.Settings != nil || p.n.null["settings"] {
			c.Settings = normalizeSettings(p.Settings)
		}
		if p.Position != nil {
			r.Columns = place(r.Columns, i, *p.Position)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return findColumn(d, id)
}

// DeleteColumn deletes a column. Items keep no value for it: their values
// of a deleted column are no longer shown and are dropped when the item is
// next written.
func (s *Service) DeleteColumn(ctx context.Context, tenant, boardID, id string) error {
	_, err := s.editBoard(ctx, tenant, boardID, func(r *record) error {
		_, i := r.column(id)
		if i < 0 {
			return errs.NotFoundf("column not found")
		}
		r.Columns = slices.Delete(r.Columns, i, i+1)
		return nil
	})
	return err
}

// ---- groups ---------------------------------------------------------------

// ListGroups returns a board's groups in position order.
func (s *Service) ListGroups(ctx context.Context, tenant, boardID string) ([]Group, error) {
	d, err := s.GetBoard(ctx, tenant, boardID)
	if err != nil {
		return nil, err
	}
	return d.Groups, nil
}

// GetGroup returns one group of a board.
func (s *Service) GetGroup(ctx context.Context, tenant, boardID, id string) (*Group, error) {
	d, err := s.GetBoard(ctx, tenant, boardID)
	if err != nil {
		return nil, err
	}
	return findGroup(d, id)
}

func findGroup(d *Detail, id string) (*Group, error) {
	for i := range d.Groups {
		if d.Groups[i].ID == id {
			return &d.Groups[i], nil
		}
	}
	return nil, errs.NotFoundf("group not found")
}

// CreateGroup adds a group at in.Position (last by default).
func (s *Service) CreateGroup(ctx context.Context, tenant, boardID string, in GroupIn) (*Group, error) {
	var id string
	d, err := s.editBoard(ctx, tenant, boardID, func(r *record) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if len(r.Groups) >= MaxGroups {
			return errs.Conflictf("a board has at most %d groups", MaxGroups)
		}
		g := s.newGroup(in, 0, s.now())
		id = g.ID
		r.Groups = slices.Insert(r.Groups, at(len(r.Groups), in.Position), g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return findGroup(d, id)
}

// UpdateGroup renames, recolors or moves a group.
func (s *Service) UpdateGroup(ctx context.Context, tenant, boardID, id string, p GroupPatch) (*Group, error) {
	d, err := s.editBoard(ctx, tenant, boardID, func(r *record) error {
		g, i := r.group(id)
		if g == nil {
			return errs.NotFoundf("group not found")
		}
		if err := errs.Validation(p.Validate()...); err != nil {
			return err
		}
		if p.Name != nil {
			g.Name = trim(*p.Name)
		}
		if p.Color != nil {
			g.Color = upper(*p.Color)
		}
		if p.Position != nil {
			r.Groups = place(r.Groups, i, *p.Position)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return findGroup(d, id)
}

// DeleteGroup deletes a group. One that holds items is a conflict unless
// moveTo names another group of the board: its items then move there, in
// batches, before the group goes.
func (s *Service) DeleteGroup(ctx context.Context, tenant, boardID, id, moveTo string) error {
	return s.deletePart(ctx, tenant, boardID, id, moveTo, partGroup)
}

// ---- deleting a status or group -------------------------------------------

type partKind int

const (
	partStatus partKind = iota
	partGroup
)

func (k partKind) String() string {
	if k == partStatus {
		return "status"
	}
	return "group"
}

// deletePart deletes a status or group, first moving its items to moveTo
// in batches (each batch one transaction, its events with it). The last
// transaction removes the part once it holds nothing, so an item added to
// it meanwhile is moved too or stops the delete.
func (s *Service) deletePart(ctx context.Context, tenant, boardID, id, moveTo string, kind partKind) error {
	batch := s.batch
	for {
		done := false
		err := s.st.Update(ctx, func(tx store.Txn) error {
			r, err := boardsC.Get(tx, tenant, boardID)
			if err != nil {
				return err
			}
			var i, target int
			if kind == partStatus {
				_, i = r.status(id)
				_, target = r.status(moveTo)
			} else {
				_, i = r.group(id)
				_, target = r.group(moveTo)
			}
			if i < 0 {
				return errs.NotFoundf("%s not found", kind)
			}
			if kind == partStatus && len(r.Statuses) == 1 {
				return errs.Conflictf("a board needs at least one status; this is its last")
			}
			held, err := readInt(tx, countKey(tenant, boardID, id))
			if err != nil {
				return err
			}
			if held > 0 {
				if moveTo == "" {
					return errs.Conflictf("the %s holds %d items; move them first, or delete with ?move_to= another %s", kind, held, kind)
				}
				if target < 0 || moveTo == id {
					return errs.Invalidf([]any{"query", "move_to"}, "value_error", "must be another %s of this board", kind)
				}
				ids, err := partItems(tx, tenant, boardID, id, kind, batch)
				if err != nil {
					return err
				}
				for _, iid := range ids {
					it, err := itemsC.Get(tx, tenant, iid)
					if err != nil {
						return err
					}
					mv := itemMove{}
					if kind == partStatus {
						mv.status = &moveTo
					} else {
						mv.group, mv.setGroup = &moveTo, true
					}
					if _, err := s.moveItem(tx, tenant, r, it, mv); err != nil {
						return err
					}
				}
				return nil
			}
			if kind == partStatus {
				r.Statuses = slices.Delete(r.Statuses, i, i+1)
			} else {
				r.Groups = slices.Delete(r.Groups, i, i+1)
			}
			r.UpdatedAt = s.now()
			r.normalize()
			done = true
			return boardsC.Put(tx, tenant, r)
		})
		if errors.Is(err, errs.TooLarge) && batch > 1 {
			batch /= 2 // large items: fewer per transaction
			continue
		}
		if err != nil {
			return err
		}
		s.events.Kick()
		if done {
			return nil
		}
	}
}

// partItems returns up to batch of the item ids in a status (in position
// order) or a group.
func partItems(rd store.Reader, tenant, boardID, id string, kind partKind, batch int) ([]string, error) {
	var out []string
	collect := func(iid string) error {
		out = append(out, iid)
		if len(out) == batch {
			return store.ErrStop
		}
		return nil
	}
	if kind == partStatus {
		err := rd.Scan(store.ScanOptions{Prefix: posPrefix(tenant, boardID, "s", id), KeysOnly: true}, func(k, _ []byte) error {
			_, iid, err := posOf(k)
			if err != nil {
				return err
			}
			return collect(iid)
		})
		return out, err
	}
	err := itemsC.IDsBy(rd, tenant, "g", []any{boardID, id}, collect)
	return out, err
}

func trim(s string) string  { return strings.TrimSpace(s) }
func upper(s string) string { return strings.ToUpper(s) }
