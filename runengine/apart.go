package runengine

import (
	"fmt"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// MaxInlineOutputBytes is the largest step output (as JSON) a run record
// holds; a larger one is stored apart, under its own key, in the commit
// that first stores the run with it, and the record keeps its size
// (output_bytes). A run read by id has it back; lists and the cockpit show
// {"omitted": ..., "bytes": n} in its place, so they stay small.
const MaxInlineOutputBytes = 64 << 10

// MaxListedOutputBytes is the largest step output (as JSON) lists of runs
// show: the API replaces a larger one by {"omitted": ..., "bytes": n}, as
// the engine's lists do for outputs stored apart.
const MaxListedOutputBytes = 4 << 10

// outputKey holds a step output stored apart.
func outputKey(tenant, runID, stepKey string) []byte {
	return store.Key(tenant, "run-output", runID, stepKey)
}

// encodeRecord appends the stored record of en's run to b, moving the
// run's outputs over MaxInlineOutputBytes out of it as it writes it (see
// appendRecord): their writes join the held changes. Only a run with such
// an output pays for it.
func (w *worker) encodeRecord(en *entry, b []byte) ([]byte, error) {
	var moved []apartOutput
	r := en.run
	raw, err := appendRecord(b, r, &moved)
	for _, m := range moved {
		en.held.ops = append(en.held.ops, setKey(outputKey(r.Tenant, r.ID, r.Steps[m.step].Key), m.json))
	}
	return raw, err
}

// setOutput sets the output of st, a step of x's run. An output the step
// had stored apart is deleted in the same commit: the record holds the new
// one, or moves it apart again (the commit writes the key after this
// delete).
func (x *exec) setOutput(st *StepRun, v any) {
	st.Output = v
	if st.internal.OutputBytes > 0 {
		st.internal.OutputBytes = 0
		x.fx.ops = append(x.fx.ops, deleteKey(outputKey(x.r.Tenant, x.r.ID, st.Key)))
	}
}

// loadApart reads back the outputs of r stored apart.
func loadApart(rd store.Reader, tenant string, r *Run) error {
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.internal.OutputBytes == 0 || st.Output != nil {
			continue
		}
		raw, err := rd.Get(outputKey(tenant, r.ID, st.Key))
		if err != nil {
			return errors.Wrapf(err, "read the output of step %s of run %s", st.Key, r.ID)
		}
		if st.Output, err = decodeJSON(raw); err != nil {
			return errors.Wrapf(err, "decode the output of step %s of run %s", st.Key, r.ID)
		}
	}
	return nil
}

// markApart shows each output stored apart as omitted, for lists.
func markApart(rs []*Run) {
	for _, r := range rs {
		for i := range r.Steps {
			st := &r.Steps[i]
			if st.internal.OutputBytes > 0 && st.Output == nil {
				st.Output = map[string]any{"omitted": fmt.Sprintf("larger than %d bytes; GET the run for it", MaxListedOutputBytes),
					"bytes": st.internal.OutputBytes}
			}
		}
	}
}
