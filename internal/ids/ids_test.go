package ids

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewSortsByTime(t *testing.T) {
	t.Parallel()
	var gen Generator
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	prev := ""
	for i := 0; i < 2000; i++ {
		at := base.Add(time.Duration(i) * 20 * time.Microsecond)
		id := gen.New("run", at)
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
	var gen Generator
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := gen.New("tsk", at)
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
}

func TestFloorSortsFirst(t *testing.T) {
	t.Parallel()
	var gen, before Generator // one generator never goes back in time (see TestClockSteppingBackKeepsOrder)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if f := Floor("evt", at); gen.New("evt", at) <= f || before.New("evt", at.Add(-time.Millisecond)) >= f {
		t.Fatalf("Floor %s does not separate ids made before and at %v", f, at)
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	var gen Generator
	id := gen.New("apr", time.Now())
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

// TestSameInstantKeepsOrder makes ids at one instant, from one goroutine
// and then from several: each sorts after the one made before it.
func TestSameInstantKeepsOrder(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	var gen Generator
	prev := ""
	for i := 0; i < 1000; i++ {
		id := gen.New("tsk", at)
		if id <= prev {
			t.Fatalf("id %d (%s) made at the same instant sorts before %s", i, id, prev)
		}
		prev = id
	}
	// Concurrent makers: all distinct, and each one's ids in its order.
	var wg sync.WaitGroup
	ids := make([][]string, 8)
	for g := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				ids[g] = append(ids[g], gen.New("tsk", at))
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, own := range ids {
		for i, id := range own {
			if seen[id] || id <= prev || i > 0 && id <= own[i-1] {
				t.Fatalf("id %s is a duplicate or out of order", id)
			}
			seen[id] = true
		}
	}
}

// TestClockSteppingBackKeepsOrder: an id made at an earlier instant than the
// one before it (a clock stepped back, or one tests hold in the past) still
// sorts after it.
func TestClockSteppingBackKeepsOrder(t *testing.T) {
	t.Parallel()
	var gen Generator
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	prev := gen.New("run", now)
	for i, back := range []time.Duration{time.Microsecond, time.Millisecond, time.Hour, 5 * 365 * 24 * time.Hour} {
		id := gen.New("run", now.Add(-back))
		if id <= prev {
			t.Fatalf("id %d, made %v earlier, sorts before the one before it: %s <= %s", i, back, id, prev)
		}
		prev = id
	}
}

// TestNoPackageState checks that the package keeps no process-wide state:
// it declares no package-level variables, so two Generators never share
// the order of their ids.
func TestNoPackageState(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "ids.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
			t.Errorf("package-level var at %v", g.Pos())
		}
	}
}
