package boards

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Events the app emits.
const (
	EventItemCreated   = "boards.item.created"
	EventItemMoved     = "boards.item.moved"
	EventItemCompleted = "boards.item.completed"
)

// Events lists the events the app emits.
func Events() []string { return []string{EventItemCreated, EventItemMoved, EventItemCompleted} }

// maxWordLen bounds one indexed word of a title (longer words are cut).
const maxWordLen = 64

// The item lists: by board, group, assignee, group and assignee (newest
// first), each word of the title and key (for ?q=), and the board's
// number (the key). Lists by status are kept in the position-ordered key
// space (see posKeys).
var itemsC = &store.Collection[Item]{
	Name:     "bitem",
	ID:       func(it *Item) string { return it.ID },
	NotFound: "item not found",
	Indexes: []store.Index[Item]{
		{Name: "b", Values: func(it *Item) [][]any { return [][]any{{it.BoardID}} }},
		{Name: "g", Values: func(it *Item) [][]any {
			if it.GroupID == nil {
				return nil
			}
			return [][]any{{it.BoardID, *it.GroupID}}
		}},
		{Name: "a", Values: func(it *Item) [][]any {
			if it.AssigneeID == nil {
				return nil
			}
			return [][]any{{it.BoardID, *it.AssigneeID}}
		}},
		{Name: "ga", Values: func(it *Item) [][]any {
			if it.GroupID == nil || it.AssigneeID == nil {
				return nil
			}
			return [][]any{{it.BoardID, *it.GroupID, *it.AssigneeID}}
		}},
		{Name: "num", Unique: true, Values: func(it *Item) [][]any { return [][]any{{it.BoardID, it.Number}} }},
		{Name: "q", Values: func(it *Item) [][]any {
			ws := words(it.Title + " " + it.Key)
			out := make([][]any, len(ws))
			for i, w := range ws {
				out[i] = []any{it.BoardID, w}
			}
			return out
		}},
	},
}

// words returns the distinct lower-case words of s (runs of letters and
// digits), each cut to maxWordLen bytes, sorted.
func words(s string) []string {
	fs := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, f := range fs {
		if len(f) > maxWordLen {
			cut := maxWordLen
			for cut > 0 && !utf8Start(f[cut]) {
				cut--
			}
			fs[i] = f[:cut]
		}
	}
	sort.Strings(fs)
	return slices.Compact(fs)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// ---- position-ordered lists ---------------------------------------------------

// posPrefix is the prefix of a position-ordered list of a board: list "s"
// (by status), "sg" (status, group), "sa" (status, assignee) or "sga".
func posPrefix(tenant, board, list string, values ...any) []byte {
	return store.AppendKey(store.Key(tenant, spacePos, board, list), values...)
}

// posKeys returns the position-ordered list entries of an item.
func posKeys(tenant string, it *Item) [][]byte {
	if it == nil {
		return nil
	}
	keys := [][]byte{store.AppendKey(posPrefix(tenant, it.BoardID, "s", it.StatusID), it.Position, it.ID)}
	if it.GroupID != nil {
		keys = append(keys, store.AppendKey(posPrefix(tenant, it.BoardID, "sg", it.StatusID, *it.GroupID), it.Position, it.ID))
	}
	if it.AssigneeID != nil {
		keys = append(keys, store.AppendKey(posPrefix(tenant, it.BoardID, "sa", it.StatusID, *it.AssigneeID), it.Position, it.ID))
	}
	if it.GroupID != nil && it.AssigneeID != nil {
		keys = append(keys, store.AppendKey(posPrefix(tenant, it.BoardID, "sga", it.StatusID, *it.GroupID, *it.AssigneeID), it.Position, it.ID))
	}
	return keys
}

// posOf returns the position and item id of a position-ordered entry.
func posOf(k []byte) (string, string, error) {
	parts, err := store.DecodeKey(k)
	if err != nil || len(parts) < 2 {
		return "", "", errors.Newf("boards: bad list key %q", k)
	}
	pos, _ := parts[len(parts)-2].(string)
	id, _ := parts[len(parts)-1].(string)
	return pos, id, nil
}

// putItem writes it over old (nil for a new item): the record, its index
// entries, its list entries and the counts of its status and group.
func putItem(tx store.Txn, tenant string, old, it *Item) error {
	raw, err := json.Marshal(it)
	if err != nil {
		return errors.Wrap(err, "encode item")
	}
	if err := itemsC.PutOver(tx, tenant, old, it, raw); err != nil {
		return err
	}
	oldKeys, newKeys := posKeys(tenant, old), posKeys(tenant, it)
	for _, k := range oldKeys {
		if !slices.ContainsFunc(newKeys, func(n []byte) bool { return string(n) == string(k) }) {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
	}
	for _, k := range newKeys {
		if !slices.ContainsFunc(oldKeys, func(o []byte) bool { return string(o) == string(k) }) {
			if err := tx.Set(k, nil); err != nil {
				return err
			}
		}
	}
	return recount(tx, tenant, old, it)
}

// recount moves the counts of an item's status and group from old to it.
func recount(tx store.Txn, tenant string, old, it *Item) error {
	var oldParts, newParts []string
	for _, x := range []struct {
		v    *Item
		dest *[]string
	}{{old, &oldParts}, {it, &newParts}} {
		if x.v == nil {
			continue
		}
		*x.dest = append(*x.dest, x.v.StatusID)
		if x.v.GroupID != nil {
			*x.dest = append(*x.dest, *x.v.GroupID)
		}
	}
	board := ""
	if it != nil {
		board = it.BoardID
	} else {
		board = old.BoardID
	}
	for _, p := range oldParts {
		if !slices.Contains(newParts, p) {
			if _, err := addInt(tx, countKey(tenant, board, p), -1); err != nil {
				return err
			}
		}
	}
	for _, p := range newParts {
		if !slices.Contains(oldParts, p) {
			if _, err := addInt(tx, countKey(tenant, board, p), 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropItem deletes an item with its entries and counts.
func (s *Service) dropItem(tx store.Txn, tenant string, it *Item) error {
	if err := itemsC.Delete(tx, tenant, it.ID); err != nil {
		return err
	}
	for _, k := range posKeys(tenant, it) {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return recount(tx, tenant, it, nil)
}

// ---- placing ---------------------------------------------------------------

// neighbour returns the position of the first item of the list under
// prefix after the key from (before it when reverse; from nil starts at
// the end the walk starts from), skipping the item self. "" when none.
func neighbour(rd store.Reader, prefix, from []byte, reverse bool, self string) (string, error) {
	found := ""
	err := rd.Scan(store.ScanOptions{Prefix: prefix, After: from, Reverse: reverse, KeysOnly: true}, func(k, _ []byte) error {
		pos, id, err := posOf(k)
		if err != nil {
			return err
		}
		if id == self {
			return nil
		}
		found = pos
		return store.ErrStop
	})
	return found, err
}

// between returns a position strictly between a and b in the list under
// prefix. Two items may share a position (two placed at one spot at once;
// the id orders them); between such twins the new item goes after both.
func between(rd store.Reader, prefix []byte, a, b, self string) (string, error) {
	if a != "" && b != "" && a >= b {
		next, err := neighbour(rd, prefix, append(store.AppendKey(append([]byte(nil), prefix...), a), 0xff), false, self)
		if err != nil {
			return "", err
		}
		return rankBetween(a, next)
	}
	return rankBetween(a, b)
}

// placeRank returns the position for item self in status statusID of
// board r by pl: right before or after another item of that status, at an
// index, or (by default) last. When many items were placed at one spot
// and the new key grows long, the run of long keys around it is spaced out
// again (see respace).
func (s *Service) placeRank(tx store.Txn, tenant string, r *record, statusID, self string, pl Placement) (string, error) {
	pos, err := s.findRank(tx, tenant, r, statusID, self, pl)
	if err != nil || len(pos) <= respaceAbove {
		return pos, err
	}
	return respace(tx, tenant, r.ID, statusID, self, pos)
}

// Keys longer than respaceAbove trigger respacing; keys up to shortRank
// bound the run respaced, which takes at most maxRespace items on either
// side of the new key (beyond that, the next key bounds it, long or not:
// keys then settle a few characters longer than the bounds).
const (
	respaceAbove = 40
	shortRank    = 12
	maxRespace   = 256
)

// respace gives the run of items with long keys around pos (the place of
// a new key, which only repeated insertions at one spot make long) evenly
// spaced short keys between the nearest short keys on either side, and
// returns the new item's key among them. It rewrites the run's items
// (once per some thousand insertions at one spot), keeping their order.
func respace(tx store.Txn, tenant, board, statusID, self, pos string) (string, error) {
	prefix := posPrefix(tenant, board, "s", statusID)
	from := store.AppendKey(append([]byte(nil), prefix...), pos)
	type entry struct{ pos, id string }
	walk := func(reverse bool) ([]entry, string, error) {
		var run []entry
		bound := ""
		after := from
		if !reverse {
			after = append(append([]byte(nil), from...), 0xff) // past every key at pos
		}
		err := tx.Scan(store.ScanOptions{Prefix: prefix, After: after, Reverse: reverse, KeysOnly: true}, func(k, _ []byte) error {
			p, id, err := posOf(k)
			if err != nil {
				return err
			}
			if id == self {
				return nil
			}
			if len(p) <= shortRank || len(run) == maxRespace {
				bound = p
				return store.ErrStop
			}
			run = append(run, entry{p, id})
			return nil
		})
		return run, bound, err
	}
	before, lo, err := walk(true)
	if err != nil {
		return "", err
	}
	after, hi, err := walk(false)
	if err != nil {
		return "", err
	}
	if lo != "" && hi != "" && lo >= hi {
		return pos, nil
	}
	slices.Reverse(before)
	keys, err := spread(lo, hi, len(before)+1+len(after))
	if err != nil {
		return "", err
	}
	run := append(append(before, entry{}), after...)
	mine := ""
	for i, e := range run {
		if e.id == "" {
			mine = keys[i]
			continue
		}
		old, err := itemsC.Get(tx, tenant, e.id)
		if err != nil {
			return "", err
		}
		next := *old
		next.Position = keys[i]
		if err := putItem(tx, tenant, old, &next); err != nil {
			return "", err
		}
	}
	return mine, nil
}

// spread returns n keys in order strictly between a and b, spaced by
// bisection, so each is about log62(n) characters longer than a and b.
func spread(a, b string, n int) ([]string, error) {
	if n == 0 {
		return nil, nil
	}
	mid, err := rankBetween(a, b)
	if err != nil {
		return nil, err
	}
	left, err := spread(a, mid, n/2)
	if err != nil {
		return nil, err
	}
	right, err := spread(mid, b, n-n/2-1)
	if err != nil {
		return nil, err
	}
	return append(append(left, mid), right...), nil
}

func (s *Service) findRank(tx store.Txn, tenant string, r *record, statusID, self string, pl Placement) (string, error) {
	prefix := posPrefix(tenant, r.ID, "s", statusID)
	entry := func(it *Item) []byte { return store.AppendKey(append([]byte(nil), prefix...), it.Position, it.ID) }
	anchor := func(id string, field string) (*Item, error) {
		it, err := itemsC.Get(tx, tenant, id)
		if err == nil && it.BoardID == r.ID && it.StatusID == statusID && it.ID != self {
			return it, nil
		}
		if err != nil && !errors.Is(err, errs.NotFound) {
			return nil, err
		}
		return nil, errs.Invalidf([]any{field}, "value_error", "must be another item in the item's (target) status")
	}
	switch {
	case pl.BeforeID != nil:
		x, err := anchor(*pl.BeforeID, "before_id")
		if err != nil {
			return "", err
		}
		a, err := neighbour(tx, prefix, entry(x), true, self)
		if err != nil {
			return "", err
		}
		return between(tx, prefix, a, x.Position, self)
	case pl.AfterID != nil:
		x, err := anchor(*pl.AfterID, "after_id")
		if err != nil {
			return "", err
		}
		b, err := neighbour(tx, prefix, entry(x), false, self)
		if err != nil {
			return "", err
		}
		return between(tx, prefix, x.Position, b, self)
	case pl.Index != nil:
		return s.rankAtIndex(tx, tenant, r, statusID, self, *pl.Index)
	}
	a, err := neighbour(tx, prefix, nil, true, self)
	if err != nil {
		return "", err
	}
	return between(tx, prefix, a, "", self)
}

// rankAtIndex places an item at index i of a status: it walks from the
// nearer end of the list, so its cost is the distance to that end.
func (s *Service) rankAtIndex(tx store.Txn, tenant string, r *record, statusID, self string, i int) (string, error) {
	prefix := posPrefix(tenant, r.ID, "s", statusID)
	n, err := readInt(tx, countKey(tenant, r.ID, statusID))
	if err != nil {
		return "", err
	}
	if self != "" {
		if it, err := itemsC.Get(tx, tenant, self); err == nil && it.StatusID == statusID {
			n--
		}
	}
	if int64(i) >= n {
		a, err := neighbour(tx, prefix, nil, true, self)
		if err != nil {
			return "", err
		}
		return between(tx, prefix, a, "", self)
	}
	// The items at indexes i-1 and i (forward), found walking from the
	// nearer end.
	reverse := int64(i) > n/2
	want := []int64{int64(i) - 1, int64(i)}
	if reverse {
		want = []int64{n - 1 - int64(i), n - int64(i)} // reverse indexes of i and i-1
	}
	var got [2]string
	k := int64(0)
	err = tx.Scan(store.ScanOptions{Prefix: prefix, Reverse: reverse, KeysOnly: true}, func(key, _ []byte) error {
		pos, id, err := posOf(key)
		if err != nil {
			return err
		}
		if id == self {
			return nil
		}
		for j, w := range want {
			if k == w {
				got[j] = pos
			}
		}
		k++
		if k > want[1] {
			return store.ErrStop
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if reverse {
		return between(tx, prefix, got[1], got[0], self)
	}
	return between(tx, prefix, got[0], got[1], self)
}

// ---- values -----------------------------------------------------------------

// applyValues checks values against r's columns and merges them into cur
// (null removes a column's value); values of deleted columns are dropped.
// It returns the violations, located at values.<column id>.
func applyValues(r *record, cur, values map[string]any) (map[string]any, []errs.Violation) {
	out := map[string]any{}
	for k, v := range cur {
		if c, _ := r.column(k); c != nil {
			out[k] = v
		}
	}
	var vs []errs.Violation
	keys := slices.Sorted(maps.Keys(values))
	for _, k := range keys {
		v := values[k]
		c, _ := r.column(k)
		loc := []any{"values", k}
		if c == nil {
			vs = append(vs, errs.Violation{Loc: loc, Msg: "is not a column of this board", Type: "value_error"})
			continue
		}
		if v == nil {
			delete(out, k)
			continue
		}
		val, bad := checkValue(c, v, loc)
		if bad != nil {
			vs = append(vs, *bad)
			continue
		}
		out[k] = val
	}
	return out, vs
}

// visible returns it as callers see it: only the values of columns the
// board still has, values never null.
func visible(r *record, it *Item) *Item {
	out := *it
	out.Values = map[string]any{}
	for k, v := range it.Values {
		if c, _ := r.column(k); c != nil {
			out.Values[k] = v
		}
	}
	return &out
}

// ---- items -------------------------------------------------------------------

// CreateItem adds an item to a board: the next key of the board
// ("<KEY>-<n>", never reused), in the given status (the first by default)
// at the placement (last by default). Date columns with sla_hours in
// their settings and no value given get created_at + sla_hours.
func (s *Service) CreateItem(ctx context.Context, tenant, boardID string, in ItemIn) (*Item, error) {
	return s.createItem(ctx, tenant, boardID, in, "")
}

// createItem is CreateItem that, given an idempotency key, makes at most
// one item for it (a repeat returns the item the first made).
func (s *Service) createItem(ctx context.Context, tenant, boardID string, in ItemIn, idem string) (*Item, error) {
	var out *Item
	mu := s.createLock(tenant, boardID)
	mu.Lock()
	defer mu.Unlock()
	err := s.st.Update(ctx, func(tx store.Txn) error {
		r, err := boardsC.Get(tx, tenant, boardID)
		if err != nil {
			return err
		}
		if idem != "" {
			// A repeat returns the first call's item; when that item was
			// deleted since, the repeat makes a new one.
			prev, err := tx.Get(store.Key(tenant, spaceIdem, idem))
			if err == nil {
				it, err := itemsC.Get(tx, tenant, string(prev))
				if err == nil && it.BoardID == r.ID {
					out = visible(r, it)
					return nil
				}
				if err != nil && !errors.Is(err, errs.NotFound) {
					return err
				}
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		vs := in.Validate()
		statusID := ""
		if len(r.Statuses) > 0 {
			statusID = r.Statuses[0].ID
		}
		if in.StatusID != nil {
			statusID = *in.StatusID
			if st, _ := r.status(statusID); st == nil {
				vs = append(vs, errs.Violation{Loc: []any{"status_id"}, Msg: "is not a status of this board", Type: "value_error"})
			}
		}
		if in.GroupID != nil {
			if g, _ := r.group(*in.GroupID); g == nil {
				vs = append(vs, errs.Violation{Loc: []any{"group_id"}, Msg: "is not a group of this board", Type: "value_error"})
			}
		}
		now := s.now()
		values, vvs := applyValues(r, nil, in.Values)
		vs = append(vs, vvs...)
		if err := errs.Validation(vs...); err != nil {
			return err
		}
		for _, c := range r.Columns {
			if h, ok := toFloat(c.Settings["sla_hours"]); ok && c.Type == TypeDate {
				if _, set := values[c.ID]; !set {
					values[c.ID] = now.Add(time.Duration(h * float64(time.Hour))).Truncate(time.Second).Format(time.RFC3339)
				}
			}
		}
		n, err := addInt(tx, store.Key(tenant, spaceSeq, r.ID), 1)
		if err != nil {
			return err
		}
		it := &Item{ID: s.ids.New("itm", now), BoardID: r.ID, Number: n, Key: boardKey(r) + "-" + strconv.FormatInt(n, 10),
			Title: trim(in.Title), Description: in.Description, StatusID: statusID, GroupID: in.GroupID,
			AssigneeID: nonEmpty(in.AssigneeID), Values: values, CreatedAt: now, UpdatedAt: now}
		if it.Position, err = s.placeRank(tx, tenant, r, statusID, "", in.Placement); err != nil {
			return err
		}
		st, _ := r.status(statusID)
		if st.Category == CategoryCompleted {
			it.CompletedAt = &now
		}
		if err := putItem(tx, tenant, nil, it); err != nil {
			return err
		}
		if idem != "" {
			if err := tx.Set(store.Key(tenant, spaceIdem, idem), []byte(it.ID)); err != nil {
				return err
			}
		}
		out = visible(r, it)
		if err := s.events.Emit(tx, tenant, EventItemCreated, itemEvent(r, out, nil)); err != nil {
			return err
		}
		if it.CompletedAt != nil {
			return s.events.Emit(tx, tenant, EventItemCompleted, itemEvent(r, out, nil))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.events.Kick()
	return out, nil
}

func boardKey(r *record) string {
	if r.Key == nil {
		return "ITEM"
	}
	return *r.Key
}

func nonEmpty(s *string) *string {
	if s == nil || strings.TrimSpace(*s) == "" {
		return nil
	}
	v := strings.TrimSpace(*s)
	return &v
}

// itemEvent is the data of a boards.item.* event: the item in brief, with
// its board and status, and for a move where it came from.
func itemEvent(r *record, it *Item, from *Item) map[string]any {
	st, _ := r.status(it.StatusID)
	m := map[string]any{
		"id": it.ID, "item_id": it.ID, "key": it.Key, "board_id": r.ID, "board_key": boardKey(r),
		"title": it.Title, "status_id": it.StatusID, "group_id": it.GroupID, "assignee_id": it.AssigneeID,
		"values": it.Values, "completed_at": it.CompletedAt,
	}
	if st != nil {
		m["status"], m["status_category"] = st.Name, st.Category
	}
	if from != nil {
		m["from_status_id"], m["from_group_id"] = from.StatusID, from.GroupID
		if fst, _ := r.status(from.StatusID); fst != nil {
			m["from_status"], m["from_status_category"] = fst.Name, fst.Category
		}
	}
	return m
}

// itemMove is where an item goes: a status, a group (setGroup; nil group
// leaves every group) and a place in the status.
type itemMove struct {
	status    *string
	group     *string
	setGroup  bool
	placement Placement
}

// moveItem moves it by mv and writes it.
func (s *Service) moveItem(tx store.Txn, tenant string, r *record, it *Item, mv itemMove) (*Item, error) {
	next := *it
	return s.apply(tx, tenant, r, it, &next, mv)
}

// apply finishes next, an edit of old: its status, group and position by
// mv, completed_at, updated_at; writes it and emits boards.item.moved
// (status or group changed) and boards.item.completed (entered a completed
// status) in tx.
func (s *Service) apply(tx store.Txn, tenant string, r *record, old, next *Item, mv itemMove) (*Item, error) {
	var vs []errs.Violation
	if mv.status != nil {
		if st, _ := r.status(*mv.status); st == nil {
			vs = append(vs, errs.Violation{Loc: []any{"status_id"}, Msg: "is not a status of this board", Type: "value_error"})
		} else {
			next.StatusID = *mv.status
		}
	}
	if mv.setGroup {
		if mv.group != nil {
			if g, _ := r.group(*mv.group); g == nil {
				vs = append(vs, errs.Violation{Loc: []any{"group_id"}, Msg: "is not a group of this board", Type: "value_error"})
			}
		}
		next.GroupID = mv.group
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	now := s.now()
	if next.StatusID != old.StatusID || mv.placement.given() {
		pos, err := s.placeRank(tx, tenant, r, next.StatusID, old.ID, mv.placement)
		if err != nil {
			return nil, err
		}
		next.Position = pos
	}
	from, _ := r.status(old.StatusID)
	to, _ := r.status(next.StatusID)
	wasDone := from != nil && from.Category == CategoryCompleted
	isDone := to != nil && to.Category == CategoryCompleted
	switch {
	case isDone && (!wasDone || old.CompletedAt == nil):
		next.CompletedAt = &now
	case !isDone:
		next.CompletedAt = nil
	}
	next.UpdatedAt = now
	if err := putItem(tx, tenant, old, next); err != nil {
		return nil, err
	}
	out := visible(r, next)
	if next.StatusID != old.StatusID || !samePtr(next.GroupID, old.GroupID) {
		if err := s.events.Emit(tx, tenant, EventItemMoved, itemEvent(r, out, old)); err != nil {
			return nil, err
		}
	}
	if isDone && !wasDone {
		if err := s.events.Emit(tx, tenant, EventItemCompleted, itemEvent(r, out, old)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func samePtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// getItem loads an item of board r by id, or by key ("OPS-12").
func getItem(rd store.Reader, tenant string, r *record, id string) (*Item, error) {
	if !strings.HasPrefix(id, "itm_") {
		if k, n, ok := strings.Cut(id, "-"); ok && r.Key != nil && k == *r.Key {
			num, err := strconv.ParseInt(n, 10, 64)
			if err == nil {
				return itemsC.Lookup(rd, tenant, "num", r.ID, num)
			}
		}
		return nil, errs.NotFoundf("item not found")
	}
	it, err := itemsC.Get(rd, tenant, id)
	if err != nil {
		return nil, err
	}
	if it.BoardID != r.ID {
		return nil, errs.NotFoundf("item not found")
	}
	return it, nil
}

// GetItem returns an item of a board by its id or key.
func (s *Service) GetItem(ctx context.Context, tenant, boardID, id string) (*Item, error) {
	var out *Item
	err := s.st.View(ctx, func(rd store.Reader) error {
		r, err := boardsC.Get(rd, tenant, boardID)
		if err != nil {
			return err
		}
		it, err := getItem(rd, tenant, r, id)
		if err != nil {
			return err
		}
		out = visible(r, it)
		return nil
	})
	return out, err
}

// UpdateItem applies a patch to an item; changing its status or group, or
// giving a placement, moves it (only this item is rewritten).
func (s *Service) UpdateItem(ctx context.Context, tenant, boardID, id string, p ItemPatch) (*Item, error) {
	var out *Item
	err := s.st.Update(ctx, func(tx store.Txn) error {
		r, err := boardsC.Get(tx, tenant, boardID)
		if err != nil {
			return err
		}
		old, err := getItem(tx, tenant, r, id)
		if err != nil {
			return err
		}
		next := *old
		vs := p.Validate()
		if p.StatusID != nil {
			if st, _ := r.status(*p.StatusID); st == nil {
				vs = append(vs, errs.Violation{Loc: []any{"status_id"}, Msg: "is not a status of this board", Type: "value_error"})
			}
		}
		if p.GroupID != nil {
			if g, _ := r.group(*p.GroupID); g == nil {
				vs = append(vs, errs.Violation{Loc: []any{"group_id"}, Msg: "is not a group of this board", Type: "value_error"})
			}
		}
		values, vvs := applyValues(r, old.Values, p.Values)
		if err := errs.Validation(append(vs, vvs...)...); err != nil {
			return err
		}
		next.Values = values
		if p.Title != nil {
			next.Title = trim(*p.Title)
		}
		if p.Description != nil || p.n.null["description"] {
			next.Description = p.Description
		}
		if p.AssigneeID != nil || p.n.null["assignee_id"] {
			next.AssigneeID = nonEmpty(p.AssigneeID)
		}
		mv := itemMove{status: p.StatusID, placement: p.Placement}
		if p.GroupID != nil || p.n.null["group_id"] {
			mv.group, mv.setGroup = p.GroupID, true
		}
		out, err = s.apply(tx, tenant, r, old, &next, mv)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.events.Kick()
	return out, nil
}

// DeleteItem deletes an item; its key is not given again.
func (s *Service) DeleteItem(ctx context.Context, tenant, boardID, id string) error {
	return s.st.Update(ctx, func(tx store.Txn) error {
		r, err := boardsC.Get(tx, tenant, boardID)
		if err != nil {
			return err
		}
		it, err := getItem(tx, tenant, r, id)
		if err != nil {
			return err
		}
		return s.dropItem(tx, tenant, it)
	})
}

// ListItems returns a page of a board's items. Filtered by status (alone
// or with group and assignee) they come in position order; otherwise
// newest first. Q matches whole words of the title and key.
func (s *Service) ListItems(ctx context.Context, tenant, boardID string, f ItemFilter, p store.Page) ([]*Item, string, error) {
	var out []*Item
	var next string
	err := s.st.View(ctx, func(rd store.Reader) error {
		r, err := boardsC.Get(rd, tenant, boardID)
		if err != nil {
			return err
		}
		var vs []errs.Violation
		if f.StatusID != "" {
			if st, _ := r.status(f.StatusID); st == nil {
				vs = append(vs, errs.Violation{Loc: []any{"query", "status_id"}, Msg: "is not a status of this board", Type: "value_error"})
			}
		}
		if f.GroupID != "" {
			if g, _ := r.group(f.GroupID); g == nil {
				vs = append(vs, errs.Violation{Loc: []any{"query", "group_id"}, Msg: "is not a group of this board", Type: "value_error"})
			}
		}
		var qw []string
		if f.Q != "" {
			qw = words(f.Q)
			if len([]rune(f.Q)) > MaxQueryLen {
				vs = append(vs, errs.Violation{Loc: []any{"query", "q"}, Msg: "must be at most 200 characters", Type: "string_too_long"})
			} else if len(qw) == 0 {
				vs = append(vs, errs.Violation{Loc: []any{"query", "q"}, Msg: "needs a letter or digit", Type: "value_error"})
			}
		}
		if err := errs.Validation(vs...); err != nil {
			return err
		}
		var items []*Item
		switch {
		case len(qw) > 0:
			items, next, err = search(rd, tenant, r, f, qw, p)
		case f.StatusID != "":
			p.Forward = true
			list, values := "s", []any{f.StatusID}
			if f.GroupID != "" {
				list, values = list+"g", append(values, f.GroupID)
			}
			if f.AssigneeID != "" {
				list, values = list+"a", append(values, f.AssigneeID)
			}
			items, next, err = itemsC.ListUnder(rd, tenant, posPrefix(tenant, r.ID, list, values...), p)
		default:
			p.Forward = false
			index, values := "b", []any{r.ID}
			switch {
			case f.GroupID != "" && f.AssigneeID != "":
				index, values = "ga", []any{r.ID, f.GroupID, f.AssigneeID}
			case f.GroupID != "":
				index, values = "g", []any{r.ID, f.GroupID}
			case f.AssigneeID != "":
				index, values = "a", []any{r.ID, f.AssigneeID}
			}
			items, next, err = itemsC.ListBy(rd, tenant, index, values, p)
		}
		for _, it := range items {
			out = append(out, visible(r, it))
		}
		return err
	})
	return out, next, err
}

// search walks the word index of the longest word of q (newest first) and
// keeps the items holding every word and matching the other filters: its
// cost grows with the items holding that word, not with the board.
func search(rd store.Reader, tenant string, r *record, f ItemFilter, qw []string, p store.Page) ([]*Item, string, error) {
	w := slices.MaxFunc(qw, func(a, b string) int { return len(a) - len(b) })
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	var out []*Item
	cursor := p.Cursor
	for len(out) < limit {
		page, next, err := itemsC.ListBy(rd, tenant, "q", []any{r.ID, w}, store.Page{Limit: limit - len(out), Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		for _, it := range page {
			if matches(it, f, qw) {
				out = append(out, it)
			}
		}
		cursor = next
		if next == "" {
			break
		}
	}
	return out, cursor, nil
}

func matches(it *Item, f ItemFilter, qw []string) bool {
	if f.StatusID != "" && it.StatusID != f.StatusID {
		return false
	}
	if f.GroupID != "" && (it.GroupID == nil || *it.GroupID != f.GroupID) {
		return false
	}
	if f.AssigneeID != "" && (it.AssigneeID == nil || *it.AssigneeID != f.AssigneeID) {
		return false
	}
	have := words(it.Title + " " + it.Key)
	for _, w := range qw {
		if _, ok := slices.BinarySearch(have, w); !ok {
			return false
		}
	}
	return true
}
