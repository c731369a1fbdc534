package errs_test

import (
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestKinds checks that an error made by each constructor is of its kind
// and of no other, wrapped or not, and after crossing a process boundary
// (EncodeError/DecodeError, as on the plugin link).
func TestKinds(t *testing.T) {
	made := map[error]error{
		errs.NotFound:        errs.NotFoundf("invoice %s not found", "inv_1"),
		errs.Conflict:        errs.Conflictf("busy"),
		errs.Forbidden:       errs.Forbiddenf("no"),
		errs.Unauthenticated: errs.Unauthenticatedf("who"),
		errs.TooLarge:        errs.TooLargef("big"),
		errs.Unavailable:     errs.Unavailablef("later"),
		errs.Invalid:         errs.Invalidf([]any{"body", "name"}, "missing", "is required"),
		errs.RateLimited:     errs.RateLimitedAfter(3),
	}
	for kind, err := range made {
		for name, e := range map[string]error{
			"plain":   err,
			"wrapped": errors.Wrap(err, "load"),
			"decoded": errors.DecodeError(t.Context(), errors.EncodeError(t.Context(), err)),
		} {
			var got []error
			for _, k := range errs.Kinds {
				if errors.Is(e, k) {
					got = append(got, k)
				}
			}
			if diff := cmp.Diff([]string{kind.Error()}, messages(got)); diff != "" {
				t.Errorf("%s %v: kinds (-want +got):\n%s", name, err, diff)
			}
		}
	}
	if got := errs.PublicMessage(errors.Wrap(made[errs.NotFound], "load")); got != "invoice inv_1 not found" {
		t.Errorf("public message %q", got)
	}
}

func messages(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// TestIsKindAllocates nothing: a missing record is an everyday answer, and
// its check must not work out error marks (a message through a regexp).
func TestIsKindAllocatesNothing(t *testing.T) {
	err := errors.Wrap(errs.NotFoundf("run %s not found", "run_1"), "get")
	if n := testing.AllocsPerRun(100, func() {
		if !errors.Is(err, errs.NotFound) {
			t.Fatal("not NotFound")
		}
	}); n != 0 {
		t.Errorf("errors.Is(err, errs.NotFound) allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = errs.NotFoundf("run not found") }); n > 3 {
		t.Errorf("NotFoundf allocates %v times, want at most 3 (message, public error, mark)", n)
	}
}
