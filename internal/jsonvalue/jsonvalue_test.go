package jsonvalue

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIsNumberAndAsRat(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		v    any
		want string // the rational as a/b, or "" when not a number
	}{
		{"json integer", json.Number("12500"), "12500/1"},
		{"json decimal", json.Number("0.1"), "1/10"},
		{"json exponent", json.Number("-2.5e2"), "-250/1"},
		{"json fraction text", json.Number("1/2"), ""},
		{"json hex text", json.Number("0x10"), ""},
		{"json leading plus", json.Number("+5"), ""},
		{"json empty", json.Number(""), ""},
		{"float64 decimal", 0.1, "1/10"},
		{"float64 integer", 5.0, "5/1"},
		{"float32", float32(0.5), "1/2"},
		{"NaN", math.NaN(), ""},
		{"infinity", math.Inf(-1), ""},
		{"float32 infinity", float32(math.Inf(1)), ""},
		{"int", 7, "7/1"},
		{"int8", int8(-8), "-8/1"},
		{"int16", int16(16), "16/1"},
		{"int32", int32(32), "32/1"},
		{"int64", int64(math.MinInt64), "-9223372036854775808/1"},
		{"uint", uint(9), "9/1"},
		{"uint8", uint8(8), "8/1"},
		{"uint16", uint16(16), "16/1"},
		{"uint32", uint32(32), "32/1"},
		{"uint64 max", uint64(math.MaxUint64), "18446744073709551615/1"},
		{"string", "5", ""},
		{"bool", true, ""},
		{"nil", nil, ""},
		{"list", []any{1}, ""},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			r, ok := AsRat(test.v)
			got := ""
			if ok {
				got = r.String()
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("AsRat(%#v) mismatch (-want +got):\n%s", test.v, diff)
			}
			if got, want := IsNumber(test.v), test.want != ""; got != want {
				t.Errorf("IsNumber(%#v) = %v, want %v", test.v, got, want)
			}
		})
	}
}

func TestFloat(t *testing.T) {
	t.Parallel()
	type result struct {
		F  float64
		OK bool
	}
	for _, test := range []struct {
		v    any
		want result
	}{
		{2.5, result{2.5, true}},
		{7, result{7, true}},
		{int64(-3), result{-3, true}},
		{uint16(9), result{9, true}},
		{float32(0.5), result{0.5, true}},
		{json.Number("0.1"), result{0.1, true}},
		{json.Number("123456789012345678901234567890"), result{1.2345678901234568e29, true}},
		{json.Number("1e400"), result{0, false}},
		{json.Number("NaN"), result{0, false}},
		{json.Number("0x10"), result{0, false}},
		{math.Inf(1), result{0, false}},
		{"1", result{0, false}},
		{nil, result{0, false}},
	} {
		var got result
		got.F, got.OK = Float(test.v)
		if !got.OK {
			got.F = 0
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("Float(%#v) mismatch (-want +got):\n%s", test.v, diff)
		}
	}
}

func TestRatFromFloat(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		f    float64
		want *big.Rat
	}{
		{0.1, big.NewRat(1, 10)},
		{-2.75, big.NewRat(-11, 4)},
		{1e21, new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil), big.NewInt(1))},
		{0, new(big.Rat)},
	} {
		if got := RatFromFloat(test.f); got.Cmp(test.want) != 0 {
			t.Errorf("RatFromFloat(%v) = %v, want %v", test.f, got, test.want)
		}
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	type result struct {
		C  int
		OK bool
	}
	for _, test := range []struct {
		name string
		a, b any
		want result
	}{
		{"ints", 1, 2, result{-1, true}},
		{"int and json", 12500, json.Number("12500.0"), result{0, true}},
		{"json exponent", json.Number("5e0"), json.Number("5"), result{0, true}},
		{"json big integers", json.Number("123456789012345678901234567890"), json.Number("123456789012345678901234567891"), result{-1, true}},
		{"uint64 above int64", uint64(math.MaxUint64), json.Number("9223372036854775807"), result{1, true}},
		{"floats", 2.5, 0.1, result{1, true}},
		{"float is its decimal", 0.1, json.Number("0.1"), result{0, true}},
		{"float32 and int", float32(3), 3, result{0, true}},
		{"negative zero", math.Copysign(0, -1), json.Number("0"), result{0, true}},
		{"strings by bytes", "2025-01-01", "2026-01-01", result{-1, true}},
		{"equal strings", "a", "a", result{0, true}},
		{"number and string", 5, "5", result{0, false}},
		{"string and number", "5", 5, result{0, false}},
		{"NaN", math.NaN(), 1.0, result{0, false}},
		{"bad json number", json.Number("1/2"), 1, result{0, false}},
		{"bools", true, false, result{0, false}},
		{"nils", nil, nil, result{0, false}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			var got result
			got.C, got.OK = Compare(test.a, test.b)
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("Compare(%#v, %#v) mismatch (-want +got):\n%s", test.a, test.b, diff)
			}
			if _, isString := test.a.(string); !isString {
				var num result
				num.C, num.OK = CompareNumbers(test.a, test.b)
				if diff := cmp.Diff(test.want, num); diff != "" {
					t.Errorf("CompareNumbers(%#v, %#v) mismatch (-want +got):\n%s", test.a, test.b, diff)
				}
			}
		})
	}
	if _, ok := CompareNumbers("1", "1"); ok {
		t.Errorf("CompareNumbers of two strings must not compare")
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		a, b any
		want bool
	}{
		{"numbers of any type", 5, json.Number("5.0"), true},
		{"float decimal", 0.1, json.Number("0.1"), true},
		{"different numbers", 5, 6.0, false},
		{"number is not its text", 5, "5", false},
		{"text is not its number", "5", json.Number("5"), false},
		{"NaN equals nothing", math.NaN(), math.NaN(), false},
		{"bad json number", json.Number("abc"), json.Number("abc"), false},
		{"null and null", nil, nil, true},
		{"null and false", nil, false, false},
		{"false and null", false, nil, false},
		{"strings", "a", "a", true},
		{"different strings", "a", "b", false},
		{"bools", true, true, true},
		{"different bools", true, false, false},
		{"typed map and object", map[string]int{"x": 1}, map[string]any{"x": json.Number("1")}, true},
		{"objects differ in a value", map[string]any{"x": 1}, map[string]any{"x": 2}, false},
		{"objects differ in keys", map[string]any{"x": 1}, map[string]any{"y": 1}, false},
		{"objects differ in size", map[string]any{"x": 1}, map[string]any{"x": 1, "y": 2}, false},
		{"object and list", map[string]any{}, []any{}, false},
		{"typed slice and list", []string{"a", "b"}, []any{"a", "b"}, true},
		{"array and list", [2]int{1, 2}, []any{1.0, json.Number("2")}, true},
		{"lists differ in order", []any{1, 2}, []any{2, 1}, false},
		{"lists differ in length", []any{1}, []any{1, 1}, false},
		{"bytes are not a list", []byte("ab"), []any{97, 98}, false},
		{"nested", map[string]any{"k": []any{1, nil, map[string]any{"z": "v"}}}, map[string]any{"k": []any{1.0, nil, map[string]string{"z": "v"}}}, true},
		{"struct is not a value", struct{}{}, struct{}{}, false},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if got := Equal(test.a, test.b); got != test.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", test.a, test.b, got, test.want)
			}
			if got := Equal(test.b, test.a); got != test.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v (not symmetric)", test.b, test.a, got, test.want)
			}
		})
	}
}

func TestAsObjectAndAsList(t *testing.T) {
	t.Parallel()
	obj, ok := AsObject(map[string]int{"a": 1})
	if diff := cmp.Diff(map[string]any{"a": 1}, obj); !ok || diff != "" {
		t.Errorf("AsObject(map[string]int) = %v, %v; mismatch (-want +got):\n%s", obj, ok, diff)
	}
	type name string
	obj, ok = AsObject(map[name]bool{"b": true})
	if diff := cmp.Diff(map[string]any{"b": true}, obj); !ok || diff != "" {
		t.Errorf("AsObject(map[name]bool) = %v, %v; mismatch (-want +got):\n%s", obj, ok, diff)
	}
	for _, v := range []any{map[int]any{1: 1}, []any{}, "s", nil} {
		if _, ok := AsObject(v); ok {
			t.Errorf("AsObject(%#v) reports an object", v)
		}
	}
	list, ok := AsList([3]string{"x", "y", "z"})
	if diff := cmp.Diff([]any{"x", "y", "z"}, list); !ok || diff != "" {
		t.Errorf("AsList(array) = %v, %v; mismatch (-want +got):\n%s", list, ok, diff)
	}
	for _, v := range []any{[]byte("x"), map[string]any{}, "s", nil, 1} {
		if _, ok := AsList(v); ok {
			t.Errorf("AsList(%#v) reports a list", v)
		}
	}
}

func BenchmarkEqualNumbers(b *testing.B) {
	pairs := [][2]any{
		{json.Number("12500"), json.Number("12500")},
		{12500.0, json.Number("12500")},
		{json.Number("0.1"), 0.1},
	}
	for b.Loop() {
		for _, p := range pairs {
			if !Equal(p[0], p[1]) {
				b.Fatal("not equal")
			}
		}
	}
}
