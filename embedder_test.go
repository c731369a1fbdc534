package bas_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/google/go-cmp/cmp"
)

// TestWaitRunUntilNilCond waits with no condition: ErrInvalid located at
// cond, not a panic in the caller's goroutine.
func TestWaitRunUntilNilCond(t *testing.T) {
	t.Parallel()
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, err = ws.WaitRunUntil(context.Background(), "acme", "r1", nil)
	if !errors.Is(err, bas.ErrInvalid) {
		t.Fatalf("WaitRunUntil with a nil cond: %v, want ErrInvalid", err)
	}
	want := []bas.Violation{{Loc: []any{"cond"}, Msg: "is required", Type: "missing"}}
	if diff := cmp.Diff(want, bas.Violations(err)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestStartSubjectAsHTTP starts runs with subjects given whole, in part and
// too long: a subject given is checked as the HTTP API's manual start
// checks it (each part 1 to 200 characters), at ["subject", part]; none at
// all is a run without one. The process does not exist, so a start that
// passes the check is ErrNotFound.
func TestStartSubjectAsHTTP(t *testing.T) {
	t.Parallel()
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	long := strings.Repeat("é", bas.MaxSubjectLen+1)
	for _, test := range []struct {
		name    string
		subject bas.Subject
		want    []string // "loc:type"; nil passes the check
	}{
		{"none", bas.Subject{}, nil},
		{"whole", bas.Subject{Type: "invoice", Label: "INV-1"}, nil},
		{"200 characters", bas.Subject{Type: "invoice", Label: long[len("é"):]}, nil},
		{"type only", bas.Subject{Type: "invoice"}, []string{"subject.label:missing"}},
		{"label only", bas.Subject{Label: "INV-1"}, []string{"subject.type:missing"}},
		{"201 characters", bas.Subject{Type: long, Label: "INV-1"}, []string{"subject.type:string_too_long"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := ws.Start(context.Background(), bas.StartParams{Tenant: "acme", ProcessID: "prc_none", Subject: test.subject})
			if test.want == nil {
				if !errors.Is(err, bas.ErrNotFound) {
					t.Errorf("start: %v, want ErrNotFound (the subject passes)", err)
				}
				return
			}
			var got []string
			for _, v := range bas.Violations(err) {
				got = append(got, v.String()[:strings.Index(v.String(), ":")]+":"+v.Type)
			}
			if diff := cmp.Diff(test.want, got); diff != "" || !errors.Is(err, bas.ErrInvalid) {
				t.Errorf("start: %v; violations (-want +got):\n%s", err, diff)
			}
		})
	}
}
