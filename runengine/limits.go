package runengine

// The size bounds of what runs carry, so that no run, event or list grows
// with what a caller or a provider sends.
const (
	// MaxEventDataBytes bounds the data of an event published from
	// outside (Publish), as JSON. A run's trigger data is an event's data.
	MaxEventDataBytes = 64 << 10
	// MaxStepOutputBytes bounds a step's output as JSON: a capability's
	// result beyond it fails the step (not retried), a task completed
	// with more is a 422.
	MaxStepOutputBytes = 256 << 10
	// MaxSubjectLen bounds a Subject's Type and Label, in characters, as the
	// HTTP API's manual start does.
	MaxSubjectLen = 200
	// MaxSubjectLabel bounds, in characters, the subject label a run takes
	// from its event's data: the bound of a label given by hand.
	MaxSubjectLabel = MaxSubjectLen
	// MaxTaskTitle bounds, in characters, a task's title once the run's
	// data is filled into its references (the bound of the title a
	// human_task step's config gives); a longer one is cut.
	MaxTaskTitle = 200
	// MaxTaskDescription bounds, in characters, a task's description once
	// the run's data is filled into its references (the bound of the
	// description a human_task step's config gives); a longer one is cut.
	MaxTaskDescription = 4000
)

// truncateRunes returns s cut to at most n characters.
func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
