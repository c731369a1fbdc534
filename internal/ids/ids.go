// Package ids makes record identifiers: a kind prefix and 26 characters of
// Crockford base32 holding a 48-bit millisecond time, 16 bits of the time
// within the millisecond (steps of 1/65536 ms) and 64 random bits, so ids
// sort by creation and cannot be guessed. Ids one Generator makes at the
// same instant (as with a stopped test clock, or several records of one
// change) sort in the order it made them: the random part of each steps up
// from the one before by a random amount. The package keeps no state: each
// service owns its Generator.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Len is the length of the part after the prefix and underscore.
const Len = 26

// Generator makes ids. Those it makes at the same instant sort in the order
// it made them. The zero value is ready to use; it is safe for concurrent
// use and must not be copied after first use.
type Generator struct {
	mu     sync.Mutex
	hi, lo uint64 // the last id made
}

// New returns an id of kind prefix made at t, e.g. New("run", t) = "run_01J...".
// An id never sorts before one the generator made earlier: a t before the
// last one (a clock stepped back) counts as the last one.
func (g *Generator) New(prefix string, t time.Time) string {
	var b [16]byte
	sub := uint64(t.Nanosecond()%1_000_000) * 65536 / 1_000_000
	hi := uint64(t.UnixMilli())<<16 | sub
	_, _ = rand.Read(b[8:])
	lo := binary.BigEndian.Uint64(b[8:])
	g.mu.Lock()
	if hi < g.hi {
		hi = g.hi // the clock stepped back: keep the order the ids were made in
	}
	switch {
	case hi > g.hi:
		g.hi, g.lo = hi, lo
	case hi == g.hi:
		// The same instant as the id before: step up from it by a random
		// amount below 2^32, so order holds and the next is not known.
		if next := g.lo + 1 + lo>>32; next > g.lo {
			lo = next
		} else if g.lo < ^uint64(0) {
			lo = g.lo + 1
		}
		g.lo = lo
	}
	g.mu.Unlock()
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	var sb strings.Builder
	sb.Grow(len(prefix) + 1 + Len)
	sb.WriteString(prefix)
	sb.WriteByte('_')
	encode(&sb, b)
	return sb.String()
}

// last is the newest instant New was called for and the random part of
// the last id made at it.
// Floor returns the smallest id of kind prefix that New can make at t:
// every id made at t or later sorts after it.
func Floor(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	var sb strings.Builder
	sb.WriteString(prefix)
	sb.WriteByte('_')
	encode(&sb, b)
	return sb.String()
}

// encode writes 128 bits as 26 base32 characters, most significant first.
func encode(sb *strings.Builder, b [16]byte) {
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	// 26 characters hold 130 bits; the first carries the top 3 bits.
	var out [Len]byte
	for i := Len - 1; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	sb.Write(out[:])
}

// Time returns the creation time encoded in id, and false when id is not of
// this package's form.
func Time(id string) (time.Time, bool) {
	i := strings.LastIndexByte(id, '_')
	if i < 0 || len(id)-i-1 != Len {
		return time.Time{}, false
	}
	var hi, lo uint64
	for _, c := range id[i+1:] {
		v := strings.IndexRune(alphabet, c)
		if v < 0 {
			return time.Time{}, false
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(v)
	}
	return time.UnixMilli(int64(hi >> 16)).UTC(), true
}

// Valid reports whether id has the given prefix and the form New makes.
func Valid(prefix, id string) bool {
	if !strings.HasPrefix(id, prefix+"_") {
		return false
	}
	_, ok := Time(id)
	return ok
}

// Token returns n random bytes as lowercase base32 text, for secrets.
func Token(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	var sb strings.Builder
	var acc uint32
	bits := 0
	for _, x := range b {
		acc = acc<<8 | uint32(x)
		bits += 8
		for bits >= 5 {
			bits -= 5
			sb.WriteByte(strings.ToLower(alphabet)[acc>>bits&31])
		}
	}
	if bits > 0 {
		sb.WriteByte(strings.ToLower(alphabet)[acc<<(5-bits)&31])
	}
	return sb.String()
}
