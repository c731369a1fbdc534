package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeLog is a Txn that records what is written through it and holds
// nothing (every Get misses).
type writeLog struct{ writes []string }

func (l *writeLog) Get([]byte) ([]byte, error)                            { return nil, ErrNotFound }
func (l *writeLog) Scan(ScanOptions, func(key, value []byte) error) error { return nil }
func (l *writeLog) Set(key, _ []byte) error {
	l.writes = append(l.writes, "set "+keyText(key))
	return nil
}
func (l *writeLog) Delete(key []byte) error {
	l.writes = append(l.writes, "delete "+keyText(key))
	return nil
}

// keyText shows a key's parts.
func keyText(key []byte) string {
	parts, err := DecodeKey(key)
	if err != nil {
		return string(key)
	}
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += "/"
		}
		s += p.(string)
	}
	return s
}

type sameRec struct{ ID, Group, Note string }

// TestIndexSameSkipsValues checks that an update whose versions an index's
// Same calls alike neither asks that index's Values nor writes its entries,
// and that one it calls different is indexed as without Same.
func TestIndexSameSkipsValues(t *testing.T) {
	t.Parallel()
	asked := 0
	c := &Collection[sameRec]{Name: "rec", ID: func(r *sameRec) string { return r.ID }, Indexes: []Index[sameRec]{{
		Name:   "group",
		Values: func(r *sameRec) [][]any { asked++; return [][]any{{r.Group}} },
		Same:   func(old, r *sameRec) bool { return old.Group == r.Group },
	}}}
	for _, test := range []struct {
		name      string
		old, v    sameRec
		wantAsked int
		want      []string
	}{
		{"same group", sameRec{"1", "a", "x"}, sameRec{"1", "a", "y"}, 0, []string{"set t/r/rec/1"}},
		{"group moved", sameRec{"1", "a", "x"}, sameRec{"1", "b", "x"}, 2,
			[]string{"delete t/i/rec/group/a/1", "set t/i/rec/group/b/1", "set t/r/rec/1"}},
	} {
		asked = 0
		var l writeLog
		if err := c.PutOver(&l, "t", &test.old, &test.v, []byte("{}")); err != nil {
			t.Fatalf("%s: PutOver: %v", test.name, err)
		}
		if asked != test.wantAsked {
			t.Errorf("%s: Values asked %d times, want %d", test.name, asked, test.wantAsked)
		}
		if diff := cmp.Diff(test.want, l.writes); diff != "" {
			t.Errorf("%s: writes (-want +got):\n%s", test.name, diff)
		}
	}
}

// keepLog is a writeLog that takes kept values.
type keepLog struct{ writeLog }

func (l *keepLog) SetKept(key, _ []byte) error {
	l.writes = append(l.writes, "kept "+keyText(key))
	return nil
}

// TestSetKept checks that SetKept uses a transaction's SetKept when it has
// one and Set otherwise, and that PutOverKept writes its record with it.
func TestSetKept(t *testing.T) {
	t.Parallel()
	c := &Collection[sameRec]{Name: "rec", ID: func(r *sameRec) string { return r.ID }}
	var plain writeLog
	var keeper keepLog
	for _, tx := range []Txn{&plain, &keeper} {
		if err := SetKept(tx, Key("t", "k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := c.PutOverKept(tx, "t", nil, &sameRec{ID: "1"}, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"set t/k", "set t/r/rec/1"}, plain.writes); diff != "" {
		t.Errorf("without SetKept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kept t/k", "kept t/r/rec/1"}, keeper.writes); diff != "" {
		t.Errorf("with SetKept (-want +got):\n%s", diff)
	}
}
