package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas"
)

// limitFlags are the server's fairness caps and rate limits, given on the
// command line and passed to bas.Options, which checks their bounds.
type limitFlags struct {
	runsPerTenant, runsPerProcess   int
	startingPerTenant, fairStarting int
	callsPerTenant, callsPerProcess int
	rate                            rateLimitFlag
}

// addLimitFlags declares the caps' and rate limits' flags on fs.
func addLimitFlags(fs *flag.FlagSet) *limitFlags {
	l := &limitFlags{}
	fs.IntVar(&l.runsPerTenant, "max-runs-per-tenant", 0, "runs of a tenant running at once (0: no cap)")
	fs.IntVar(&l.runsPerProcess, "max-runs-per-process", 0, "runs of a process running at once (0: no cap)")
	fs.IntVar(&l.startingPerTenant, "max-starting-per-tenant", 0, "starts of a tenant in progress at once (0: no cap)")
	fs.IntVar(&l.fairStarting, "fair-starting-per-tenant", 0, "starts of a tenant in progress at once while another tenant is active (0: GOMAXPROCS, -1: no cap)")
	fs.IntVar(&l.callsPerTenant, "max-calls-per-tenant", 0, "capability calls of a tenant's runs in flight at once (0: no cap)")
	fs.IntVar(&l.callsPerProcess, "max-calls-per-process", 0, "capability calls of a process's runs in flight at once (0: no cap)")
	fs.Var(&l.rate, "rate-limit", "a rate limit of capability calls, CAPABILITY=LIMIT/PER[@KEY] (crm.=10/1s@args.customer_id: 10 calls a second of crm.* per customer); repeat for more")
	return l
}

// apply sets the caps and rate limits in opts.
func (l *limitFlags) apply(opts *bas.Options) {
	opts.MaxRunsPerTenant, opts.MaxRunsPerProcess = l.runsPerTenant, l.runsPerProcess
	opts.MaxStartingPerTenant, opts.FairStartingPerTenant = l.startingPerTenant, l.fairStarting
	opts.MaxCallsPerTenant, opts.MaxCallsPerProcess = l.callsPerTenant, l.callsPerProcess
	opts.RateLimits = append(opts.RateLimits, l.rate...)
}

// rateLimitFlag collects the -rate-limit flags.
type rateLimitFlag []bas.RateLimit

// String lists the limits as given.
func (f *rateLimitFlag) String() string {
	var parts []string
	for _, l := range *f {
		s := fmt.Sprintf("%s=%d/%s", l.Capability, l.Limit, l.Per)
		if l.Key != "" {
			s += "@" + l.Key
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// Set adds a limit given as CAPABILITY=LIMIT/PER[@KEY].
func (f *rateLimitFlag) Set(s string) error {
	l, err := parseRateLimit(s)
	if err != nil {
		return err
	}
	*f = append(*f, l)
	return nil
}

// parseRateLimit reads CAPABILITY=LIMIT/PER[@KEY]: a capability id or a
// prefix ending in a dot, a whole number of calls, a Go duration (1s, 1m,
// 1h), and a path of the call's arguments. Bas checks the values' bounds
// when it opens.
func parseRateLimit(s string) (bas.RateLimit, error) {
	const form = "want CAPABILITY=LIMIT/PER[@KEY], such as crm.=10/1s@args.customer_id"
	capID, rest, ok := strings.Cut(s, "=")
	if !ok || capID == "" {
		return bas.RateLimit{}, fmt.Errorf("%q: %s", s, form)
	}
	rest, key, keyed := strings.Cut(rest, "@")
	if keyed && key == "" {
		return bas.RateLimit{}, fmt.Errorf("%q: the key after @ is empty; %s", s, form)
	}
	n, per, ok := strings.Cut(rest, "/")
	if !ok {
		return bas.RateLimit{}, fmt.Errorf("%q: %s", s, form)
	}
	limit, err := strconv.Atoi(n)
	if err != nil {
		return bas.RateLimit{}, fmt.Errorf("%q: the limit %q is not a whole number; %s", s, n, form)
	}
	d, err := time.ParseDuration(per)
	if err != nil {
		return bas.RateLimit{}, fmt.Errorf("%q: the period %q is not a duration such as 1s or 1m; %s", s, per, form)
	}
	return bas.RateLimit{Capability: capID, Key: key, Limit: limit, Per: d}, nil
}
