package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/google/go-cmp/cmp"
)

// TestParseRateLimit reads -rate-limit's CAPABILITY=LIMIT/PER[@KEY] and
// refuses what is not of that form, naming what is wrong.
func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in      string
		want    bas.RateLimit
		problem string // in the error; empty: none
	}{
		{"crm.=10/1s@args.customer_id", bas.RateLimit{Capability: "crm.", Limit: 10, Per: time.Second, Key: "args.customer_id"}, ""},
		{"email.send=100/1m", bas.RateLimit{Capability: "email.send", Limit: 100, Per: time.Minute}, ""},
		{"a.b=1/1h30m", bas.RateLimit{Capability: "a.b", Limit: 1, Per: 90 * time.Minute}, ""},
		{"crm.", bas.RateLimit{}, "want CAPABILITY=LIMIT/PER[@KEY]"},
		{"=10/1s", bas.RateLimit{}, "want CAPABILITY=LIMIT/PER[@KEY]"},
		{"crm.=10", bas.RateLimit{}, "want CAPABILITY=LIMIT/PER[@KEY]"},
		{"crm.=ten/1s", bas.RateLimit{}, `the limit "ten" is not a whole number`},
		{"crm.=10/second", bas.RateLimit{}, `the period "second" is not a duration`},
		{"crm.=10/1s@", bas.RateLimit{}, "the key after @ is empty"},
	} {
		got, err := parseRateLimit(test.in)
		if test.problem == "" && err != nil || test.problem != "" && (err == nil || !strings.Contains(err.Error(), test.problem)) {
			t.Errorf("parseRateLimit(%q) error %v, want one saying %q", test.in, err, test.problem)
			continue
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("parseRateLimit(%q) (-want +got):\n%s", test.in, diff)
		}
	}
}

// TestLimitFlags passes the caps and the rate limits, repeated, to
// bas.Options, and leaves the defaults alone when none is given.
func TestLimitFlags(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		args []string
		want bas.Options
	}{
		{nil, bas.Options{}},
		{[]string{"-max-runs-per-tenant", "100", "-max-runs-per-process", "20", "-max-starting-per-tenant", "8",
			"-fair-starting-per-tenant", "-1", "-max-calls-per-tenant", "16", "-max-calls-per-process", "4",
			"-rate-limit", "crm.=10/1s@args.customer_id", "-rate-limit", "email.send=100/1m"},
			bas.Options{MaxRunsPerTenant: 100, MaxRunsPerProcess: 20, MaxStartingPerTenant: 8, FairStartingPerTenant: -1,
				MaxCallsPerTenant: 16, MaxCallsPerProcess: 4, RateLimits: []bas.RateLimit{
					{Capability: "crm.", Limit: 10, Per: time.Second, Key: "args.customer_id"},
					{Capability: "email.send", Limit: 100, Per: time.Minute}}}},
	} {
		fs := flag.NewFlagSet("server", flag.ContinueOnError)
		l := addLimitFlags(fs)
		if err := fs.Parse(test.args); err != nil {
			t.Fatal(err)
		}
		var got bas.Options
		l.apply(&got)
		if diff := cmp.Diff(limitsOf(test.want), limitsOf(got)); diff != "" {
			t.Errorf("%v: options (-want +got):\n%s", test.args, diff)
		}
	}
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addLimitFlags(fs)
	if err := fs.Parse([]string{"-rate-limit", "crm.=ten/1s"}); err == nil || !strings.Contains(err.Error(), "not a whole number") {
		t.Errorf("a bad -rate-limit parsed: %v", err)
	}
}

// limitsOf is what of o the limit flags set.
func limitsOf(o bas.Options) any {
	return struct {
		RunsPerTenant, RunsPerProcess, StartingPerTenant, FairStartingPerTenant, CallsPerTenant, CallsPerProcess int
		RateLimits                                                                                               []bas.RateLimit
	}{o.MaxRunsPerTenant, o.MaxRunsPerProcess, o.MaxStartingPerTenant, o.FairStartingPerTenant, o.MaxCallsPerTenant,
		o.MaxCallsPerProcess, o.RateLimits}
}

// TestLimitFlagsCheckedAtOpen: a cap or a rate limit out of bounds stops
// the server before it serves, with bas.Open's message naming the option.
func TestLimitFlagsCheckedAtOpen(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		args []string
		want string
	}{
		{[]string{"-max-runs-per-tenant", "-5"}, "MaxRunsPerTenant is -5"},
		{[]string{"-rate-limit", "crm.=0/1s"}, "RateLimits[0]"},
		{[]string{"-rate-limit", "crm.=1/1s@customer_id"}, "RateLimits[0]"},
	} {
		err := run(append(test.args, "-addr", "127.0.0.1:0", "-data", t.TempDir(), "-metrics-addr", ""), nil)
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("run %v: %v, want an error naming %s", test.args, err, test.want)
		}
	}
}
