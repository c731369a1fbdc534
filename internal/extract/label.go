package extract

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// labelTokens splits a label into words (runs of letters and digits) and
// single punctuation marks, dropping a trailing ':'. It returns nil when the
// label has no word.
func labelTokens(label string) []string {
	l := strings.TrimSpace(label)
	l = strings.TrimSpace(strings.TrimRight(l, ":："))
	var toks []string
	words := 0
	for i := 0; i < len(l); {
		r, n := utf8.DecodeRuneInString(l[i:])
		switch {
		case isAlnum(r):
			j := i + n
			for j < len(l) {
				r2, n2 := utf8.DecodeRuneInString(l[j:])
				if !isAlnum(r2) {
					break
				}
				j += n2
			}
			toks = append(toks, l[i:j])
			words++
			i = j
		case unicode.IsSpace(r):
			i += n
		default:
			toks = append(toks, l[i:i+n])
			i += n
		}
	}
	if words == 0 {
		return nil
	}
	return toks
}

// labelRegexp matches a label whatever its case and spacing; punctuation
// between its words and a final '.' are optional. It returns nil for a
// label without a word.
func labelRegexp(label string) *regexp.Regexp {
	// A label with bytes that are not UTF-8 (a Go caller's; JSON has
	// none) must not make a pattern regexp cannot compile.
	toks := labelTokens(strings.ToValidUTF8(label, "\uFFFD"))
	if toks == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("(?i)")
	for i, t := range toks {
		if i > 0 {
			b.WriteString(`[ \t]*`)
		}
		b.WriteString(regexp.QuoteMeta(t))
		// Punctuation between words, and a trailing '.', may be left out
		// ("PO Number" for "P.O. Number", "Invoice No" for "Invoice No.");
		// other punctuation at the ends must be there ("Invoice #" is not
		// "Invoice").
		inner := i > 0 && i < len(toks)-1
		if r, _ := utf8.DecodeRuneInString(t); !isAlnum(r) && (inner || (i == len(toks)-1 && t == ".")) {
			b.WriteString("?")
		}
	}
	return regexp.MustCompile(b.String())
}

// reNextLabel matches the start of another "label:" on the same line.
var reNextLabel = regexp.MustCompile(`^\pL[^:\t\n]{0,60}?[\pL\pN#.)\]]:(?:[ \t]|$)`)

// labelMatcher finds a label. Case-insensitive regexps are slow on long
// text, so on ASCII pages it first finds the label's longest word with a
// plain search of the lowercased text and runs the regexp only on the
// lines holding it (a label never spans lines).
type labelMatcher struct {
	re  *regexp.Regexp
	key string // the longest ASCII word, lowercased; "" to scan everything
}

func newLabelMatcher(label string) *labelMatcher {
	re := labelRegexp(label)
	if re == nil {
		return nil
	}
	m := &labelMatcher{re: re}
	for _, t := range labelTokens(label) {
		if isASCIIWord(t) && len(t) > len(m.key) {
			m.key = strings.ToLower(t)
		}
	}
	return m
}

func isASCIIWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// find returns the [start, end) byte spans of the label in text, in
// order; lower is text lowercased when text is ASCII ("" otherwise).
func (m *labelMatcher) find(text, lower string) [][2]int {
	var out [][2]int
	if m.key == "" || lower == "" {
		for _, x := range m.re.FindAllStringIndex(text, -1) {
			out = append(out, [2]int{x[0], x[1]})
		}
		return out
	}
	for i := 0; i < len(lower); {
		j := strings.Index(lower[i:], m.key)
		if j < 0 {
			break
		}
		ls := strings.LastIndexByte(lower[:i+j], '\n') + 1
		le := strings.IndexByte(lower[i+j:], '\n')
		if le < 0 {
			le = len(lower)
		} else {
			le += i + j
		}
		for _, x := range m.re.FindAllStringIndex(text[ls:le], -1) {
			out = append(out, [2]int{ls + x[0], ls + x[1]})
		}
		i = le + 1
	}
	return out
}

// asciiLower returns text lowercased when it is all ASCII, else "".
func asciiLower(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return ""
		}
	}
	return strings.ToLower(text)
}

func (c *compiled) labelCandidates(pages []Page, lowers []string, visit func(candidate) bool) {
	for _, lm := range c.labels {
		for pi, p := range pages {
			text := p.Text
			for _, m := range lm.find(text, lowers[pi]) {
				s, e := m[0], m[1]
				if !labelStart(text, s) || alnumAt(text, e) {
					continue
				}
				vs, ve, ok := valueAfterLabel(text, e)
				if !ok {
					continue
				}
				if visit(candidate{page: p.Number, text: text[vs:ve], start: vs, end: ve, pageText: text}) {
					return
				}
			}
		}
	}
}

// labelStart reports whether a label may begin at byte s: at the start of
// a line, or after a tab, two spaces or one of "|;," (so "Date" is not
// found inside "Due date").
func labelStart(text string, s int) bool {
	spaces := 0
	for i := s - 1; i >= 0; i-- {
		switch c := text[i]; c {
		case ' ':
			spaces++
			if spaces >= 2 {
				return true
			}
		case '\t', '\n', '\r', '\f', '|', ';', ',':
			return true
		default:
			return false
		}
	}
	return true
}

// valueAfterLabel finds the value after a label ending at byte e: on the
// same line after ':', a tab or two spaces, or on the next non-blank line
// when nothing follows the label (unless that line is another "label:").
func valueAfterLabel(text string, e int) (int, int, bool) {
	lineEnd := strings.IndexByte(text[e:], '\n')
	if lineEnd < 0 {
		lineEnd = len(text)
	} else {
		lineEnd += e
	}
	i := e
	spaces, tabs := 0, 0
	for i < lineEnd && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
		if text[i] == '\t' {
			tabs++
		} else if text[i] == ' ' {
			spaces++
		}
		i++
	}
	colon := false
	if i < lineEnd && text[i] == ':' {
		colon = true
		i++
	} else if strings.HasPrefix(text[i:lineEnd], "：") {
		colon = true
		i += len("：")
	}
	for i < lineEnd && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
		i++
	}
	if !colon && tabs == 0 && spaces < 2 && i < lineEnd {
		return 0, 0, false
	}
	if i < lineEnd {
		vs, ve := trimSpan(text, i, fieldEnd(text, i, lineEnd))
		if vs < ve {
			return vs, ve, true
		}
	}
	// Nothing after the label on its line: the next non-blank line.
	for ls := lineEnd + 1; ls < len(text); {
		le := strings.IndexByte(text[ls:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += ls
		}
		vs, ve := trimSpan(text, ls, le)
		if vs < ve {
			// A line that is itself "label: value" is no value.
			if reNextLabel.MatchString(text[vs:ve]) {
				return 0, 0, false
			}
			vs, ve = trimSpan(text, vs, fieldEnd(text, vs, ve))
			return vs, ve, true
		}
		ls = le + 1
	}
	return 0, 0, false
}

// fieldEnd returns where a value starting at s ends on its line: before a
// tab or a run of two spaces that is followed by another "label:", or at
// lineEnd.
func fieldEnd(text string, s, lineEnd int) int {
	for p := s; p < lineEnd; p++ {
		if text[p] != '\t' && (text[p] != ' ' || p+1 >= lineEnd || text[p+1] != ' ') {
			continue
		}
		q := p
		for q < lineEnd && (text[q] == ' ' || text[q] == '\t') {
			q++
		}
		if reNextLabel.MatchString(text[q:lineEnd]) {
			return p
		}
		p = q - 1
	}
	return lineEnd
}
