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
