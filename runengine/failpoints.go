//go:build !failpoints

package runengine

// Failpoints are the engine's test hooks. Outside builds with the
// failpoints tag (go test -tags failpoints) this type is empty and its
// hooks are no-ops the compiler removes; see failpoints_on.go for the
// hooks a test may set.
type Failpoints struct{}

func (Failpoints) afterCall(tenant, runID, token string) {}

func (Failpoints) inGroupCommit(deltas int) error { return nil }

func (Failpoints) changeWaits(tenant, runID string) {}

func (Failpoints) jobPage(tenant, id string) {}
