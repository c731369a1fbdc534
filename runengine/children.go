package runengine

import (
	"context"

	"github.com/bas-platform/bas/store"
)

// childPrefix is where the runs that tenant's run parent started (through
// the events it emitted) are indexed, by id.
func childPrefix(tenant, parent string) []byte { return store.Key(tenant, "run-child", parent) }

// childOps index a new run under the run whose event started it, in the
// run's first commit; a run no run started writes nothing.
func childOps(tenant string, r *Run) []func(store.Txn) error {
	c := r.Trigger.Cause
	if c == nil || c.RunID == "" {
		return nil
	}
	key := store.AppendKey(childPrefix(tenant, c.RunID), r.ID)
	return []func(store.Txn) error{setKey(key, nil)}
}

// ListStartedRuns returns one page of the runs that run id's events
// started (those whose trigger.cause.run_id is id), newest first, from an
// index written with each such run's start. An unknown run is not found.
// Runs started before the index existed are not listed.
func (e *Engine) ListStartedRuns(ctx context.Context, tenant, id string, p store.Page) ([]*Run, string, error) {
	var out []*Run
	var next string
	err := e.st.View(ctx, func(r store.Reader) error {
		if _, err := runs.Get(r, tenant, id); err != nil {
			return err
		}
		var err error
		out, next, err = runs.ListUnder(r, tenant, childPrefix(tenant, id), p)
		return err
	})
	return out, next, err
}
