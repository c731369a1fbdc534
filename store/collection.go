package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"sync"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// Key spaces under a tenant.
const (
	spaceRecord = "r"
	spaceIndex  = "i"
	spaceUnique = "u"
)

// System is the tenant of records that belong to no workspace (the tenant
// registry, the global lookup of secrets by prefix). Tenant ids never equal it.
const System = "-"

// Collection is a typed set of records of one kind, stored as JSON under
// tenant-prefixed keys, with secondary indexes kept in the same transaction
// as the record. Every method takes the tenant and builds every key under
// it, so no query can leave its tenant.
//
// A record's key is (tenant, "r", Name, id); an index entry is (tenant,
// "i", Name, index, values..., id) with an empty value; a unique index entry
// is (tenant, "u", Name, index, values...) holding the id.
type Collection[T any] struct {
	// Name is the short kind name used in keys ("run", "task").
	Name string
	// ID returns a record's id.
	ID func(*T) string
	// Indexes are kept up to date by Put and Delete.
	Indexes []Index[T]
	// NotFound is the message of the error for a missing record
	// ("run not found"). Defaults to Name + " not found".
	NotFound string
	// Decode, when set, decodes a stored record in place of
	// encoding/json: a faster decoder of the same JSON, or the decoder of
	// a collection's own stored form (then every write of it gives that
	// form's bytes: PutRaw, PutOver).
	Decode func(raw []byte) (*T, error)
	// DecodeWithID, when set, takes Decode's place and is given the
	// record's id (from its key) too: for a stored form that leaves the id
	// to the key.
	DecodeWithID func(id string, raw []byte) (*T, error)

	// notFoundErr is that error, made once: a miss (an Idempotency-Key's
	// lookup, a gate's first decision of an item) costs no allocation.
	notFoundOnce sync.Once
	notFoundErr  error
}

// decode decodes the stored record raw of id.
func (c *Collection[T]) decode(id string, raw []byte) (*T, error) {
	if c.DecodeWithID != nil {
		return c.DecodeWithID(id, raw)
	}
	if c.Decode != nil {
		return c.Decode(raw)
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	return v, nil
}

// Index is a secondary index of a Collection.
type Index[T any] struct {
	// Name names the index in keys and in ListBy.
	Name string
	// Values returns the index entries of a record: each entry is a list of
	// key parts (see Key). Return nil to leave the record out.
	Values func(*T) [][]any
	// Unique makes an entry's values name at most one record: Put of a
	// second record with the same values fails with bas.ErrConflict.
	Unique bool
	// Same, when set, reports whether two versions of a record have the
	// same entries (because the fields Values reads are equal): an update
	// of a record whose entries it says are the same then skips the index
	// without calling Values. It must never report true for records whose
	// entries differ.
	Same func(old, v *T) bool
}

// Page asks for one page of a list.
type Page struct {
	// Limit is the most records to return. Defaults to 50.
	Limit int
	// Cursor continues a previous list; it is the next cursor that list
	// returned.
	Cursor string
	// Forward lists in ascending key order; the default is descending, which
	// for time-sortable ids is newest first.
	Forward bool
}

// Size is the most records the page returns: Limit, or 50 when Limit is
// not positive.
func (p Page) Size() int {
	if p.Limit <= 0 {
		return 50
	}
	return p.Limit
}

func (c *Collection[T]) recordKey(tenant, id string) []byte {
	return Key(tenant, spaceRecord, c.Name, id)
}

// RecordKey is the store key of tenant's record id, for reading many
// records at once with GetSorted (records of one tenant sort by id).
func (c *Collection[T]) RecordKey(tenant, id string) []byte { return c.recordKey(tenant, id) }

// notFound is the error of a missing record: one value per collection,
// which callers only compare (errors.Is) or wrap.
func (c *Collection[T]) notFound() error {
	c.notFoundOnce.Do(func() {
		if c.NotFound != "" {
			c.notFoundErr = errs.NotFoundf("%s", c.NotFound)
		} else {
			c.notFoundErr = errs.NotFoundf("%s not found", c.Name)
		}
	})
	return c.notFoundErr
}

// Get loads the record id of tenant.
func (c *Collection[T]) Get(r Reader, tenant, id string) (*T, error) {
	raw, err := r.Get(c.recordKey(tenant, id))
	if errors.Is(err, ErrNotFound) {
		return nil, c.notFound()
	}
	if err != nil {
		return nil, err
	}
	v, err := c.decode(id, raw)
	if err != nil {
		return nil, errors.Wrapf(err, "decode %s %s", c.Name, id)
	}
	return v, nil
}

// decodeAt decodes the stored record val under key, a key of prefix (the
// collection's record keys under a tenant).
func (c *Collection[T]) decodeAt(prefix, key, val []byte) (*T, error) {
	var id string
	if c.DecodeWithID != nil {
		if len(key) <= len(prefix) || key[len(prefix)] != tagString {
			return nil, errors.Newf("store: %q is not a key of a record", key)
		}
		var rest []byte
		var err error
		if id, rest, err = decodeString(key[len(prefix)+1:]); err != nil {
			return nil, err
		}
		if len(rest) > 0 {
			return nil, errors.Newf("store: %q is not a key of a record", key)
		}
	}
	return c.decode(id, val)
}

// GetRaw returns the stored JSON of the record id of tenant, for callers
// that keep decoded records and decode only when the bytes changed.
func (c *Collection[T]) GetRaw(r Reader, tenant, id string) ([]byte, error) {
	raw, err := r.Get(c.recordKey(tenant, id))
	if errors.Is(err, ErrNotFound) {
		return nil, c.notFound()
	}
	return raw, err
}

// Exists reports whether the record id of tenant exists.
func (c *Collection[T]) Exists(r Reader, tenant, id string) (bool, error) {
	_, err := r.Get(c.recordKey(tenant, id))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Put writes v, replacing the record with the same id, and brings its
// index entries up to date.
func (c *Collection[T]) Put(tx Txn, tenant string, v *T) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return errors.Wrapf(err, "encode %s", c.Name)
	}
	return c.PutRaw(tx, tenant, v, raw)
}

// PutRaw is Put with the record already encoded (raw must be v's
// encoding: its JSON, or the stored form Decode reads), for callers that
// encode outside the transaction or keep a form of their own.
func (c *Collection[T]) PutRaw(tx Txn, tenant string, v *T, raw []byte) error {
	id := c.ID(v)
	if id == "" {
		return errors.Newf("store: %s with an empty id", c.Name)
	}
	var old *T
	if len(c.Indexes) > 0 {
		prev, err := c.Get(tx, tenant, id)
		switch {
		case err == nil:
			old = prev
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	for _, ix := range c.Indexes {
		if err := c.updateIndex(tx, tenant, id, ix, old, v); err != nil {
			return err
		}
	}
	return tx.Set(c.recordKey(tenant, id), raw)
}

// PutOver is PutRaw for a caller that knows the record's previous state
// (old, nil when new): it skips reading it back. The caller must be the
// record's only writer, as the run engine's worker owning a run is.
func (c *Collection[T]) PutOver(tx Txn, tenant string, old, v *T, raw []byte) error {
	return c.putOver(tx, tenant, old, v, raw, false)
}

// PutNew writes v, encoded as raw, and its index entries without reading
// anything: for a caller that knows v's id is new and no record holds its
// unique values. It checks neither: a unique entry another record held is
// taken over (PutOver refuses it with bas.ErrConflict), and a record
// already stored under v's id is overwritten with its index entries left
// in place.
func (c *Collection[T]) PutNew(tx Txn, tenant string, v *T, raw []byte) error {
	id := c.ID(v)
	if id == "" {
		return errors.Newf("store: %s with an empty id", c.Name)
	}
	for _, ix := range c.Indexes {
		var val []byte
		if ix.Unique {
			val = []byte(id)
		}
		var room [2][]byte
		for _, k := range c.indexKeys(room[:0], tenant, id, ix, v) {
			if err := tx.Set(k, val); err != nil {
				return err
			}
		}
	}
	return tx.Set(c.recordKey(tenant, id), raw)
}

// PutOverKept is PutOver for a caller that leaves raw unchanged until tx
// ended, so the store need not copy it (see SetKept).
func (c *Collection[T]) PutOverKept(tx Txn, tenant string, old, v *T, raw []byte) error {
	return c.putOver(tx, tenant, old, v, raw, true)
}

// putOver is PutOver, or PutOverKept when kept.
func (c *Collection[T]) putOver(tx Txn, tenant string, old, v *T, raw []byte, kept bool) error {
	id := c.ID(v)
	if id == "" {
		return errors.Newf("store: %s with an empty id", c.Name)
	}
	for _, ix := range c.Indexes {
		if err := c.updateIndex(tx, tenant, id, ix, old, v); err != nil {
			return err
		}
	}
	if kept {
		return SetKept(tx, c.recordKey(tenant, id), raw)
	}
	return tx.Set(c.recordKey(tenant, id), raw)
}

func (c *Collection[T]) indexKeys(dst [][]byte, tenant, id string, ix Index[T], v *T) [][]byte {
	if v == nil {
		return dst
	}
	return c.keysOf(dst, tenant, id, ix, ix.Values(v))
}

// keysOf appends to dst the index entries' keys of the record id with the
// index values entries.
func (c *Collection[T]) keysOf(dst [][]byte, tenant, id string, ix Index[T], entries [][]any) [][]byte {
	keys := dst
	for _, e := range entries {
		if ix.Unique {
			keys = append(keys, AppendKey(Key(tenant, spaceUnique, c.Name, ix.Name), e...))
			continue
		}
		// Room for two ids beside the names, so the key is made at once.
		k := AppendKey(make([]byte, 0, 128), tenant, spaceIndex, c.Name, ix.Name)
		k = AppendKey(k, e...)
		keys = append(keys, AppendKey(k, id))
	}
	return keys
}

func (c *Collection[T]) updateIndex(tx Txn, tenant, id string, ix Index[T], old, v *T) error {
	// Room for the keys of a record of an entry or two, so listing them
	// allocates nothing.
	var oldRoom, newRoom [2][]byte
	oldKeys, newKeys := oldRoom[:0], newRoom[:0]
	switch {
	case old != nil && v != nil:
		if ix.Same != nil && ix.Same(old, v) {
			return nil // the same entries: nothing to delete or write
		}
		oldVals, newVals := ix.Values(old), ix.Values(v)
		if sameValues(oldVals, newVals) {
			return nil // the same entries: nothing to delete or write
		}
		oldKeys, newKeys = c.keysOf(oldKeys, tenant, id, ix, oldVals), c.keysOf(newKeys, tenant, id, ix, newVals)
	default:
		oldKeys, newKeys = c.indexKeys(oldKeys, tenant, id, ix, old), c.indexKeys(newKeys, tenant, id, ix, v)
	}
	for _, k := range oldKeys {
		if !containsKey(newKeys, k) {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
	}
	for _, k := range newKeys {
		if containsKey(oldKeys, k) {
			continue
		}
		val := []byte(nil)
		if ix.Unique {
			holder, err := tx.Get(k)
			switch {
			case err == nil && string(holder) != id:
				return errs.Conflictf("%s already exists", c.Name)
			case err != nil && !errors.Is(err, ErrNotFound):
				return err
			}
			val = []byte(id)
		}
		if err := tx.Set(k, val); err != nil {
			return err
		}
	}
	return nil
}

// sameValues reports whether an index's values a and b are the same
// entries, as far as comparing strings, numbers and booleans tells (false
// otherwise: the keys then tell).
func sameValues(a, b [][]any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			switch x := a[i][j].(type) {
			case string:
				if y, ok := b[i][j].(string); !ok || x != y {
					return false
				}
			case int:
				if y, ok := b[i][j].(int); !ok || x != y {
					return false
				}
			case int64:
				if y, ok := b[i][j].(int64); !ok || x != y {
					return false
				}
			case bool:
				if y, ok := b[i][j].(bool); !ok || x != y {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// Delete removes the record id of tenant and its index entries. A missing
// record is bas.ErrNotFound.
func (c *Collection[T]) Delete(tx Txn, tenant, id string) error {
	old, err := c.Get(tx, tenant, id)
	if err != nil {
		return err
	}
	for _, ix := range c.Indexes {
		for _, k := range c.indexKeys(nil, tenant, id, ix, old) {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
	}
	return tx.Delete(c.recordKey(tenant, id))
}

// Lookup returns the record a unique index entry names.
func (c *Collection[T]) Lookup(r Reader, tenant, index string, values ...any) (*T, error) {
	raw, err := r.Get(AppendKey(Key(tenant, spaceUnique, c.Name, index), values...))
	if errors.Is(err, ErrNotFound) {
		return nil, c.notFound()
	}
	if err != nil {
		return nil, err
	}
	return c.Get(r, tenant, string(raw))
}

// List returns one page of tenant's records in id order (newest first by
// default) and the cursor of the next page ("" at the end).
func (c *Collection[T]) List(r Reader, tenant string, p Page) ([]*T, string, error) {
	prefix := Key(tenant, spaceRecord, c.Name)
	var out []*T
	next, err := scanPage(r, prefix, p, false, func(key, val []byte) error {
		v, err := c.decodeAt(prefix, key, val)
		if err != nil {
			return errors.Wrapf(err, "decode %s", c.Name)
		}
		out = append(out, v)
		return nil
	})
	return out, next, err
}

// ListBy returns one page of tenant's records whose entry in index starts
// with values, in index order (descending by default), and the next cursor.
func (c *Collection[T]) ListBy(r Reader, tenant, index string, values []any, p Page) ([]*T, string, error) {
	return c.ListUnder(r, tenant, AppendKey(Key(tenant, spaceIndex, c.Name, index), values...), p)
}

// ListUnder is ListBy for an index the caller keeps outside the collection:
// the keys under prefix end with record ids, which are loaded from tenant's
// records (so a wrong prefix cannot leave the tenant). The page's records
// are read together (GetSorted): records listed together often lie
// together, so a store that walks them reads each more cheaply than with a
// lookup of its own.
func (c *Collection[T]) ListUnder(r Reader, tenant string, prefix []byte, p Page) ([]*T, string, error) {
	var ids []string
	next, err := scanPage(r, prefix, p, true, func(key, _ []byte) error {
		id, err := KeyID(key)
		if err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	out, err := c.getAll(r, tenant, ids)
	if err != nil {
		return nil, "", errors.Wrapf(err, "index %q of %s", prefix, c.Name)
	}
	return out, next, nil
}

// IDs calls fn with the ids of one page of tenant's records in id order
// (newest first by default), reading keys only, and returns the cursor of
// the next page ("" at the end).
func (c *Collection[T]) IDs(r Reader, tenant string, p Page, fn func(id string) error) (string, error) {
	prefix := Key(tenant, spaceRecord, c.Name)
	return scanPage(r, prefix, p, true, func(key, _ []byte) error {
		id, err := KeyID(key)
		if err != nil {
			return err
		}
		return fn(id)
	})
}

// ListRange returns up to limit of tenant's records whose ids lie between
// oldest and newest (both included), newest first. It scans under the
// longest key prefix the two ids' records share, so a store that picks its
// tables by prefix reads only those that may hold them. since is
// ScanOptions.Since (0 for none): each record between the ids must have
// been last written after it.
func (c *Collection[T]) ListRange(r Reader, tenant, oldest, newest string, limit int, since uint64) ([]*T, error) {
	low, high := c.recordKey(tenant, oldest), c.recordKey(tenant, newest)
	// After is exclusive: the key just past newest's takes it in.
	opts := ScanOptions{Prefix: SharedPrefix(high, low), Reverse: true, After: append(bytes.Clone(high), 0), Since: since}
	prefix := Key(tenant, spaceRecord, c.Name)
	var out []*T
	err := r.Scan(opts, func(key, val []byte) error {
		if len(out) == limit || bytes.Compare(key, low) < 0 {
			return ErrStop
		}
		v, err := c.decodeAt(prefix, key, val)
		if err != nil {
			return errors.Wrapf(err, "decode %s", c.Name)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// ListCursor is the cursor of a List page (in either order) that ends at
// the record id: the next page starts after it.
func (c *Collection[T]) ListCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString(AppendKey(nil, id))
}

// getAll loads tenant's records ids, in that order, with one GetSorted.
func (c *Collection[T]) getAll(r Reader, tenant string, ids []string) ([]*T, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	type named struct {
		key []byte
		at  int // the index in ids of the record's first mention
	}
	byKey := make([]named, len(ids))
	for i, id := range ids {
		byKey[i] = named{key: c.recordKey(tenant, id), at: i}
	}
	slices.SortStableFunc(byKey, func(a, b named) int { return bytes.Compare(a.key, b.key) })
	keys := make([][]byte, 0, len(byKey))
	firsts := make([]int, 0, len(byKey))
	for i, n := range byKey {
		if i > 0 && bytes.Equal(byKey[i-1].key, n.key) {
			continue
		}
		keys = append(keys, n.key)
		firsts = append(firsts, i)
	}
	out := make([]*T, len(ids))
	err := GetSorted(r, keys, func(j int, raw []byte, found bool) error {
		first := byKey[firsts[j]]
		if !found {
			return errors.Wrapf(c.notFound(), "names a missing record %s", ids[first.at])
		}
		// Every mention of the record (an index may name one twice) gets a
		// copy of its own.
		for k := firsts[j]; k < len(byKey) && bytes.Equal(byKey[k].key, first.key); k++ {
			v, err := c.decode(ids[first.at], raw)
			if err != nil {
				return errors.Wrapf(err, "decode %s %s", c.Name, ids[first.at])
			}
			out[byKey[k].at] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListByAny is ListBy for records whose entry in index starts with any of
// valueLists (tasks assigned to a person's id or to their email, say): the
// entries under each are merged in index order, and a page costs what a
// page of each costs. Cursors are those of ListBy over one of them.
func (c *Collection[T]) ListByAny(r Reader, tenant, index string, valueLists [][]any, p Page) ([]*T, string, error) {
	if len(valueLists) == 1 {
		return c.ListBy(r, tenant, index, valueLists[0], p)
	}
	limit := p.Size()
	type hit struct {
		suffix []byte
		id     string
	}
	var hits []hit
	more := false
	for _, values := range valueLists {
		prefix := AppendKey(Key(tenant, spaceIndex, c.Name, index), values...)
		next, err := scanPage(r, prefix, Page{Limit: limit, Cursor: p.Cursor, Forward: p.Forward}, true, func(key, _ []byte) error {
			id, err := KeyID(key)
			if err != nil {
				return err
			}
			hits = append(hits, hit{suffix: bytes.Clone(key[len(prefix):]), id: id})
			return nil
		})
		if err != nil {
			return nil, "", err
		}
		more = more || next != ""
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if p.Forward {
			return bytes.Compare(a.suffix, b.suffix)
		}
		return bytes.Compare(b.suffix, a.suffix)
	})
	hits = slices.CompactFunc(hits, func(a, b hit) bool { return a.id == b.id })
	if len(hits) > limit {
		hits, more = hits[:limit], true
	}
	out := make([]*T, 0, len(hits))
	for _, h := range hits {
		v, err := c.Get(r, tenant, h.id)
		if err != nil {
			return nil, "", errors.Wrapf(err, "index %s of %s names a missing record", index, c.Name)
		}
		out = append(out, v)
	}
	if !more || len(hits) == 0 {
		return out, "", nil
	}
	return out, base64.RawURLEncoding.EncodeToString(hits[len(hits)-1].suffix), nil
}

// CountBy counts tenant's entries in index that start with values. It costs
// one key visit per entry: use it for small sets or keep a counter.
func (c *Collection[T]) CountBy(r Reader, tenant, index string, values ...any) (int, error) {
	n := 0
	err := r.Scan(ScanOptions{Prefix: AppendKey(Key(tenant, spaceIndex, c.Name, index), values...), KeysOnly: true},
		func(_, _ []byte) error { n++; return nil })
	return n, err
}

// IDsBy calls fn with the id of each of tenant's records whose entry in
// index starts with values, in ascending index order, until fn returns
// ErrStop.
func (c *Collection[T]) IDsBy(r Reader, tenant, index string, values []any, fn func(id string) error) error {
	prefix := AppendKey(Key(tenant, spaceIndex, c.Name, index), values...)
	return r.Scan(ScanOptions{Prefix: prefix, KeysOnly: true}, func(key, _ []byte) error {
		id, err := KeyID(key)
		if err != nil {
			return err
		}
		return fn(id)
	})
}

// ErrBadCursor marks a cursor that this list did not make.
var ErrBadCursor = errs.Validation(errs.Violation{Loc: []any{"query", "cursor"}, Msg: "is not a cursor of this list", Type: "value_error"})

// scanPage walks one page under prefix and returns the next cursor. The
// cursor encodes only the key's suffix after prefix, so it cannot lead a
// scan out of the prefix (and so out of the tenant).
func scanPage(r Reader, prefix []byte, p Page, keysOnly bool, fn func(key, val []byte) error) (string, error) {
	limit := p.Size()
	opts := ScanOptions{Prefix: prefix, Reverse: !p.Forward, KeysOnly: keysOnly}
	if p.Cursor != "" {
		suffix, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		if err != nil || len(suffix) == 0 {
			return "", ErrBadCursor
		}
		opts.After = append(bytes.Clone(prefix), suffix...)
	}
	n := 0
	var last []byte
	more := false
	err := r.Scan(opts, func(key, val []byte) error {
		if n == limit {
			more = true
			return ErrStop
		}
		n++
		last = append(last[:0], key...)
		return fn(key, val)
	})
	if err != nil || !more {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(last[len(prefix):]), nil
}
