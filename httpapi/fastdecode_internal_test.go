package httpapi

import (
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/google/go-cmp/cmp"
)

// startBodies are start bodies of every shape: plain ones the fast path
// takes and others it leaves to the general path.
var startBodies = []struct {
	body string
	fast bool
}{
	{`{"subject": {"type": "delivery", "label": "DN-1"}}`, true},
	{`{"subject":{"label":"DN-1","type":"delivery"},"priority":"high"}`, true},
	{" \n{ \"priority\" : \"low\" , \"subject\" : { \"type\" : \"t\" , \"label\" : \"l\" } }\t", true},
	{`{"subject": {"type": "` + strings.Repeat("t", 200) + `", "label": "l"}, "priority": "normal"}`, true},
	{`{"subject": {"type": "` + strings.Repeat("t", 201) + `", "label": "l"}}`, false},
	{`{"subject": {"type": "", "label": "l"}}`, false},
	{`{"subject": {"type": "t"}}`, false},
	{`{"subject": {"type": "t", "label": "l", "type": "u"}}`, false},
	{`{"subject": {"type": "t", "label": "l"}, "subject": {"type": "t", "label": "l"}}`, false},
	{`{"subject": {"type": "t", "label": "l"}, "priority": "urgent"}`, false},
	{`{"subject": {"type": "t", "label": "l"}, "priority": ""}`, false},
	{`{"subject": {"type": "t", "label": "l"}, "extra": 1}`, false},
	{`{"Subject": {"type": "t", "label": "l"}}`, false},
	{`{"subject": {"type": "t", "label": "l\n"}}`, false},
	{`{"subject": {"type": "t", "label": "l\u0041"}}`, false},
	{`{"subject": {"type": "t", "label": "é"}}`, false},
	{`{"subject": {"type": "t", "label": 1}}`, false},
	{`{"subject": {"type": "t", "label": "l"}} x`, false},
	{`{"subject": {"type": "t", "label": "l"},}`, false},
	{`{"subject": {"type": "t", "label": "l"}`, false},
	{`{}`, false},
	{``, false},
	{`[]`, false},
}

// TestStartDecodeFast: the fast path takes exactly the plain bodies, and
// decodes each as the general path does.
func TestStartDecodeFast(t *testing.T) {
	for _, tc := range startBodies {
		var fast StartIn
		if got := fast.decodeFast([]byte(tc.body)); got != tc.fast {
			t.Errorf("decodeFast(%s) = %v, want %v", tc.body, got, tc.fast)
			continue
		}
		if tc.fast {
			checkAsGeneral(t, []byte(tc.body), fast)
		}
	}
}

// FuzzStartDecodeFast: whatever the fast path takes, the general path
// takes too, with the same record.
func FuzzStartDecodeFast(f *testing.F) {
	for _, tc := range startBodies {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast StartIn
		if fast.decodeFast(b) {
			checkAsGeneral(t, b, fast)
		}
	})
}

func checkAsGeneral(t *testing.T, b []byte, fast StartIn) {
	t.Helper()
	c := &request{h: &Handler{}, body: b, read: true}
	var general StartIn
	if err := c.decodeGeneral(&general); err != nil {
		t.Fatalf("the general path refuses %q, which the fast path took: %v", b, err)
	}
	if diff := cmp.Diff(general, fast); diff != "" {
		t.Errorf("decodeFast(%q) (-general +fast):\n%s", b, diff)
	}
}

// fastChecked is a record of a hot route with rules of its own: its fast
// decoding takes any body, its Validate refuses an empty label.
type fastChecked struct {
	Label string `json:"label"`
}

func (f *fastChecked) decodeFast(b []byte) bool {
	f.Label = strings.Trim(string(b), `{}" `)
	return true
}

func (f *fastChecked) Validate() []errs.Violation {
	if f.Label == "" {
		return []errs.Violation{{Loc: []any{"body", "label"}, Msg: "label is empty", Type: "value_error"}}
	}
	return nil
}

// TestDecodeFastValidates: a body the fast path takes is validated as one
// the general path takes: the record's Validate runs either way, and
// StartIn's would too were it to have one.
func TestDecodeFastValidates(t *testing.T) {
	var _ fastDecoder = (*fastChecked)(nil)
	var _ validator = (*fastChecked)(nil)
	want := []errs.Violation{{Loc: []any{"body", "label"}, Msg: "label is empty", Type: "value_error"}}
	c := &request{h: &Handler{}, body: []byte(`{}`), read: true}
	var v fastChecked
	if diff := cmp.Diff(want, errs.Violations(c.Decode(&v))); diff != "" {
		t.Errorf("violations of a fast-decoded body (-want +got):\n%s", diff)
	}
	c = &request{h: &Handler{}, body: []byte(`"l"`), read: true}
	if err := c.Decode(&v); err != nil || v.Label != "l" {
		t.Errorf("a valid body: %+v, %v", v, err)
	}
	// StartIn decodes fast; whatever Validate it is given runs on that path.
	var in any = &StartIn{}
	if _, ok := in.(fastDecoder); !ok {
		t.Fatal("StartIn no longer decodes fast: this test no longer covers it")
	}
	if _, ok := in.(validator); ok {
		c = &request{h: &Handler{}, body: []byte(startBodies[0].body), read: true}
		if diff := cmp.Diff(errs.Violations(c.decodeGeneral(&StartIn{})), errs.Violations(c.Decode(in))); diff != "" {
			t.Errorf("StartIn's Validate on the fast path (-general +fast):\n%s", diff)
		}
	}
}
