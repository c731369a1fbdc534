package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

type line struct {
	Description string `json:"description" jsonschema:"required,minLength=1,maxLength=200"`
	Quantity    int    `json:"quantity" jsonschema:"required,minimum=1"`
	UnitCents   int64  `json:"unit_amount_cents" jsonschema:"minimum=0"`
}

type invoiceIn struct {
	Customer string            `json:"customer_id" jsonschema:"required,pattern=^cus_[a-z0-9]{4\\,}$"`
	Currency string            `json:"currency" jsonschema:"required,enum=EUR,enum=USD"`
	Email    string            `json:"email,omitempty" jsonschema:"format=email"`
	Due      time.Time         `json:"due_at,omitzero"`
	Lines    []line            `json:"lines" jsonschema:"required,minItems=1,maxItems=3"`
	Tags     []string          `json:"tags,omitempty" jsonschema:"maxItems=2"`
	Memo     *string           `json:"memo,omitempty" jsonschema:"maxLength=10"`
	Meta     map[string]string `json:"meta,omitempty"`
	Discount float64           `json:"discount_percent,omitempty" jsonschema:"minimum=0,maximum=100"`
	internal int
}

func TestReflectGolden(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	for _, v := range []any{&invoiceIn{}, invoiceIn{}.internal, []line{}, map[string]bool{}} {
		var indented bytes.Buffer
		if err := json.Indent(&indented, Reflect(v), "", "  "); err != nil {
			t.Fatalf("Reflect(%T) is not JSON: %v", v, err)
		}
		fmt.Fprintf(&out, "%T\n%s\n\n", v, indented.String())
	}
	golden(t, "reflect.golden", []byte(out.String()))
}

func TestReflectIsDeterministic(t *testing.T) {
	t.Parallel()
	first := string(Reflect(&invoiceIn{}))
	for range 20 {
		if got := string(Reflect(invoiceIn{})); got != first {
			t.Fatalf("Reflect output changed between calls:\n%s\n%s", first, got)
		}
	}
	for _, banned := range []string{`"$id"`, `"$defs"`, `"$ref"`} {
		if strings.Contains(first, banned) {
			t.Errorf("Reflect output contains %s: %s", banned, first)
		}
	}
}

type node struct {
	Name     string  `json:"name"`
	Children []*node `json:"children"`
}

type indirect struct {
	Items map[string][]wrapper `json:"items"`
}

type wrapper struct {
	Back *indirect `json:"back"`
	//lint:ignore U1000 an unexported field the schema must leave out
	hidden *wrapper
}

type skipped struct {
	Self *skipped `json:"-"`
	N    int      `json:"n"`
}

func TestReflectPanics(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		v    any
		want string
	}{
		{"nil", nil, "schema: Reflect(nil): pass a value of the type to describe"},
		{"self", node{}, "schema: Reflect: type is recursive and cannot be inlined: schema.node -> schema.node"},
		{"through a map", &indirect{}, "schema: Reflect: type is recursive and cannot be inlined: schema.indirect -> schema.wrapper -> schema.indirect"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if diff := cmp.Diff(test.want, fmt.Sprint(recover())); diff != "" {
					t.Errorf("panic mismatch (-want +got):\n%s", diff)
				}
			}()
			Reflect(test.v)
		})
	}
	if got := string(Reflect(skipped{})); !strings.Contains(got, `"n"`) {
		t.Errorf("a json:\"-\" field must not count as recursion; got %s", got)
	}
}

// keywords exercises every keyword the mapping knows.
const keywords = `{
	"type": "object",
	"additionalProperties": false,
	"required": ["name", "count"],
	"properties": {
		"name": {"type": "string", "minLength": 2, "maxLength": 5},
		"one": {"type": "string", "minLength": 1},
		"count": {"type": "integer", "minimum": 1, "maximum": 10},
		"ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
		"step": {"type": "number", "multipleOf": 0.25},
		"color": {"enum": ["red", "green", 3]},
		"kind": {"const": "fixed"},
		"key": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,39}$"},
		"email": {"type": "string", "format": "email"},
		"when": {"type": "string", "format": "date-time"},
		"day": {"type": "string", "format": "date"},
		"tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": true},
		"lines": {"type": "array", "items": {"type": "object", "required": ["sku"], "additionalProperties": false, "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}}},
		"pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
		"props": {"type": "object", "minProperties": 1, "maxProperties": 2},
		"names": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
		"nullable": {"type": ["integer", "null"]},
		"nothing": false,
		"notnull": {"not": {"type": "null"}},
		"hasone": {"type": "array", "contains": {"const": 1}},
		"deps": {"type": "object", "dependentRequired": {"a": ["b", "c"]}},
		"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}
	}
}`

func TestValidateKeywords(t *testing.T) {
	t.Parallel()
	v := MustCompile(json.RawMessage(keywords))
	loc := func(extra ...any) []any { return append([]any{"body"}, extra...) }
	for _, test := range []struct {
		name string
		doc  string
		want []errs.Violation
	}{
		{"valid", `{"name": "ab", "count": 1}`, nil},
		{"valid with everything", `{"name": "abcde", "count": 10, "ratio": 0.25, "step": 1.75, "color": 3, "kind": "fixed", "key": "a_1",
			"email": "a@example.com", "when": "2025-01-31T09:00:00Z", "day": "2025-01-31", "tags": ["x", "y"], "lines": [{"sku": "A", "qty": 1}],
			"pair": ["x"], "props": {"a": 1}, "names": {"ok": 1}, "nullable": null, "notnull": 0, "hasone": [2, 1], "deps": {"a": 1, "b": 2, "c": 3},
			"matrix": [[1, 2], []]}`, nil},
		{"missing", `{}`, []errs.Violation{
			{Loc: loc("count"), Msg: "is required", Type: "missing"},
			{Loc: loc("name"), Msg: "is required", Type: "missing"},
		}},
		{"string too short", `{"name": "a", "count": 1, "one": ""}`, []errs.Violation{
			{Loc: loc("name"), Msg: "must be at least 2 characters", Type: "string_too_short"},
			{Loc: loc("one"), Msg: "must be at least 1 character", Type: "string_too_short"},
		}},
		{"string too long counts characters", `{"name": "äöüßéx", "count": 1}`, []errs.Violation{
			{Loc: loc("name"), Msg: "must be at most 5 characters", Type: "string_too_long"},
		}},
		{"greater than equal", `{"name": "ab", "count": 0}`, []errs.Violation{{Loc: loc("count"), Msg: "must be at least 1", Type: "greater_than_equal"}}},
		{"less than equal", `{"name": "ab", "count": 11}`, []errs.Violation{{Loc: loc("count"), Msg: "must be at most 10", Type: "less_than_equal"}}},
		{"exclusive minimum", `{"name": "ab", "count": 1, "ratio": 0}`, []errs.Violation{{Loc: loc("ratio"), Msg: "must be greater than 0", Type: "greater_than_equal"}}},
		{"exclusive maximum", `{"name": "ab", "count": 1, "ratio": 0.5}`, []errs.Violation{{Loc: loc("ratio"), Msg: "must be less than 0.5", Type: "less_than_equal"}}},
		{"multiple of", `{"name": "ab", "count": 1, "step": 0.3}`, []errs.Violation{{Loc: loc("step"), Msg: "must be a multiple of 0.25", Type: "value_error"}}},
		{"type integer", `{"name": "ab", "count": 1.5}`, []errs.Violation{{Loc: loc("count"), Msg: "must be an integer", Type: "type_error"}}},
		{"type string", `{"name": 12, "count": "1"}`, []errs.Violation{
			{Loc: loc("count"), Msg: "must be an integer", Type: "type_error"},
			{Loc: loc("name"), Msg: "must be a string", Type: "type_error"},
		}},
		{"type of root", `[1]`, []errs.Violation{{Loc: loc(), Msg: "must be an object", Type: "type_error"}}},
		{"type list", `{"name": "ab", "count": 1, "tags": "x"}`, []errs.Violation{{Loc: loc("tags"), Msg: "must be a list", Type: "type_error"}}},
		{"type union", `{"name": "ab", "count": 1, "nullable": "x"}`, []errs.Violation{{Loc: loc("nullable"), Msg: "must be an integer or null", Type: "type_error"}}},
		{"enum", `{"name": "ab", "count": 1, "color": "blue"}`, []errs.Violation{{Loc: loc("color"), Msg: "must be one of: red, green, 3", Type: "enum"}}},
		{"const", `{"name": "ab", "count": 1, "kind": "other"}`, []errs.Violation{{Loc: loc("kind"), Msg: "must be fixed", Type: "enum"}}},
		{"pattern", `{"name": "ab", "count": 1, "key": "1abc"}`, []errs.Violation{{Loc: loc("key"), Msg: "must match the pattern ^[a-z][a-z0-9_]{0,39}$", Type: "string_pattern_mismatch"}}},
		{"formats", `{"name": "ab", "count": 1, "email": "nope", "when": "2025-01-31 09:00", "day": "31.01.2025"}`, []errs.Violation{
			{Loc: loc("day"), Msg: "must be a date such as 2025-01-31", Type: "value_error"},
			{Loc: loc("email"), Msg: "must be a valid email address", Type: "value_error"},
			{Loc: loc("when"), Msg: "must be a date and time such as 2025-01-31T09:00:00Z", Type: "value_error"},
		}},
		{"too short", `{"name": "ab", "count": 1, "tags": []}`, []errs.Violation{{Loc: loc("tags"), Msg: "must have at least 1 item", Type: "too_short"}}},
		{"too long", `{"name": "ab", "count": 1, "tags": ["a", "b", "c"]}`, []errs.Violation{{Loc: loc("tags"), Msg: "must have at most 2 items", Type: "too_long"}}},
		{"unique items", `{"name": "ab", "count": 1, "tags": ["a", "a"]}`, []errs.Violation{{Loc: loc("tags"), Msg: "must not contain duplicates (items 0 and 1 are equal)", Type: "value_error"}}},
		{"extra forbidden", `{"name": "ab", "count": 1, "zeta": 1, "alpha": 2}`, []errs.Violation{
			{Loc: loc("alpha"), Msg: "is not an allowed field", Type: "extra_forbidden"},
			{Loc: loc("zeta"), Msg: "is not an allowed field", Type: "extra_forbidden"},
		}},
		{"false schema", `{"name": "ab", "count": 1, "nothing": 1}`, []errs.Violation{{Loc: loc("nothing"), Msg: "is not allowed", Type: "extra_forbidden"}}},
		{"items false", `{"name": "ab", "count": 1, "pair": ["a", "b"]}`, []errs.Violation{{Loc: loc("pair", 1), Msg: "is not allowed", Type: "extra_forbidden"}}},
		{"not", `{"name": "ab", "count": 1, "notnull": null}`, []errs.Violation{{Loc: loc("notnull"), Msg: "is not allowed", Type: "value_error"}}},
		{"properties count", `{"name": "ab", "count": 1, "props": {}}`, []errs.Violation{{Loc: loc("props"), Msg: "must have at least 1 field", Type: "value_error"}}},
		{"too many properties", `{"name": "ab", "count": 1, "props": {"a": 1, "b": 2, "c": 3}}`, []errs.Violation{{Loc: loc("props"), Msg: "must have at most 2 fields", Type: "value_error"}}},
		{"property names", `{"name": "ab", "count": 1, "names": {"Bad": 1, "ok": 2}}`, []errs.Violation{{Loc: loc("names", "Bad"), Msg: "is not an allowed field name", Type: "value_error"}}},
		{"contains", `{"name": "ab", "count": 1, "hasone": [2, 3]}`, []errs.Violation{{Loc: loc("hasone"), Msg: "must contain at least one matching item", Type: "value_error"}}},
		{"dependent required", `{"name": "ab", "count": 1, "deps": {"a": 1}}`, []errs.Violation{
			{Loc: loc("deps", "b"), Msg: `is required when "a" is present`, Type: "missing"},
			{Loc: loc("deps", "c"), Msg: `is required when "a" is present`, Type: "missing"},
		}},
		{"list items with int indexes", `{"name": "ab", "count": 1, "lines": [{"sku": "A"}, {"qty": 0, "x": 1}, {"sku": 5}]}`, []errs.Violation{
			{Loc: loc("lines", 1, "qty"), Msg: "must be at least 1", Type: "greater_than_equal"},
			{Loc: loc("lines", 1, "sku"), Msg: "is required", Type: "missing"},
			{Loc: loc("lines", 1, "x"), Msg: "is not an allowed field", Type: "extra_forbidden"},
			{Loc: loc("lines", 2, "sku"), Msg: "must be a string", Type: "type_error"},
		}},
		{"indexes order numerically", `{"name": "ab", "count": 1, "matrix": [[1], [], [], [], [], [], [], [], [], [], ["x"], [], ["y"]], "tags": [1, 2]}`, []errs.Violation{
			{Loc: loc("matrix", 10, 0), Msg: "must be an integer", Type: "type_error"},
			{Loc: loc("matrix", 12, 0), Msg: "must be an integer", Type: "type_error"},
			{Loc: loc("tags", 0), Msg: "must be a string", Type: "type_error"},
			{Loc: loc("tags", 1), Msg: "must be a string", Type: "type_error"},
		}},
		{"field named like an index", `{"name": "ab", "count": 1, "names": {"0": 1}}`, []errs.Violation{{Loc: loc("names", "0"), Msg: "is not an allowed field name", Type: "value_error"}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got := v.ValidateJSON(json.RawMessage(test.doc), "body")
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("ValidateJSON(%s) mismatch (-want +got):\n%s", test.doc, diff)
			}
		})
	}
}

// TestValidateReportsAll validates a reflected struct with several bad fields
// and expects every one reported at once.
func TestValidateReportsAll(t *testing.T) {
	t.Parallel()
	v := MustCompile(Reflect(&invoiceIn{}))
	doc := `{
		"customer_id": "acme",
		"currency": "GBP",
		"email": "not-an-email",
		"due_at": "tomorrow",
		"lines": [{"description": "", "quantity": 0}, {"quantity": 1, "unit_amount_cents": -1}],
		"tags": ["a", "b", "c"],
		"memo": "far too long a memo",
		"meta": {"k": 1},
		"discount_percent": 101,
		"extra": true
	}`
	want := []errs.Violation{
		{Loc: []any{"body", "currency"}, Msg: "must be one of: EUR, USD", Type: "enum"},
		{Loc: []any{"body", "customer_id"}, Msg: "must match the pattern ^cus_[a-z0-9]{4,}$", Type: "string_pattern_mismatch"},
		{Loc: []any{"body", "discount_percent"}, Msg: "must be at most 100", Type: "less_than_equal"},
		{Loc: []any{"body", "due_at"}, Msg: "must be a date and time such as 2025-01-31T09:00:00Z", Type: "value_error"},
		{Loc: []any{"body", "email"}, Msg: "must be a valid email address", Type: "value_error"},
		{Loc: []any{"body", "extra"}, Msg: "is not an allowed field", Type: "extra_forbidden"},
		{Loc: []any{"body", "lines", 0, "description"}, Msg: "must be at least 1 character", Type: "string_too_short"},
		{Loc: []any{"body", "lines", 0, "quantity"}, Msg: "must be at least 1", Type: "greater_than_equal"},
		{Loc: []any{"body", "lines", 1, "description"}, Msg: "is required", Type: "missing"},
		{Loc: []any{"body", "lines", 1, "unit_amount_cents"}, Msg: "must be at least 0", Type: "greater_than_equal"},
		{Loc: []any{"body", "memo"}, Msg: "must be at most 10 characters", Type: "string_too_long"},
		{Loc: []any{"body", "meta", "k"}, Msg: "must be a string", Type: "type_error"},
		{Loc: []any{"body", "tags"}, Msg: "must have at most 2 items", Type: "too_long"},
	}
	if diff := cmp.Diff(want, v.ValidateJSON(json.RawMessage(doc), "body")); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
	valid := `{"customer_id": "cus_1234", "currency": "EUR", "lines": [{"description": "Widget", "quantity": 2}]}`
	if got := v.ValidateJSON(json.RawMessage(valid), "body"); got != nil {
		t.Errorf("valid document reported %v", got)
	}
}

// trigger is a discriminated union like a process trigger.
const trigger = `{
	"oneOf": [
		{"type": "object", "additionalProperties": false, "required": ["type", "event"],
		 "properties": {"type": {"const": "event"}, "event": {"type": "string", "minLength": 1}, "filter": {"type": "object"}}},
		{"type": "object", "additionalProperties": false, "required": ["type"],
		 "properties": {"type": {"const": "manual"}}},
		{"type": "object", "additionalProperties": false, "required": ["type", "cron"],
		 "properties": {"type": {"const": "schedule"}, "cron": {"type": "string"}, "timezone": {"type": "string"}}}
	]
}`

func TestValidateAlternatives(t *testing.T) {
	t.Parallel()
	wrapped := `{"type": "object", "properties": {"trigger": ` + trigger + `, "id": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 1}]},
		"mixed": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["type"], "properties": {"type": {"enum": ["a", "b"]}}}]},
		"shapes": {"anyOf": [{"type": "object", "properties": {"a": {"const": 1}}}, {"type": "object", "properties": {"b": {"const": 2}}}]}}}`
	v := MustCompile(json.RawMessage(wrapped))
	loc := func(extra ...any) []any { return append([]any{"body"}, extra...) }
	for _, test := range []struct {
		name string
		doc  string
		want []errs.Violation
	}{
		{"valid event", `{"trigger": {"type": "event", "event": "invoice.paid"}}`, nil},
		{"valid manual", `{"trigger": {"type": "manual"}}`, nil},
		{"closest variant reported", `{"trigger": {"type": "event", "event": "", "cron": "x"}}`, []errs.Violation{
			{Loc: loc("trigger", "cron"), Msg: "is not an allowed field", Type: "extra_forbidden"},
			{Loc: loc("trigger", "event"), Msg: "must be at least 1 character", Type: "string_too_short"},
		}},
		{"missing field of the chosen variant", `{"trigger": {"type": "schedule"}}`, []errs.Violation{
			{Loc: loc("trigger", "cron"), Msg: "is required", Type: "missing"},
		}},
		{"unknown discriminator", `{"trigger": {"type": "webhook"}}`, []errs.Violation{
			{Loc: loc("trigger", "type"), Msg: "must be one of: event, manual, schedule", Type: "enum"},
		}},
		{"missing discriminator picks fewest", `{"trigger": {}}`, []errs.Violation{
			{Loc: loc("trigger", "type"), Msg: "is required", Type: "missing"},
		}},
		{"wrong type everywhere", `{"trigger": "manual"}`, []errs.Violation{
			{Loc: loc("trigger"), Msg: "must be an object", Type: "type_error"},
		}},
		{"anyOf types merged", `{"id": true}`, []errs.Violation{
			{Loc: loc("id"), Msg: "must be a string or an integer", Type: "type_error"},
		}},
		{"anyOf keeps the right type", `{"id": 0}`, []errs.Violation{
			{Loc: loc("id"), Msg: "must be at least 1", Type: "greater_than_equal"},
		}},
		{"type-ruled-out alternatives set aside", `{"mixed": {"type": "c"}}`, []errs.Violation{
			{Loc: loc("mixed", "type"), Msg: "must be one of: a, b", Type: "enum"},
		}},
		{"different discriminators", `{"shapes": {"a": 2, "b": 3}}`, []errs.Violation{
			{Loc: loc("shapes"), Msg: "does not match any of the allowed shapes", Type: "value_error"},
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, v.ValidateJSON(json.RawMessage(test.doc), "body")); diff != "" {
				t.Errorf("ValidateJSON(%s) mismatch (-want +got):\n%s", test.doc, diff)
			}
		})
	}
	both := MustCompile(json.RawMessage(`{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`))
	want := []errs.Violation{{Loc: []any{"query", "n"}, Msg: "must match exactly one of the allowed shapes, but matches more than one", Type: "value_error"}}
	if diff := cmp.Diff(want, both.Validate(1, "query", "n")); diff != "" {
		t.Errorf("oneOf matching twice (-want +got):\n%s", diff)
	}
}

// TestValidatePropertyNamesLocation covers the workaround for the upstream
// propertyNames location bug (see fixLocation).
func TestValidatePropertyNamesLocation(t *testing.T) {
	t.Parallel()
	v := MustCompile(json.RawMessage(`{"properties": {
		"a": {"propertyNames": {"pattern": "^[a-z]+$"}},
		"b": {"type": "object"},
		"c": {"type": "object"},
		"list": {"items": {"propertyNames": {"maxLength": 2}}},
		"deep": {"properties": {"x": {"propertyNames": {"maxLength": 1}}, "y": {"type": "object"}}}
	}}`))
	for _, test := range []struct {
		name string
		doc  string
		want []errs.Violation
	}{
		{"alone with later siblings", `{"a": {"Bad": 1}, "b": {}, "c": {}}`, []errs.Violation{
			{Loc: []any{"body", "a", "Bad"}, Msg: "is not an allowed field name", Type: "value_error"},
		}},
		{"with other errors", `{"a": {"Bad": 1, "ok": 2}, "b": 1, "c": 2}`, []errs.Violation{
			{Loc: []any{"body", "a", "Bad"}, Msg: "is not an allowed field name", Type: "value_error"},
			{Loc: []any{"body", "b"}, Msg: "must be an object", Type: "type_error"},
			{Loc: []any{"body", "c"}, Msg: "must be an object", Type: "type_error"},
		}},
		{"in a list", `{"list": [{"ok": 1}, {"long": 1}, {"no": 1}]}`, []errs.Violation{
			{Loc: []any{"body", "list", 1, "long"}, Msg: "is not an allowed field name", Type: "value_error"},
		}},
		{"ambiguous falls back to the parent", `{"a": {"Bad": 1}, "b": {"Bad": 2}}`, []errs.Violation{
			{Loc: []any{"body"}, Msg: `has a field whose name "Bad" is not allowed`, Type: "value_error"},
		}},
		{"nested", `{"deep": {"x": {"ab": 1}, "y": {}}, "b": {}}`, []errs.Violation{
			{Loc: []any{"body", "deep", "x", "ab"}, Msg: "is not an allowed field name", Type: "value_error"},
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, v.ValidateJSON(json.RawMessage(test.doc), "body")); diff != "" {
				t.Errorf("ValidateJSON(%s) mismatch (-want +got):\n%s", test.doc, diff)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	t.Parallel()
	v := MustCompile(json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740992}}}`))
	for _, test := range []struct {
		name string
		raw  string
		loc  []any
		want []errs.Violation
	}{
		{"malformed", `{"n": `, []any{"body"}, []errs.Violation{{Loc: []any{"body"}, Msg: "is not valid JSON: unexpected EOF", Type: "json_invalid"}}},
		{"bad token", `{"n": tru}`, []any{"body"}, []errs.Violation{{Loc: []any{"body"}, Msg: "is not valid JSON: invalid character '}' in literal true (expecting 'e')", Type: "json_invalid"}}},
		{"trailing data", `{"n": 1} x`, []any{"body"}, []errs.Violation{{Loc: []any{"body"}, Msg: "is not valid JSON: invalid character after top-level value", Type: "json_invalid"}}},
		{"empty", ` `, []any{"body"}, []errs.Violation{{Loc: []any{"body"}, Msg: "must not be empty: send a JSON document", Type: "json_invalid"}}},
		{"no prefix", `{"n": "x"}`, nil, []errs.Violation{{Loc: []any{"n"}, Msg: "must be an integer", Type: "type_error"}}},
		{"numbers stay exact", `{"n": 9007199254740993}`, []any{"body"}, []errs.Violation{{Loc: []any{"body", "n"}, Msg: "must be at most 9007199254740992", Type: "less_than_equal"}}},
		{"exact bound passes", `{"n": 9007199254740992}`, []any{"body"}, nil},
		{"exponent integer", `{"n": 1e3}`, []any{"body"}, nil},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, v.ValidateJSON(json.RawMessage(test.raw), test.loc...)); diff != "" {
				t.Errorf("ValidateJSON(%q) mismatch (-want +got):\n%s", test.raw, diff)
			}
		})
	}
}

// TestTypeOnlySchemas checks the shortcut for schemas that constrain only
// the top-level type against the full validator, on documents just inside
// and just outside each type.
func TestTypeOnlySchemas(t *testing.T) {
	t.Parallel()
	docs := []string{`{}`, ` {"a": [1, {"b": null}]} `, `[]`, `[1]`, `"x"`, `""`, `true`, `false`, `null`, `0`, `-1.5e3`,
		`{"a": }`, `[1,]`, `"x`, `tru`, `{} {}`, `nul`}
	for _, test := range []struct {
		schema, typeOnly string
	}{
		{`{"type": "object"}`, "object"},
		{`{"type": "object", "title": "Args", "description": "Anything."}`, "object"},
		{`{"type": "array"}`, "array"},
		{`{"type": "string"}`, "string"},
		{`{"type": "boolean"}`, "boolean"},
		{`{"type": "null"}`, "null"},
		{`{"type": "integer"}`, ""},
		{`{"type": "object", "required": ["a"]}`, ""},
		{`{"type": ["object", "null"]}`, ""},
		{`{}`, ""},
	} {
		v := MustCompile(json.RawMessage(test.schema))
		if v.typeOnly != test.typeOnly {
			t.Errorf("%s: typeOnly = %q, want %q", test.schema, v.typeOnly, test.typeOnly)
		}
		full := &Validator{schema: v.schema}
		for _, doc := range docs {
			if diff := cmp.Diff(full.ValidateJSON(json.RawMessage(doc), "args"), v.ValidateJSON(json.RawMessage(doc), "args")); diff != "" {
				t.Errorf("%s on %s: shortcut differs (-full +shortcut):\n%s", test.schema, doc, diff)
			}
		}
	}
}

func TestValidateGoValues(t *testing.T) {
	t.Parallel()
	v := MustCompile(Reflect(&invoiceIn{}))
	loc := []any{"body", "steps", 0, "config"}
	for _, test := range []struct {
		name string
		doc  any
		want []errs.Violation
	}{
		{"struct", invoiceIn{Customer: "cus_1234", Currency: "EUR", Lines: []line{{Description: "x", Quantity: 0}}}, []errs.Violation{
			{Loc: []any{"body", "steps", 0, "config", "lines", 0, "quantity"}, Msg: "must be at least 1", Type: "greater_than_equal"},
		}},
		{"typed map", map[string]string{"currency": "EUR"}, []errs.Violation{
			{Loc: []any{"body", "steps", 0, "config", "customer_id"}, Msg: "is required", Type: "missing"},
			{Loc: []any{"body", "steps", 0, "config", "lines"}, Msg: "is required", Type: "missing"},
		}},
		{"float64 numbers", map[string]any{"customer_id": "cus_1234", "currency": "EUR", "lines": []any{map[string]any{"description": "x", "quantity": 2.0}}, "discount_percent": 100.5}, []errs.Violation{
			{Loc: []any{"body", "steps", 0, "config", "discount_percent"}, Msg: "must be at most 100", Type: "less_than_equal"},
		}},
		{"not JSON", map[string]any{"f": func() {}}, []errs.Violation{
			{Loc: loc, Msg: "is not a JSON value: json: unsupported type: func()", Type: "type_error"},
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, v.Validate(test.doc, loc...)); diff != "" {
				t.Errorf("Validate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateDoesNotShareLoc(t *testing.T) {
	t.Parallel()
	v := MustCompile(json.RawMessage(`{"required": ["a", "b"]}`))
	loc := make([]any, 1, 10)
	loc[0] = "body"
	got := v.Validate(map[string]any{}, loc...)
	want := []errs.Violation{
		{Loc: []any{"body", "a"}, Msg: "is required", Type: "missing"},
		{Loc: []any{"body", "b"}, Msg: "is required", Type: "missing"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations share their loc (-want +got):\n%s", diff)
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, schema, want string
	}{
		{"not JSON", `{"type": `, "schema: decode"},
		{"not a schema", `{"type": 5}`, "schema: compile"},
		{"bad pattern", `{"pattern": "(?<=x)"}`, "schema: compile"},
		{"file reference", `{"$ref": "file:///etc/passwd"}`, "schemas may not refer to other documents"},
		{"remote reference", `{"$ref": "https://example.com/s.json"}`, "schemas may not refer to other documents"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(json.RawMessage(test.schema))
			if err == nil || !strings.Contains(err.Error(), test.want) {
				t.Errorf("Compile(%s) error = %v, want one containing %q", test.schema, err, test.want)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Errorf("MustCompile of a bad schema did not panic")
		}
	}()
	MustCompile(json.RawMessage(`{"type": 5}`))
}

func TestCompileLocalReferences(t *testing.T) {
	t.Parallel()
	v := MustCompile(json.RawMessage(`{"$defs": {"pos": {"type": "integer", "minimum": 1}}, "properties": {"n": {"$ref": "#/$defs/pos"}}}`))
	want := []errs.Violation{{Loc: []any{"body", "n"}, Msg: "must be at least 1", Type: "greater_than_equal"}}
	if diff := cmp.Diff(want, v.ValidateJSON(json.RawMessage(`{"n": 0}`), "body")); diff != "" {
		t.Errorf("$ref violation mismatch (-want +got):\n%s", diff)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	c := &Cache{Max: 2}
	schemas := []json.RawMessage{
		json.RawMessage(`{"type": "string"}`),
		json.RawMessage(`{"type": "integer"}`),
		json.RawMessage(`{"type": "boolean"}`),
	}
	a, err := c.Compile(schemas[0])
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Compile(schemas[0])
	if err != nil {
		t.Fatal(err)
	}
	if a != again {
		t.Errorf("Compile of the same schema returned a new Validator")
	}
	for _, s := range schemas[1:] {
		if _, err := c.Compile(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Len(); got != 2 {
		t.Errorf("Len = %d, want 2 (Max)", got)
	}
	if evicted, _ := c.Compile(schemas[0]); evicted == a {
		t.Errorf("least recently used schema was not evicted")
	}
	if _, err := c.Compile(json.RawMessage(`{"type": 1}`)); err == nil {
		t.Errorf("Cache.Compile of a bad schema: no error")
	}
	if got := c.Len(); got != 2 {
		t.Errorf("Len after a failed compile = %d, want 2", got)
	}

	var zero Cache
	var wg sync.WaitGroup
	results := make([]*Validator, 8)
	for i := range results {
		wg.Go(func() {
			v, err := zero.Compile(schemas[1])
			if err != nil {
				t.Error(err)
			}
			results[i] = v
			if got := v.Validate("x", "body"); len(got) != 1 {
				t.Errorf("Validate through a cached Validator = %v", got)
			}
		})
	}
	wg.Wait()
	if zero.Len() != 1 {
		t.Errorf("zero Cache Len = %d, want 1", zero.Len())
	}
	if v, _ := zero.Compile(schemas[1]); v != results[0] && v != results[7] {
		t.Errorf("cached Validator differs from the ones handed out")
	}
}

func BenchmarkValidate(b *testing.B) {
	v := MustCompile(Reflect(&invoiceIn{}))
	var doc any
	if err := json.Unmarshal([]byte(`{"customer_id": "cus_1234", "currency": "EUR", "lines": [{"description": "Widget", "quantity": 2}, {"description": "Gadget", "quantity": 1}]}`), &doc); err != nil {
		b.Fatal(err)
	}
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if vs := v.Validate(doc, "body"); vs != nil {
				b.Fatal(vs)
			}
		}
	})
	bad := json.RawMessage(`{"customer_id": "x", "currency": "GBP", "lines": [{"description": "", "quantity": 0}], "extra": 1}`)
	b.Run("invalid-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if vs := v.ValidateJSON(bad, "body"); len(vs) != 5 {
				b.Fatal(vs)
			}
		}
	})
}

func BenchmarkCompile(b *testing.B) {
	s := Reflect(&invoiceIn{})
	b.Run("compile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compile(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache-hit", func(b *testing.B) {
		var c Cache
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Compile(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
