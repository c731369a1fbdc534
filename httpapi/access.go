package httpapi

import (
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
)

// registerAccessRoutes declares the routes of api.md section 2. Routes
// with an empty permission check who may act in the service, per record:
// API keys (a person manages its own keys; access.manage manages all) and
// change decisions (the permission of the change's kind, access.manage
// unless the kind says otherwise).
func (h *Handler) registerAccessRoutes() {
	if h.opts.DevLogin {
		h.handlePublic("POST", "/v1/auth/dev-login", h.handleDevLogin).In(access.DevLoginIn{}).Out(201, access.Session{})
	}
	h.handlePublic("POST", "/v1/auth/email", h.handleAuthEmail).In(access.EmailIn{}).Out(202, map[string]string{})
	h.handlePublic("POST", "/v1/auth/code", h.handleAuthCode).In(access.CodeIn{}).Out(201, access.Session{}).Errors(401)
	h.handle("GET", "/v1/auth/me", "", "", h.handleMe).Out(200, access.Me{})
	h.handle("POST", "/v1/auth/logout", "", "", h.handleLogout).Out(204, nil)

	h.handle("GET", "/v1/api-keys", access.AppAccess, "", h.handleKeysList).List(access.Key{})
	h.handle("POST", "/v1/api-keys", access.AppAccess, "", h.handleKeyCreate).In(access.APIKeyIn{}).Out(202, access.NewKey{}).Out(201, access.NewKey{})
	h.handle("GET", "/v1/api-keys/:id", access.AppAccess, "", h.handleKeyGet).Out(200, access.Key{})
	h.handle("DELETE", "/v1/api-keys/:id", access.AppAccess, "", h.handleKeyRevoke).Out(204, nil)

	h.handle("GET", "/v1/invitations", access.AppAccess, access.PermAccessManage, h.handleInvitationsList).List(access.Invitation{})
	h.handle("POST", "/v1/invitations", access.AppAccess, access.PermAccessManage, h.handleInvitationCreate).In(access.InviteIn{}).Out(202, access.NewInvitation{}).Out(201, access.NewInvitation{})
	h.handle("GET", "/v1/invitations/:id", access.AppAccess, access.PermAccessManage, h.handleInvitationGet).Out(200, access.Invitation{})
	h.handle("DELETE", "/v1/invitations/:id", access.AppAccess, access.PermAccessManage, h.handleInvitationRevoke).Out(204, nil)
	h.handlePublic("POST", "/v1/invitations/:token/accept", h.handleInvitationAccept).In(access.AcceptIn{}).Out(201, access.Session{})

	h.handle("GET", "/v1/members", access.AppAccess, "", h.handleMembersList).List(access.Member{})
	h.handle("GET", "/v1/workspace", access.AppAccess, "", h.handleWorkspaceGet).Out(200, access.Workspace{})
	h.handle("PATCH", "/v1/workspace", access.AppAccess, access.PermAccessManage, h.handleWorkspacePatch).In(access.WorkspacePatch{}).Out(202, changeOut{}).Out(200, access.Workspace{})

	h.handle("GET", "/v1/changes", access.AppAccess, "", h.handleChangesList).List(access.Change{}).Query("status")
	h.handle("GET", "/v1/changes/:id", access.AppAccess, "", h.handleChangeGet).Out(200, access.Change{})
	h.handle("POST", "/v1/changes/:id/approve", access.AppAccess, "", h.handleChangeApprove).In(access.DecisionIn{}).Out(200, access.Change{})
	h.handle("POST", "/v1/changes/:id/reject", access.AppAccess, "", h.handleChangeReject).In(access.DecisionIn{}).Out(200, access.Change{})

	h.handle("GET", "/v1/audit", access.AppAccess, access.PermAuditRead, h.handleAuditList).List(audit.Entry{}).Query("entity", "actor", "since")
}

func (h *Handler) access() *access.Service { return h.ws.Access() }

// secretInPath matches a secret (an invitation token) in a request path.
var secretInPath = regexp.MustCompile(`\b(bas[iks]_[0-9a-z]{8})[0-9a-z]{32}\b`)

// logPath is r's path as logs show it: a secret in it (an invitation
// token) is cut down to its lookup part.
func logPath(r *http.Request) string {
	if !mayHoldSecret(r.URL.Path) {
		return r.URL.Path
	}
	return secretInPath.ReplaceAllString(r.URL.Path, "${1}...")
}

// mayHoldSecret reports whether p has "basi_", "bask_" or "bass_" in it,
// which every match of secretInPath starts with: most paths have none,
// and skip the regular expression.
func mayHoldSecret(p string) bool {
	for {
		i := strings.Index(p, "bas")
		if i < 0 {
			return false
		}
		p = p[i+3:]
		if len(p) >= 2 && strings.IndexByte("iks", p[0]) >= 0 && p[1] == '_' {
			return true
		}
	}
}

// handleDevLogin serves POST /v1/auth/dev-login (only with Options.DevLogin).
func (h *Handler) handleDevLogin(c *request) error {
	c.holdsSecret() // a new credential, shown once
	var in access.DevLoginIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	sess, err := h.access().DevLogin(c.Context(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/auth/me", sess)
}

// handleAuthEmail serves POST /v1/auth/email: 202 whether or not the
// address belongs to a workspace.
func (h *Handler) handleAuthEmail(c *request) error {
	var in access.EmailIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	if err := h.address.take(addressKey("email", in.Email)); err != nil {
		return err
	}
	if err := h.access().SendCode(c.Context(), in); err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusAccepted, map[string]string{"status": "accepted"})
}

// handleAuthCode serves POST /v1/auth/code.
func (h *Handler) handleAuthCode(c *request) error {
	c.holdsSecret() // a new credential, shown once
	var in access.CodeIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	if err := h.address.take(addressKey("code", in.Email)); err != nil {
		return err
	}
	sess, err := h.access().SignIn(c.Context(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/auth/me", sess)
}

// handleMe serves GET /v1/auth/me.
func (h *Handler) handleMe(c *request) error {
	me, err := h.access().Me(c.Context(), c.P)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, me)
}

// handleLogout serves POST /v1/auth/logout.
func (h *Handler) handleLogout(c *request) error {
	if err := c.noBody(); err != nil {
		return err
	}
	if err := h.access().Logout(c.Context(), c.P); err != nil {
		return err
	}
	return c.NoContent()
}

// handleKeysList serves GET /v1/api-keys.
func (h *Handler) handleKeysList(c *request) error {
	page, err := c.Page()
	if err != nil {
		return err
	}
	ks, next, err := h.access().Keys(c.Context(), c.P, page)
	if err != nil {
		return err
	}
	return c.List(ks, next)
}

// handleKeyCreate serves POST /v1/api-keys: 201, or 202 when an admin key
// waits for a second admin.
func (h *Handler) handleKeyCreate(c *request) error {
	c.holdsSecret() // a new credential, shown once
	var in access.APIKeyIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	k, err := h.access().CreateKey(c.Context(), c.P, in)
	if err != nil {
		return inBody(err)
	}
	if k.Status == access.KeyPending {
		return c.waiting(k.ChangeID, k)
	}
	return c.Created("/v1/api-keys/"+k.ID, k)
}

// keyOf returns the key id of the caller's tenant that the caller may see:
// its own, or any with access.manage.
func (h *Handler) keyOf(c *request, id string) (*access.Key, error) {
	k, err := h.access().Key(c.Context(), c.Tenant(), id)
	if err != nil {
		return nil, err
	}
	if err := access.CanSeeKey(c.P, k); err != nil {
		return nil, err
	}
	return k, nil
}

// handleKeyGet serves GET /v1/api-keys/{id}.
func (h *Handler) handleKeyGet(c *request) error {
	k, err := h.keyOf(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, k)
}

// handleKeyRevoke serves DELETE /v1/api-keys/{id}: the key stops working at
// once.
func (h *Handler) handleKeyRevoke(c *request) error {
	if err := h.access().RevokeKey(c.Context(), c.P, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// handleInvitationsList serves GET /v1/invitations.
func (h *Handler) handleInvitationsList(c *request) error {
	page, err := c.Page()
	if err != nil {
		return err
	}
	is, next, err := h.access().Invitations(c.Context(), c.Tenant(), page)
	if err != nil {
		return err
	}
	return c.List(is, next)
}

// handleInvitationCreate serves POST /v1/invitations: 201, or 202 when an
// admin invitation waits for a second admin.
func (h *Handler) handleInvitationCreate(c *request) error {
	c.holdsSecret() // a new credential, shown once
	var in access.InviteIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	inv, err := h.access().Invite(c.Context(), c.P, in)
	if err != nil {
		return inBody(err)
	}
	if inv.Status == access.InvitationAwaiting {
		return c.waiting(inv.ChangeID, inv)
	}
	return c.Created("/v1/invitations/"+inv.ID, inv)
}

// handleInvitationGet serves GET /v1/invitations/{id}.
func (h *Handler) handleInvitationGet(c *request) error {
	inv, err := h.access().Invitation(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, inv)
}

// handleInvitationRevoke serves DELETE /v1/invitations/{id}.
func (h *Handler) handleInvitationRevoke(c *request) error {
	if err := h.access().RevokeInvitation(c.Context(), c.P, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// handleInvitationAccept serves POST /v1/invitations/{token}/accept. The
// token is looked up before the body is read, so a wrong one is a 404.
func (h *Handler) handleInvitationAccept(c *request) error {
	c.holdsSecret() // a new credential, shown once
	token := c.Param("token")
	if err := h.address.take(addressKey("accept", token)); err != nil {
		return err
	}
	if _, err := h.access().InvitationByToken(c.Context(), token); err != nil {
		return err
	}
	var in access.AcceptIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	sess, err := h.access().Accept(c.Context(), token, in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/auth/me", sess)
}

// handleMembersList serves GET /v1/members.
func (h *Handler) handleMembersList(c *request) error {
	page, err := c.Page()
	if err != nil {
		return err
	}
	ms, next, err := h.access().Members(c.Context(), c.Tenant(), page)
	if err != nil {
		return err
	}
	return c.List(ms, next)
}

// handleWorkspaceGet serves GET /v1/workspace.
func (h *Handler) handleWorkspaceGet(c *request) error {
	ws, err := h.access().Workspace(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ws)
}

// handleWorkspacePatch serves PATCH /v1/workspace: 200 with the workspace,
// or 202 {change} (as every update that waits) when it turns four-eyes off.
func (h *Handler) handleWorkspacePatch(c *request) error {
	var in access.WorkspacePatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	ws, ch, err := h.access().UpdateWorkspace(c.Context(), c.P, in)
	if err != nil {
		return inBody(err)
	}
	if ch != nil {
		return c.waiting(ch.ID, changeOut{Change: ch})
	}
	return c.JSON(http.StatusOK, ws)
}

// handleChangesList serves GET /v1/changes?status=.
func (h *Handler) handleChangesList(c *request) error {
	page, err := c.Page()
	if err != nil {
		return err
	}
	status := c.Query().Get("status")
	if status != "" && !access.ValidChangeStatus(status) {
		return errs.Invalidf([]any{"query", "status"}, "enum",
			"must be one of pending, approved, rejected, withdrawn")
	}
	chs, next, err := h.access().Changes(c.Context(), c.Tenant(), status, page)
	if err != nil {
		return err
	}
	return c.List(chs, next)
}

// handleChangeGet serves GET /v1/changes/{id}.
func (h *Handler) handleChangeGet(c *request) error {
	ch, err := h.access().Change(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ch)
}

// handleChangeApprove serves POST /v1/changes/{id}/approve.
func (h *Handler) handleChangeApprove(c *request) error { return h.decideChange(c, true) }

// handleChangeReject serves POST /v1/changes/{id}/reject.
func (h *Handler) handleChangeReject(c *request) error { return h.decideChange(c, false) }

func (h *Handler) decideChange(c *request, approve bool) error {
	id := c.Param("id")
	if _, err := h.access().Change(c.Context(), c.Tenant(), id); err != nil {
		return err
	}
	var in access.DecisionIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	note := ""
	if in.Note != nil {
		note = *in.Note
	}
	decide := h.access().Reject
	if approve {
		decide = h.access().Approve
	}
	ch, err := decide(c.Context(), c.P, id, note)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, ch)
}

// handleAuditList serves GET /v1/audit?entity=&actor=&since=.
func (h *Handler) handleAuditList(c *request) error {
	page, err := c.Page()
	if err != nil {
		return err
	}
	qs := c.Query()
	q := audit.Query{Entity: qs.Get("entity"), Actor: qs.Get("actor")}
	if s := qs.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return errs.Invalidf([]any{"query", "since"}, "value_error",
				"must be an RFC 3339 time such as 2025-01-31T09:00:00Z")
		}
		q.Since = t
	}
	var (
		entries []*audit.Entry
		next    string
	)
	err = h.ws.Store().View(c.Context(), func(r store.Reader) error {
		var err error
		entries, next, err = audit.List(r, c.Tenant(), q, page)
		return err
	})
	if err != nil {
		return err
	}
	return c.List(entries, next)
}
