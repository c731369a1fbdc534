package ai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/ai"
	"github.com/bas-platform/bas/internal/ai/aitest"
)

// BenchmarkExtractCall measures one ai.extract call end to end against the
// fake server: prompt, request, answer check, evidence, usage recorded.
func BenchmarkExtractCall(b *testing.B) {
	for _, size := range []int{1, 50} { // the e-mail, and fifty of them in one text
		b.Run(map[int]string{1: "email", 50: "long"}[size], func(b *testing.B) {
			e := setup(b, ai.ConnectionIn{})
			e.srv.Respond = func(aitest.Request) aitest.Cue {
				return aitest.Cue{Content: `{"fields":{"invoice_number":{"quote":"INV-2026-0042"},"total":{"quote":"EUR 1,250.00"}}}`}
			}
			text := strings.Repeat(email+"\n", size)
			raw, _ := json.Marshal(capability.AIExtractArgs{Text: text, Fields: []capability.AIField{
				{Key: "invoice_number", Label: "Invoice number"}, {Key: "total", Label: "Total", Type: "money"}}})
			call := capability.Call{Tenant: "t1", Capability: capability.AIExtract, Args: raw}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := e.p.Call(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
