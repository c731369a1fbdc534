package access

import (
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
)

// This file holds the checks every grant (a key, an invitation, a
// development login) goes through: known roles and apps, and never more
// than the granter holds.

// KnownApps returns the app ids a key or invitation may be limited to: the
// built-in apps and the plugin apps of Config.Apps, sorted.
func (s *Service) KnownApps() []string {
	return sorted(append(clone(Apps), s.cfg.Apps()...))
}

// checkGrant reports unknown role names and app ids, located at roles and
// apps (the HTTP API puts them under body). An empty roles list is reported; an empty apps
// list too (null, not [], means every app).
func (s *Service) checkGrant(roles, apps []string) []errs.Violation {
	var vs []errs.Violation
	if roles != nil && len(roles) == 0 {
		vs = append(vs, errs.Violation{Loc: []any{"roles"}, Msg: "must list at least one role", Type: "too_short"})
	}
	for i, r := range roles {
		if _, ok := Roles[r]; !ok {
			vs = append(vs, errs.Violation{Loc: []any{"roles", i},
				Msg: fmt.Sprintf("must be one of %s", strings.Join(sortedKeys(Roles), ", ")), Type: "enum"})
		}
	}
	if apps != nil && len(apps) == 0 {
		vs = append(vs, errs.Violation{Loc: []any{"apps"},
			Msg: "must list at least one app, or be null for every app", Type: "too_short"})
	}
	known := s.KnownApps()
	for i, a := range apps {
		if !slices.Contains(known, a) {
			vs = append(vs, errs.Violation{Loc: []any{"apps", i},
				Msg: fmt.Sprintf("must be one of %s", strings.Join(known, ", ")), Type: "enum"})
		}
	}
	return vs
}

// canGrant returns errs.Forbidden when roles or apps reach beyond what p
// holds: every permission of the roles must be p's, and p limited to some
// apps can grant only those.
func canGrant(p *Principal, roles, apps []string) error {
	for _, perm := range PermissionsOf(roles) {
		if !p.Can(perm) {
			return errs.Forbiddenf("cannot grant a role with %s: the caller lacks it", perm)
		}
	}
	if p.Apps == nil {
		return nil
	}
	if apps == nil {
		return errs.Forbiddenf("cannot grant every app: the caller is limited to %s", strings.Join(p.Apps, ", "))
	}
	for _, a := range apps {
		if !slices.Contains(p.Apps, a) {
			return errs.Forbiddenf("cannot grant app %s: the caller is not allowed it", a)
		}
	}
	return nil
}

// grantsAdmin reports whether roles include admin.
func grantsAdmin(roles []string) bool { return slices.Contains(roles, RoleAdmin) }

// checkEmail reports an address that is not a plain email address.
func checkEmail(loc []any, email string, required bool) []errs.Violation {
	e := strings.TrimSpace(email)
	if e == "" {
		if required {
			return []errs.Violation{{Loc: loc, Msg: "is required", Type: "missing"}}
		}
		return nil
	}
	if !ValidEmail(e) {
		return []errs.Violation{{Loc: loc, Msg: "must be an email address", Type: "value_error"}}
	}
	return nil
}

// ValidEmail reports whether s is a plain email address (local@domain, no
// display name), at most 254 characters.
func ValidEmail(s string) bool {
	if len(s) > 254 || strings.ContainsAny(s, " <>\t\r\n") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1
}

// checkLen reports a string outside [min, max] characters (max 0: no
// upper bound).
func checkLen(loc []any, s string, min, max int) []errs.Violation {
	n := utf8.RuneCountInString(s)
	switch {
	case n < min && n == 0:
		return []errs.Violation{{Loc: loc, Msg: "is required", Type: "missing"}}
	case n < min:
		return []errs.Violation{{Loc: loc, Msg: fmt.Sprintf("must be at least %d characters", min), Type: "string_too_short"}}
	case max > 0 && n > max:
		return []errs.Violation{{Loc: loc, Msg: fmt.Sprintf("must be at most %d characters", max), Type: "string_too_long"}}
	}
	return nil
}

// checkReason reports a break-glass reason that is blank or too long.
func checkReason(reason *string) []errs.Violation {
	if reason == nil {
		return nil
	}
	loc := []any{"break_glass_reason"}
	if strings.TrimSpace(*reason) == "" {
		return []errs.Violation{{Loc: loc, Msg: "must not be blank; leave it out or null instead", Type: "string_too_short"}}
	}
	return checkLen(loc, *reason, 1, maxReasonLen)
}

// maxReasonLen bounds break-glass reasons (as interface.md bounds the
// automation settings' one).
const maxReasonLen = 2000

func clone(s []string) []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s)
}

// cloneApps copies an app limit, keeping nil (every app) distinct from an
// empty list.
func cloneApps(s []string) []string {
	if s == nil {
		return nil
	}
	return sorted(slices.Clone(s))
}

// unionApps merges two app limits: nil (every app) absorbs the other.
func unionApps(a, b []string) []string {
	if a == nil || b == nil {
		return nil
	}
	return sorted(append(slices.Clone(a), b...))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
