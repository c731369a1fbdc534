package runengine

import (
	"encoding/binary"
	"encoding/json"
	"slices"
	"time"

	"github.com/bas-platform/bas/internal/binrec"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/cockroachdb/errors"
)

// storedForm is the form the engine stores runs in: form 4, binary (see
// appendStoredRun). Its first byte is the form, which no JSON record of
// forms 1 and 2 can start with.
const storedForm = 4

// idForm is form 3: form 4's layout with the run's id written after the
// start (form 4 takes it from the record's key). The engine stored runs in
// it before form 4, and reads them still.
const idForm = 3

// Bits of the flags word that follows the form byte of a record of form 3
// or 4: each says a field of the run is set (a pointer, a slice or map
// that is not nil, a string that is not empty, a number that is not 0, a
// flag that is true) and written; a field whose bit is clear is not
// written. The most common come first, so the word is one byte for most
// runs.
const (
	runSteps = 1 << iota
	runCurrentStep
	runCursor
	runCompletedAt
	runData
	runEvent
	runError
	runOverdue
	runMinutesSaved
	runEventID
	runEmittedBy
	runCause
	runRerun // rerun_of and rerun_from_step, written when rerun_of is set
	runWaitingReason
	runPriority
	runSearch
	runStartedBy
	runPaused
	runRerunJob
	runFlagsEnd // the first bit no record sets
)

// Bits of a step's flags word, as the run's.
const (
	stepStartedAt = 1 << iota
	stepCompletedAt
	stepOutput // held by the record: set and not stored apart
	stepAuto
	stepAttempts
	stepName
	stepError
	stepApprovalID
	stepTaskID
	stepApproved
	stepArgs
	stepSample
	stepReminders
	stepChecks
	stepDeadline
	stepWaitToken
	stepWaitEvent
	stepSLAFired
	stepAmount
	stepOutputBytes
	stepRateReserved
	stepFlagsEnd
)

// recordWords are the statuses and types that forms 3 and 4 write as one
// byte (see appendWord): a word's code is its index plus one. The list is
// part of the form: a word may be added at its end, never moved or
// removed.
var recordWords = [...]string{
	"running", "waiting", "completed", "failed", "rejected", "cancelled", "paused",
	"pending", "waiting_approval", "waiting_task", "skipped",
	"manual", "event", "schedule",
	"intake", "validate", "route", "consolidate", "analyse", "draft", "monitor", "follow_up",
	"execute", "human_task", "wait",
}

// wordCode is the code of s in recordWords, 0 when it is none of them.
func wordCode(s string) uint64 {
	switch s {
	case "running":
		return 1
	case "waiting":
		return 2
	case "completed":
		return 3
	case "failed":
		return 4
	case "rejected":
		return 5
	case "cancelled":
		return 6
	case "paused":
		return 7
	case "pending":
		return 8
	case "waiting_approval":
		return 9
	case "waiting_task":
		return 10
	case "skipped":
		return 11
	case "manual":
		return 12
	case "event":
		return 13
	case "schedule":
		return 14
	case "intake":
		return 15
	case "validate":
		return 16
	case "route":
		return 17
	case "consolidate":
		return 18
	case "analyse":
		return 19
	case "draft":
		return 20
	case "monitor":
		return 21
	case "follow_up":
		return 22
	case "execute":
		return 23
	case "human_task":
		return 24
	case "wait":
		return 25
	}
	return 0
}

// appendStoredRun appends r's stored record, form 4: binary, in the
// shared record encoding of internal/binrec (numbers as shortest-form
// varints, strings as their length then their bytes), holding what form 2
// (appendRun's stored JSON) holds but the run's id, which its key holds:
//
//	form      byte 4
//	flags     uvarint: runSteps, runCurrentStep, ... (which fields follow)
//	started   time (see appendBinTime), absolute
//	process_id, process_name                string
//	process_version                         varint
//	function                                string
//	status                                  word (see appendWord)
//	subject type, subject label             string
//	trigger type                            word
//	[event] [event_id] [emitted_by]         string
//	[data]    bytes: the trigger's data as JSON (an object, not empty)
//	[cause]   run_id, root_run_id string, depth varint, processes: uvarint
//	          0 for none (nil), else their count plus one, then each string
//	[current_step] string
//	[steps]   uvarint count, then each step (below)
//	[completed] time, relative
//	[error] string, [minutes_saved] varint
//	[rerun_of, rerun_from_step] string, [waiting_reason] [priority] string
//	[search]  uvarint count (not 0), then key and value strings, keys in
//	          ascending order
//	[cursor] varint, [started_by] string
//	[paused]  bytes: the pause state as JSON
//	[rerun_job] string
//
// A step: flags (uvarint: stepStartedAt, ...), key string, type word,
// [name] string, status word, [started] [completed] time relative,
// [output] bytes (JSON; not null), [error] [approval_id] [task_id] string,
// [attempts] varint, then its bookkeeping: [args] bytes (JSON object, not
// empty), [reminders] [checks] varint, [deadline] time relative,
// [wait_token] [wait_event] string, [amount] [output_bytes] varint; the
// flags approved, auto, sample, sla_fired and rate_reserved are bits of the
// step's flags alone.
//
// Form 3 (idForm), which the engine wrote before, is the same but for the
// run's id, a string after the start.
//
// A record has one form: the decoder (decodeBinaryRun) refuses a bit it
// does not know, a field its bit says is set that holds the zero value, a
// word written out as a string, a padded varint, a time's text other than
// time.MarshalText writes for it, and bytes left over. Values of JSON
// inside (data, output, args, the pause state) are decoded as form 2
// decodes them. Strings are kept byte for byte, where JSON replaced
// invalid UTF-8 by U+FFFD (the API view still shows U+FFFD for it, now
// escaped, as for a run not yet read back). An engine older
// than form 3 refuses its records (they are not JSON), and one older than
// form 4 those of form 4 (see decodeStoredRun), rather than misreading
// them.
func appendStoredRun(b []byte, r *Run) ([]byte, error) {
	return appendRecord(b, r, nil)
}

// apartOutput is the JSON of a step output (of r.Steps[step]) that a
// record leaves out to be stored apart (see MaxInlineOutputBytes).
type apartOutput struct {
	step int
	json []byte
}

// appendRecord is appendStoredRun; with apart set, it moves each step
// output over MaxInlineOutputBytes out of the record as it writes it: it
// notes the output's size in the step (internal.OutputBytes) and its JSON
// in apart, so the record is written once.
func appendRecord(b []byte, r *Run, apart *[]apartOutput) ([]byte, error) {
	var err error
	if b == nil {
		b = make([]byte, 0, 160+96*len(r.Steps))
	}
	var f uint64
	if r.Steps != nil {
		f |= runSteps
	}
	if r.CurrentStep != nil {
		f |= runCurrentStep
	}
	if r.Cursor != 0 {
		f |= runCursor
	}
	if r.CompletedAt != nil {
		f |= runCompletedAt
	}
	if len(r.Trigger.Data) > 0 {
		f |= runData
	}
	if r.Trigger.Event != nil {
		f |= runEvent
	}
	if r.Error != nil {
		f |= runError
	}
	if r.Overdue {
		f |= runOverdue
	}
	if r.MinutesSaved != 0 {
		f |= runMinutesSaved
	}
	if r.Trigger.EventID != "" {
		f |= runEventID
	}
	if r.Trigger.EmittedBy != "" {
		f |= runEmittedBy
	}
	if r.Trigger.Cause != nil {
		f |= runCause
	}
	if r.RerunOf != "" {
		f |= runRerun
	}
	if r.WaitingReason != "" {
		f |= runWaitingReason
	}
	if r.Priority != "" {
		f |= runPriority
	}
	if len(r.Search) > 0 {
		f |= runSearch
	}
	if r.StartedBy != "" {
		f |= runStartedBy
	}
	if r.Paused != nil {
		f |= runPaused
	}
	if r.RerunJob != "" {
		f |= runRerunJob
	}
	b = append(b, storedForm)
	b = binary.AppendUvarint(b, f)
	if b, err = appendBinTime(b, r.StartedAt, 0); err != nil {
		return b, err
	}
	base := r.StartedAt.UnixMicro()
	b = binrec.AppendString(b, r.ProcessID)
	b = binrec.AppendString(b, r.ProcessName)
	b = binary.AppendVarint(b, int64(r.ProcessVersion))
	b = binrec.AppendString(b, r.Function)
	b = appendWord(b, string(r.Status))
	b = binrec.AppendString(b, r.Subject.Type)
	b = binrec.AppendString(b, r.Subject.Label)
	b = appendWord(b, r.Trigger.Type)
	if f&runEvent != 0 {
		b = binrec.AppendString(b, *r.Trigger.Event)
	}
	if f&runEventID != 0 {
		b = binrec.AppendString(b, r.Trigger.EventID)
	}
	if f&runEmittedBy != 0 {
		b = binrec.AppendString(b, r.Trigger.EmittedBy)
	}
	if f&runData != 0 {
		if b, err = appendJSONField(b, r.Trigger.Data); err != nil {
			return b, err
		}
	}
	if c := r.Trigger.Cause; c != nil {
		b = binrec.AppendString(b, c.RunID)
		b = binrec.AppendString(b, c.RootRunID)
		b = binary.AppendVarint(b, int64(c.Depth))
		if c.Processes == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(c.Processes))+1)
			for _, p := range c.Processes {
				b = binrec.AppendString(b, p)
			}
		}
	}
	if f&runCurrentStep != 0 {
		b = binrec.AppendString(b, *r.CurrentStep)
	}
	if f&runSteps != 0 {
		b = binary.AppendUvarint(b, uint64(len(r.Steps)))
		for i := range r.Steps {
			var out []byte
			if b, out, err = appendBinStep(b, &r.Steps[i], base, apart != nil); err != nil {
				return b, err
			}
			if out != nil {
				*apart = append(*apart, apartOutput{step: i, json: out})
			}
		}
	}
	if f&runCompletedAt != 0 {
		if b, err = appendBinTime(b, *r.CompletedAt, base); err != nil {
			return b, err
		}
	}
	if f&runError != 0 {
		b = binrec.AppendString(b, *r.Error)
	}
	if f&runMinutesSaved != 0 {
		b = binary.AppendVarint(b, int64(r.MinutesSaved))
	}
	if f&runRerun != 0 {
		b = binrec.AppendString(b, r.RerunOf)
		b = binrec.AppendString(b, r.RerunFromStep)
	}
	if f&runWaitingReason != 0 {
		b = binrec.AppendString(b, r.WaitingReason)
	}
	if f&runPriority != 0 {
		b = binrec.AppendString(b, r.Priority)
	}
	if f&runSearch != 0 {
		keys := make([]string, 0, len(r.Search))
		for k := range r.Search {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = binrec.AppendString(b, k)
			b = binrec.AppendString(b, r.Search[k])
		}
	}
	if f&runCursor != 0 {
		b = binary.AppendVarint(b, int64(r.Cursor))
	}
	if f&runStartedBy != 0 {
		b = binrec.AppendString(b, r.StartedBy)
	}
	if f&runPaused != 0 {
		raw, err := json.Marshal(r.Paused)
		if err != nil {
			return b, errors.Wrap(err, "encode pause state")
		}
		b = binrec.AppendBytes(b, raw)
	}
	if f&runRerunJob != 0 {
		b = binrec.AppendString(b, r.RerunJob)
	}
	return b, nil
}

// appendBinStep appends a step of a record of form 3 or 4; base is the
// run's start in unix microseconds. With move, an output over
// MaxInlineOutputBytes is left out of the record and returned (see
// appendRecord).
func appendBinStep(b []byte, s *StepRun, base int64, move bool) (_ []byte, moved []byte, err error) {
	in := &s.internal
	var f uint64
	if s.StartedAt != nil {
		f |= stepStartedAt
	}
	if s.CompletedAt != nil {
		f |= stepCompletedAt
	}
	if s.Output != nil && in.OutputBytes == 0 {
		f |= stepOutput
	}
	if in.Auto {
		f |= stepAuto
	}
	if s.Attempts != 0 {
		f |= stepAttempts
	}
	if s.Name != "" {
		f |= stepName
	}
	if s.Error != nil {
		f |= stepError
	}
	if s.ApprovalID != nil {
		f |= stepApprovalID
	}
	if s.TaskID != nil {
		f |= stepTaskID
	}
	if in.Approved {
		f |= stepApproved
	}
	if len(in.Args) > 0 {
		f |= stepArgs
	}
	if in.Sample {
		f |= stepSample
	}
	if in.Reminders != 0 {
		f |= stepReminders
	}
	if in.Checks != 0 {
		f |= stepChecks
	}
	if in.Deadline != nil {
		f |= stepDeadline
	}
	if in.WaitToken != "" {
		f |= stepWaitToken
	}
	if in.WaitEvent != "" {
		f |= stepWaitEvent
	}
	if in.SLAFired {
		f |= stepSLAFired
	}
	if in.AmountSeen != nil {
		f |= stepAmount
	}
	if in.OutputBytes != 0 {
		f |= stepOutputBytes
	}
	if in.RateReserved {
		f |= stepRateReserved
	}
	flagsAt := len(b)
	b = binary.AppendUvarint(b, f)
	flagsEnd := len(b)
	b = binrec.AppendString(b, s.Key)
	b = appendWord(b, s.Type)
	if f&stepName != 0 {
		b = binrec.AppendString(b, s.Name)
	}
	b = appendWord(b, string(s.Status))
	if f&stepStartedAt != 0 {
		if b, err = appendBinTime(b, *s.StartedAt, base); err != nil {
			return b, nil, err
		}
	}
	if f&stepCompletedAt != 0 {
		if b, err = appendBinTime(b, *s.CompletedAt, base); err != nil {
			return b, nil, err
		}
	}
	if f&stepOutput != 0 {
		at := len(b)
		if b, err = appendJSONField(b, s.Output); err != nil {
			return b, nil, err
		}
		refit := false
		switch field := b[at:]; {
		case string(field) == "\x04null":
			// A typed nil (a nil map or slice) is JSON null, which form
			// 2 reads back as no output and the decoder refuses as one:
			// the record holds none.
			b, f, refit = b[:at], f&^stepOutput, true
		case move && len(field) > MaxInlineOutputBytes+1:
			r := binrec.New(field)
			if out := r.Bytes(); len(out) > MaxInlineOutputBytes {
				moved = slices.Clone(out)
				in.OutputBytes = len(out)
				b, f, refit = b[:at], f&^stepOutput|stepOutputBytes, true
			}
		}
		if refit {
			var head [binary.MaxVarintLen64]byte
			n := binary.PutUvarint(head[:], f)
			b = slices.Replace(b, flagsAt, flagsEnd, head[:n]...)
		}
	}
	if f&stepError != 0 {
		b = binrec.AppendString(b, *s.Error)
	}
	if f&stepApprovalID != 0 {
		b = binrec.AppendString(b, *s.ApprovalID)
	}
	if f&stepTaskID != 0 {
		b = binrec.AppendString(b, *s.TaskID)
	}
	if f&stepAttempts != 0 {
		b = binary.AppendVarint(b, int64(s.Attempts))
	}
	if f&stepArgs != 0 {
		if b, err = appendJSONField(b, in.Args); err != nil {
			return b, nil, err
		}
	}
	if f&stepReminders != 0 {
		b = binary.AppendVarint(b, int64(in.Reminders))
	}
	if f&stepChecks != 0 {
		b = binary.AppendVarint(b, int64(in.Checks))
	}
	if f&stepDeadline != 0 {
		if b, err = appendBinTime(b, *in.Deadline, base); err != nil {
			return b, nil, err
		}
	}
	if f&stepWaitToken != 0 {
		b = binrec.AppendString(b, in.WaitToken)
	}
	if f&stepWaitEvent != 0 {
		b = binrec.AppendString(b, in.WaitEvent)
	}
	if f&stepAmount != 0 {
		b = binary.AppendVarint(b, *in.AmountSeen)
	}
	if f&stepOutputBytes != 0 {
		b = binary.AppendVarint(b, int64(in.OutputBytes))
	}
	return b, moved, nil
}

// appendWord appends a status or type: its code in recordWords, or 0 and
// the string when it is none of them.
func appendWord(b []byte, s string) []byte {
	if c := wordCode(s); c != 0 {
		return binary.AppendUvarint(b, c)
	}
	return binrec.AppendString(append(b, 0), s)
}

// appendBinTime appends a time of forms 3 and 4: a varint, twice the
// microseconds from base (0 for the run's start, which is absolute) when
// storedMicros allows; else the varint 1 and the time as RFC 3339 text (as
// time.MarshalText writes it), so that it reads back with its offset and
// nanoseconds.
func appendBinTime(b []byte, t time.Time, base int64) ([]byte, error) {
	if us, ok := storedMicros(t); ok {
		return binary.AppendVarint(b, (us-base)*2), nil
	}
	text, err := t.MarshalText()
	if err != nil {
		return b, errors.Wrap(err, "encode a time of a run")
	}
	return binrec.AppendBytes(binary.AppendVarint(b, 1), text), nil
}

// appendJSONField appends v's JSON as a bytes field: its length, then it.
// The length is written in the one byte kept for it when it fits, else the
// JSON is moved up to make room.
func appendJSONField(b []byte, v any) ([]byte, error) {
	at := len(b)
	b = append(b, 0)
	b, err := jsonvalue.Append(b, v)
	if err != nil {
		return b, err
	}
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b, nil
	}
	var head [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(head[:], uint64(n))
	b = append(b, head[:h-1]...)
	copy(b[at+h:], b[at+1:at+1+n])
	copy(b[at:], head[:h])
	return b, nil
}

// decodeBinaryRun decodes a record of form 4 (see appendStoredRun) of the
// run id (from the record's key), or of form 3, which holds its id; or
// fails: it never returns a run that record does not hold.
func decodeBinaryRun(id string, raw []byte) (*Run, error) {
	d := binDecoder{r: binrec.New(raw)}
	if len(raw) <= maxSharedRecord {
		d.src = string(raw)
	}
	form := d.r.Byte()
	if form != storedForm && form != idForm {
		return nil, errors.New("runengine: not a run record of form 3 or 4")
	}
	if form == storedForm && id == "" {
		return nil, errors.New("runengine: a run record of form 4 read without its id")
	}
	r := &Run{ID: id}
	d.run(r, form == idForm)
	if !d.r.Done() {
		return nil, errors.Newf("runengine: a malformed run record of form %d (%d bytes)", form, len(raw))
	}
	return r, nil
}

// binDecoder reads the fields of a record of form 3 or 4; its Reader goes
// bad at the first malformed one (see binrec).
type binDecoder struct {
	r binrec.Reader
	// src, when set, is the record as one string that the run's strings
	// are cut from, one allocation for them all.
	src string
}

// maxSharedRecord is the longest record whose strings share one
// allocation (see binDecoder.string): a longer one holds large JSON, which
// a string of the run must not keep alive.
const maxSharedRecord = 1024

// string reads a string field.
func (d *binDecoder) string() string {
	if d.src == "" {
		return d.r.String()
	}
	b := d.r.Bytes()
	end := len(d.src) - d.r.Len()
	return d.src[end-len(b) : end]
}

// flags reads a flags word and refuses a bit at or above end.
func (d *binDecoder) flags(end uint64) uint64 {
	f := d.r.Uvarint()
	if f >= end {
		d.r.Fail()
		return 0
	}
	return f
}

// str reads a string that its flag says is set: not empty.
func (d *binDecoder) str() string {
	s := d.string()
	if s == "" {
		d.r.Fail()
	}
	return s
}

// strPtr reads a string held by a pointer (which may be empty).
func (d *binDecoder) strPtr() *string {
	s := d.string()
	return &s
}

// int reads a number that its flag says is set: not 0.
func (d *binDecoder) int() int {
	n := d.r.Varint()
	if n == 0 {
		d.r.Fail()
	}
	return int(n)
}

// word reads what appendWord writes.
func (d *binDecoder) word() string {
	c := d.r.Uvarint()
	if c == 0 {
		s := d.string()
		if wordCode(s) != 0 {
			d.r.Fail()
		}
		return s
	}
	if c > uint64(len(recordWords)) {
		d.r.Fail()
		return ""
	}
	return recordWords[c-1]
}

// time reads what appendBinTime writes.
func (d *binDecoder) time(base int64) time.Time {
	v := d.r.Varint()
	if v&1 == 0 {
		t, ok := microTime(base, v>>1)
		if !ok {
			d.r.Fail()
		}
		return t
	}
	text := d.r.Bytes()
	var t time.Time
	if v != 1 || t.UnmarshalText(text) != nil {
		d.r.Fail()
		return time.Time{}
	}
	if again, err := t.MarshalText(); err != nil || string(again) != string(text) {
		d.r.Fail()
	}
	return t
}

// timePtr reads a time that its flag says is set.
func (d *binDecoder) timePtr(base int64) *time.Time {
	t := d.time(base)
	return &t
}

// value reads a JSON field as form 2 decodes the value: by its scanner,
// or by encoding/json when the scanner does not take it.
func (d *binDecoder) value() any {
	raw := d.r.Bytes()
	if !d.r.OK() {
		return nil
	}
	s := runDecoder{b: raw}
	if v, ok := s.value(); ok {
		if s.ws(); s.i == len(raw) {
			return v
		}
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		d.r.Fail()
		return nil
	}
	return v
}

// object reads a JSON field that must hold an object that is not empty.
func (d *binDecoder) object() map[string]any {
	m, ok := d.value().(map[string]any)
	if !ok || len(m) == 0 {
		d.r.Fail()
		return nil
	}
	return m
}

// run reads a run's fields; withID says the record holds its id (form 3).
func (d *binDecoder) run(r *Run, withID bool) {
	f := d.flags(runFlagsEnd)
	r.StartedAt = d.time(0)
	base := r.StartedAt.UnixMicro()
	if withID {
		r.ID = d.string()
	}
	r.ProcessID = d.string()
	r.ProcessName = d.string()
	r.ProcessVersion = int(d.r.Varint())
	r.Function = d.string()
	r.Status = RunStatus(d.word())
	r.Subject.Type = d.string()
	r.Subject.Label = d.string()
	r.Trigger.Type = d.word()
	r.Overdue = f&runOverdue != 0
	if f&runEvent != 0 {
		r.Trigger.Event = d.strPtr()
	}
	if f&runEventID != 0 {
		r.Trigger.EventID = d.str()
	}
	if f&runEmittedBy != 0 {
		r.Trigger.EmittedBy = d.str()
	}
	if f&runData != 0 {
		r.Trigger.Data = d.object()
	}
	if f&runCause != 0 {
		c := &Cause{RunID: d.string(), RootRunID: d.string(), Depth: int(d.r.Varint())}
		if n := d.r.Uvarint(); n > 0 {
			if n-1 > uint64(d.r.Len()) {
				d.r.Fail()
			} else {
				c.Processes = make([]string, n-1)
				for i := range c.Processes {
					c.Processes[i] = d.string()
				}
			}
		}
		r.Trigger.Cause = c
	}
	if f&runCurrentStep != 0 {
		r.CurrentStep = d.strPtr()
	}
	if f&runSteps != 0 {
		// A step is at least 4 bytes: flags, key, type and status.
		r.Steps = make([]StepRun, d.r.Count(4))
		for i := range r.Steps {
			d.step(&r.Steps[i], base)
		}
	}
	if f&runCompletedAt != 0 {
		r.CompletedAt = d.timePtr(base)
	}
	if f&runError != 0 {
		r.Error = d.strPtr()
	}
	if f&runMinutesSaved != 0 {
		r.MinutesSaved = d.int()
	}
	if f&runRerun != 0 {
		r.RerunOf = d.str()
		r.RerunFromStep = d.string()
	}
	if f&runWaitingReason != 0 {
		r.WaitingReason = d.str()
	}
	if f&runPriority != 0 {
		r.Priority = d.str()
	}
	if f&runSearch != 0 {
		n := d.r.Count(2)
		if n == 0 {
			d.r.Fail()
		}
		r.Search = make(map[string]string, n)
		last := ""
		for i := range n {
			k := d.string()
			if i > 0 && k <= last {
				d.r.Fail() // keys ascend, each once
			}
			r.Search[k], last = d.string(), k
		}
	}
	if f&runCursor != 0 {
		r.Cursor = d.int()
	}
	if f&runStartedBy != 0 {
		r.StartedBy = d.str()
	}
	if f&runPaused != 0 {
		raw := d.r.Bytes()
		if d.r.OK() && (json.Unmarshal(raw, &r.Paused) != nil || r.Paused == nil) {
			d.r.Fail()
		}
	}
	if f&runRerunJob != 0 {
		r.RerunJob = d.str()
	}
}

func (d *binDecoder) step(s *StepRun, base int64) {
	in := &s.internal
	f := d.flags(stepFlagsEnd)
	if f&stepOutput != 0 && f&stepOutputBytes != 0 {
		d.r.Fail() // an output stored apart is not in the record
	}
	s.Key = d.string()
	s.Type = d.word()
	if f&stepName != 0 {
		s.Name = d.str()
	}
	s.Status = StepStatus(d.word())
	if f&stepStartedAt != 0 {
		s.StartedAt = d.timePtr(base)
	}
	if f&stepCompletedAt != 0 {
		s.CompletedAt = d.timePtr(base)
	}
	if f&stepOutput != 0 {
		if s.Output = d.value(); s.Output == nil {
			d.r.Fail()
		}
	}
	if f&stepError != 0 {
		s.Error = d.strPtr()
	}
	if f&stepApprovalID != 0 {
		s.ApprovalID = d.strPtr()
	}
	if f&stepTaskID != 0 {
		s.TaskID = d.strPtr()
	}
	if f&stepAttempts != 0 {
		s.Attempts = d.int()
	}
	if f&stepArgs != 0 {
		in.Args = d.object()
	}
	if f&stepReminders != 0 {
		in.Reminders = d.int()
	}
	if f&stepChecks != 0 {
		in.Checks = d.int()
	}
	if f&stepDeadline != 0 {
		in.Deadline = d.timePtr(base)
	}
	if f&stepWaitToken != 0 {
		in.WaitToken = d.str()
	}
	if f&stepWaitEvent != 0 {
		in.WaitEvent = d.str()
	}
	if f&stepAmount != 0 {
		n := d.r.Varint()
		in.AmountSeen = &n
	}
	if f&stepOutputBytes != 0 {
		in.OutputBytes = d.int()
	}
	in.Approved = f&stepApproved != 0
	in.Auto = f&stepAuto != 0
	in.Sample = f&stepSample != 0
	in.SLAFired = f&stepSLAFired != 0
	in.RateReserved = f&stepRateReserved != 0
}
