package bounded_test

import (
	"fmt"

	"github.com/bas-platform/bas/internal/bounded"
)

// A cache of at most two entries: room is made before each entry is kept.
func ExampleMakeRoom() {
	const max = 2
	kept := map[string]int{}
	for i, k := range []string{"a", "b", "c", "d"} {
		bounded.MakeRoom(kept, max)
		kept[k] = i
		fmt.Println(len(kept))
	}
	// Output:
	// 1
	// 2
	// 2
	// 2
}
