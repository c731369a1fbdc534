package runengine

import (
	"strconv"
	"time"

	"github.com/bas-platform/bas/internal/jsonvalue"
)

// appendRun appends r's JSON: the stored form (engine state included,
// empty fields left out) when stored, else the API view. The view is byte
// for byte what encoding/json writes for it, and the stored form decodes to
// the run it encodes (the tests hold it to both); it exists because a run is
// encoded at every commit of its changes and reflection was a large share
// of that cost.
func appendRun(b []byte, r *Run, stored bool) ([]byte, error) {
	var err error
	if b == nil {
		// Room for a run of small outputs (a completed three-step run is
		// about 1.1 KB), so the buffer rarely grows.
		b = make([]byte, 0, 384+288*len(r.Steps))
	}
	b = append(b, `{"id":`...)
	b = jsonvalue.AppendString(b, r.ID)
	b = append(b, `,"process_id":`...)
	b = jsonvalue.AppendString(b, r.ProcessID)
	b = append(b, `,"process_name":`...)
	b = jsonvalue.AppendString(b, r.ProcessName)
	b = append(b, `,"process_version":`...)
	b = strconv.AppendInt(b, int64(r.ProcessVersion), 10)
	b = append(b, `,"function":`...)
	b = jsonvalue.AppendString(b, r.Function)
	b = append(b, `,"status":`...)
	b = jsonvalue.AppendString(b, string(r.Status))
	b = append(b, `,"subject":{"type":`...)
	b = jsonvalue.AppendString(b, r.Subject.Type)
	b = append(b, `,"label":`...)
	b = jsonvalue.AppendString(b, r.Subject.Label)
	b = append(b, `},"trigger":{"type":`...)
	b = jsonvalue.AppendString(b, r.Trigger.Type)
	if !stored || r.Trigger.Event != nil {
		b = append(b, `,"event":`...)
		b = appendStringPtr(b, r.Trigger.Event)
	}
	if r.Trigger.EventID != "" {
		b = append(b, `,"event_id":`...)
		b = jsonvalue.AppendString(b, r.Trigger.EventID)
	}
	if r.Trigger.EmittedBy != "" {
		b = append(b, `,"emitted_by":`...)
		b = jsonvalue.AppendString(b, r.Trigger.EmittedBy)
	}
	if len(r.Trigger.Data) > 0 {
		b = append(b, `,"data":`...)
		if b, err = jsonvalue.Append(b, r.Trigger.Data); err != nil {
			return b, err
		}
	}
	if r.Trigger.Cause != nil {
		b = append(b, `,"cause":`...)
		b = r.Trigger.Cause.appendJSON(b)
	}
	b = append(b, '}')
	if !stored || r.CurrentStep != nil {
		b = append(b, `,"current_step":`...)
		b = appendStringPtr(b, r.CurrentStep)
	}
	b = append(b, `,"steps":`...)
	if r.Steps == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Steps {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendStep(b, &r.Steps[i], stored); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if !stored || r.Overdue {
		b = append(b, `,"overdue":`...)
		b = strconv.AppendBool(b, r.Overdue)
	}
	b = append(b, `,"started_at":`...)
	if b, err = jsonvalue.AppendTime(b, r.StartedAt); err != nil {
		return b, err
	}
	if !stored || r.CompletedAt != nil {
		b = append(b, `,"completed_at":`...)
		if b, err = appendTimePtr(b, r.CompletedAt); err != nil {
			return b, err
		}
	}
	if !stored || r.Error != nil {
		b = append(b, `,"error":`...)
		b = appendStringPtr(b, r.Error)
	}
	if !stored || r.MinutesSaved != 0 {
		b = append(b, `,"minutes_saved":`...)
		b = strconv.AppendInt(b, int64(r.MinutesSaved), 10)
	}
	if r.RerunOf != "" {
		b = append(b, `,"rerun_of":`...)
		b = jsonvalue.AppendString(b, r.RerunOf)
		b = append(b, `,"rerun_from_step":`...)
		b = jsonvalue.AppendString(b, r.RerunFromStep)
	}
	if r.WaitingReason != "" {
		b = append(b, `,"waiting_reason":`...)
		b = jsonvalue.AppendString(b, r.WaitingReason)
	}
	if r.Priority != "" {
		b = append(b, `,"priority":`...)
		b = jsonvalue.AppendString(b, r.Priority)
	}
	if len(r.Search) > 0 {
		b = append(b, `,"search":`...)
		if b, err = jsonvalue.Append(b, r.Search); err != nil {
			return b, err
		}
	}
	if stored {
		b = append(b, `,"cursor":`...)
		b = strconv.AppendInt(b, int64(r.Cursor), 10)
		if r.StartedBy != "" {
			b = append(b, `,"started_by":`...)
			b = jsonvalue.AppendString(b, r.StartedBy)
		}
		if r.Paused != nil {
			b = append(b, `,"paused":`...)
			if b, err = r.Paused.appendJSON(b); err != nil {
				return b, err
			}
		}
	}
	return append(b, '}'), nil
}

func appendStep(b []byte, s *StepRun, stored bool) ([]byte, error) {
	var err error
	b = append(b, `{"key":`...)
	b = jsonvalue.AppendString(b, s.Key)
	b = append(b, `,"type":`...)
	b = jsonvalue.AppendString(b, s.Type)
	if s.Name != "" {
		b = append(b, `,"name":`...)
		b = jsonvalue.AppendString(b, s.Name)
	}
	b = append(b, `,"status":`...)
	b = jsonvalue.AppendString(b, string(s.Status))
	if !stored || s.StartedAt != nil {
		b = append(b, `,"started_at":`...)
		if b, err = appendTimePtr(b, s.StartedAt); err != nil {
			return b, err
		}
	}
	if !stored || s.CompletedAt != nil {
		b = append(b, `,"completed_at":`...)
		if b, err = appendTimePtr(b, s.CompletedAt); err != nil {
			return b, err
		}
	}
	if !stored || (s.Output != nil && s.internal.OutputBytes == 0) {
		b = append(b, `,"output":`...)
		if b, err = jsonvalue.Append(b, s.Output); err != nil {
			return b, err
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{`,"error":`, s.Error}, {`,"approval_id":`, s.ApprovalID}, {`,"task_id":`, s.TaskID}} {
		if !stored || f.v != nil {
			b = append(b, f.name...)
			b = appendStringPtr(b, f.v)
		}
	}
	if !stored || s.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(s.Attempts), 10)
	}
	if stored && !s.internal.zero() {
		b = append(b, `,"internal":`...)
		if b, err = s.internal.append(b); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// zero reports what omitzero tests: every field its zero value (an empty
// but non-nil Args is not zero).
func (in *stepInternal) zero() bool {
	return !in.Approved && in.Args == nil && !in.Auto && !in.Sample && in.Reminders == 0 && in.Checks == 0 &&
		in.Deadline == nil && in.WaitToken == "" && in.WaitEvent == "" && !in.SLAFired && in.AmountSeen == nil &&
		in.OutputBytes == 0 && !in.RateReserved
}

// append writes the fields of in that are not empty, as omitempty does.
func (in *stepInternal) append(b []byte) ([]byte, error) {
	var err error
	b = append(b, '{')
	field := func(name string) {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
	}
	if in.Approved {
		field("approved")
		b = append(b, "true"...)
	}
	if len(in.Args) > 0 {
		field("args")
		if b, err = jsonvalue.Append(b, in.Args); err != nil {
			return b, err
		}
	}
	if in.Auto {
		field("auto")
		b = append(b, "true"...)
	}
	if in.Sample {
		field("sample")
		b = append(b, "true"...)
	}
	if in.Reminders != 0 {
		field("reminders")
		b = strconv.AppendInt(b, int64(in.Reminders), 10)
	}
	if in.Checks != 0 {
		field("checks")
		b = strconv.AppendInt(b, int64(in.Checks), 10)
	}
	if in.Deadline != nil {
		field("deadline")
		if b, err = jsonvalue.AppendTime(b, *in.Deadline); err != nil {
			return b, err
		}
	}
	if in.WaitToken != "" {
		field("wait_token")
		b = jsonvalue.AppendString(b, in.WaitToken)
	}
	if in.WaitEvent != "" {
		field("wait_event")
		b = jsonvalue.AppendString(b, in.WaitEvent)
	}
	if in.SLAFired {
		field("sla_fired")
		b = append(b, "true"...)
	}
	if in.AmountSeen != nil {
		field("amount")
		b = strconv.AppendInt(b, *in.AmountSeen, 10)
	}
	if in.OutputBytes != 0 {
		field("output_bytes")
		b = strconv.AppendInt(b, int64(in.OutputBytes), 10)
	}
	if in.RateReserved {
		field("rate_reserved")
		b = append(b, "true"...)
	}
	return append(b, '}'), nil
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsonvalue.AppendString(b, *s)
}

func appendTimePtr(b []byte, t *time.Time) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	return jsonvalue.AppendTime(b, *t)
}

// appendJSON appends the cause's JSON, what json.Marshal writes for it.
func (c *Cause) appendJSON(b []byte) []byte {
	b = append(b, `{"run_id":`...)
	b = jsonvalue.AppendString(b, c.RunID)
	b = append(b, `,"root_run_id":`...)
	b = jsonvalue.AppendString(b, c.RootRunID)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(c.Depth), 10)
	b = append(b, `,"processes":`...)
	if c.Processes == nil {
		return append(b, `null}`...)
	}
	b = append(b, '[')
	for i, p := range c.Processes {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonvalue.AppendString(b, p)
	}
	return append(b, ']', '}')
}
