package feedback_test

import (
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/internal/feedback"
)

// Summarize turns per-rule tallies into the Agreement the API serves.
func ExampleSummarize() {
	ag := feedback.Summarize([]feedback.Tally{
		{RuleID: "required:total", Agree: 3, Disagree: 1},
		{RuleID: "format:iban", Agree: 1},
		{RuleID: "unjudged"},
	})
	b, _ := json.Marshal(ag)
	fmt.Println(string(b))
	fmt.Println(string(must(json.Marshal(feedback.Summarize(nil)))))
	// Output:
	// {"overall":0.8,"items":5,"by_rule":[{"rule_id":"format:iban","agree":1,"disagree":0,"rate":1},{"rule_id":"required:total","agree":3,"disagree":1,"rate":0.75}]}
	// {"overall":null,"items":0,"by_rule":[]}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
