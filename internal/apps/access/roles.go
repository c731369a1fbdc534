// Package access is who may do what in a workspace: tenants, people,
// sessions, API keys, invitations, roles and permissions, app limits,
// workspace settings, the widening-change queue and break-glass grants.
//
// Validation errors locate their violations at the input's field names
// (["email"], ["roles", 0]); the HTTP API puts them under "body".
package access

import (
	"slices"
	"strings"
	"time"
)

// The permissions of api.md section 2.
const (
	PermProcessesRead      = "processes.read"
	PermProcessesManage    = "processes.manage"
	PermRunsStart          = "runs.start"
	PermTasksWork          = "tasks.work"
	PermApprovalsDecide    = "approvals.decide"
	PermUsecasesManage     = "usecases.manage"
	PermDocsRead           = "docs.read"
	PermDocsWrite          = "docs.write"
	PermDocsReview         = "docs.review"
	PermCRMRead            = "crm.read"
	PermCRMWrite           = "crm.write"
	PermInvoicingRead      = "invoicing.read"
	PermInvoicingWrite     = "invoicing.write"
	PermBoardsRead         = "boards.read"
	PermBoardsWrite        = "boards.write"
	PermAutomationManage   = "automation.manage"
	PermCapabilitiesManage = "capabilities.manage"
	PermAccessManage       = "access.manage"
	PermAuditRead          = "audit.read"
	PermEventsEmit         = "events.emit"
)

// Permissions lists every permission, sorted.
var Permissions = sorted([]string{
	PermProcessesRead, PermProcessesManage, PermRunsStart, PermTasksWork, PermApprovalsDecide,
	PermUsecasesManage, PermDocsRead, PermDocsWrite, PermDocsReview, PermCRMRead, PermCRMWrite,
	PermInvoicingRead, PermInvoicingWrite, PermBoardsRead, PermBoardsWrite, PermAutomationManage,
	PermCapabilitiesManage, PermAccessManage, PermAuditRead, PermEventsEmit,
})

// The roles.
const (
	RoleAdmin    = "admin"
	RoleMember   = "member"
	RoleApprover = "approver"
	RoleViewer   = "viewer"
)

// Roles maps each role to its permissions.
var Roles = func() map[string][]string {
	var reads []string
	for _, p := range Permissions {
		if strings.HasSuffix(p, ".read") {
			reads = append(reads, p)
		}
	}
	member := sorted(append(slices.Clone(reads), PermRunsStart, PermTasksWork, PermDocsWrite,
		PermCRMWrite, PermInvoicingWrite, PermBoardsWrite, PermEventsEmit))
	return map[string][]string{
		RoleAdmin:    slices.Clone(Permissions),
		RoleMember:   member,
		RoleApprover: sorted(append(slices.Clone(member), PermApprovalsDecide, PermDocsReview)),
		RoleViewer:   reads,
	}
}()

// The built-in apps a key or invitation may be limited to.
const (
	AppProcesses    = "processes"
	AppTasks        = "tasks"
	AppUsecases     = "usecases"
	AppDocs         = "docs"
	AppCRM          = "crm"
	AppInvoicing    = "invoicing"
	AppBoards       = "boards"
	AppDecisions    = "decisions"
	AppAutomation   = "automation"
	AppCapabilities = "capabilities"
	AppAccess       = "access"
)

// Apps lists the built-in app ids, sorted.
var Apps = sorted([]string{AppProcesses, AppTasks, AppUsecases, AppDocs, AppCRM, AppInvoicing,
	AppBoards, AppDecisions, AppAutomation, AppCapabilities, AppAccess})

func sorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// PermissionsOf returns the union of roles' permissions, sorted.
func PermissionsOf(roles []string) []string {
	var out []string
	for _, r := range roles {
		out = append(out, Roles[r]...)
	}
	return sorted(out)
}

// Principal is an authenticated caller: a person through a session, or an
// API key.
type Principal struct {
	// Tenant is the caller's workspace.
	Tenant string `json:"tenant_id"`
	// UserID is the person, or the creator of the key.
	UserID string `json:"user_id"`
	// Email is the person's address.
	Email string `json:"email"`
	// Roles are the granted roles.
	Roles []string `json:"roles"`
	// Apps limits the caller to these apps; nil means every app.
	Apps []string `json:"apps"`
	// KeyID is set when the caller used an API key.
	KeyID string `json:"key_id,omitempty"`
	// SessionID is set when the caller used a session token.
	SessionID string `json:"session_id,omitempty"`
	// DevSession is set when the caller's session was made by the
	// development login: a host without it refuses such sessions.
	DevSession bool `json:"-"`
	// KeyExpiresAt is when the caller's API key expires (nil: never);
	// the keys it makes expire no later.
	KeyExpiresAt *time.Time `json:"-"`
	// Perms is the union of the roles' permissions.
	Perms []string `json:"permissions"`
}

// Can reports whether the principal holds perm.
func (p *Principal) Can(perm string) bool {
	_, ok := slices.BinarySearch(p.Perms, perm)
	return ok
}

// AllowsApp reports whether the principal may call app.
func (p *Principal) AllowsApp(app string) bool {
	return p.Apps == nil || slices.Contains(p.Apps, app)
}

// Actor is how the principal appears in audit entries and decisions.
func (p *Principal) Actor() string {
	if p.KeyID != "" {
		return p.KeyID
	}
	return p.UserID
}
