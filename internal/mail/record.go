package mail

import (
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/bas-platform/bas/internal/binrec"
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
	for _, s := range [...]string{m.ID, m.Subject, m.Body, m.IdempotencyKey} {
		b = binrec.AppendString(b, s)
	}
	if m.ReplyTo != nil {
		b = binrec.AppendString(b, *m.ReplyTo)
	}
	for _, l := range [...][]string{m.To, m.Cc} {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, s := range l {
			b = binrec.AppendString(b, s)
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
	r := binrec.New(raw[2:])
	m.CreatedAt = time.Unix(0, int64(r.Uint64())).UTC()
	for _, s := range [...]*string{&m.ID, &m.Subject, &m.Body, &m.IdempotencyKey} {
		*s = r.String()
	}
	if flags&messageReplyTo != 0 {
		reply := r.String()
		m.ReplyTo = &reply
	}
	for _, l := range [...]struct {
		dst   *[]string
		isNil bool
	}{{&m.To, flags&messageNilTo != 0}, {&m.Cc, flags&messageNilCc != 0}} {
		n := r.Count(1) // each address takes a byte at least
		if l.isNil {
			if n != 0 {
				r.Fail()
			}
			continue
		}
		list := make([]string, n)
		for i := range list {
			list[i] = r.String()
		}
		*l.dst = list
	}
	if !r.Done() {
		return nil, errMalformedMessage
	}
	return m, nil
}
