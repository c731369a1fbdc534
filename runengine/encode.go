package runengine

import (
	"strconv"
	"time"

	"github.com/bas-platform/bas/internal/jsonvalue"
)

// appendRun appends r's JSON: the API view, or when stored the stored JSON
// of form 2 (engine state included, empty fields left out). The view is
// byte for byte what encoding/json writes for it, and the stored JSON
// decodes to the run it encodes (the tests hold it to both); it exists
// because reflection was a large share of the cost of encoding a run.
//
// The engine stores runs in form 4 now (appendStoredRun, binary) and reads
// form 3 (binary, with the id inside) and forms 1 and 2 as they were; the
// stored JSON is kept as the writer of form 2, the form its decoders read,
// so that the tests can make records of every shape in it.
//
// The stored JSON is form 2 (jsonForm): it names its form first, then
// the run's start (see appendStoredTime), so the times after it can be
// written relative to it; a step's automatic flag is written only when it
// differs from autoDefault. Records of form 1 (no "form" key: RFC 3339
// times, every flag written) are read as they were. An engine older than
// form 2 cannot read its records: it refuses their numeric times (the
// engine's own times are all written so) rather than misreading them.
func appendRun(b []byte, r *Run, stored bool) ([]byte, error) {
	var err error
	if b == nil {
		// Room for a run of small outputs (a completed three-step run is
		// about 650 bytes stored), so the buffer rarely grows.
		b = make([]byte, 0, 384+288*len(r.Steps))
	}
	var base int64 // the stored form's start, in unix microseconds
	if stored {
		b = append(b, `{"form":2,"started_at":`...)
		if b, err = appendStoredTime(b, r.StartedAt, 0); err != nil {
			return b, err
		}
		base = r.StartedAt.UnixMicro()
		b = append(b, `,"id":`...)
	} else {
		b = append(b, `{"id":`...)
	}
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
			if b, err = appendStep(b, &r.Steps[i], stored, base); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if !stored || r.Overdue {
		b = append(b, `,"overdue":`...)
		b = strconv.AppendBool(b, r.Overdue)
	}
	if !stored {
		b = append(b, `,"started_at":`...)
		if b, err = jsonvalue.AppendTime(b, r.StartedAt); err != nil {
			return b, err
		}
		b = append(b, `,"completed_at":`...)
		if b, err = appendTimePtr(b, r.CompletedAt); err != nil {
			return b, err
		}
	} else if b, err = appendStoredTimeField(b, `,"completed_at":`, r.CompletedAt, base); err != nil {
		return b, err
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
	if r.RerunJob != "" {
		b = append(b, `,"rerun_job":`...)
		b = jsonvalue.AppendString(b, r.RerunJob)
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
		if r.Cursor != 0 {
			b = append(b, `,"cursor":`...)
			b = strconv.AppendInt(b, int64(r.Cursor), 10)
		}
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
	} else if r.Paused != nil {
		b = append(b, `,"paused":`...)
		if b, err = r.Paused.appendShown(b); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendStep appends a step's JSON; base is the run's start in unix
// microseconds, which the stored form's times are written relative to.
func appendStep(b []byte, s *StepRun, stored bool, base int64) ([]byte, error) {
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
	if !stored {
		b = append(b, `,"started_at":`...)
		if b, err = appendTimePtr(b, s.StartedAt); err != nil {
			return b, err
		}
		b = append(b, `,"completed_at":`...)
		if b, err = appendTimePtr(b, s.CompletedAt); err != nil {
			return b, err
		}
	} else {
		if b, err = appendStoredTimeField(b, `,"started_at":`, s.StartedAt, base); err != nil {
			return b, err
		}
		if b, err = appendStoredTimeField(b, `,"completed_at":`, s.CompletedAt, base); err != nil {
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
	if stored {
		// The bookkeeping is left out when it holds nothing to write.
		n := len(b)
		b = append(b, `,"internal":`...)
		if b, err = s.internal.append(b, autoDefault(s), base); err != nil {
			return b, err
		}
		if string(b[len(b)-2:]) == "{}" {
			b = b[:n]
		}
	}
	return append(b, '}'), nil
}

// jsonForm is the form of appendRun's stored JSON (its "form" key).
const jsonForm = 2

// autoDefault is a step's automatic flag (stepInternal.Auto) when a record
// of form 2 leaves it out: set for a completed execute step that no person
// approved (the gate let it run), unset for any other step, and for a
// running one, whose first record is written before the gate answers.
func autoDefault(s *StepRun) bool {
	return s.Type == "execute" && s.Status == StepCompleted && !s.internal.Approved
}

// storedMicros is t in unix microseconds when the stored form may write it
// as a number: in UTC, in whole microseconds (the engine's times are), in
// the years 1 to 9999. Another time is written as RFC 3339, so that it
// reads back with its offset and nanoseconds.
func storedMicros(t time.Time) (int64, bool) {
	if t.Location() != time.UTC || t.Nanosecond()%1000 != 0 {
		return 0, false
	}
	if y := t.Year(); y < 1 || y > 9999 {
		return 0, false
	}
	return t.UnixMicro(), true
}

// appendStoredTime appends a time of the stored form: the microseconds
// from base (0 for the run's start, which is absolute) when storedMicros
// allows, else the RFC 3339 string.
func appendStoredTime(b []byte, t time.Time, base int64) ([]byte, error) {
	if us, ok := storedMicros(t); ok {
		return strconv.AppendInt(b, us-base, 10), nil
	}
	return jsonvalue.AppendTime(b, t)
}

// appendStoredTimeField appends key (`,"name":`) and t as appendStoredTime
// writes it, or nothing when t is nil (the stored form leaves it out).
func appendStoredTimeField(b []byte, key string, t *time.Time, base int64) ([]byte, error) {
	if t == nil {
		return b, nil
	}
	return appendStoredTime(append(b, key...), *t, base)
}

// append writes the fields of in that are not empty, as omitempty does,
// but the automatic flag when it is auto (the default a reader assumes),
// and the deadline relative to base (see appendStoredTime).
func (in *stepInternal) append(b []byte, auto bool, base int64) ([]byte, error) {
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
	if in.Auto != auto {
		field("auto")
		b = strconv.AppendBool(b, in.Auto)
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
		if b, err = appendStoredTime(b, *in.Deadline, base); err != nil {
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
