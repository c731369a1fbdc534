package runengine

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeStoredRunFast decodes the stored form appendRun writes without
// reflection: one scan over the bytes that fills the run and its steps. It
// reports false for anything it does not recognise (a key it does not know
// or sees twice, a null where the encoder writes none, a number out of its
// range, deep nesting, bad JSON), and decodeStoredRun then takes the
// encoding/json path, so what it returns is always what that path returns.
// Strings are copied once from raw (which the caller may reuse); those with
// escapes, and the pause state (rare), are handed to encoding/json.
func decodeStoredRunFast(raw []byte) (*Run, bool) {
	d := runDecoder{b: raw, form: 1}
	r := new(Run)
	if !d.run(r) {
		return nil, false
	}
	d.ws()
	return r, d.i == len(d.b)
}

// runDecoder scans a stored run; i is the offset of the next byte.
type runDecoder struct {
	b     []byte
	i     int
	depth int
	// form is the record's form (see jsonForm): 1 until a "form" key.
	form int
	// base is the run's start in unix microseconds, once read (hasBase):
	// the later times of form 2 are relative to it.
	base    int64
	hasBase bool
}

// maxFastDepth is how deeply nested a value the scanner follows; a deeper
// one (encoding/json allows 10,000 levels) goes to encoding/json.
const maxFastDepth = 200

func (d *runDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte that is not white space, 0 at the end.
func (d *runDecoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *runDecoder) consume(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

// literal consumes the literal s (true, false, null); a byte run on after
// it is caught by whatever comes next.
func (d *runDecoder) literal(s string) bool {
	d.ws()
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// null consumes a null if one comes next.
func (d *runDecoder) null() bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	return false
}

// Kinds of a string's bytes, as rawString finds them.
const (
	strASCII = iota
	strUTF8  // bytes of 0x80 and above, no escape
	strEscaped
)

// rawString scans a string and returns its bytes between the quotes and
// their kind; start is the offset of the opening quote.
func (d *runDecoder) rawString() (s []byte, start, kind int, ok bool) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, 0, 0, false
	}
	start = d.i
	for j := start + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start+1 : j], start, kind, true
		case c == '\\':
			kind = strEscaped
			j++ // the escaped byte; encoding/json checks the escape
		case c < 0x20:
			return nil, 0, 0, false
		case c >= utf8.RuneSelf && kind == strASCII:
			kind = strUTF8
		}
	}
	return nil, 0, 0, false
}

// common returns s when it is a value many records hold (a status, a
// step or trigger type) without a copy.
func common(s []byte) (string, bool) {
	switch string(s) {
	case "waiting":
		return "waiting", true
	case "running":
		return "running", true
	case "completed":
		return "completed", true
	case "failed":
		return "failed", true
	case "pending":
		return "pending", true
	case "skipped":
		return "skipped", true
	case "waiting_approval":
		return "waiting_approval", true
	case "waiting_task":
		return "waiting_task", true
	case "manual":
		return "manual", true
	case "event":
		return "event", true
	case "schedule":
		return "schedule", true
	case "wait":
		return "wait", true
	case "route":
		return "route", true
	case "execute":
		return "execute", true
	case "human_task":
		return "human_task", true
	}
	return "", false
}

// str scans a string and returns its value as encoding/json decodes it.
func (d *runDecoder) str() (string, bool) {
	s, start, kind, ok := d.rawString()
	if !ok {
		return "", false
	}
	switch {
	case kind == strASCII:
		if c, ok := common(s); ok {
			return c, true
		}
		return string(s), true
	case kind == strUTF8 && utf8.Valid(s):
		return string(s), true
	}
	// Escapes and invalid UTF-8 (which encoding/json replaces) are rare
	// in stored runs: encoding/json decodes them.
	var v string
	if json.Unmarshal(d.b[start:d.i], &v) != nil {
		return "", false
	}
	return v, true
}

// strPtr scans a string or null.
func (d *runDecoder) strPtr() (*string, bool) {
	if d.null() {
		return nil, true
	}
	s, ok := d.str()
	if !ok {
		return nil, false
	}
	return &s, true
}

// number scans a JSON number and returns its bytes, and whether it is an
// integer (no fraction, no exponent).
func (d *runDecoder) number() (n []byte, integer, ok bool) {
	d.ws()
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	n, d.i = b[d.i:i], i
	return n, integer, true
}

// int scans an integer of at most 18 digits (a longer one goes to
// encoding/json, which checks its range).
func (d *runDecoder) int() (int64, bool) {
	n, integer, ok := d.number()
	if !ok || !integer {
		return 0, false
	}
	neg := n[0] == '-'
	if neg {
		n = n[1:]
	}
	if len(n) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range n {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (d *runDecoder) bool() (bool, bool) {
	switch d.peek() {
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	}
	return false, false
}

// time scans a time as storedTime reads it: a string as time.Time's
// UnmarshalJSON reads it (encoding/json hands it the quoted bytes as they
// are), a number as microseconds from the run's start (relative; a number
// before the start was read is left to encoding/json), or, for the start
// itself, from 1970.
func (d *runDecoder) time(relative bool) (time.Time, bool) {
	if c := d.peek(); c == '-' || c >= '0' && c <= '9' {
		n, ok := d.int()
		if !ok || relative && !d.hasBase {
			return time.Time{}, false
		}
		if relative {
			return microTime(d.base, n)
		}
		return microTime(0, n)
	}
	_, start, _, ok := d.rawString()
	var t time.Time
	if !ok || t.UnmarshalJSON(d.b[start:d.i]) != nil {
		return time.Time{}, false
	}
	return t, true
}

// timePtr scans a relative time or null.
func (d *runDecoder) timePtr() (*time.Time, bool) {
	if d.null() {
		return nil, true
	}
	t, ok := d.time(true)
	if !ok {
		return nil, false
	}
	return &t, true
}

// object scans an object, calling field for each key (escaped keys are
// not recognised); field scans the value and reports whether it could.
func (d *runDecoder) object(field func(key []byte) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	d.depth++
	if d.depth > maxFastDepth {
		return false
	}
	for {
		key, _, kind, ok := d.rawString()
		if !ok || kind == strEscaped || !d.consume(':') || !field(key) {
			return false
		}
		if !d.consume(',') {
			d.depth--
			return d.consume('}')
		}
	}
}

// once marks field bit n seen and reports whether it was not before: a key
// seen twice goes to encoding/json (which merges maps and reuses slices).
func once(seen *uint32, n uint) bool {
	if *seen&(1<<n) != 0 {
		return false
	}
	*seen |= 1 << n
	return true
}

// value scans any JSON value as encoding/json decodes it into an any.
func (d *runDecoder) value() (any, bool) {
	switch d.peek() {
	case '{':
		return d.dataMap()
	case '[':
		d.i++
		list := []any{}
		if d.consume(']') {
			return list, true
		}
		d.depth++
		if d.depth > maxFastDepth {
			return nil, false
		}
		for {
			v, ok := d.value()
			if !ok {
				return nil, false
			}
			list = append(list, v)
			if !d.consume(',') {
				d.depth--
				return list, d.consume(']')
			}
		}
	case '"':
		return d.str()
	case 't', 'f':
		return d.bool()
	case 'n':
		return nil, d.literal("null")
	}
	n, _, ok := d.number()
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// dataMap scans an object into a map[string]any.
func (d *runDecoder) dataMap() (map[string]any, bool) {
	m := map[string]any{}
	ok := d.object(func(key []byte) bool {
		k, ok := keyString(key)
		if !ok {
			return false
		}
		v, ok := d.value()
		m[k] = v
		return ok
	})
	return m, ok
}

// keyString is a map key as encoding/json decodes it.
func keyString(key []byte) (string, bool) {
	if !utf8.Valid(key) {
		return "", false
	}
	return string(key), true
}

func (d *runDecoder) run(r *Run) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "form":
			// The form decides how the steps read, so it comes before them.
			var n int64
			n, ok = d.int()
			d.form = int(n)
			return ok && validForm(n) && seen&(1<<9) == 0 && once(&seen, 23)
		case "id":
			r.ID, ok = d.str()
			return ok && once(&seen, 0)
		case "process_id":
			r.ProcessID, ok = d.str()
			return ok && once(&seen, 1)
		case "process_name":
			r.ProcessName, ok = d.str()
			return ok && once(&seen, 2)
		case "process_version":
			var n int64
			n, ok = d.int()
			r.ProcessVersion = int(n)
			return ok && once(&seen, 3)
		case "function":
			r.Function, ok = d.str()
			return ok && once(&seen, 4)
		case "status":
			var s string
			s, ok = d.str()
			r.Status = RunStatus(s)
			return ok && once(&seen, 5)
		case "subject":
			return d.subject(&r.Subject) && once(&seen, 6)
		case "trigger":
			return d.trigger(&r.Trigger) && once(&seen, 7)
		case "current_step":
			r.CurrentStep, ok = d.strPtr()
			return ok && once(&seen, 8)
		case "steps":
			return d.steps(r) && once(&seen, 9)
		case "overdue":
			r.Overdue, ok = d.bool()
			return ok && once(&seen, 10)
		case "started_at":
			r.StartedAt, ok = d.time(false)
			d.base, d.hasBase = r.StartedAt.UnixMicro(), true
			return ok && once(&seen, 11)
		case "completed_at":
			r.CompletedAt, ok = d.timePtr()
			return ok && once(&seen, 12)
		case "error":
			r.Error, ok = d.strPtr()
			return ok && once(&seen, 13)
		case "minutes_saved":
			var n int64
			n, ok = d.int()
			r.MinutesSaved = int(n)
			return ok && once(&seen, 14)
		case "rerun_of":
			r.RerunOf, ok = d.str()
			return ok && once(&seen, 15)
		case "rerun_from_step":
			r.RerunFromStep, ok = d.str()
			return ok && once(&seen, 16)
		case "search":
			return d.search(r) && once(&seen, 17)
		case "waiting_reason":
			r.WaitingReason, ok = d.str()
			return ok && once(&seen, 18)
		case "priority":
			r.Priority, ok = d.str()
			return ok && once(&seen, 19)
		case "cursor":
			var n int64
			n, ok = d.int()
			r.Cursor = int(n)
			return ok && once(&seen, 20)
		case "started_by":
			r.StartedBy, ok = d.str()
			return ok && once(&seen, 21)
		case "paused":
			// Rare (a paused run): encoding/json decodes it.
			d.ws()
			start := d.i
			if _, ok := d.value(); !ok {
				return false
			}
			return json.Unmarshal(d.b[start:d.i], &r.Paused) == nil && once(&seen, 22)
		case "rerun_job":
			r.RerunJob, ok = d.str()
			return ok && once(&seen, 24)
		}
		return false
	})
}

func (d *runDecoder) subject(s *Subject) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "type":
			s.Type, ok = d.str()
			return ok && once(&seen, 0)
		case "label":
			s.Label, ok = d.str()
			return ok && once(&seen, 1)
		}
		return false
	})
}

func (d *runDecoder) trigger(t *RunTrigger) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "type":
			t.Type, ok = d.str()
			return ok && once(&seen, 0)
		case "event":
			t.Event, ok = d.strPtr()
			return ok && once(&seen, 1)
		case "event_id":
			t.EventID, ok = d.str()
			return ok && once(&seen, 2)
		case "emitted_by":
			t.EmittedBy, ok = d.str()
			return ok && once(&seen, 3)
		case "data":
			if d.null() {
				return once(&seen, 4)
			}
			t.Data, ok = d.dataMap()
			return ok && once(&seen, 4)
		case "cause":
			if d.null() {
				return once(&seen, 5)
			}
			t.Cause = new(Cause)
			return d.cause(t.Cause) && once(&seen, 5)
		}
		return false
	})
}

func (d *runDecoder) cause(c *Cause) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "run_id":
			c.RunID, ok = d.str()
			return ok && once(&seen, 0)
		case "root_run_id":
			c.RootRunID, ok = d.str()
			return ok && once(&seen, 1)
		case "depth":
			var n int64
			n, ok = d.int()
			c.Depth = int(n)
			return ok && once(&seen, 2)
		case "processes":
			if d.null() {
				return once(&seen, 3)
			}
			if !d.consume('[') {
				return false
			}
			c.Processes = []string{}
			if d.consume(']') {
				return once(&seen, 3)
			}
			for {
				p, ok := d.str()
				if !ok {
					return false
				}
				c.Processes = append(c.Processes, p)
				if !d.consume(',') {
					return d.consume(']') && once(&seen, 3)
				}
			}
		}
		return false
	})
}

func (d *runDecoder) search(r *Run) bool {
	if d.null() {
		return true
	}
	r.Search = map[string]string{}
	return d.object(func(key []byte) bool {
		k, ok := keyString(key)
		if !ok {
			return false
		}
		v, ok := d.str()
		r.Search[k] = v
		return ok
	})
}

func (d *runDecoder) steps(r *Run) bool {
	if d.null() {
		return true
	}
	if !d.consume('[') {
		return false
	}
	r.Steps = make([]StepRun, 0, 4)
	if d.consume(']') {
		return true
	}
	for {
		r.Steps = append(r.Steps, StepRun{})
		if !d.step(&r.Steps[len(r.Steps)-1]) {
			return false
		}
		if !d.consume(',') {
			return d.consume(']')
		}
	}
}

func (d *runDecoder) step(s *StepRun) bool {
	var seen uint32
	ok := d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "key":
			s.Key, ok = d.str()
			return ok && once(&seen, 0)
		case "type":
			s.Type, ok = d.str()
			return ok && once(&seen, 1)
		case "name":
			s.Name, ok = d.str()
			return ok && once(&seen, 2)
		case "status":
			var st string
			st, ok = d.str()
			s.Status = StepStatus(st)
			return ok && once(&seen, 3)
		case "started_at":
			s.StartedAt, ok = d.timePtr()
			return ok && once(&seen, 4)
		case "completed_at":
			s.CompletedAt, ok = d.timePtr()
			return ok && once(&seen, 5)
		case "output":
			s.Output, ok = d.value()
			return ok && once(&seen, 6)
		case "error":
			s.Error, ok = d.strPtr()
			return ok && once(&seen, 7)
		case "approval_id":
			s.ApprovalID, ok = d.strPtr()
			return ok && once(&seen, 8)
		case "task_id":
			s.TaskID, ok = d.strPtr()
			return ok && once(&seen, 9)
		case "attempts":
			var n int64
			n, ok = d.int()
			s.Attempts = int(n)
			return ok && once(&seen, 10)
		case "internal":
			return d.internal(&s.internal, &seen) && once(&seen, 11)
		}
		return false
	})
	if ok && d.form == jsonForm && seen&(1<<12) == 0 {
		s.internal.Auto = autoDefault(s)
	}
	return ok
}

// internal scans a step's bookkeeping and sets bit 12 of stepSeen when it
// holds the automatic flag.
func (d *runDecoder) internal(in *stepInternal, stepSeen *uint32) bool {
	var seen uint32
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "approved":
			in.Approved, ok = d.bool()
			return ok && once(&seen, 0)
		case "args":
			if d.null() {
				return once(&seen, 1)
			}
			in.Args, ok = d.dataMap()
			return ok && once(&seen, 1)
		case "auto":
			in.Auto, ok = d.bool()
			*stepSeen |= 1 << 12
			return ok && once(&seen, 2)
		case "sample":
			in.Sample, ok = d.bool()
			return ok && once(&seen, 3)
		case "reminders":
			var n int64
			n, ok = d.int()
			in.Reminders = int(n)
			return ok && once(&seen, 4)
		case "checks":
			var n int64
			n, ok = d.int()
			in.Checks = int(n)
			return ok && once(&seen, 5)
		case "deadline":
			in.Deadline, ok = d.timePtr()
			return ok && once(&seen, 6)
		case "wait_token":
			in.WaitToken, ok = d.str()
			return ok && once(&seen, 7)
		case "wait_event":
			in.WaitEvent, ok = d.str()
			return ok && once(&seen, 8)
		case "sla_fired":
			in.SLAFired, ok = d.bool()
			return ok && once(&seen, 9)
		case "amount":
			if d.null() {
				return once(&seen, 10)
			}
			var n int64
			n, ok = d.int()
			in.AmountSeen = &n
			return ok && once(&seen, 10)
		case "output_bytes":
			var n int64
			n, ok = d.int()
			in.OutputBytes = int(n)
			return ok && once(&seen, 11)
		case "rate_reserved":
			in.RateReserved, ok = d.bool()
			return ok && once(&seen, 12)
		}
		return false
	})
}
