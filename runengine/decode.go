package runengine

import "encoding/json"

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
// validates and decodes its bytes again).
type (
	plainRun   Run
	plainStep  StepRun
	storedStep struct {
		plainStep
		Internal stepInternal `json:"internal"`
	}
	storedRun struct {
		*plainRun
		Steps []storedStep `json:"steps"`
	}
)

// decodeStoredRun decodes a run record as the engine stores it: by the
// scanner of the form appendRun writes, or by encoding/json when the
// scanner does not recognise the record.
func decodeStoredRun(raw []byte) (*Run, error) {
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
	if s.Steps != nil {
		r.Steps = make([]StepRun, len(s.Steps))
		for i := range s.Steps {
			r.Steps[i] = StepRun(s.Steps[i].plainStep)
			r.Steps[i].internal = s.Steps[i].Internal
		}
	}
	return r, nil
}
