package runengine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/refs"
	"github.com/bas-platform/bas/store"
)

// Run search: a run is found by the words of its subject label and of its
// process version's declared search fields (process.Version.Search), and
// filtered by a declared field's value. The keys are kept by the workers:
// the label's words in the run's first commit, the fields' values in the
// commit that changes them.
//
//	(tenant, "run-word", word, run-id)
//	(tenant, "run-field", name, value, run-id)

// Bounds of run search.
const (
	// MaxSearchValue bounds a declared field's value as indexed (longer
	// values are cut, on a rune boundary).
	MaxSearchValue = 200
	// maxWords bounds the words indexed per run.
	maxWords = 64
	// maxWordLen bounds an indexed word; longer words are not indexed.
	maxWordLen = 64
)

func wordPrefix(tenant, word string) []byte { return store.Key(tenant, "run-word", word) }

// wordKey is the entry of runID under word, made in one allocation.
func wordKey(tenant, word, runID string) []byte {
	return store.AppendKey(make([]byte, 0, keyRoom(tenant, word, runID)+16), tenant, "run-word", word, runID)
}

func fieldPrefix(tenant, name, value string) []byte {
	return store.Key(tenant, "run-field", name, value)
}

// SearchWords splits text into the lower-case words run search matches:
// runs of letters and digits.
func SearchWords(text string) []string {
	var out []string
	text = strings.ToLower(text)
	start := -1
	for i, r := range text {
		word := !notWordRune(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			out = addWord(out, text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = addWord(out, text[start:])
	}
	return out
}

// notWordRune tells the runes between the words of SearchWords: all but
// letters and digits.
func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// SearchQueryProblem says what keeps q from being a search query (see
// RunQuery.Q), "" when nothing does: q must have a word, and no word
// longer than an indexed one, which no run could be found by.
func SearchQueryProblem(q string) string {
	n := 0
	for _, w := range strings.FieldsFunc(strings.ToLower(q), notWordRune) {
		if len(w) > maxWordLen {
			return fmt.Sprintf("has a word longer than %d bytes, which no run is found by", maxWordLen)
		}
		n++
	}
	if n == 0 {
		return "must have a word (letters or digits)"
	}
	return ""
}

func addWord(out []string, w string) []string {
	if len(w) <= maxWordLen && !slices.Contains(out, w) {
		out = append(out, w)
	}
	return out
}

// SearchValue is a declared field's value as indexed and filtered: its
// text, trimmed, lower case, at most MaxSearchValue bytes.
func SearchValue(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) > MaxSearchValue {
		cut := MaxSearchValue
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// runWords are the words a run is found by.
func runWords(label string, search map[string]string) []string {
	words := SearchWords(label)
	if len(search) == 0 {
		return words
	}
	for _, name := range slices.Sorted(maps.Keys(search)) {
		for _, w := range SearchWords(search[name]) {
			if !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	if len(words) > maxWords {
		words = words[:maxWords]
	}
	return words
}

// labelWordOp indexes a new run's label words; nil when it has none.
func labelWordOp(tenant, runID, label string) func(store.Txn) error {
	words := SearchWords(label)
	if len(words) == 0 {
		return nil
	}
	return func(tx store.Txn) error {
		for _, w := range words {
			if err := tx.Set(wordKey(tenant, w, runID), nil); err != nil {
				return err
			}
		}
		return nil
	}
}

// searchValues reads the version's declared fields from the run's data;
// a path with no value yet is left out.
func (x *exec) searchValues() map[string]string {
	if len(x.ver.Search) == 0 {
		return nil
	}
	data := x.data()
	out := map[string]string{}
	for name, path := range x.ver.Search {
		v, ok := refs.Lookup(data, path)
		if !ok || v == nil {
			continue
		}
		s, err := refs.Text(v)
		if err != nil {
			continue
		}
		out[name] = SearchValue(s)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// indexSearch brings the run's declared search values up to date, with
// the index keys that change, in the command's commit.
func (x *exec) indexSearch() {
	if len(x.ver.Search) == 0 {
		return
	}
	r := x.r
	next := x.searchValues()
	if maps.Equal(next, r.Search) {
		return
	}
	tenant, id := r.Tenant, r.ID
	for name, v := range r.Search {
		if nv, ok := next[name]; !ok || nv != v {
			x.fx.ops = append(x.fx.ops, deleteKey(store.AppendKey(fieldPrefix(tenant, name, v), id)))
		}
	}
	for name, v := range next {
		if ov, ok := r.Search[name]; !ok || ov != v {
			x.fx.ops = append(x.fx.ops, setKey(store.AppendKey(fieldPrefix(tenant, name, v), id), nil))
		}
	}
	oldWords, newWords := runWords(r.Subject.Label, r.Search), runWords(r.Subject.Label, next)
	for _, w := range oldWords {
		if !slices.Contains(newWords, w) {
			x.fx.ops = append(x.fx.ops, deleteKey(wordKey(tenant, w, id)))
		}
	}
	for _, w := range newWords {
		if !slices.Contains(oldWords, w) {
			x.fx.ops = append(x.fx.ops, setKey(wordKey(tenant, w, id), nil))
		}
	}
	r.Search = next
	x.dirty = true
}

// matchesSearch reports whether r has every word of q and every value of
// fields.
func matchesSearch(r *Run, words []string, fields map[string]string) bool {
	if len(words) > 0 {
		have := runWords(r.Subject.Label, r.Search)
		for _, w := range words {
			if !slices.Contains(have, w) {
				return false
			}
		}
	}
	for name, v := range fields {
		if r.Search[name] != SearchValue(v) {
			return false
		}
	}
	return true
}

// searchPrefix is the index a search query lists from: a declared field's
// value, else the longest word of Q; nil when q searches nothing.
func searchPrefix(tenant string, q RunQuery) []byte {
	if len(q.Search) > 0 {
		name := slices.Min(slices.Collect(maps.Keys(q.Search)))
		return fieldPrefix(tenant, name, SearchValue(q.Search[name]))
	}
	words := SearchWords(q.Q)
	if len(words) == 0 {
		return nil
	}
	longest := words[0]
	for _, w := range words[1:] {
		if len(w) > len(longest) {
			longest = w
		}
	}
	return wordPrefix(tenant, longest)
}
