package access

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
)

// Workspace is a tenant: one workspace, its settings and its profile.
type Workspace struct {
	// ID is the tenant id every record of the workspace is stored under.
	ID string `json:"id"`
	// Name is shown to people.
	Name string `json:"name"`
	// FourEyes makes widening changes (admin grants, turning four-eyes off,
	// and the kinds other apps register) wait for a second person.
	FourEyes bool `json:"four_eyes"`
	// Profile is the workspace's tags (industries, size, systems,
	// regulations), set through SetProfile; {} until then.
	Profile json.RawMessage `json:"profile"`
	// CreatedAt is when the workspace was created.
	CreatedAt time.Time `json:"created_at"`
}

// Workspaces live under store.System, keyed by tenant id, so a tenant's
// record can be found before its tenant is known (sign-in) and every tenant
// can be listed.
var workspaces = &store.Collection[Workspace]{
	Name:     "workspace",
	ID:       func(w *Workspace) string { return w.ID },
	NotFound: "workspace not found",
}

// WorkspacePatch changes workspace settings; absent (nil) fields are kept.
type WorkspacePatch struct {
	Name     *string `json:"name" jsonschema:"minLength=1,maxLength=200"`
	FourEyes *bool   `json:"four_eyes"`
}

// NoExtraProperties makes a field the patch does not take a 422.
func (WorkspacePatch) NoExtraProperties() {}

// NewWorkspace is what CreateWorkspace needs.
type NewWorkspace struct {
	// ID is the tenant id; a new "ten_" id when empty.
	ID string
	// Name is the workspace's name, 1 to 200 characters.
	Name string
	// OwnerEmail is the first member, made admin.
	OwnerEmail string
	// OwnerName is the owner's name; optional.
	OwnerName string
	// FourEyes turns the four-eyes rule on from the start.
	FourEyes bool
}

var tenantIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$`)

// ValidID reports whether id may name a tenant or a person chosen by a
// caller: 1 to 80 letters, digits, '_', '.' or '-', starting with a letter
// or digit.
func ValidID(id string) bool { return tenantIDPattern.MatchString(id) }

const maxWorkspaceName = 200

// CreateWorkspace creates a tenant and its first member, an admin who can
// then sign in with an email code and invite others. It is how a host
// without development login opens a workspace. A taken id is errs.Conflict.
func (s *Service) CreateWorkspace(ctx context.Context, in NewWorkspace) (*Workspace, *Member, error) {
	now := s.now()
	if in.ID == "" {
		in.ID = s.ids.New("ten", now)
	}
	var vs []errs.Violation
	if !ValidID(in.ID) {
		vs = append(vs, errs.Violation{Loc: []any{"id"}, Msg: "must be 1 to 80 letters, digits, '_', '.' or '-'", Type: "string_pattern_mismatch"})
	}
	vs = append(vs, checkLen([]any{"name"}, in.Name, 1, maxWorkspaceName)...)
	vs = append(vs, checkEmail([]any{"owner_email"}, in.OwnerEmail, true)...)
	vs = append(vs, checkLen([]any{"owner_name"}, in.OwnerName, 0, maxNameLen)...)
	if err := errs.Validation(vs...); err != nil {
		return nil, nil, err
	}
	var (
		ws *Workspace
		u  *user
	)
	err := s.st.Update(ctx, func(tx store.Txn) error {
		taken, err := workspaces.Exists(tx, store.System, in.ID)
		if err != nil {
			return err
		}
		if taken {
			return errs.Conflictf("workspace %s already exists", in.ID)
		}
		ws, err = s.createWorkspaceTx(tx, in.ID, in.Name, in.FourEyes, audit.System, now)
		if err != nil {
			return err
		}
		u, err = s.joinTx(tx, in.ID, join{email: in.OwnerEmail, name: in.OwnerName, roles: []string{RoleAdmin},
			actor: audit.System, reason: "workspace owner"}, now)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return ws, u.member(now), nil
}

func (s *Service) createWorkspaceTx(tx store.Txn, id, name string, fourEyes bool, actor string, now time.Time) (*Workspace, error) {
	ws := &Workspace{ID: id, Name: name, FourEyes: fourEyes, Profile: json.RawMessage("{}"), CreatedAt: now}
	if err := workspaces.Put(tx, store.System, ws); err != nil {
		return nil, err
	}
	return ws, audit.Write(tx, id, &s.ids, audit.Entry{At: now, Actor: actor, Action: "workspace.create",
		Entity: "workspace", EntityID: id, After: audit.Marshal(ws)})
}

// Workspace returns the tenant's workspace.
func (s *Service) Workspace(ctx context.Context, tenant string) (*Workspace, error) {
	var ws *Workspace
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		ws, err = workspaces.Get(r, store.System, tenant)
		return err
	})
	return ws, err
}

// FourEyes reports whether the tenant's widening changes wait for a second
// person (see ProposeChange).
func (s *Service) FourEyes(ctx context.Context, tenant string) (bool, error) {
	ws, err := s.Workspace(ctx, tenant)
	if err != nil {
		return false, err
	}
	return ws.FourEyes, nil
}

// fourEyesTx is FourEyes inside a transaction.
func fourEyesTx(r store.Reader, tenant string) (bool, error) {
	ws, err := workspaces.Get(r, store.System, tenant)
	if err != nil {
		return false, err
	}
	return ws.FourEyes, nil
}

// CheckWorkspacePatch reports every violation of patch, located at its
// field names (["name"]); the HTTP API puts them under "body".
func CheckWorkspacePatch(patch WorkspacePatch) error {
	if patch.Name == nil {
		return nil
	}
	vs := checkLen([]any{"name"}, *patch.Name, 1, maxWorkspaceName)
	if len(vs) == 0 && strings.TrimSpace(*patch.Name) == "" {
		vs = append(vs, errs.Violation{Loc: []any{"name"}, Msg: "must not be blank", Type: "string_too_short"})
	}
	return errs.Validation(vs...)
}

// UpdateWorkspace applies patch for p (who needs access.manage). Turning
// four-eyes off while it is on is itself a widening change: the whole patch
// then waits in the change queue and the pending change is returned
// instead of the workspace.
func (s *Service) UpdateWorkspace(ctx context.Context, p *Principal, patch WorkspacePatch) (*Workspace, *Change, error) {
	if err := CheckWorkspacePatch(patch); err != nil {
		return nil, nil, err
	}
	if !p.Can(PermAccessManage) {
		return nil, nil, errs.Forbiddenf("missing permission %s", PermAccessManage)
	}
	now := s.now()
	var (
		ws *Workspace
		ch *Change
	)
	err := s.st.Update(ctx, func(tx store.Txn) error {
		cur, err := workspaces.Get(tx, store.System, p.Tenant)
		if err != nil {
			return err
		}
		if cur.FourEyes && patch.FourEyes != nil && !*patch.FourEyes {
			ch, err = s.proposeTx(tx, p.Tenant, kindFourEyesOff, p.Actor(), p.UserID,
				"turn the four-eyes rule off", patch, now)
			return err
		}
		ws, err = s.applyWorkspacePatch(tx, p.Tenant, patch, p.Actor(), now)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return ws, ch, nil
}

func (s *Service) applyWorkspacePatch(tx store.Txn, tenant string, patch WorkspacePatch, actor string, now time.Time) (*Workspace, error) {
	cur, err := workspaces.Get(tx, store.System, tenant)
	if err != nil {
		return nil, err
	}
	before := *cur
	if patch.Name != nil {
		cur.Name = *patch.Name
	}
	if patch.FourEyes != nil {
		cur.FourEyes = *patch.FourEyes
	}
	if err := workspaces.Put(tx, store.System, cur); err != nil {
		return nil, err
	}
	return cur, audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "workspace.update",
		Entity: "workspace", EntityID: tenant, Before: audit.Marshal(before), After: audit.Marshal(cur)})
}

// SetProfile replaces the workspace's profile (the use-case app's tags),
// audited as actor's change. profile must be a JSON object (a violation at
// an empty location: it is the profile as a whole).
func (s *Service) SetProfile(ctx context.Context, tenant, actor string, profile json.RawMessage) (*Workspace, error) {
	var obj map[string]any
	if err := json.Unmarshal(profile, &obj); err != nil || obj == nil {
		return nil, errs.Invalidf([]any{}, "type_error", "the profile must be a JSON object")
	}
	now := s.now()
	var ws *Workspace
	err := s.st.Update(ctx, func(tx store.Txn) error {
		cur, err := workspaces.Get(tx, store.System, tenant)
		if err != nil {
			return err
		}
		before := *cur
		cur.Profile = append(json.RawMessage(nil), profile...)
		if err := workspaces.Put(tx, store.System, cur); err != nil {
			return err
		}
		ws = cur
		return audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "workspace.profile",
			Entity: "workspace", EntityID: tenant, Before: audit.Marshal(before.Profile), After: audit.Marshal(cur.Profile)})
	})
	return ws, err
}
