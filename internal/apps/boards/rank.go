package boards

import (
	"strings"

	"github.com/cockroachdb/errors"
)

// Ranks order the items of a status: an item's Position is a rank key, a
// string of base-62 digits whose byte order is the items' order. A key
// between any two others always exists, so placing an item anywhere writes
// that item alone; its neighbours keep theirs.
//
// A key is an integer part (a head letter saying how many digits follow:
// 'a' one, 'b' two ... 'z' 26, and 'Z' ... 'A' the same lengths for
// negative integers) and an optional fraction that never ends in '0'.
// Appending after the last key increments the integer part, so a status
// filled by appends keeps keys of a few characters; inserting between two
// keys extends the fraction. The scheme is David Greenspan's (as in the
// fractional-indexing libraries).

const rankDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// maxRankLen bounds a key; keys made by this package stay far below it
// (long runs are respaced, see respace).
const maxRankLen = 1024

// smallestInteger is the least integer part; no key may equal it alone.
var smallestInteger = "A" + strings.Repeat("0", 26)

func integerLen(head byte) (int, error) {
	switch {
	case head >= 'a' && head <= 'z':
		return int(head-'a') + 2, nil
	case head >= 'A' && head <= 'Z':
		return int('Z'-head) + 2, nil
	}
	return 0, errors.Newf("rank: invalid head %q", head)
}

func integerPart(key string) (string, error) {
	if key == "" {
		return "", errors.New("rank: empty key")
	}
	n, err := integerLen(key[0])
	if err != nil {
		return "", err
	}
	if n > len(key) {
		return "", errors.Newf("rank: key %q is shorter than its integer part", key)
	}
	return key[:n], nil
}

// validRank reports whether key is a well-formed rank key.
func validRank(key string) bool {
	if key == "" || len(key) > maxRankLen || key == smallestInteger {
		return false
	}
	for i := 0; i < len(key); i++ {
		if strings.IndexByte(rankDigits, key[i]) < 0 {
			return false
		}
	}
	i, err := integerPart(key)
	if err != nil {
		return false
	}
	f := key[len(i):]
	return f == "" || f[len(f)-1] != '0'
}

// midpoint returns a fraction strictly between a and b (b "" means no
// upper bound); neither ends in '0', and a < b when b is set.
func midpoint(a, b string) string {
	if b != "" {
		n := 0
		for {
			ca := byte('0')
			if n < len(a) {
				ca = a[n]
			}
			if n >= len(b) || ca != b[n] {
				break
			}
			n++
		}
		if n > 0 {
			rest := ""
			if n < len(a) {
				rest = a[n:]
			}
			return b[:n] + midpoint(rest, b[n:])
		}
	}
	da := 0
	if a != "" {
		da = strings.IndexByte(rankDigits, a[0])
	}
	db := len(rankDigits)
	if b != "" {
		db = strings.IndexByte(rankDigits, b[0])
	}
	if db-da > 1 {
		return string(rankDigits[(da+db+1)/2])
	}
	if len(b) > 1 {
		return b[:1]
	}
	rest := ""
	if a != "" {
		rest = a[1:]
	}
	return string(rankDigits[da]) + midpoint(rest, "")
}

func incrementInteger(x string) (string, bool) {
	head, digs := x[0], []byte(x[1:])
	carry := true
	for i := len(digs) - 1; carry && i >= 0; i-- {
		d := strings.IndexByte(rankDigits, digs[i]) + 1
		if d == len(rankDigits) {
			digs[i] = '0'
		} else {
			digs[i] = rankDigits[d]
			carry = false
		}
	}
	if !carry {
		return string(head) + string(digs), true
	}
	switch head {
	case 'Z':
		return "a0", true
	case 'z':
		return "", false
	}
	h := head + 1
	if h > 'a' {
		digs = append(digs, '0')
	} else {
		digs = digs[:len(digs)-1]
	}
	return string(h) + string(digs), true
}

func decrementInteger(x string) (string, bool) {
	head, digs := x[0], []byte(x[1:])
	borrow := true
	for i := len(digs) - 1; borrow && i >= 0; i-- {
		d := strings.IndexByte(rankDigits, digs[i]) - 1
		if d == -1 {
			digs[i] = 'z'
		} else {
			digs[i] = rankDigits[d]
			borrow = false
		}
	}
	if !borrow {
		return string(head) + string(digs), true
	}
	switch head {
	case 'a':
		return "Zz", true
	case 'A':
		return "", false
	}
	h := head - 1
	if h < 'Z' {
		digs = append(digs, 'z')
	} else {
		digs = digs[:len(digs)-1]
	}
	return string(h) + string(digs), true
}

// rankBetween returns a key strictly between a and b; "" for a means no
// lower bound and "" for b no upper bound. a must sort before b.
func rankBetween(a, b string) (string, error) {
	if a != "" && !validRank(a) {
		return "", errors.Newf("rank: invalid key %q", a)
	}
	if b != "" && !validRank(b) {
		return "", errors.Newf("rank: invalid key %q", b)
	}
	if a != "" && b != "" && a >= b {
		return "", errors.Newf("rank: %q is not before %q", a, b)
	}
	switch {
	case a == "" && b == "":
		return "a0", nil
	case a == "":
		ib, _ := integerPart(b)
		fb := b[len(ib):]
		if ib == smallestInteger {
			return ib + midpoint("", fb), nil
		}
		if ib < b {
			return ib, nil
		}
		k, ok := decrementInteger(ib)
		if !ok {
			return "", errors.New("rank: no key before the least")
		}
		return k, nil
	case b == "":
		ia, _ := integerPart(a)
		k, ok := incrementInteger(ia)
		if !ok {
			return ia + midpoint(a[len(ia):], ""), nil
		}
		return k, nil
	}
	ia, _ := integerPart(a)
	ib, _ := integerPart(b)
	if ia == ib {
		return ia + midpoint(a[len(ia):], b[len(ib):]), nil
	}
	k, ok := incrementInteger(ia)
	if !ok {
		return "", errors.New("rank: no key after the greatest")
	}
	if k < b {
		return k, nil
	}
	return ia + midpoint(a[len(ia):], ""), nil
}
