// Package jsonkeys checks the keys of a JSON document before it is decoded
// into a Go value, so that what is validated is what is decoded.
//
// encoding/json matches object keys to struct fields without regard to case
// and lets the last of two equal keys win, while a JSON Schema validator
// matches keys exactly and sees every member. A body such as
// {"label":"ok","LABEL":"<5,000 characters>"} passes a schema that bounds
// label and then decodes the long value. [Check] reports both cases:
//
//   - a key that appears twice in one object (after unescaping), anywhere
//     in the document, is a violation of type value_error;
//   - a key that names no field of the struct it is decoded into but
//     matches one when case is ignored is an unknown field: a violation of
//     type extra_forbidden.
//
// Keys decoded into maps, interfaces and json.RawMessage are matched
// exactly by encoding/json, so only duplicates are reported there.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/bas-platform/bas/internal/errs"
)

// Checker checks documents against the Go types they are decoded into. It
// caches what it learns of each type and is safe for concurrent use; the
// zero value is ready.
type Checker struct {
	plans sync.Map // reflect.Type -> *plan
}

// plan is what a type expects of the JSON decoded into it.
type plan struct {
	fields map[string]*plan // struct: json name -> plan of the field (nil: anything)
	names  []string         // struct: the json names, for case-folded matching
	elem   *plan            // slice, array, map: the plan of an element
	isStr  bool             // a struct
}

// Check reports the duplicate and case-variant keys of doc, which must be
// valid JSON (see json.Valid), when it is decoded into a value of type t
// (nil: no struct is involved, only duplicates are reported). Locations
// start with root ("body").
func (c *Checker) Check(doc []byte, t reflect.Type, root string) []errs.Violation {
	var s scanner
	s.b, s.root = doc, root
	s.path, s.keys = s.pathBuf[:0], s.keysBuf[:0]
	s.value(c.planOf(t))
	return s.vs
}

// planOf returns the plan of t, made once.
func (c *Checker) planOf(t reflect.Type) *plan {
	if t == nil {
		return nil
	}
	if p, ok := c.plans.Load(t); ok {
		return p.(*plan)
	}
	p := c.build(t, map[reflect.Type]*plan{})
	if p == nil {
		p = &plan{}
	}
	actual, _ := c.plans.LoadOrStore(t, p)
	return actual.(*plan)
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// build makes the plan of t; seen breaks cycles of recursive types.
func (c *Checker) build(t reflect.Type, seen map[reflect.Type]*plan) *plan {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p, ok := seen[t]; ok {
		return p
	}
	if t == rawMessage {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		p := &plan{fields: map[string]*plan{}, isStr: true}
		seen[t] = p
		c.addFields(p, t, seen)
		return p
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		p := &plan{}
		seen[t] = p
		p.elem = c.build(t.Elem(), seen)
		if p.elem == nil {
			return nil
		}
		return p
	case reflect.Map:
		p := &plan{}
		seen[t] = p
		p.elem = c.build(t.Elem(), seen)
		if p.elem == nil {
			return nil
		}
		return p
	}
	return nil
}

// addFields adds the JSON fields of struct t to p, as encoding/json names
// them (embedded structs without a name promote their fields).
func (c *Checker) addFields(p *plan, t reflect.Type, seen map[reflect.Type]*plan) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				c.addFields(p, ft, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := p.fields[name]; dup {
			continue
		}
		p.fields[name] = c.build(f.Type, seen)
		p.names = append(p.names, name)
	}
}

// scanner walks valid JSON once.
type scanner struct {
	b    []byte
	i    int
	root string
	path []seg // where the scan is, turned into a location only for a violation
	vs   []errs.Violation
	keys [][]byte // keys of the objects being read, innermost last

	// Room for the usual body, so a scan allocates once.
	pathBuf [8]seg
	keysBuf [16][]byte
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// seg is one step of a location: an object key or a list index.
type seg struct {
	key []byte
	idx int
}

func (s *scanner) add(typ, msg string, key []byte) {
	loc := make([]any, 0, len(s.path)+2)
	loc = append(loc, s.root)
	for _, g := range s.path {
		if g.key != nil {
			loc = append(loc, string(g.key))
		} else {
			loc = append(loc, g.idx)
		}
	}
	s.vs = append(s.vs, errs.Violation{Loc: append(loc, string(key)), Msg: msg, Type: typ})
}

func (s *scanner) value(p *plan) {
	s.ws()
	if s.i >= len(s.b) {
		return
	}
	switch s.b[s.i] {
	case '{':
		s.object(p)
	case '[':
		s.array(p)
	case '"':
		s.str()
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return
			}
			s.i++
		}
	}
}

// str skips a string and returns its raw contents (without quotes).
func (s *scanner) str() []byte {
	s.i++ // opening quote
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			raw := s.b[start:s.i]
			s.i++
			return raw
		}
		s.i++
	}
	return s.b[start:]
}

// dupScanLimit is the number of keys of one object compared pairwise;
// larger objects use a set.
const dupScanLimit = 32

func (s *scanner) object(p *plan) {
	s.i++ // {
	base := len(s.keys)
	var set map[string]struct{}
	defer func() { s.keys = s.keys[:base] }()
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] == '}' {
			s.i++
			return
		}
		if s.b[s.i] == ',' {
			s.i++
			continue
		}
		key := s.str()
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			_ = json.Unmarshal(s.b[s.i-len(key)-2:s.i], &k)
			key = []byte(k)
		}
		s.ws()
		s.i++ // :
		dup := false
		if n := len(s.keys) - base; n < dupScanLimit {
			for _, k := range s.keys[base:] {
				if bytes.Equal(k, key) {
					dup = true
					break
				}
			}
			s.keys = append(s.keys, key)
			if n+1 == dupScanLimit {
				set = make(map[string]struct{}, 2*dupScanLimit)
				for _, k := range s.keys[base:] {
					set[string(k)] = struct{}{}
				}
			}
		} else {
			if _, dup = set[string(key)]; !dup {
				set[string(key)] = struct{}{}
			}
		}
		if dup {
			s.add("value_error", "appears more than once in this object; send each key once", key)
		}
		var child *plan
		switch {
		case p == nil:
		case p.isStr:
			var ok bool
			if child, ok = p.fields[string(key)]; !ok {
				for _, name := range p.names {
					if strings.EqualFold(name, string(key)) {
						s.add("extra_forbidden", "is not a field; keys are case-sensitive (did you mean \""+name+"\"?)", key)
						break
					}
				}
			}
		default:
			child = p.elem
		}
		if key == nil {
			key = []byte{}
		}
		s.path = append(s.path, seg{key: key})
		s.value(child)
		s.path = s.path[:len(s.path)-1]
	}
}

func (s *scanner) array(p *plan) {
	s.i++ // [
	var elem *plan
	if p != nil && !p.isStr {
		elem = p.elem
	}
	for n := 0; ; {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] == ']' {
			s.i++
			return
		}
		if s.b[s.i] == ',' {
			s.i++
			n++
			continue
		}
		s.path = append(s.path, seg{idx: n})
		s.value(elem)
		s.path = s.path[:len(s.path)-1]
	}
}
