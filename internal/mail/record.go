package mail

import (
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/cockroachdb/errors"
)

// A message is stored in a binary form: the version byte messageV1, the
// flags (messageReplyTo when it has a reply-to address, messageNilTo and
// messageNilCc when those lists are null rather than empty), the creation
// time (Unix nanoseconds, 8 bytes big-endian, read back in UTC), then the
// id, the subject, the body, the idempotency key and (with messageReplyTo)
// the reply-to address, each its length (a uvarint) then its bytes, then
// each list: its length, then each address the same way. The email.send
// message of the example server's run so takes 149 bytes, where its JSON
// took 265. Records stored before are JSON, which starts with '{'.
const (
	messageV1      = 1
	messageReplyTo = 1
	messageNilTo   = 2
	messageNilCc   = 4
)

var errMalformedMessage = errors.New("mail: malformed message record")

// appendRecord appends m's record (see messageV1).
func (m *Message) appendRecord(b []byte) []byte {
	var flags byte
	if m.ReplyTo != nil {
		flags |= messageReplyTo
	}
	if m.To == nil {
		flags |= messageNilTo
	}
	if m.Cc == nil {
		flags |= messageNilCc
	}
	b = append(b, messageV1, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(m.CreatedAt.UnixNano()))
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	for _, s := range [...]string{m.ID, m.Subject, m.Body, m.IdempotencyKey} {
		b = str(b, s)
	}
	if m.ReplyTo != nil {
		b = str(b, *m.ReplyTo)
	}
	for _, l := range [...][]string{m.To, m.Cc} {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, s := range l {
			b = str(b, s)
		}
	}
	return b
}

// recordSize is the length of m's record.
func (m *Message) recordSize() int {
	n := 2 + 8 + 2*binary.MaxVarintLen32 + len(m.ID) + len(m.Subject) + len(m.Body) + len(m.IdempotencyKey) + 4*binary.MaxVarintLen32
	if m.ReplyTo != nil {
		n += binary.MaxVarintLen32 + len(*m.ReplyTo)
	}
	for _, l := range [...][]string{m.To, m.Cc} {
		for _, s := range l {
			n += binary.MaxVarintLen32 + len(s)
		}
	}
	return n
}

// decodeMessage decodes a stored message: its record (see messageV1), or
// the JSON stored before.
func decodeMessage(raw []byte) (*Message, error) {
	m := new(Message)
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, m); err != nil {
			return nil, errors.Wrap(err, "mail: decode a message")
		}
		return m, nil
	}
	if len(raw) < 10 || raw[0] != messageV1 || raw[1]&^(messageReplyTo|messageNilTo|messageNilCc) != 0 {
		return nil, errMalformedMessage
	}
	flags := raw[1]
	m.CreatedAt = time.Unix(0, int64(binary.BigEndian.Uint64(raw[2:10]))).UTC()
	b := raw[10:]
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || (n > 1 && b[n-1] == 0) { // malformed, or padded: one stored form
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	str := func() (string, bool) {
		l, ok := uvarint()
		if !ok || l > uint64(len(b)) {
			return "", false
		}
		s := string(b[:l])
		b = b[l:]
		return s, true
	}
	var ok bool
	for _, s := range [...]*string{&m.ID, &m.Subject, &m.Body, &m.IdempotencyKey} {
		if *s, ok = str(); !ok {
			return nil, errMalformedMessage
		}
	}
	if flags&messageReplyTo != 0 {
		r, ok := str()
		if !ok {
			return nil, errMalformedMessage
		}
		m.ReplyTo = &r
	}
	for _, l := range [...]struct {
		dst   *[]string
		isNil bool
	}{{&m.To, flags&messageNilTo != 0}, {&m.Cc, flags&messageNilCc != 0}} {
		n, ok := uvarint()
		if !ok || n > uint64(len(b)) || (l.isNil && n != 0) { // each address takes a byte at least
			return nil, errMalformedMessage
		}
		if l.isNil {
			continue
		}
		list := make([]string, n)
		for i := range list {
			if list[i], ok = str(); !ok {
				return nil, errMalformedMessage
			}
		}
		*l.dst = list
	}
	if len(b) != 0 {
		return nil, errMalformedMessage
	}
	return m, nil
}
