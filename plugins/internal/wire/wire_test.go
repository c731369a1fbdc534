package wire

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// roundTrip encodes err, sends it through JSON as the codec does, and
// decodes it.
func roundTrip(t *testing.T, err error) error {
	t.Helper()
	b, merr := jsonCodec{}.Marshal(&CallResponse{Error: EncodeError(context.Background(), err)})
	if merr != nil {
		t.Fatal(merr)
	}
	var resp CallResponse
	if uerr := (jsonCodec{}).Unmarshal(b, &resp); uerr != nil {
		t.Fatal(uerr)
	}
	return DecodeError(context.Background(), resp.Error)
}

var errSentinel = errors.New("wire test: sentinel")

func TestErrorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name       string
		err        error
		wantMsg    string
		wantKind   error
		wantPublic string
		wantViol   []errs.Violation
		wantRetry  time.Duration
		wantIs     error
	}{
		{name: "public not found", err: errors.Wrap(errs.NotFoundf("order %s not found", "PO-1"), "lookup"),
			wantMsg: "lookup: order PO-1 not found", wantKind: errs.NotFound, wantPublic: "order PO-1 not found"},
		{name: "violations", err: errs.Validation(errs.Violation{Loc: []any{"args", "lines", 2, "sku"}, Msg: "is required", Type: "missing"}),
			wantMsg: "invalid: args.lines.2.sku: is required", wantKind: errs.Invalid,
			wantViol: []errs.Violation{{Loc: []any{"args", "lines", 2, "sku"}, Msg: "is required", Type: "missing"}}},
		{name: "rate limit", err: errs.RateLimitedAfter(1500 * time.Millisecond), wantMsg: "rate limited",
			wantKind: errs.RateLimited, wantRetry: 1500 * time.Millisecond},
		{name: "marked sentinel", err: errors.Mark(errors.New("erp down"), errs.Unavailable), wantMsg: "erp down", wantKind: errs.Unavailable},
		{name: "sentinel of the other side", err: errors.Wrap(errSentinel, "deep"), wantMsg: "deep: wire test: sentinel", wantIs: errSentinel},
		{name: "plain", err: errors.New("boom"), wantMsg: "boom"},
	} {
		t.Run(test.name, func(t *testing.T) {
			got := roundTrip(t, test.err)
			if got.Error() != test.wantMsg {
				t.Errorf("message = %q, want %q", got.Error(), test.wantMsg)
			}
			if k := errs.Kind(got); k != test.wantKind {
				t.Errorf("kind = %v, want %v", k, test.wantKind)
			}
			if p := errs.PublicMessage(got); p != test.wantPublic {
				t.Errorf("public = %q, want %q", p, test.wantPublic)
			}
			if diff := cmp.Diff(test.wantViol, errs.Violations(got)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			var rl *errs.RateLimit
			if errors.As(got, &rl) != (test.wantRetry > 0) || rl != nil && rl.RetryAfter != test.wantRetry {
				t.Errorf("rate limit = %+v, want %s", rl, test.wantRetry)
			}
			if test.wantIs != nil && !errors.Is(got, test.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", got, test.wantIs)
			}
		})
	}
	if EncodeError(context.Background(), nil) != nil || DecodeError(context.Background(), nil) != nil {
		t.Error("nil did not stay nil")
	}
}

func TestUndecodableErrorKeepsItsMessage(t *testing.T) {
	t.Parallel()
	err := DecodeError(context.Background(), &Error{Encoded: []byte("not protobuf"), Message: "erp exploded"})
	if err.Error() != "erp exploded" {
		t.Errorf("message = %q", err.Error())
	}
}

func TestMessagesAreJSON(t *testing.T) {
	t.Parallel()
	b, err := jsonCodec{}.Marshal(&CallResponse{Result: []byte(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"result":"eyJhIjoxfQ=="}`; string(b) != want {
		t.Errorf("CallResponse = %s, want %s", b, want)
	}
	var req InitRequest
	if err := json.Unmarshal([]byte(`{"broker_id":7}`), &req); err != nil || req.BrokerID != 7 {
		t.Errorf("InitRequest = %+v, %v", req, err)
	}
}
