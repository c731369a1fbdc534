package automation

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDecisionJSONMatchesMarshal: a gate decision's record is what
// encoding/json writes for it.
func TestDecisionJSONMatchesMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 1, 9, 0, 0, 120000000, time.UTC)
	for name, d := range map[string]*decisionRecord{
		"auto": {ItemKey: "run_1/pay", ProcessID: "prc_1", RunID: "run_1", StepKey: "pay", Capability: "email.send", Auto: true,
			Reason: "automatic: the item is inside the 100% that run without a person", Percent: 100, At: at},
		"supervised": {ItemKey: "k<1>&\"2\"", ProcessID: "prc_ü", Reason: "supervised: automation is paused: \"quiet\"\n<now>",
			Sample: true, Percent: -3, At: at.In(time.FixedZone("x", -7200))},
		"empty":   {},
		"invalid": {ItemKey: "\xff", Reason: "exception: " + string([]byte{0xe2, 0x28, 0xa1}) + " \u2028\u2029"},
	} {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s (-json.Marshal +appendJSON):\n%s", name, diff)
		}
	}
	if _, err := (&decisionRecord{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}).appendJSON(nil); err == nil {
		t.Error("a year past 9999 encoded")
	}
}
