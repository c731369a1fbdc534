package ids_test

import (
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/ids"
)

// A service owns a Generator; the ids it makes at one instant keep the
// order they were made in.
func ExampleGenerator() {
	var gen ids.Generator
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	first, second := gen.New("run", at), gen.New("run", at)
	made, _ := ids.Time(first)
	fmt.Println(len(first), first < second, made, ids.Valid("run", second))
	// Output: 30 true 2026-03-01 09:00:00 +0000 UTC true
}
