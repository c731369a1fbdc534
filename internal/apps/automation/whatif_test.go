package automation_test

import (
	"context"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestRampNeedsWhatIf sets ramp_min_what_if: agreement alone no longer
// raises percent until the process's latest what-if agrees enough.
func TestRampNeedsWhatIf(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	var mu sync.Mutex
	rates := map[string]*float64{}
	b.svc = automation.New(automation.Config{Store: b.st, Clock: b.clock, Changes: b.access,
		ProcessExists: func(_ context.Context, _, id string) error {
			if id != "prc_1" {
				return errs.NotFoundf("process not found")
			}
			return nil
		},
		WhatIfAgreement: func(_ store.Reader, _, processID string) (*float64, error) {
			mu.Lock()
			defer mu.Unlock()
			return rates[processID], nil
		}})
	const proc = "prc_1"
	b.patch("", `{"auto_ramp": true, "ramp_min_decisions": 5}`)
	b.patch(proc, `{"ramp_min_what_if": 0.8}`)
	if v := b.view(proc); v.RampMinWhatIf == nil || *v.RampMinWhatIf != 0.8 {
		t.Fatalf("ramp_min_what_if = %v", v.RampMinWhatIf)
	}
	observe := func() int {
		for range 5 {
			b.observe(proc, true)
		}
		return b.view(proc).Percent
	}
	var got []int
	got = append(got, observe()) // no what-if yet
	low, high := 0.7, 0.85
	mu.Lock()
	rates[proc] = &low
	mu.Unlock()
	got = append(got, observe()) // below 0.8
	mu.Lock()
	rates[proc] = &high
	mu.Unlock()
	got = append(got, observe()) // at least 0.8: one step
	if diff := cmp.Diff([]int{0, 0, 10}, got); diff != "" {
		t.Errorf("percent after each round (-want +got):\n%s", diff)
	}
	want := []string{"automation.ramped system prc_1: agreement 1.00 over the last 5 decisions is at least 0.90, " +
		"and the latest what-if's agreement 0.85 is at least 0.80: percent 0 -> 10"}
	audit := b.newAudit()
	if diff := cmp.Diff(want, audit[len(audit)-1:]); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	// Clearing it ramps on agreement alone again; bounds are 0..1.
	b.patch(proc, `{"ramp_min_what_if": null}`)
	if p := observe(); p != 25 {
		t.Errorf("percent after clearing = %d, want 25", p)
	}
	for _, c := range []struct {
		body string
		ok   bool
	}{{`{"ramp_min_what_if": 0}`, true}, {`{"ramp_min_what_if": 1}`, true}, {`{"ramp_min_what_if": 1.01}`, false}, {`{"ramp_min_what_if": -0.01}`, false}} {
		_, err := automation.ParsePatch([]byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.body, err)
		}
	}
}
