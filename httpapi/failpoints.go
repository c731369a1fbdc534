//go:build !failpoints

package httpapi

import "net/http"

// Failpoints are the handler's test hooks. Outside builds with the
// failpoints tag (go test -tags failpoints) this type is empty and its
// hooks are no-ops the compiler removes; see failpoints_on.go for the
// hooks a test may set.
type Failpoints struct{}

func (Failpoints) beforeResponse(*http.Request, storedResponse) {}
