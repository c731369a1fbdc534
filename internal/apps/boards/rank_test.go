package boards

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRankBetween(t *testing.T) {
	t.Parallel()
	for _, test := range []struct{ a, b, want string }{
		{"", "", "a0"},
		{"a0", "", "a1"},
		{"", "a0", "Zz"},
		{"a0", "a1", "a0V"},
		{"a1", "a2", "a1V"},
		{"a0V", "a1", "a0l"},
		{"Zz", "a0", "ZzV"},
		{"Zz", "a01", "a0"},
		{"", "a0V", "a0"},
		{"az", "", "b00"},
		{"b00", "b01", "b00V"},
		{"a0", "a0V", "a0G"},
		{"a0", "a01", "a00V"},
	} {
		got, err := rankBetween(test.a, test.b)
		if err != nil || got != test.want {
			t.Errorf("rankBetween(%q, %q) = %q, %v; want %q", test.a, test.b, got, err, test.want)
		}
	}
	for _, bad := range [][2]string{{"a1", "a0"}, {"a0", "a0"}, {"a", ""}, {"", "a00"}, {"a0!", ""}} {
		if got, err := rankBetween(bad[0], bad[1]); err == nil {
			t.Errorf("rankBetween(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}

// TestRankOrder inserts at random places and checks that the keys keep
// the order of insertion's intent and stay short; appends stay shorter.
func TestRankOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []string
	for range 5000 {
		i := rng.IntN(len(keys) + 1)
		a, b := "", ""
		if i > 0 {
			a = keys[i-1]
		}
		if i < len(keys) {
			b = keys[i]
		}
		k, err := rankBetween(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if !validRank(k) || (a != "" && k <= a) || (b != "" && k >= b) {
			t.Fatalf("rankBetween(%q, %q) = %q", a, b, k)
		}
		keys = slices.Insert(keys, i, k)
	}
	if !slices.IsSorted(keys) {
		t.Fatal("keys out of order")
	}
	for _, k := range keys {
		if len(k) > 20 {
			t.Errorf("key %q after 5000 random inserts", k)
		}
	}
	last := ""
	for range 100_000 {
		k, _ := rankBetween(last, "")
		last = k
	}
	if len(last) > 4 {
		t.Errorf("after 100,000 appends the key is %q", last)
	}
	// Always inserting at the top keeps keys valid too.
	first := "a0"
	for range 1000 {
		k, err := rankBetween("", first)
		if err != nil || k >= first {
			t.Fatalf("before %q: %q, %v", first, k, err)
		}
		first = k
	}
}
