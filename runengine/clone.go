package runengine

import (
	"maps"
	"slices"
	"time"
)

// The engine hands callers snapshots: a Run, Task, Approval or Event a
// caller receives shares no map, slice or pointed-to value with what the
// workers hold, so a
// caller may keep and change it freely.

// cloneRun copies r for a caller, pointed-to values included (times and
// strings from one slab each, so a snapshot costs a few allocations).
func cloneRun(r *Run) *Run {
	c := *r
	var times []time.Time
	var strs []string
	nt, ns := 0, 0
	countTime := func(t *time.Time) {
		if t != nil {
			nt++
		}
	}
	countStr := func(s *string) {
		if s != nil {
			ns++
		}
	}
	countTime(r.CompletedAt)
	countStr(r.CurrentStep)
	countStr(r.Error)
	for i := range r.Steps {
		s := &r.Steps[i]
		countTime(s.StartedAt)
		countTime(s.CompletedAt)
		countStr(s.Error)
		countStr(s.ApprovalID)
		countStr(s.TaskID)
	}
	if nt > 0 {
		times = make([]time.Time, 0, nt)
	}
	if ns > 0 {
		strs = make([]string, 0, ns)
	}
	copyTime := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		times = append(times, *t)
		return &times[len(times)-1]
	}
	copyStr := func(s *string) *string {
		if s == nil {
			return nil
		}
		strs = append(strs, *s)
		return &strs[len(strs)-1]
	}
	c.CompletedAt = copyTime(r.CompletedAt)
	c.CurrentStep = copyStr(r.CurrentStep)
	c.Error = copyStr(r.Error)
	c.Trigger.Data = cloneMap(r.Trigger.Data)
	c.Search = maps.Clone(r.Search)
	if r.Paused != nil {
		p := *r.Paused
		p.Timers = slices.Clone(p.Timers)
		p.Events = slices.Clone(p.Events)
		for i := range p.Events {
			p.Events[i].Data = cloneMap(p.Events[i].Data)
			p.Events[i].Key = slices.Clone(p.Events[i].Key)
		}
		c.Paused = &p
	}
	if r.Steps != nil {
		c.Steps = make([]StepRun, len(r.Steps))
		for i := range r.Steps {
			s := r.Steps[i]
			s.Output = cloneValue(s.Output)
			s.StartedAt, s.CompletedAt = copyTime(s.StartedAt), copyTime(s.CompletedAt)
			s.Error, s.ApprovalID, s.TaskID = copyStr(s.Error), copyStr(s.ApprovalID), copyStr(s.TaskID)
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
