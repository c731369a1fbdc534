package runengine

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
)

// UnmarshalJSON decodes a step as the API shows it, or as the engine
// stores it with its bookkeeping.
func (s *StepRun) UnmarshalJSON(b []byte) error {
	type plain StepRun
	var w struct {
		*plain
		Internal stepInternal `json:"internal"`
	}
	w.plain = (*plain)(s)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	s.internal = w.Internal
	return nil
}

// The stored run decoded in one pass: the steps' bookkeeping is a field
// of storedStep, so no step is handed to StepRun.UnmarshalJSON (which
// validates and decodes its bytes again). The times, which form 2 writes
// as numbers (see appendStoredTime), and the automatic flag, which it
// leaves out when it is the default, are read apart and set after.
type (
	plainRun   Run
	plainStep  StepRun
	storedStep struct {
		plainStep
		StartedAt   json.RawMessage `json:"started_at"`
		CompletedAt json.RawMessage `json:"completed_at"`
		Internal    storedInternal  `json:"internal"`
	}
	storedInternal struct {
		stepInternal
		Auto     *bool           `json:"auto"`
		Deadline json.RawMessage `json:"deadline"`
	}
	storedRun struct {
		*plainRun
		Form        *int            `json:"form"`
		StartedAt   json.RawMessage `json:"started_at"`
		CompletedAt json.RawMessage `json:"completed_at"`
		Steps       []storedStep    `json:"steps"`
	}
)

// decodeStoredRun decodes the record of run id as the engine stores it:
// forms 4 and 3 (binary, see appendStoredRun) by decodeBinaryRun; forms 1
// and 2 (JSON) by the scanner of the form appendRun writes, or by
// encoding/json when the scanner does not recognise the record. Form 4
// leaves the id to the record's key; older forms hold it.
func decodeStoredRun(id string, raw []byte) (*Run, error) {
	if len(raw) > 0 && (raw[0] == storedForm || raw[0] == idForm) {
		return decodeBinaryRun(id, raw)
	}
	if r, ok := decodeStoredRunFast(raw); ok {
		return r, nil
	}
	return decodeStoredRunJSON(raw)
}

// decodeStoredRunJSON decodes a run record with encoding/json.
func decodeStoredRunJSON(raw []byte) (*Run, error) {
	r := new(Run)
	s := storedRun{plainRun: (*plainRun)(r)}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	form := 1
	if s.Form != nil {
		if !validForm(int64(*s.Form)) {
			return nil, errors.Newf("runengine: a run record of form %d", *s.Form)
		}
		form = *s.Form
	}
	var err error
	if r.StartedAt, err = storedTime(s.StartedAt, 0, false); err != nil {
		return nil, err
	}
	base := r.StartedAt.UnixMicro()
	if r.CompletedAt, err = storedTimePtr(s.CompletedAt, base); err != nil {
		return nil, err
	}
	if s.Steps != nil {
		r.Steps = make([]StepRun, len(s.Steps))
		for i := range s.Steps {
			st, in := &r.Steps[i], &s.Steps[i].Internal
			*st = StepRun(s.Steps[i].plainStep)
			st.internal = in.stepInternal
			if st.StartedAt, err = storedTimePtr(s.Steps[i].StartedAt, base); err != nil {
				return nil, err
			}
			if st.CompletedAt, err = storedTimePtr(s.Steps[i].CompletedAt, base); err != nil {
				return nil, err
			}
			if st.internal.Deadline, err = storedTimePtr(in.Deadline, base); err != nil {
				return nil, err
			}
			switch {
			case in.Auto != nil:
				st.internal.Auto = *in.Auto
			case form == jsonForm:
				st.internal.Auto = autoDefault(st)
			}
		}
	}
	return r, nil
}

// validForm reports whether a JSON record's "form" is one this engine
// reads.
func validForm(n int64) bool { return n == 1 || n == jsonForm }

// storedTime reads a time of a stored run: a JSON string as time.Time
// reads it, null (or nothing) as the zero time, an integer as unix
// microseconds from base when relative, else from 1970 (see
// appendStoredTime).
func storedTime(raw []byte, base int64, relative bool) (time.Time, error) {
	var t time.Time
	if len(raw) == 0 {
		return t, nil
	}
	if raw[0] == '"' || string(raw) == "null" {
		return t, t.UnmarshalJSON(raw)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return t, errors.Newf("runengine: a stored time is neither a string nor microseconds: %.40s", raw)
	}
	if !relative {
		base = 0
	}
	t, ok := microTime(base, n)
	if !ok {
		return t, errors.Newf("runengine: a stored time out of range: %d", n)
	}
	return t, nil
}

// storedTimePtr is storedTime of a relative time that may be null.
func storedTimePtr(raw []byte, base int64) (*time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	t, err := storedTime(raw, base, true)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// The unix microseconds of the first and the last time storedMicros
// writes as a number: 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z.
const (
	minStoredMicros = -62135596800_000000
	maxStoredMicros = 253402300799_999999
)

// microTime is the UTC time n microseconds after base (unix microseconds),
// and whether it is one storedMicros writes as a number (which also keeps
// the sum from overflowing).
func microTime(base, n int64) (time.Time, bool) {
	if n < minStoredMicros-base || n > maxStoredMicros-base {
		return time.Time{}, false
	}
	return time.UnixMicro(base + n).UTC(), true
}
