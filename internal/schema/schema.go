// Package schema generates JSON Schemas from Go types and validates JSON
// documents against schemas, reporting every violation in api.md's 422 shape
// (errs.Violation).
//
// # Generating
//
// Reflect turns a Go value's type into a self-contained schema with
// github.com/invopop/jsonschema: nested types are inlined (no $defs, no $ref),
// objects allow no properties beyond their fields, and only fields tagged
// `jsonschema:"required"` are required. Bounds come from the same tags
// (minLength, maxLength, minimum, enum, pattern ...; escape commas in
// patterns as "\\,"). Defaults in tags are annotations only.
//
// # Validating
//
// Compile a schema once (github.com/santhosh-tekuri/jsonschema/v6, with format
// assertion on, so "format": "email" or "date-time" is checked) and keep the
// *Validator: it is immutable and safe for concurrent use. When schemas arrive
// at run time (a decision's input_schema, say), a Cache compiles each distinct
// schema once. Schemas cannot load anything: a $ref to another document fails
// to compile instead of reading a file or the network.
//
// Validate reports every leaf violation, not only the first, ordered by
// location then type. Each violation's Loc is the caller's prefix followed by
// the path into the document, list indexes as ints:
//
//	{"loc": ["body", "lines", 0, "quantity"], "msg": "must be at least 1", "type": "greater_than_equal"}
//
// Keywords map to api.md types: required -> missing (the loc names the missing
// field), additionalProperties -> extra_forbidden (the loc names the extra
// field), minLength/maxLength -> string_too_short/string_too_long,
// minItems/maxItems -> too_short/too_long, minimum and exclusiveMinimum ->
// greater_than_equal, maximum and exclusiveMaximum -> less_than_equal,
// enum/const -> enum, pattern -> string_pattern_mismatch, type -> type_error;
// format and everything else -> value_error.
//
// For anyOf and oneOf, reporting every failure of every alternative would bury
// the useful one. The alternatives ruled out by their type, or by a constant
// or enum on one of their direct fields (a discriminator such as "type"), are
// set aside, and the failures of the closest remaining alternative (fewest
// violations) are reported. When every alternative is ruled out, one
// violation says so: a type_error listing the accepted types, an enum on the
// discriminator listing its accepted values, or a value_error.
package schema

import (
	"bytes"
	"cmp"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Reflect returns the JSON Schema of v's type, inlined and self-contained:
// invopop/jsonschema's Reflector with RequiredFromJSONSchemaTags,
// DoNotReference and ExpandedStruct, without an $id (so the output does not
// depend on the package path) and with "$schema" naming draft 2020-12. Object
// properties keep their field order, so the output is deterministic.
//
// A type with a method SchemaJSON() []byte describes itself: its schema is
// the JSON that method returns (a package that must not import invopop, such
// as the vendor contract in package capability, states its schema this way).
//
// Reflect panics when v is nil or its type is recursive (a struct reaching
// itself through fields), which cannot be inlined; both are programming
// errors found the first time the code runs.
func Reflect(v any) json.RawMessage {
	if v == nil {
		panic("schema: Reflect(nil): pass a value of the type to describe")
	}
	if path := recursion(reflect.TypeOf(v), nil); path != nil {
		panic("schema: Reflect: type is recursive and cannot be inlined: " + strings.Join(path, " -> "))
	}
	r := invopop.Reflector{
		RequiredFromJSONSchemaTags: true,
		DoNotReference:             true,
		ExpandedStruct:             true,
		Anonymous:                  true,
		Mapper:                     rawSchema,
	}
	out, err := json.Marshal(r.Reflect(v))
	if err != nil {
		// invopop's Schema always marshals; a failure is a bug worth a panic.
		panic(fmt.Sprintf("schema: Reflect(%T): %v", v, err))
	}
	return out
}

// schemaJSONer is a type that states its own schema as JSON.
type schemaJSONer interface{ SchemaJSON() []byte }

var (
	customSchemaType = reflect.TypeFor[interface{ JSONSchema() *invopop.Schema }]()
	aliasSchemaType  = reflect.TypeFor[interface{ JSONSchemaAlias() any }]()
	rawSchemaType    = reflect.TypeFor[schemaJSONer]()
)

// rawSchema is the reflector's Mapper: the schema of a type that states its
// own as JSON (SchemaJSON), or nil to reflect it.
func rawSchema(t reflect.Type) *invopop.Schema {
	if !t.Implements(rawSchemaType) {
		return nil
	}
	raw := reflect.New(t).Elem().Interface().(schemaJSONer).SchemaJSON()
	var s invopop.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		// The JSON is the type's own constant: a failure is a bug worth a panic.
		panic(fmt.Sprintf("schema: %s.SchemaJSON: %v", t, err))
	}
	return &s
}

// recursion returns the chain of types by which t reaches a struct type that
// is already on the stack, or nil. It follows what the reflector follows:
// pointers, slices, arrays, map values and the fields encoding/json sees, and
// stops at types that describe their own schema.
func recursion(t reflect.Type, stack []reflect.Type) []string {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
			continue
		}
		break
	}
	if t.Kind() != reflect.Struct || t.Implements(customSchemaType) || t.Implements(aliasSchemaType) || t.Implements(rawSchemaType) {
		return nil
	}
	if i := slices.Index(stack, t); i >= 0 {
		var path []string
		for _, s := range append(stack[i:], t) {
			path = append(path, s.String())
		}
		return path
	}
	stack = append(stack, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" {
			continue
		}
		if path := recursion(f.Type, stack); path != nil {
			return path
		}
	}
	return nil
}

// Validator validates documents against one compiled schema. It is immutable
// and safe for concurrent use.
type Validator struct {
	schema *jsonschema.Schema
	// typeOnly is the JSON type of a schema that constrains nothing but
	// the document's top-level type ("object", "array", "string",
	// "boolean" or "null"), such as {"type": "object"}: ValidateJSON
	// checks such a document without decoding it.
	typeOnly string
}

// annotations are the keywords that assert nothing about a document.
var annotations = map[string]bool{"$schema": true, "$comment": true, "title": true, "description": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true}

// topLevelType returns the type of a schema that says only that, or "".
func topLevelType(doc any) string {
	m, ok := doc.(map[string]any)
	if !ok {
		return ""
	}
	t, _ := m["type"].(string)
	switch t {
	case "object", "array", "string", "boolean", "null":
	default:
		return ""
	}
	for k := range m {
		if k != "type" && !annotations[k] {
			return ""
		}
	}
	return t
}

// startsAs reports whether a valid JSON document whose first byte is c
// has type t.
func startsAs(c byte, t string) bool {
	switch t {
	case "object":
		return c == '{'
	case "array":
		return c == '['
	case "string":
		return c == '"'
	case "boolean":
		return c == 't' || c == 'f'
	case "null":
		return c == 'n'
	}
	return false
}

// Compile compiles a JSON Schema (draft 2020-12 unless its "$schema" says
// otherwise) with format assertion on. Compiling is far slower than
// validating: call it once per schema and keep the *Validator, or use a Cache.
// A schema that is not valid JSON, not a valid schema, or refers to another
// document, is an error (not marked with an errs kind: the caller knows
// whether a bad schema is its own bug or its caller's 422).
func Compile(schema json.RawMessage) (*Validator, error) {
	sum := sha256.Sum256(schema)
	return compile(schema, sum)
}

func compile(schema json.RawMessage, sum [sha256.Size]byte) (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, errors.Wrap(err, "schema: decode")
	}
	url := "https://schemas.invalid/" + hex.EncodeToString(sum[:]) + ".json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, errors.Wrap(err, "schema: add")
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, errors.Wrap(err, "schema: compile")
	}
	return &Validator{schema: s, typeOnly: topLevelType(doc)}, nil
}

// noLoader refuses every external document, so a schema cannot make the
// compiler read files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.Newf("loading %s: schemas may not refer to other documents", url)
}

// MustCompile is Compile for schemas known at build time; it panics on error.
func MustCompile(schema json.RawMessage) *Validator {
	v, err := Compile(schema)
	if err != nil {
		panic(err)
	}
	return v
}

// Cache compiles each distinct schema once. The zero value is ready to use and
// keeps at most 256 compiled schemas, dropping the least recently used. It is
// safe for concurrent use; schemas are told apart by the SHA-256 of their bytes.
type Cache struct {
	// Max is the number of compiled schemas kept. Defaults to 256.
	Max int

	mu    sync.Mutex
	items map[[sha256.Size]byte]*list.Element
	order list.List // front is most recently used; values are *cacheItem
}

type cacheItem struct {
	sum [sha256.Size]byte
	v   *Validator
}

// Compile returns the Validator of schema, compiling it on first use. Errors
// are Compile's and are not cached.
func (c *Cache) Compile(schema json.RawMessage) (*Validator, error) {
	sum := sha256.Sum256(schema)
	c.mu.Lock()
	if e, ok := c.items[sum]; ok {
		c.order.MoveToFront(e)
		v := e.Value.(*cacheItem).v
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()

	// Compile outside the lock: two callers may compile the same schema at
	// once, which is wasteful but correct, and nobody waits on a slow compile.
	v, err := compile(schema, sum)
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[sum]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cacheItem).v, nil
	}
	if c.items == nil {
		c.items = make(map[[sha256.Size]byte]*list.Element)
	}
	c.items[sum] = c.order.PushFront(&cacheItem{sum: sum, v: v})
	limit := c.Max
	if limit <= 0 {
		limit = 256
	}
	for c.order.Len() > limit {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheItem).sum)
	}
	return v, nil
}

// Len returns the number of compiled schemas the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Validate validates doc, a decoded JSON value (map[string]any, []any, string,
// json.Number or float64 or another Go number, bool, nil), and returns every
// violation, or nil when doc is valid. loc is the location prefix of the
// violations ("body", or "body", "steps", 0, "config"). A doc holding other Go
// types (structs, typed maps or slices) is validated as its encoding/json form.
func (v *Validator) Validate(doc any, loc ...any) []errs.Violation {
	if !isJSON(doc) {
		var err error
		if doc, err = roundTrip(doc); err != nil {
			return []errs.Violation{{Loc: at(loc), Msg: "is not a JSON value: " + err.Error(), Type: "type_error"}}
		}
	}
	err := v.schema.Validate(doc)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []errs.Violation{{Loc: at(loc), Msg: err.Error(), Type: "value_error"}}
	}
	leaves := collector{doc: doc}.collect(verr, nil)
	out := make([]errs.Violation, 0, len(leaves))
	for _, l := range leaves {
		out = append(out, errs.Violation{Loc: append(at(loc), instanceLoc(doc, l.path)...), Msg: l.msg, Type: l.typ})
	}
	slices.SortFunc(out, compareViolations)
	return slices.CompactFunc(out, func(a, b errs.Violation) bool { return compareViolations(a, b) == 0 })
}

// ValidateJSON decodes raw, keeping numbers exact, and validates it. Malformed
// JSON is a single json_invalid violation at loc.
func (v *Validator) ValidateJSON(raw json.RawMessage, loc ...any) []errs.Violation {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []errs.Violation{{Loc: at(loc), Msg: "must not be empty: send a JSON document", Type: "json_invalid"}}
	}
	if v.typeOnly != "" && json.Valid(raw) && startsAs(bytes.TrimSpace(raw)[0], v.typeOnly) {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []errs.Violation{{Loc: at(loc), Msg: "is not valid JSON: " + err.Error(), Type: "json_invalid"}}
	}
	return v.Validate(doc, loc...)
}

// at returns a fresh, non-nil copy of loc, so violations never share it.
func at(loc []any) []any {
	return append(make([]any, 0, len(loc)+4), loc...)
}

// isJSON reports whether v is made only of the types the validator accepts.
func isJSON(v any) bool {
	switch v := v.(type) {
	case nil, bool, string, json.Number, float64, float32,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	case map[string]any:
		for _, e := range v {
			if !isJSON(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !isJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// roundTrip turns a Go value into the decoded form of its JSON encoding.
func roundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// instanceLoc turns an instance location into loc elements: an index into a
// list becomes an int, anything else stays a string.
func instanceLoc(doc any, path []string) []any {
	out := make([]any, 0, len(path))
	cur := doc
	for _, seg := range path {
		switch c := cur.(type) {
		case []any:
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(c) {
				out = append(out, i)
				cur = c[i]
				continue
			}
		case map[string]any:
			out = append(out, seg)
			cur = c[seg]
			continue
		}
		out = append(out, seg)
		cur = nil
	}
	return out
}

// compareViolations orders by location (element by element: ints
// numerically, strings by bytes, an int before a string, a prefix first),
// then type, then message.
func compareViolations(a, b errs.Violation) int {
	for i := range min(len(a.Loc), len(b.Loc)) {
		if c := compareLoc(a.Loc[i], b.Loc[i]); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(len(a.Loc), len(b.Loc)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Msg, b.Msg)
}

func compareLoc(a, b any) int {
	ai, aInt := a.(int)
	bi, bInt := b.(int)
	switch {
	case aInt && bInt:
		return cmp.Compare(ai, bi)
	case aInt:
		return -1
	case bInt:
		return 1
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// leaf is one violation before its location is resolved against the document.
type leaf struct {
	path []string // instance location
	typ  string
	msg  string
	kind jsonschema.ErrorKind
}

// collector flattens a validation error tree of doc into leaf violations.
type collector struct {
	doc any
}

// collect returns the leaf violations of e. anchor is the instance location
// of e's nearest ancestor whose location is reliable (see fixLocation).
func (c collector) collect(e *jsonschema.ValidationError, anchor []string) []leaf {
	exact := true
	switch e.ErrorKind.(type) {
	case *kind.PropertyNames, *kind.ContentSchema:
		e, exact = c.fixLocation(e, anchor)
	default:
		anchor = e.InstanceLocation
	}
	here := func(typ, msg string) []leaf {
		return []leaf{{path: e.InstanceLocation, typ: typ, msg: msg, kind: e.ErrorKind}}
	}
	below := func(name, typ, msg string) leaf {
		return leaf{path: append(slices.Clip(e.InstanceLocation), name), typ: typ, msg: msg, kind: e.ErrorKind}
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		var out []leaf
		for _, cause := range e.Causes {
			out = append(out, c.collect(cause, anchor)...)
		}
		if len(out) == 0 {
			return here("value_error", "is not valid")
		}
		return out
	case *kind.AnyOf:
		return c.alternatives(e)
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return c.alternatives(e)
		}
		return here("value_error", "must match exactly one of the allowed shapes, but matches more than one")
	case *kind.Required:
		return missing(k.Missing, "is required", below)
	case *kind.DependentRequired:
		return missing(k.Missing, fmt.Sprintf("is required when %q is present", k.Prop), below)
	case *kind.Dependency:
		return missing(k.Missing, fmt.Sprintf("is required when %q is present", k.Prop), below)
	case *kind.AdditionalProperties:
		out := make([]leaf, 0, len(k.Properties))
		for _, p := range k.Properties {
			out = append(out, below(p, "extra_forbidden", "is not an allowed field"))
		}
		return out
	case *kind.PropertyNames:
		if !exact {
			return here("value_error", fmt.Sprintf("has a field whose name %q is not allowed", k.Property))
		}
		return []leaf{below(k.Property, "value_error", "is not an allowed field name")}
	}
	typ, msg := describe(e.ErrorKind)
	return here(typ, msg)
}

// fixLocation works around santhosh-tekuri/jsonschema v6.0.3 giving
// propertyNames and contentSchema errors an instance location that shares its
// array with the validator's working path, so later siblings overwrite it;
// only its length stays right. The true location extends anchor (a reliable
// ancestor location) to that length: when exactly one value of doc there fits
// the error (an object with the offending property, or a string), that is it;
// otherwise the anchor is returned with exact false: less precise, never wrong.
func (c collector) fixLocation(e *jsonschema.ValidationError, anchor []string) (fixed *jsonschema.ValidationError, exact bool) {
	f := *e
	f.InstanceLocation = slices.Clone(anchor)
	depth := len(e.InstanceLocation) - len(anchor)
	if depth <= 0 {
		return &f, true
	}
	start, ok := lookup(c.doc, anchor)
	if !ok {
		return &f, false
	}
	fits := func(v any) bool {
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			obj, isObj := v.(map[string]any)
			_, has := obj[k.Property]
			return isObj && has
		}
		_, isString := v.(string)
		return isString
	}
	var found [][]string
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		if len(found) > 1 {
			return
		}
		if len(path) == depth {
			if fits(v) {
				found = append(found, slices.Clone(path))
			}
			return
		}
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				walk(child, append(path, k))
			}
		case []any:
			for i, child := range v {
				walk(child, append(path, strconv.Itoa(i)))
			}
		}
	}
	walk(start, nil)
	if len(found) != 1 {
		return &f, false
	}
	f.InstanceLocation = append(f.InstanceLocation, found[0]...)
	return &f, true
}

// lookup returns the value of doc at an instance location.
func lookup(doc any, path []string) (any, bool) {
	cur := doc
	for _, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func missing(names []string, msg string, below func(name, typ, msg string) leaf) []leaf {
	out := make([]leaf, 0, len(names))
	for _, m := range names {
		out = append(out, below(m, "missing", msg))
	}
	return out
}

// alternatives picks what to report for a failed anyOf or oneOf (see the
// package documentation).
func (c collector) alternatives(e *jsonschema.ValidationError) []leaf {
	base := e.InstanceLocation
	type branch struct {
		leaves       []leaf
		wrongType    *kind.Type // the branch wants another type here
		discriminant string     // the direct field whose constant or enum ruled the branch out
		wants        []any      // that field's accepted values
	}
	var branches []branch
	for _, cause := range e.Causes {
		b := branch{leaves: c.collect(cause, base)}
		for _, l := range b.leaves {
			switch k := l.kind.(type) {
			case *kind.Type:
				if slices.Equal(l.path, base) {
					b.wrongType = k
				}
			case *kind.Const:
				if len(l.path) == len(base)+1 && slices.Equal(l.path[:len(base)], base) && b.discriminant == "" {
					b.discriminant, b.wants = l.path[len(base)], []any{k.Want}
				}
			case *kind.Enum:
				if len(l.path) == len(base)+1 && slices.Equal(l.path[:len(base)], base) && b.discriminant == "" {
					b.discriminant, b.wants = l.path[len(base)], k.Want
				}
			}
		}
		branches = append(branches, b)
	}
	var best []leaf
	for _, b := range branches {
		if b.wrongType == nil && b.discriminant == "" && (best == nil || len(b.leaves) < len(best)) {
			best = b.leaves
		}
	}
	if best != nil {
		return best
	}

	// Every alternative is ruled out. Merge what the ones of the right type
	// want from the discriminator, or else the types they want.
	var typed []branch
	for _, b := range branches {
		if b.wrongType == nil {
			typed = append(typed, b)
		}
	}
	if len(typed) == 0 {
		var want []string
		for _, b := range branches {
			for _, w := range b.wrongType.Want {
				if !slices.Contains(want, w) {
					want = append(want, w)
				}
			}
		}
		return []leaf{{path: base, typ: "type_error", msg: typeMessage(want), kind: &kind.Type{Want: want}}}
	}
	field := typed[0].discriminant
	var wants []any
	for _, b := range typed {
		if b.discriminant != field {
			return []leaf{{path: base, typ: "value_error", msg: "does not match any of the allowed shapes", kind: e.ErrorKind}}
		}
		for _, w := range b.wants {
			if !slices.ContainsFunc(wants, func(x any) bool { return display(x) == display(w) }) {
				wants = append(wants, w)
			}
		}
	}
	path := append(slices.Clip(base), field)
	return []leaf{{path: path, typ: "enum", msg: enumMessage(wants), kind: &kind.Enum{Want: wants}}}
}

// describe returns the api.md type and a short message for a leaf error kind.
func describe(k jsonschema.ErrorKind) (typ, msg string) {
	switch k := k.(type) {
	case *kind.Type:
		return "type_error", typeMessage(k.Want)
	case *kind.InvalidJsonValue:
		return "type_error", "is not a JSON value"
	case *kind.Enum:
		return "enum", enumMessage(k.Want)
	case *kind.Const:
		return "enum", "must be " + display(k.Want)
	case *kind.MinLength:
		return "string_too_short", fmt.Sprintf("must be at least %s", plural(k.Want, "character"))
	case *kind.MaxLength:
		return "string_too_long", fmt.Sprintf("must be at most %s", plural(k.Want, "character"))
	case *kind.MinItems:
		return "too_short", fmt.Sprintf("must have at least %s", plural(k.Want, "item"))
	case *kind.MaxItems:
		return "too_long", fmt.Sprintf("must have at most %s", plural(k.Want, "item"))
	case *kind.AdditionalItems:
		return "too_long", fmt.Sprintf("has %s too many", plural(k.Count, "item"))
	case *kind.Minimum:
		return "greater_than_equal", "must be at least " + ratText(k.Want)
	case *kind.ExclusiveMinimum:
		return "greater_than_equal", "must be greater than " + ratText(k.Want)
	case *kind.Maximum:
		return "less_than_equal", "must be at most " + ratText(k.Want)
	case *kind.ExclusiveMaximum:
		return "less_than_equal", "must be less than " + ratText(k.Want)
	case *kind.Pattern:
		return "string_pattern_mismatch", "must match the pattern " + k.Want
	case *kind.Format:
		return "value_error", formatMessage(k.Want)
	case *kind.MultipleOf:
		return "value_error", "must be a multiple of " + ratText(k.Want)
	case *kind.MinProperties:
		return "value_error", fmt.Sprintf("must have at least %s", plural(k.Want, "field"))
	case *kind.MaxProperties:
		return "value_error", fmt.Sprintf("must have at most %s", plural(k.Want, "field"))
	case *kind.UniqueItems:
		return "value_error", fmt.Sprintf("must not contain duplicates (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "value_error", "must contain at least one matching item"
	case *kind.MinContains:
		return "value_error", fmt.Sprintf("must contain at least %s", plural(k.Want, "matching item"))
	case *kind.MaxContains:
		return "value_error", fmt.Sprintf("must contain at most %s", plural(k.Want, "matching item"))
	case *kind.FalseSchema:
		return "extra_forbidden", "is not allowed"
	case *kind.Not:
		return "value_error", "is not allowed"
	case *kind.ContentEncoding:
		return "value_error", "must be " + k.Want + " encoded"
	case *kind.ContentMediaType:
		return "value_error", "must be valid " + k.Want
	case *kind.ContentSchema:
		return "value_error", "has content that does not match its schema"
	}
	return "value_error", k.LocalizedString(message.NewPrinter(language.English))
}

// typeMessage says which JSON types are accepted: "must be an integer or null".
func typeMessage(want []string) string {
	// null reads best last: "an integer or null".
	want = slices.Clone(want)
	slices.SortStableFunc(want, func(a, b string) int {
		return cmp.Compare(boolInt(a == "null"), boolInt(b == "null"))
	})
	names := make([]string, len(want))
	for i, w := range want {
		switch w {
		case "object", "integer":
			names[i] = "an " + w
		case "array":
			names[i] = "a list"
		case "null":
			names[i] = "null"
		default:
			names[i] = "a " + w
		}
	}
	return "must be " + strings.Join(names, " or ")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// enumMessage lists the accepted values: "must be one of: a, b".
func enumMessage(want []any) string {
	parts := make([]string, len(want))
	for i, w := range want {
		parts[i] = display(w)
	}
	return "must be one of: " + strings.Join(parts, ", ")
}

// display renders a value for a message: strings as they are, anything else
// as JSON.
func display(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

var formatNames = map[string]string{
	"email":     "must be a valid email address",
	"date-time": "must be a date and time such as 2025-01-31T09:00:00Z",
	"date":      "must be a date such as 2025-01-31",
	"time":      "must be a time such as 09:00:00Z",
	"duration":  "must be an ISO 8601 duration such as P3D",
	"uri":       "must be an absolute URI",
	"uuid":      "must be a UUID",
	"ipv4":      "must be an IPv4 address",
	"ipv6":      "must be an IPv6 address",
	"hostname":  "must be a host name",
	"regex":     "must be a regular expression",
}

func formatMessage(format string) string {
	if m, ok := formatNames[format]; ok {
		return m
	}
	return "must be a valid " + format
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// ratText renders a schema bound in plain decimal notation: 1, 0.5, -2.25.
func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	if digits, exact := r.FloatPrec(); exact {
		return r.FloatString(digits)
	}
	s := strings.TrimRight(r.FloatString(12), "0")
	return strings.TrimSuffix(s, ".")
}
