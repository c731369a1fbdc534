package storetest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// widget is the record type of the Collection tests.
type widget struct {
	ID     string   `json:"id"`
	Tenant string   `json:"tenant"` // the tenant it was stored under, to spot leaks
	Owner  string   `json:"owner"`
	Seq    int      `json:"seq"`
	Tags   []string `json:"tags,omitempty"`
	Email  string   `json:"email,omitempty"`
}

// widgets is a collection with a plain index on (owner, seq), a
// many-entry index on tags and a unique index on email.
func widgets() *store.Collection[widget] {
	return &store.Collection[widget]{
		Name: "widget",
		ID:   func(w *widget) string { return w.ID },
		Indexes: []store.Index[widget]{
			{Name: "owner", Values: func(w *widget) [][]any { return [][]any{{w.Owner, w.Seq}} }},
			{Name: "tag", Values: func(w *widget) [][]any {
				out := make([][]any, len(w.Tags))
				for i, tag := range w.Tags {
					out[i] = []any{tag}
				}
				return out
			}},
			{Name: "email", Unique: true, Values: func(w *widget) [][]any {
				if w.Email == "" {
					return nil
				}
				return [][]any{{w.Email}}
			}},
		},
	}
}

// put stores ws (each under its Tenant) in one Update.
func put(t *testing.T, s store.Store, ws ...*widget) {
	t.Helper()
	c := widgets()
	update(t, s, func(tx store.Txn) error {
		for _, w := range ws {
			if err := c.Put(tx, w.Tenant, w); err != nil {
				return err
			}
		}
		return nil
	})
}

// rawKeys returns the decoded keys stored under tenant.
func rawKeys(t *testing.T, s store.Store, tenant string) [][]any {
	t.Helper()
	var out [][]any
	for _, p := range scan(t, s, store.ScanOptions{Prefix: store.Key(tenant), KeysOnly: true}) {
		parts, err := store.DecodeKey([]byte(p.Key))
		if err != nil {
			t.Fatalf("DecodeKey(%q): %v", p.Key, err)
		}
		out = append(out, parts)
	}
	return out
}

// walk lists every page through list, following cursors, and returns the
// ids in the order listed.
func walk(t *testing.T, s store.Store, list func(r store.Reader, cursor string) ([]*widget, string, error)) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("more than 1000 pages: the cursor does not advance")
		}
		var page []*widget
		var next string
		view(t, s, func(r store.Reader) error {
			var err error
			page, next, err = list(r, cursor)
			return err
		})
		for _, w := range page {
			ids = append(ids, w.ID)
		}
		if next == "" {
			return ids
		}
		cursor = next
	}
}

// exerciseCollection checks store.Collection on the store.
func exerciseCollection(t *testing.T, open opener) {
	c := widgets()

	t.Run("PutGetDelete", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		w := &widget{ID: "w1", Tenant: "acme", Owner: "ann", Tags: []string{"red"}, Email: "a@example.com"}
		put(t, s, w)
		view(t, s, func(r store.Reader) error {
			got, err := c.Get(r, "acme", "w1")
			if err != nil {
				return err
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
			if ok, err := c.Exists(r, "acme", "w1"); !ok || err != nil {
				t.Errorf("Exists = %v, %v; want true", ok, err)
			}
			_, err = c.Get(r, "acme", "w2")
			if !errors.Is(err, errs.NotFound) || errs.PublicMessage(err) != "widget not found" {
				t.Errorf("Get of a missing record: %v, want errs.NotFound \"widget not found\"", err)
			}
			return nil
		})
		update(t, s, func(tx store.Txn) error { return c.Delete(tx, "acme", "w1") })
		view(t, s, func(r store.Reader) error {
			if _, err := c.Get(r, "acme", "w1"); !errors.Is(err, errs.NotFound) {
				t.Errorf("Get after Delete: %v, want errs.NotFound", err)
			}
			if ok, err := c.Exists(r, "acme", "w1"); ok || err != nil {
				t.Errorf("Exists after Delete = %v, %v; want false", ok, err)
			}
			return nil
		})
		err := s.Update(t.Context(), func(tx store.Txn) error { return c.Delete(tx, "acme", "w1") })
		if !errors.Is(err, errs.NotFound) {
			t.Errorf("Delete of a missing record: %v, want errs.NotFound", err)
		}
		if diff := cmp.Diff([][]any(nil), rawKeys(t, s, "acme")); diff != "" {
			t.Errorf("keys left after Delete (-want +got):\n%s", diff)
		}
	})

	t.Run("IndexesFollowUpdates", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		put(t, s, &widget{ID: "w1", Tenant: "acme", Owner: "ann", Seq: 1, Tags: []string{"red", "blue"}, Email: "a@example.com"})
		put(t, s, &widget{ID: "w1", Tenant: "acme", Owner: "bob", Seq: 2, Tags: []string{"blue", "green"}, Email: "b@example.com"})
		want := [][]any{
			{"acme", "i", "widget", "owner", "bob", int64(2), "w1"},
			{"acme", "i", "widget", "tag", "blue", "w1"},
			{"acme", "i", "widget", "tag", "green", "w1"},
			{"acme", "r", "widget", "w1"},
			{"acme", "u", "widget", "email", "b@example.com"},
		}
		if diff := cmp.Diff(want, rawKeys(t, s, "acme")); diff != "" {
			t.Errorf("keys after an update (-want +got):\n%s", diff)
		}
		view(t, s, func(r store.Reader) error {
			for _, q := range []struct {
				index  string
				values []any
				want   []string
			}{
				{"owner", []any{"ann"}, nil},
				{"owner", []any{"bob"}, []string{"w1"}},
				{"owner", []any{"bob", 2}, []string{"w1"}},
				{"owner", []any{"bob", 1}, nil},
				{"tag", []any{"red"}, nil},
				{"tag", []any{"blue"}, []string{"w1"}},
				{"tag", []any{"green"}, []string{"w1"}},
			} {
				page, _, err := c.ListBy(r, "acme", q.index, q.values, store.Page{})
				if err != nil {
					return err
				}
				var got []string
				for _, w := range page {
					got = append(got, w.ID)
				}
				if diff := cmp.Diff(q.want, got); diff != "" {
					t.Errorf("ListBy %s %v (-want +got):\n%s", q.index, q.values, diff)
				}
				n, err := c.CountBy(r, "acme", q.index, q.values...)
				if err != nil || n != len(q.want) {
					t.Errorf("CountBy %s %v = %d, %v; want %d", q.index, q.values, n, err, len(q.want))
				}
			}
			if _, err := c.Lookup(r, "acme", "email", "a@example.com"); !errors.Is(err, errs.NotFound) {
				t.Errorf("Lookup of the old email: %v, want errs.NotFound", err)
			}
			if w, err := c.Lookup(r, "acme", "email", "b@example.com"); err != nil || w.ID != "w1" {
				t.Errorf("Lookup of the new email = %+v, %v; want w1", w, err)
			}
			return nil
		})
		update(t, s, func(tx store.Txn) error { return c.Delete(tx, "acme", "w1") })
		if diff := cmp.Diff([][]any(nil), rawKeys(t, s, "acme")); diff != "" {
			t.Errorf("keys left after Delete (-want +got):\n%s", diff)
		}
	})

	t.Run("UniqueIndex", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		put(t, s, &widget{ID: "w1", Tenant: "acme", Email: "a@example.com"})
		runs := 0
		err := s.Update(t.Context(), func(tx store.Txn) error {
			runs++
			return c.Put(tx, "acme", &widget{ID: "w2", Tenant: "acme", Email: "a@example.com"})
		})
		if !errors.Is(err, errs.Conflict) || errs.PublicMessage(err) != "widget already exists" {
			t.Errorf("Put of a taken unique value: %v, want errs.Conflict \"widget already exists\"", err)
		}
		if runs != 1 {
			t.Errorf("the conflicting Put ran %d times, want once", runs)
		}
		// The same record may keep its value; once it gives it up, another
		// may take it.
		put(t, s, &widget{ID: "w1", Tenant: "acme", Email: "a@example.com", Seq: 1})
		put(t, s, &widget{ID: "w1", Tenant: "acme", Email: "c@example.com"})
		put(t, s, &widget{ID: "w2", Tenant: "acme", Email: "a@example.com"})
		view(t, s, func(r store.Reader) error {
			for email, id := range map[string]string{"a@example.com": "w2", "c@example.com": "w1"} {
				if w, err := c.Lookup(r, "acme", "email", email); err != nil || w.ID != id {
					t.Errorf("Lookup %s = %+v, %v; want %s", email, w, err, id)
				}
			}
			return nil
		})
	})

	t.Run("ConcurrentUniquePuts", func(t *testing.T) {
		t.Parallel()
		// Racing Puts of different records with one unique value: the
		// unique entry is a point key each reads, so exactly one wins and
		// the others, retried, see it taken.
		s := open(t)
		const racers = 8
		errc := make(chan error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- s.Update(t.Context(), func(tx store.Txn) error {
					return c.Put(tx, "acme", &widget{ID: fmt.Sprintf("w%d", i), Tenant: "acme", Email: "same@example.com"})
				})
			}()
		}
		wg.Wait()
		close(errc)
		won := 0
		for err := range errc {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, errs.Conflict):
				t.Errorf("a losing Put: %v, want errs.Conflict", err)
			}
		}
		if won != 1 {
			t.Errorf("%d Puts of one unique value succeeded, want 1", won)
		}
		view(t, s, func(r store.Reader) error {
			all, _, err := c.List(r, "acme", store.Page{})
			if err != nil {
				return err
			}
			if len(all) != 1 {
				t.Fatalf("%d records stored, want 1", len(all))
			}
			w, err := c.Lookup(r, "acme", "email", "same@example.com")
			if err != nil || w.ID != all[0].ID {
				t.Errorf("Lookup = %+v, %v; want the stored %s", w, err, all[0].ID)
			}
			return nil
		})
	})

	t.Run("Pages", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		// Owners whose names prefix each other, a second tenant with the
		// same owner, and records in descending id order of insertion.
		var ws []*widget
		byOwner := map[string][]string{}
		for _, g := range []struct {
			owner string
			n     int
		}{{"ann", 23}, {"anna", 5}, {"an", 3}, {"bo", 20}} {
			for i := g.n - 1; i >= 0; i-- {
				ws = append(ws, &widget{ID: fmt.Sprintf("%s-%02d", g.owner, i), Tenant: "acme", Owner: g.owner, Seq: i})
			}
			for i := range g.n {
				byOwner[g.owner] = append(byOwner[g.owner], fmt.Sprintf("%s-%02d", g.owner, i))
			}
		}
		for i := range 4 {
			ws = append(ws, &widget{ID: fmt.Sprintf("ann-%02d", i), Tenant: "acme2", Owner: "ann", Seq: i})
		}
		put(t, s, ws...)
		var allIDs []string
		for _, ids := range byOwner {
			allIDs = append(allIDs, ids...)
		}
		slices.Sort(allIDs)

		rev := func(ids []string) []string {
			out := slices.Clone(ids)
			slices.Reverse(out)
			return out
		}
		for _, owner := range []string{"ann", "anna", "an", "bo"} {
			for _, limit := range []int{1, 5, 20, 23, 0} {
				for _, forward := range []bool{true, false} {
					want := byOwner[owner]
					if !forward {
						want = rev(want)
					}
					got := walk(t, s, func(r store.Reader, cursor string) ([]*widget, string, error) {
						return c.ListBy(r, "acme", "owner", []any{owner}, store.Page{Limit: limit, Cursor: cursor, Forward: forward})
					})
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("ListBy owner %s, limit %d, forward %v (-want +got):\n%s", owner, limit, forward, diff)
					}
				}
			}
		}
		// ListByAny merges several owners' entries into one order.
		for _, owners := range [][]string{{"ann", "bo"}, {"an", "anna"}, {"bo", "nobody"}, {"ann", "ann"}, {"ann", "anna", "an", "bo"}} {
			var union []string
			values := make([][]any, len(owners))
			for i, o := range owners {
				values[i] = []any{o}
				if !slices.Contains(owners[:i], o) {
					union = append(union, byOwner[o]...)
				}
			}
			// Index order: the owner index holds (owner, seq), so entries
			// merge by seq, then id.
			slices.SortFunc(union, func(a, b string) int {
				sa, sb := a[strings.LastIndexByte(a, '-'):], b[strings.LastIndexByte(b, '-'):]
				if c := strings.Compare(sa, sb); c != 0 {
					return c
				}
				return strings.Compare(a, b)
			})
			for _, limit := range []int{1, 4, 43, 0} {
				for _, forward := range []bool{true, false} {
					want := union
					if !forward {
						want = rev(want)
					}
					got := walk(t, s, func(r store.Reader, cursor string) ([]*widget, string, error) {
						return c.ListByAny(r, "acme", "owner", values, store.Page{Limit: limit, Cursor: cursor, Forward: forward})
					})
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("ListByAny owners %v, limit %d, forward %v (-want +got):\n%s", owners, limit, forward, diff)
					}
				}
			}
		}
		for _, limit := range []int{1, 7, 51, 0} {
			for _, forward := range []bool{true, false} {
				want := allIDs
				if !forward {
					want = rev(want)
				}
				got := walk(t, s, func(r store.Reader, cursor string) ([]*widget, string, error) {
					return c.List(r, "acme", store.Page{Limit: limit, Cursor: cursor, Forward: forward})
				})
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("List limit %d, forward %v (-want +got):\n%s", limit, forward, diff)
				}
			}
		}
		// ListCursor is the cursor List gives at the end of a page.
		for _, forward := range []bool{true, false} {
			view(t, s, func(r store.Reader) error {
				page, next, err := c.List(r, "acme", store.Page{Limit: 7, Forward: forward})
				if err != nil {
					return err
				}
				if want := c.ListCursor(page[len(page)-1].ID); next != want {
					t.Errorf("List forward %v: next %q, ListCursor %q", forward, next, want)
				}
				return nil
			})
		}
		// IDs pages through the ids List lists, with the same cursors.
		for _, limit := range []int{1, 7, 51, 0} {
			for _, forward := range []bool{true, false} {
				want := allIDs
				if !forward {
					want = rev(want)
				}
				var got []string
				cursor := ""
				for pages := 0; pages <= len(allIDs); pages++ {
					var next string
					view(t, s, func(r store.Reader) error {
						var err error
						next, err = c.IDs(r, "acme", store.Page{Limit: limit, Cursor: cursor, Forward: forward}, func(id string) error {
							got = append(got, id)
							return nil
						})
						return err
					})
					if next == "" {
						break
					}
					cursor = next
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("IDs limit %d, forward %v (-want +got):\n%s", limit, forward, diff)
				}
			}
		}
		// ListRange lists the ids between two, newest first, up to a
		// limit: ids that share a prefix with the range's ends, ends that
		// are no record's, and another tenant's records are left out.
		for _, tc := range []struct {
			tenant, oldest, newest string
			limit                  int
		}{
			{"acme", "ann-05", "ann-17", 100},
			{"acme", "ann-05", "ann-17", 4},
			{"acme", "an-01", "anna-03", 100},
			{"acme", "ann-1", "ann-2", 100},
			{"acme", "a", "z", 7},
			{"acme", "bo-19", "bo-19", 1},
			{"acme", "bo-20", "bo-99", 5},
			{"acme2", "ann-01", "ann-02", 5},
			{"acme", "a", "z", 0},
		} {
			var want []string
			ids := allIDs
			if tc.tenant == "acme2" {
				ids = []string{"ann-00", "ann-01", "ann-02", "ann-03"}
			}
			for _, id := range rev(ids) {
				if id >= tc.oldest && id <= tc.newest && len(want) < tc.limit {
					want = append(want, id)
				}
			}
			view(t, s, func(r store.Reader) error {
				got, err := c.ListRange(r, tc.tenant, tc.oldest, tc.newest, tc.limit, 0)
				if err != nil {
					return err
				}
				var gotIDs []string
				for _, w := range got {
					if w.Tenant != tc.tenant {
						t.Errorf("ListRange of %s read %s of tenant %s", tc.tenant, w.ID, w.Tenant)
					}
					gotIDs = append(gotIDs, w.ID)
				}
				if diff := cmp.Diff(want, gotIDs); diff != "" {
					t.Errorf("ListRange(%s, %s, %s, %d) (-want +got):\n%s", tc.tenant, tc.oldest, tc.newest, tc.limit, diff)
				}
				return nil
			})
		}
		// A page that ends exactly at the last record has no next cursor.
		view(t, s, func(r store.Reader) error {
			page, next, err := c.ListBy(r, "acme", "owner", []any{"bo"}, store.Page{Limit: 20})
			if err != nil || len(page) != 20 || next != "" {
				t.Errorf("ListBy of 20 records with limit 20 = %d records, next %q, %v; want 20 and no cursor", len(page), next, err)
			}
			return nil
		})
	})

	t.Run("TenantIsolation", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		// Tenants whose names prefix each other.
		put(t, s,
			&widget{ID: "w1", Tenant: "acme", Owner: "ann", Tags: []string{"red"}, Email: "a@example.com"},
			&widget{ID: "w1", Tenant: "acme2", Owner: "ann", Tags: []string{"red"}, Email: "a@example.com"},
			&widget{ID: "w2", Tenant: "acme2", Owner: "ann", Tags: []string{"red"}},
		)
		view(t, s, func(r store.Reader) error {
			for _, tenant := range []string{"acme", "acme2", "acm", "acme22", "b"} {
				var want []string
				switch tenant {
				case "acme":
					want = []string{"w1"}
				case "acme2":
					want = []string{"w1", "w2"}
				}
				var got []string
				check := func(how string, ws []*widget, err error) {
					t.Helper()
					if err != nil {
						t.Errorf("tenant %q %s: %v", tenant, how, err)
					}
					got = got[:0]
					for _, w := range ws {
						if w.Tenant != tenant {
							t.Errorf("tenant %q %s returned %s of tenant %q", tenant, how, w.ID, w.Tenant)
						}
						got = append(got, w.ID)
					}
					if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("tenant %q %s (-want +got):\n%s", tenant, how, diff)
					}
				}
				ws, _, err := c.List(r, tenant, store.Page{Forward: true})
				check("List", ws, err)
				ws, _, err = c.ListBy(r, tenant, "owner", []any{"ann"}, store.Page{Forward: true})
				check("ListBy owner", ws, err)
				ws, _, err = c.ListBy(r, tenant, "tag", []any{"red"}, store.Page{Forward: true})
				check("ListBy tag", ws, err)
				ws = ws[:0]
				for _, id := range []string{"w1", "w2"} {
					w, err := c.Get(r, tenant, id)
					if err == nil {
						ws = append(ws, w)
					} else if !errors.Is(err, errs.NotFound) {
						t.Errorf("tenant %q Get %s: %v", tenant, id, err)
					}
				}
				check("Get", ws, nil)
				n, err := c.CountBy(r, tenant, "tag", "red")
				if err != nil || n != len(want) {
					t.Errorf("tenant %q CountBy = %d, %v; want %d", tenant, n, err, len(want))
				}
				w, err := c.Lookup(r, tenant, "email", "a@example.com")
				if len(want) > 0 && (err != nil || w.Tenant != tenant) {
					t.Errorf("tenant %q Lookup = %+v, %v; want its own w1", tenant, w, err)
				}
				if len(want) == 0 && !errors.Is(err, errs.NotFound) {
					t.Errorf("tenant %q Lookup = %+v, %v; want errs.NotFound", tenant, w, err)
				}
			}
			return nil
		})
		err := s.Update(t.Context(), func(tx store.Txn) error { return c.Delete(tx, "acm", "w1") })
		if !errors.Is(err, errs.NotFound) {
			t.Errorf("Delete of another tenant's record: %v, want errs.NotFound", err)
		}
		if _, ok := get(t, s, string(store.Key("acme", "r", "widget", "w1"))); !ok {
			t.Errorf("Delete in tenant acm removed acme's record")
		}
	})

	t.Run("ForgedCursors", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		var ws []*widget
		for _, tenant := range []string{"acme", "acme2", "acm"} {
			for i := range 6 {
				ws = append(ws, &widget{ID: fmt.Sprintf("w%d", i), Tenant: tenant, Owner: "ann", Seq: i})
				ws = append(ws, &widget{ID: fmt.Sprintf("x%d", i), Tenant: tenant, Owner: "anna", Seq: i})
			}
		}
		put(t, s, ws...)
		// A real cursor of tenant acme, and hand-made ones aiming past the
		// end of the prefix, at its start, or at other tenants' keys.
		var acmeCursor string
		view(t, s, func(r store.Reader) error {
			var err error
			_, acmeCursor, err = c.ListBy(r, "acme", "owner", []any{"ann"}, store.Page{Limit: 2})
			return err
		})
		enc := base64.RawURLEncoding.EncodeToString
		cursors := []string{
			acmeCursor,
			enc([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
			enc([]byte{0x00}),
			enc([]byte{0x00, 0xff}),
			enc(append([]byte{0x00}, store.Key("acme2", "i", "widget", "owner", "ann")...)),
			enc(store.Key("acme2", "r", "widget", "w3")),
			enc(store.Key("acme", "i", "widget", "owner", "ann", 3, "w3")),
		}
		view(t, s, func(r store.Reader) error {
			for _, tenant := range []string{"acme2", "acm"} {
				for _, cursor := range cursors {
					for _, forward := range []bool{true, false} {
						for _, how := range []string{"List", "ListBy"} {
							var page []*widget
							var err error
							if how == "List" {
								page, _, err = c.List(r, tenant, store.Page{Cursor: cursor, Forward: forward})
							} else {
								page, _, err = c.ListBy(r, tenant, "owner", []any{"ann"}, store.Page{Cursor: cursor, Forward: forward})
							}
							if err != nil {
								t.Errorf("%s tenant %q cursor %q: %v", how, tenant, cursor, err)
							}
							for _, w := range page {
								if w.Tenant != tenant || (how == "ListBy" && w.Owner != "ann") {
									t.Errorf("%s tenant %q owner ann, cursor %q, forward %v returned %+v", how, tenant, cursor, forward, w)
								}
							}
						}
					}
				}
			}
			for _, cursor := range []string{"!!!", "a", "===="} {
				_, _, err := c.ListBy(r, "acme", "owner", []any{"ann"}, store.Page{Cursor: cursor})
				if !errors.Is(err, errs.Invalid) {
					t.Errorf("ListBy with cursor %q: %v, want errs.Invalid", cursor, err)
				}
			}
			return nil
		})
	})
}
