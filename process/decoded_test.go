package process

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An output that makes its decoded form itself makes what encoding and
// decoding it makes.
func TestDecodedFormMatchesEncoding(t *testing.T) {
	for name, out := range map[string]RouteOutput{
		"rule":    {Queue: "receiving", Owner: "usr_1", Priority: PriorityHigh, MatchedRule: "rules.0"},
		"default": {Queue: "ap", Priority: PriorityNormal, MatchedRule: "default"},
		"empty":   {},
	} {
		got, err := toAny(out)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		if err := decodeJSON(raw, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-encoded +decoded form):\n%s", name, diff)
		}
	}
	withAI := RouteOutput{Queue: "q", Classification: &Classification{}}
	if _, ok := withAI.decoded(); ok {
		t.Error("a route with a classification makes its own decoded form")
	}
}
