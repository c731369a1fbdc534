package batch_test

import (
	"fmt"

	"github.com/bas-platform/bas/internal/batch"
)

// A request carries its own answer; the leader's run fills in every answer
// of its batch (here one request, so one batch).
func ExampleLeader() {
	type req struct {
		n, square int
	}
	var l batch.Leader[*req]
	r := &req{n: 7}
	l.Do(r, func(b []*req) {
		for _, x := range b {
			x.square = x.n * x.n
		}
	})
	fmt.Println(r.square)
	// Output: 49
}
