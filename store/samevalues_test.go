package store

import (
	"testing"
	"time"
)

func TestSameValues(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, test := range []struct {
		name string
		a, b [][]any
		want bool
	}{
		{"both empty", nil, [][]any{}, true},
		{"same strings", [][]any{{"open", "usr_1"}}, [][]any{{"open", "usr_1"}}, true},
		{"one string differs", [][]any{{"open", "usr_1"}}, [][]any{{"open", "usr_2"}}, false},
		{"an entry more", [][]any{{"a"}}, [][]any{{"a"}, {"b"}}, false},
		{"a value more", [][]any{{"a"}}, [][]any{{"a", "b"}}, false},
		{"the empty entry", [][]any{{}}, [][]any{{}}, true},
		{"entry against none", [][]any{{}}, nil, false},
		{"same numbers", [][]any{{3, int64(4)}}, [][]any{{3, int64(4)}}, true},
		{"int against int64", [][]any{{3}}, [][]any{{int64(3)}}, false},
		{"booleans", [][]any{{true}}, [][]any{{false}}, false},
		// Values it cannot compare are left to the keys.
		{"times", [][]any{{at}}, [][]any{{at}}, false},
	} {
		if got := sameValues(test.a, test.b); got != test.want {
			t.Errorf("%s: sameValues = %v, want %v", test.name, got, test.want)
		}
	}
}
