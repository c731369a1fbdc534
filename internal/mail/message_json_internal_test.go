package mail

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/google/go-cmp/cmp"
)

// TestMessageJSONMatchesMarshal: a message's record is what encoding/json
// writes for it, whatever its strings hold.
func TestMessageJSONMatchesMarshal(t *testing.T) {
	t.Parallel()
	reply := "ops <ops@example.com> & co"
	at := time.Date(2025, 3, 1, 9, 0, 0, 123456789, time.UTC)
	for name, m := range map[string]*Message{
		"plain":   {ID: "msg_1", To: []string{"ann@example.com"}, Cc: []string{}, Subject: "Hi", Body: "Body", CreatedAt: at, IdempotencyKey: "run_1/notify/1"},
		"escapes": {ID: "msg_2", To: []string{"a@example.com", "b\"q@example.com"}, Cc: []string{"c@example.com"}, Subject: "Ünïcode <b> & \u2028", Body: "line\nnext\t\"quoted\" \\ \x01", ReplyTo: &reply, CreatedAt: at.In(time.FixedZone("x", 3600))},
		"nil":     {ID: "msg_3"},
		"invalid": {ID: "msg_4", To: []string{"\xff"}, Body: string([]byte{0xe2, 0x28, 0xa1})},
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s (-json.Marshal +appendJSON):\n%s", name, diff)
		}
	}
	if _, err := (&Message{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}).appendJSON(nil); err == nil {
		t.Error("a year past 9999 encoded")
	}
}

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

// TestMessageSizeHint: a message's size hint covers its JSON when no
// string needs escaping.
func TestMessageSizeHint(t *testing.T) {
	t.Parallel()
	reply := "ops@example.com"
	m := &Message{ID: "msg_01M8BC2B1QXS0HPHA1MK3Z6MWG", To: []string{"supplier@example.com", "b@example.com"}, Cc: []string{"c@example.com"},
		Subject: "Delivery received", Body: "We received your delivery.", ReplyTo: &reply,
		CreatedAt: time.Date(2025, 3, 1, 9, 0, 0, 123456789, time.UTC), IdempotencyKey: "run_01M8BC2B1PJY6SG31WR4B5AYYP/notify/1"}
	raw, _ := m.appendJSON(nil)
	if len(raw) > m.sizeHint() {
		t.Errorf("JSON of %d bytes, hint %d", len(raw), m.sizeHint())
	}
}
