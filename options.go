package bas

import (
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/process"
	"github.com/cockroachdb/errors"
)

// Bounds of the options, so a typo cannot make a workspace that cannot run.
const (
	maxWorkers         = 1024
	maxMaxAttempts     = 100
	maxSubscribeBuffer = 1 << 20
	minApprovalExpiry  = time.Minute
	maxCircuitFailures = 1000
	minCircuitCoolDown = time.Second
	maxCircuitCoolDown = 24 * time.Hour
	maxCap             = 1_000_000
)

// validate reports the first option that cannot work, named as the caller
// wrote it, with what to do instead. Zero values take their defaults.
func (o Options) validate() error {
	bad := func(option string, value any, want string) error {
		return errors.Mark(errors.Newf("bas: Options.%s is %v; %s", option, value, want), ErrInvalid)
	}
	switch {
	case o.Workers < 0 || o.Workers > maxWorkers:
		return bad("Workers", o.Workers, fmt.Sprintf("use 1 to %d, or 0 for 2 x GOMAXPROCS", maxWorkers))
	case o.MaxAttempts < 0 || o.MaxAttempts > maxMaxAttempts:
		return bad("MaxAttempts", o.MaxAttempts, fmt.Sprintf("use 1 to %d, or 0 for 5", maxMaxAttempts))
	case o.ApprovalExpiry < 0 || o.ApprovalExpiry > 0 && o.ApprovalExpiry < minApprovalExpiry:
		return bad("ApprovalExpiry", o.ApprovalExpiry, "use at least 1m, or 0 for 7 days")
	case o.Grace < 0:
		return bad("Grace", o.Grace, "use a positive duration, or 0 for 5s")
	case o.CallTimeout < 0:
		return bad("CallTimeout", o.CallTimeout, "use a positive duration, or 0 for 30s")
	case o.MaxUploadBytes < 0:
		return bad("MaxUploadBytes", o.MaxUploadBytes, "use a positive size, or 0 for 25 MiB")
	case o.CircuitFailures < 0 || o.CircuitFailures > maxCircuitFailures:
		return bad("CircuitFailures", o.CircuitFailures, fmt.Sprintf("use 1 to %d, or 0 for 5", maxCircuitFailures))
	case o.CircuitCoolDown < 0 || o.CircuitCoolDown > 0 && (o.CircuitCoolDown < minCircuitCoolDown || o.CircuitCoolDown > maxCircuitCoolDown):
		return bad("CircuitCoolDown", o.CircuitCoolDown, "use 1s to 24h, or 0 for 30s")
	case o.SubscribeBuffer < 0 || o.SubscribeBuffer > maxSubscribeBuffer:
		return bad("SubscribeBuffer", o.SubscribeBuffer, fmt.Sprintf("use 1 to %d, or 0 for 4096", maxSubscribeBuffer))
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"MaxRunsPerTenant", o.MaxRunsPerTenant}, {"MaxRunsPerProcess", o.MaxRunsPerProcess},
		{"MaxStartingPerTenant", o.MaxStartingPerTenant},
		{"MaxCallsPerTenant", o.MaxCallsPerTenant}, {"MaxCallsPerProcess", o.MaxCallsPerProcess}} {
		if c.v < 0 || c.v > maxCap {
			return bad(c.name, c.v, fmt.Sprintf("use 1 to %d, or 0 for no cap", maxCap))
		}
	}
	if o.FairStartingPerTenant < -1 || o.FairStartingPerTenant > maxCap {
		return bad("FairStartingPerTenant", o.FairStartingPerTenant, fmt.Sprintf("use 1 to %d, -1 for no cap, or 0 for GOMAXPROCS", maxCap))
	}
	if err := o.validateCluster(bad); err != nil {
		return err
	}
	if err := o.validateRateLimits(bad); err != nil {
		return err
	}
	for i, p := range o.Providers {
		if p == nil {
			continue // Open's registry names it
		}
		if info := p.Info(); info.ID == mail.ProviderID && !slices.Contains(info.Capabilities, "email.send") {
			return bad(fmt.Sprintf("Providers[%d]", i), `"`+mail.ProviderID+`"`,
				"a provider of that id takes the outbox's place, so it must list email.send; give it another id")
		}
	}
	for i, p := range o.Plugins {
		if p == "" {
			return bad(fmt.Sprintf("Plugins[%d]", i), `""`, "give the path of a plugin executable")
		}
	}
	if o.PluginDir != "" {
		// A directory that is not there is a mistyped path: it would load
		// no plugin and show none failed.
		fi, err := os.Stat(o.PluginDir)
		switch {
		case err != nil:
			return bad("PluginDir", fmt.Sprintf("%q", o.PluginDir), "it cannot be read ("+
				strings.TrimPrefix(err.Error(), "stat "+o.PluginDir+": ")+"); give a directory of plugin executables, or leave it empty")
		case !fi.IsDir():
			return bad("PluginDir", fmt.Sprintf("%q", o.PluginDir), "it is not a directory; give a directory of plugin executables, or leave it empty")
		}
	}
	names := make([]string, 0, len(o.PluginChecksums))
	for name := range o.PluginChecksums {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sum := o.PluginChecksums[name]
		if b, err := hex.DecodeString(strings.TrimSpace(sum)); err != nil || len(b) != 32 {
			return bad(fmt.Sprintf("PluginChecksums[%q]", name), fmt.Sprintf("%q", sum),
				"give the plugin's SHA-256 as 64 hex digits (sha256sum prints it)")
		}
	}
	if err := o.validatePlugins(bad); err != nil {
		return err
	}
	return nil
}

// validateRateLimits checks each of RateLimits: a Capability that no
// capability id matches would limit nothing; a Key that is not a path of
// the call's arguments would never match, so every call would share one
// limit.
func (o Options) validateRateLimits(bad func(option string, value any, want string) error) error {
	for i, l := range o.RateLimits {
		name := fmt.Sprintf("RateLimits[%d]", i)
		switch {
		case l.Capability == "":
			return bad(name+".Capability", `""`, "give a capability id (crm.contact.create) or a provider's prefix ending in a dot (crm.)")
		case !rateLimitMatchesSome(l.Capability):
			return bad(name+".Capability", fmt.Sprintf("%q", l.Capability), "it matches no capability id a process can call; "+
				"give a capability id (crm.contact.create) or a provider's prefix ending in a dot (crm., not crm.*)")
		case l.Limit < 1 || l.Limit > maxCap:
			return bad(name+".Limit", l.Limit, fmt.Sprintf("use 1 to %d calls per Per", maxCap))
		case l.Per <= 0:
			return bad(name+".Per", l.Per, "use a positive duration (time.Second)")
		case l.Key != "" && (!strings.HasPrefix(l.Key, "args.") || len(l.Key) == len("args.")):
			return bad(name+".Key", fmt.Sprintf("%q", l.Key), "give a path of the call's arguments (args.customer_id), or none for one limit per tenant")
		}
	}
	return nil
}

// capabilityID matches the capability ids runs call (process steps name no
// other).
var capabilityID = regexp.MustCompile(process.CapabilityPattern)

// rateLimitMatchesSome reports whether a RateLimit's Capability can match
// a capability id: it is one, or a prefix ending in a dot that some id
// begins with (crm., but not crm.* or CRM.).
func rateLimitMatchesSome(c string) bool {
	if strings.HasSuffix(c, ".") {
		return capabilityID.MatchString(c + "x")
	}
	return capabilityID.MatchString(c)
}
