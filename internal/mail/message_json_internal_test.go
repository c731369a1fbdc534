package mail

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/capability"
)

// TestResultJSONMatchesMarshal: a call's result is what encoding/json
// writes for capability.EmailSendResult.
func TestResultJSONMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"msg_01M8BC2B1QXS0HPHA1MK3Z6MWG", "", "a<b>&\"c\""} {
		want, _ := json.Marshal(capability.EmailSendResult{MessageID: id, Status: "queued"})
		if got := appendResult(nil, id); string(got) != string(want) {
			t.Errorf("result of %q: %s, want %s", id, got, want)
		}
	}
}
