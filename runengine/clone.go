package runengine

// The engine hands callers snapshots: a Run, Task, Approval or Event a
// caller receives shares no map or slice with what the workers hold, so a
// caller may keep and change it freely.

// cloneRun copies r for a caller.
func cloneRun(r *Run) *Run {
	c := *r
	if r.CurrentStep != nil {
		s := *r.CurrentStep
		c.CurrentStep = &s
	}
	c.Trigger.Data = cloneMap(r.Trigger.Data)
	if r.Steps != nil {
		c.Steps = make([]StepRun, len(r.Steps))
		for i := range r.Steps {
			s := r.Steps[i]
			s.Output = cloneValue(s.Output)
			s.internal = stepInternal{} // the engine's own bookkeeping stays with it
			c.Steps[i] = s
		}
	}
	return &c
}

// cloneTask copies t for a caller.
func cloneTask(t *Task) *Task {
	c := *t
	c.Actions = append([]string(nil), t.Actions...)
	if t.Fields != nil {
		c.Fields = make([]map[string]any, len(t.Fields))
		for i, f := range t.Fields {
			c.Fields[i] = cloneMap(f)
		}
	}
	c.Values = cloneMap(t.Values)
	return &c
}

// cloneApproval copies a for a caller.
func cloneApproval(a *Approval) *Approval {
	c := *a
	c.Args = cloneMap(a.Args)
	return &c
}

// cloneEvent copies ev for a caller.
func cloneEvent(ev *Event) *Event {
	c := *ev
	c.Data = cloneMap(ev.Data)
	return &c
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneValue(v)
	}
	return c
}

// cloneValue copies the maps and lists of a decoded JSON value; anything
// else is a value already.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneMap(v)
	case []any:
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = cloneValue(x)
		}
		return c
	case []map[string]any:
		c := make([]map[string]any, len(v))
		for i, x := range v {
			c[i] = cloneMap(x)
		}
		return c
	case []string:
		return append([]string(nil), v...)
	}
	return v
}
