package boards

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// EventSink receives the app's events. The run engine implements it: Emit
// writes the event to its outbox inside tx, the transaction that makes the
// change, so the event exists exactly when the change does; Kick, called
// after that transaction commits, tells the dispatcher to look.
type EventSink interface {
	Emit(tx store.Txn, tenant, name string, data any) error
	Kick()
}

// Config configures New.
type Config struct {
	// Store is where boards and items live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// Events receives boards.item.* events. Defaults to none (events are
	// dropped), for tests and tools.
	Events EventSink
	// BatchSize is how many items one transaction moves or deletes when a
	// status, group or board with many items is deleted. Defaults to 500.
	BatchSize int
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Events == nil {
		c.Events = noEvents{}
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	return c
}

type noEvents struct{}

func (noEvents) Emit(store.Txn, string, string, any) error { return nil }
func (noEvents) Kick()                                     {}

// Service is the boards app. It is safe for concurrent use.
type Service struct {
	st     store.Store
	clock  clock.Clock
	log    *slog.Logger
	events EventSink
	batch  int
	ids    ids.Generator // makes the ids of the records it writes

	// creating serializes item creations of one board in this process
	// (striped by board): they all write the board's counter, so running
	// them together would only make them conflict and retry. Creations
	// from other processes on a shared store still meet in the store's
	// conflict detection.
	creating [64]sync.Mutex
}

// createLock returns the lock of board's item creations.
func (s *Service) createLock(tenant, board string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(board))
	return &s.creating[h.Sum32()%uint32(len(s.creating))]
}

// New returns the boards app over cfg.Store. It panics when cfg.Store is
// nil: that is a wiring mistake, not a runtime condition.
func New(cfg Config) *Service {
	if cfg.Store == nil {
		panic("boards.New: Config.Store is required")
	}
	cfg = cfg.withDefaults()
	return &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, events: cfg.Events, batch: cfg.BatchSize}
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

// Key spaces of the app under a tenant (besides its collections).
const (
	spaceSeq   = "boardseq"   // (board) -> the last item number given
	spaceCount = "boardcount" // (board, status or group id) -> items in it
	spacePos   = "boardpos"   // (board, list, values..., position, item id): position-ordered lists
	spaceIdem  = "boardidem"  // (idempotency key) -> item id made by that call
)

// record is a stored board: the board and its parts.
type record struct {
	Board
	Statuses []Status `json:"statuses"`
	Columns  []Column `json:"columns"`
	Groups   []Group  `json:"groups"`
}

var boardsC = &store.Collection[record]{
	Name:     "board",
	ID:       func(r *record) string { return r.ID },
	NotFound: "board not found",
	Indexes: []store.Index[record]{
		{Name: "key", Unique: true, Values: func(r *record) [][]any {
			if r.Key == nil {
				return nil
			}
			return [][]any{{*r.Key}}
		}},
	},
}

func (r *record) status(id string) (*Status, int) {
	for i := range r.Statuses {
		if r.Statuses[i].ID == id {
			return &r.Statuses[i], i
		}
	}
	return nil, -1
}

func (r *record) group(id string) (*Group, int) {
	for i := range r.Groups {
		if r.Groups[i].ID == id {
			return &r.Groups[i], i
		}
	}
	return nil, -1
}

func (r *record) column(id string) (*Column, int) {
	for i := range r.Columns {
		if r.Columns[i].ID == id {
			return &r.Columns[i], i
		}
	}
	return nil, -1
}

// ---- counters ---------------------------------------------------------------

func readInt(r store.Reader, key []byte) (int64, error) {
	v, err := r.Get(key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, errors.Newf("boards: counter %q holds %d bytes", key, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func addInt(tx store.Txn, key []byte, delta int64) (int64, error) {
	n, err := readInt(tx, key)
	if err != nil {
		return 0, err
	}
	n += delta
	if n == 0 {
		return 0, tx.Delete(key)
	}
	return n, tx.Set(key, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

func countKey(tenant, board, part string) []byte { return store.Key(tenant, spaceCount, board, part) }

// withCounts fills the item counts of r's statuses and groups.
func withCounts(rd store.Reader, tenant string, r *record) error {
	for i := range r.Statuses {
		n, err := readInt(rd, countKey(tenant, r.ID, r.Statuses[i].ID))
		if err != nil {
			return err
		}
		r.Statuses[i].ItemCount = n
	}
	for i := range r.Groups {
		n, err := readInt(rd, countKey(tenant, r.ID, r.Groups[i].ID))
		if err != nil {
			return err
		}
		r.Groups[i].ItemCount = n
	}
	return nil
}

// ---- boards -----------------------------------------------------------------

// CreateBoard creates a board with its template's statuses, columns and
// groups. A key given that another board of the workspace has is a
// conflict; without one, a key is derived from the name (made unique with
// a number). workspace_id, when given, must be tenant.
func (s *Service) CreateBoard(ctx context.Context, tenant string, in BoardIn) (*Detail, error) {
	vs := in.Validate()
	if in.WorkspaceID != nil && *in.WorkspaceID != tenant {
		vs = append(vs, errs.Violation{Loc: []any{"workspace_id"}, Msg: "must be your own workspace's id (or left out)", Type: "value_error"})
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	if in.Template == "" {
		in.Template = TemplateSimple
	}
	now := s.now()
	r := &record{Board: Board{ID: s.ids.New("brd", now), WorkspaceID: tenant, Name: strings.TrimSpace(in.Name),
		Template: in.Template, Description: in.Description, CreatedAt: &now, UpdatedAt: now}}
	sh := templateShape(in.Template)
	for _, st := range sh.statuses {
		r.Statuses = append(r.Statuses, s.newStatus(st, len(r.Statuses), now))
	}
	for _, c := range sh.columns {
		r.Columns = append(r.Columns, s.newColumn(c, len(r.Columns), now))
	}
	for _, g := range sh.groups {
		r.Groups = append(r.Groups, s.newGroup(g, len(r.Groups), now))
	}
	r.normalize()
	err := s.st.Update(ctx, func(tx store.Txn) error {
		if in.Key != nil {
			r.Key = in.Key
			if err := boardsC.Put(tx, tenant, r); err != nil {
				if errors.Is(err, errs.Conflict) {
					return errs.Conflictf("another board has the key %s", *in.Key)
				}
				return err
			}
			return nil
		}
		base := deriveKey(in.Name)
		for n := 1; ; n++ {
			k := base
			if n > 1 {
				suffix := strconv.Itoa(n)
				k = base[:min(len(base), 10-len(suffix))] + suffix
			}
			_, err := boardsC.Lookup(tx, tenant, "key", k)
			if errors.Is(err, errs.NotFound) {
				r.Key = &k
				return boardsC.Put(tx, tenant, r)
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return r.detail(), nil
}

// deriveKey makes a board key from a name: the initials of a name of
// several words, else the first four letters or digits of its one word,
// upper case; "BOARD" when the name has too few ASCII letters.
func deriveKey(name string) string {
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	var k string
	if len(words) >= 2 {
		for _, w := range words {
			k += w[:1]
		}
	} else if len(words) == 1 {
		k = words[0]
		if len(k) > 4 {
			k = k[:4]
		}
	}
	k = strings.TrimLeftFunc(k, unicode.IsDigit)
	if len(k) > 10 {
		k = k[:10]
	}
	if len(k) < 2 {
		return "BOARD"
	}
	return k
}

func (s *Service) newStatus(in StatusIn, pos int, now time.Time) Status {
	c := categoryColors[in.Category]
	if in.Color != nil {
		c = strings.ToUpper(*in.Color)
	}
	return Status{ID: s.ids.New("bst", now), Name: strings.TrimSpace(in.Name), Category: in.Category, Color: c, Position: pos}
}

func (s *Service) newColumn(in ColumnIn, pos int, now time.Time) Column {
	return Column{ID: s.ids.New("bcl", now), Name: strings.TrimSpace(in.Name), Type: in.Type, Position: pos,
		Settings: normalizeSettings(in.Settings)}
}

func (s *Service) newGroup(in GroupIn, pos int, now time.Time) Group {
	c := defaultGroupColor
	if in.Color != nil {
		c = strings.ToUpper(*in.Color)
	}
	return Group{ID: s.ids.New("bgr", now), Name: strings.TrimSpace(in.Name), Color: c, Position: pos}
}

// normalize makes the part lists non-nil and renumbers their positions.
func (r *record) normalize() {
	if r.Statuses == nil {
		r.Statuses = []Status{}
	}
	if r.Columns == nil {
		r.Columns = []Column{}
	}
	if r.Groups == nil {
		r.Groups = []Group{}
	}
	for i := range r.Statuses {
		r.Statuses[i].Position = i
	}
	for i := range r.Columns {
		r.Columns[i].Position = i
	}
	for i := range r.Groups {
		r.Groups[i].Position = i
	}
}

func (r *record) detail() *Detail {
	d := &Detail{Board: r.Board, Statuses: append([]Status{}, r.Statuses...), Columns: append([]Column{}, r.Columns...),
		Groups: append([]Group{}, r.Groups...)}
	return d
}

// GetBoard returns a board with its statuses, columns and groups.
func (s *Service) GetBoard(ctx context.Context, tenant, id string) (*Detail, error) {
	var out *Detail
	err := s.st.View(ctx, func(rd store.Reader) error {
		r, err := boardsC.Get(rd, tenant, id)
		if err != nil {
			return err
		}
		if err := withCounts(rd, tenant, r); err != nil {
			return err
		}
		out = r.detail()
		return nil
	})
	return out, err
}

// ListBoards returns a page of boards, newest first.
func (s *Service) ListBoards(ctx context.Context, tenant string, p store.Page) ([]*Board, string, error) {
	var out []*Board
	var next string
	err := s.st.View(ctx, func(rd store.Reader) error {
		rs, n, err := boardsC.List(rd, tenant, p)
		for _, r := range rs {
			out = append(out, &r.Board)
		}
		next = n
		return err
	})
	return out, next, err
}

// UpdateBoard applies a patch to a board's name and description.
func (s *Service) UpdateBoard(ctx context.Context, tenant, id string, p BoardPatch) (*Detail, error) {
	return s.editBoard(ctx, tenant, id, func(r *record) error {
		if err := errs.Validation(p.Validate()...); err != nil {
			return err
		}
		if p.Name != nil {
			r.Name = strings.TrimSpace(*p.Name)
		}
		if p.Description != nil || p.n.null["description"] {
			r.Description = p.Description
		}
		return nil
	})
}

// editBoard loads a board, lets edit change it, stores it and returns its
// detail, in one transaction.
func (s *Service) editBoard(ctx context.Context, tenant, id string, edit func(*record) error) (*Detail, error) {
	var out *Detail
	err := s.st.Update(ctx, func(tx store.Txn) error {
		r, err := boardsC.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := edit(r); err != nil {
			return err
		}
		r.UpdatedAt = s.now()
		r.normalize()
		if err := boardsC.Put(tx, tenant, r); err != nil {
			return err
		}
		if err := withCounts(tx, tenant, r); err != nil {
			return err
		}
		out = r.detail()
		return nil
	})
	return out, err
}

// DeleteBoard deletes a board with its items. The board is gone (404) as
// soon as the first transaction commits; its items are then deleted in
// batches.
func (s *Service) DeleteBoard(ctx context.Context, tenant, id string) error {
	if err := s.st.Update(ctx, func(tx store.Txn) error { return boardsC.Delete(tx, tenant, id) }); err != nil {
		return err
	}
	size := s.batch
	for {
		done := false
		err := s.st.Update(ctx, func(tx store.Txn) error {
			var batch []string
			if err := itemsC.IDsBy(tx, tenant, "b", []any{id}, func(iid string) error {
				batch = append(batch, iid)
				if len(batch) == size {
					return store.ErrStop
				}
				return nil
			}); err != nil {
				return err
			}
			for _, iid := range batch {
				it, err := itemsC.Get(tx, tenant, iid)
				if err != nil {
					return err
				}
				if err := s.dropItem(tx, tenant, it); err != nil {
					return err
				}
			}
			if len(batch) < size {
				done = true
				if err := tx.Delete(store.Key(tenant, spaceSeq, id)); err != nil {
					return err
				}
				return deletePrefix(tx, store.Key(tenant, spaceCount, id))
			}
			return nil
		})
		if errors.Is(err, errs.TooLarge) && size > 1 {
			size /= 2
			continue
		}
		if err != nil {
			return errors.Wrap(err, "delete the board's items")
		}
		if done {
			return nil
		}
	}
}

func deletePrefix(tx store.Txn, prefix []byte) error {
	var keys [][]byte
	if err := tx.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
