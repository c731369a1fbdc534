package ids

import (
	"strings"
	"testing"
	"time"
)

func TestNewSortsByTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	for i := 0; i < 2000; i++ {
		at := base.Add(time.Duration(i) * 20 * time.Microsecond)
		id := New("run", at)
		if !strings.HasPrefix(id, "run_") || len(id) != 4+Len {
			t.Fatalf("id %q has the wrong form", id)
		}
		if id <= prev {
			t.Fatalf("id %d (%s) does not sort after %s", i, id, prev)
		}
		prev = id
		got, ok := Time(id)
		if !ok || !got.Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("Time(%s) = %v, %v; want %v", id, got, ok, at.Truncate(time.Millisecond))
		}
	}
}

func TestNewIsUnguessable(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := New("tsk", at)
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestFloorSortsFirst(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if f := Floor("evt", at); New("evt", at) <= f || New("evt", at.Add(-time.Millisecond)) >= f {
		t.Fatalf("Floor %s does not separate ids made before and at %v", f, at)
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	id := New("apr", time.Now())
	for _, c := range []struct {
		prefix, id string
		want       bool
	}{
		{"apr", id, true},
		{"run", id, false},
		{"apr", id[:len(id)-1], false},
		{"apr", "apr_" + strings.Repeat("U", Len), false},
	} {
		if got := Valid(c.prefix, c.id); got != c.want {
			t.Errorf("Valid(%q, %q) = %v, want %v", c.prefix, c.id, got, c.want)
		}
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	a, b := Token(20), Token(20)
	if len(a) != 32 || a == b || strings.ToLower(a) != a {
		t.Fatalf("tokens %q %q", a, b)
	}
}
