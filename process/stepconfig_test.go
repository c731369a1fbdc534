package process

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestConfigRules checks the rules the engine reads from the configs of the
// step types it drives: defaults, derived values and the errors a run fails
// with.
func TestConfigRules(t *testing.T) {
	t.Parallel()
	type got struct {
		A, B time.Duration
		N    int
		Err  string
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	for _, test := range []struct {
		name string
		run  func() got
		want got
	}{
		{"follow-up defaults", func() got {
			e, n, err := FollowUpConfig{}.Schedule()
			return got{A: e, N: n, Err: errText(err)}
		}, got{A: 48 * time.Hour, N: 3}},
		{"follow-up set", func() got {
			e, n, err := FollowUpConfig{Every: "2h", MaxReminders: 5}.Schedule()
			return got{A: e, N: n, Err: errText(err)}
		}, got{A: 2 * time.Hour, N: 5}},
		{"follow-up zero every", func() got {
			_, _, err := FollowUpConfig{Every: "0s"}.Schedule()
			return got{Err: errText(err)}
		}, got{Err: `every "0s" is not a positive duration`}},
		{"monitor defaults", func() got {
			i, o, err := MonitorConfig{}.Periods()
			return got{A: i, B: o, Err: errText(err)}
		}, got{A: time.Hour, B: 24 * time.Hour}},
		{"monitor set", func() got {
			i, o, err := MonitorConfig{Interval: "1ms", Timeout: "1m"}.Periods()
			return got{A: i, B: o, Err: errText(err)}
		}, got{A: time.Millisecond, B: time.Minute}},
		{"monitor bad timeout", func() got {
			_, _, err := MonitorConfig{Timeout: "-1h"}.Periods()
			return got{Err: errText(err)}
		}, got{Err: `"-1h" is not a positive duration`}},
		{"wait duration", func() got {
			d, err := WaitConfig{Duration: "48h"}.DurationValue()
			return got{A: d, Err: errText(err)}
		}, got{A: 48 * time.Hour}},
		{"wait no duration", func() got {
			_, err := WaitConfig{}.DurationValue()
			return got{Err: errText(err)}
		}, got{Err: `duration "" is not a positive duration`}},
		{"wait bad timeout", func() got {
			_, err := WaitConfig{Timeout: "soon"}.TimeoutValue()
			return got{Err: errText(err)}
		}, got{Err: `timeout "soon" is not a positive duration`}},
	} {
		t.Run(test.name, func(t *testing.T) {
			if diff := cmp.Diff(test.want, test.run()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTaskShapes(t *testing.T) {
	t.Parallel()
	h := HumanTaskConfig{Fields: []TaskField{{Key: "ok", Label: "OK"}, {Key: "n", Label: "N", Type: "number", Required: true}}}
	if diff := cmp.Diff([]string{"complete"}, h.TaskActions()); diff != "" {
		t.Errorf("default actions (-want +got):\n%s", diff)
	}
	want := []map[string]any{
		{"key": "ok", "label": "OK", "type": "text", "required": false, "options": []string(nil)},
		{"key": "n", "label": "N", "type": "number", "required": true, "options": []string(nil)},
	}
	if diff := cmp.Diff(want, h.TaskFields()); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"approve"}, HumanTaskConfig{Actions: []string{"approve"}}.TaskActions()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	off := false
	if !(DraftConfig{}).Reviewed() || (DraftConfig{Review: &off}).Reviewed() {
		t.Error("a draft is reviewed unless review is false")
	}
}
