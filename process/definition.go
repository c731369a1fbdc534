package process

import "slices"

// Needs returns the capabilities the definition's steps call (see
// StepType.Needs), sorted and without repeats.
func (d *Definition) Needs() []string {
	return needs(d.Steps)
}

// StepByKey returns the step with key.
func (d *Definition) StepByKey(key string) (Step, bool) {
	return stepByKey(d.Steps, key)
}

// Needs returns the capabilities the version's steps call.
func (v *Version) Needs() []string {
	return needs(v.Steps)
}

// StepByKey returns the version's step with key.
func (v *Version) StepByKey(key string) (Step, bool) {
	return stepByKey(v.Steps, key)
}

func needs(steps []Step) []string { return builtin().Needs(steps) }

// Needs returns the capabilities the steps call (StepType.Needs), sorted,
// each once; steps of a type r lacks need nothing.
func (r *StepRegistry) Needs(steps []Step) []string {
	var out []string
	for _, s := range steps {
		if t, ok := r.Lookup(s.Type); ok {
			out = append(out, t.Needs(s)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func stepByKey(steps []Step, key string) (Step, bool) {
	for _, s := range steps {
		if s.Key == key {
			return s, true
		}
	}
	return Step{}, false
}
