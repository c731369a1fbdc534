package aitest_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/ai/aitest"
	"github.com/google/go-cmp/cmp"
)

// TestStream: a streaming request is answered with chunks whose deltas
// make the content, a usage chunk and [DONE].
func TestStream(t *testing.T) {
	srv := aitest.New("k")
	defer srv.Close()
	srv.Push(aitest.Cue{Content: "Grüße aus Köln, bis bald!"})
	req, _ := http.NewRequest("POST", srv.BaseURL()+"/chat/completions", strings.NewReader(
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var text strings.Builder
	var finish []string
	var total float64
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				TotalTokens float64 `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			if ch.FinishReason != nil {
				finish = append(finish, *ch.FinishReason)
			}
		}
		if c.Usage != nil {
			total = c.Usage.TotalTokens
		}
	}
	if d := cmp.Diff([]string{"stop"}, finish); d != "" || text.String() != "Grüße aus Köln, bis bald!" || total != 15 || !done {
		t.Errorf("text %q, finish %v (%s), total %v, done %v", text.String(), finish, d, total, done)
	}
	if p := srv.Problems(); len(p) > 0 {
		t.Errorf("problems %v", p)
	}
}
