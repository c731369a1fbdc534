package httpapi

// fastDecoder is implemented by input records of hot routes that decode
// the plain form of their body without the general path (a validity
// check, a key check, a schema validation and a decode: four passes). It
// accepts only bodies the general path accepts and decodes to the same
// record: plain ASCII strings without escapes or control characters, each
// known key at most once, every bound met. Anything else (an escape, an
// unknown or repeated key, a bound crossed) makes decodeFast return false
// and the body goes the general way, which decodes it or reports every
// violation.
type fastDecoder interface {
	decodeFast(b []byte) bool
}

// decodeFast decodes the start body {"subject": {"type": "…", "label":
// "…"}, "priority": "…"} (see fastDecoder).
func (in *StartIn) decodeFast(b []byte) bool {
	var out StartIn
	var seenSubject, seenPriority bool
	s := jsonScan{b: b}
	ok := s.object(func(key string) bool {
		switch {
		case key == "subject" && !seenSubject:
			seenSubject = true
			var seenType, seenLabel bool
			return s.object(func(key string) bool {
				var v string
				var ok bool
				switch {
				case key == "type" && !seenType:
					seenType = true
					v, ok = s.plainString(1, 200)
					out.Subject.Type = v
				case key == "label" && !seenLabel:
					seenLabel = true
					v, ok = s.plainString(1, 200)
					out.Subject.Label = v
				}
				return ok
			}) && seenType && seenLabel
		case key == "priority" && !seenPriority:
			seenPriority = true
			v, ok := s.plainString(1, 6)
			switch v {
			case "low", "normal", "high":
				out.Priority = v
				return ok
			}
		}
		return false
	})
	if !ok || !seenSubject || !s.end() {
		return false
	}
	*in = out
	return true
}

// jsonScan reads the plain JSON a fastDecoder accepts.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScan) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *jsonScan) end() bool {
	s.space()
	return s.i == len(s.b)
}

// object reads an object, calling member for each key with the scanner at
// the key's value, which member reads; it reports false as soon as member
// does or the object is not well formed.
func (s *jsonScan) object(member func(key string) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		key, ok := s.plainString(1, 64)
		if !ok || !s.byte(':') || !member(key) {
			return false
		}
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// plainString reads a string of min to max printable ASCII characters
// without escapes.
func (s *jsonScan) plainString(min, max int) (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			n := s.i - start
			s.i++
			if n < min || n > max {
				return "", false
			}
			return string(s.b[start : s.i-1]), true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return "", false
		}
		s.i++
	}
	return "", false
}
