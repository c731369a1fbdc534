package bounded

import "testing"

// TestMakeRoom: below the bound nothing goes; at or over it one entry goes.
func TestMakeRoom(t *testing.T) {
	for _, tc := range []struct{ have, max, want int }{
		{0, 2, 0}, {1, 2, 1}, {2, 2, 1}, {3, 2, 2}, {1, 1, 0},
	} {
		m := map[int]bool{}
		for i := range tc.have {
			m[i] = true
		}
		MakeRoom(m, tc.max)
		if len(m) != tc.want {
			t.Errorf("%d entries, bound %d: %d left, want %d", tc.have, tc.max, len(m), tc.want)
		}
	}
}
