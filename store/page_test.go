package store_test

import (
	"testing"

	"github.com/bas-platform/bas/store"
)

// TestPageSize checks the size of a page: its Limit, or 50 when that is
// not positive.
func TestPageSize(t *testing.T) {
	for _, tc := range []struct {
		limit, want int
	}{{0, 50}, {-3, 50}, {1, 1}, {50, 50}, {200, 200}} {
		if got := (store.Page{Limit: tc.limit}).Size(); got != tc.want {
			t.Errorf("Page{Limit: %d}.Size() = %d, want %d", tc.limit, got, tc.want)
		}
	}
}
