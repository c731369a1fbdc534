package access_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// bundle is one test's access service on a real in-memory Badger store,
// with the outbox as its mailer and a fake clock.
type bundle struct {
	ctx   context.Context
	st    *badgerstore.Store
	clock *clock.Fake
	svc   *access.Service
}

var start = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func setup(t *testing.T) *bundle {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(start)
	svc := access.New(access.Config{Store: st, Clock: clk, Logger: quiet, Mailer: mail.NewProvider(st, clk)})
	return &bundle{ctx: context.Background(), st: st, clock: clk, svc: svc}
}

// login dev-logs-in and returns the session and its principal.
func (b *bundle) login(t *testing.T, in access.DevLoginIn) (*access.Session, *access.Principal) {
	t.Helper()
	sess, err := b.svc.DevLogin(b.ctx, in)
	if err != nil {
		t.Fatalf("DevLogin(%+v): %v", in, err)
	}
	return sess, b.auth(t, sess.Token)
}

func (b *bundle) auth(t *testing.T, token string) *access.Principal {
	t.Helper()
	p, err := b.svc.Authenticate(b.ctx, token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return p
}

func (b *bundle) key(t *testing.T, p *access.Principal, in access.APIKeyIn) *access.NewKey {
	t.Helper()
	k, err := b.svc.CreateKey(b.ctx, p, in)
	if err != nil {
		t.Fatalf("CreateKey(%+v): %v", in, err)
	}
	return k
}

// outbox returns the tenant's messages, newest first.
func (b *bundle) outbox(t *testing.T, tenant string) []*mail.Message {
	t.Helper()
	msgs, _, err := mail.List(b.ctx, b.st, tenant, store.Page{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func (b *bundle) fourEyes(t *testing.T, p *access.Principal) {
	t.Helper()
	on := true
	if _, _, err := b.svc.UpdateWorkspace(b.ctx, p, access.WorkspacePatch{FourEyes: &on}); err != nil {
		t.Fatal(err)
	}
}

func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error = %v, want kind %v", err, kind)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDevLogin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess, p := b.login(t, access.DevLoginIn{})
	want := &access.Principal{Tenant: access.DemoTenant, UserID: access.DemoUser, Email: access.DemoEmail,
		Roles: []string{"admin"}, Perms: access.Permissions, SessionID: p.SessionID, DevSession: true}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("principal (-want +got):\n%s", diff)
	}
	if !sess.ExpiresAt.Equal(start.Add(7 * 24 * time.Hour)) {
		t.Errorf("expires_at = %v", sess.ExpiresAt)
	}
	ws, err := b.svc.Workspace(b.ctx, access.DemoTenant)
	if err != nil || ws.Name != "Demo workspace" || ws.FourEyes {
		t.Fatalf("workspace = %+v, %v", ws, err)
	}

	// A second login of the same person with other roles and apps changes
	// them; another email makes another person in the same tenant.
	_, p2 := b.login(t, access.DevLoginIn{Roles: []string{"viewer"}, Apps: []string{"docs"}})
	if p2.UserID != access.DemoUser || !cmp.Equal(p2.Roles, []string{"viewer"}) || !cmp.Equal(p2.Apps, []string{"docs"}) {
		t.Errorf("second login = %+v", p2)
	}
	// The first session follows the person's roles at once.
	if p1 := b.auth(t, sess.Token); !cmp.Equal(p1.Roles, []string{"viewer"}) {
		t.Errorf("first session roles = %v, want [viewer]", p1.Roles)
	}
	_, p3 := b.login(t, access.DevLoginIn{Email: "Ann@Example.com", TenantID: "acme"})
	if p3.Tenant != "acme" || p3.Email != "ann@example.com" || !strings.HasPrefix(p3.UserID, "usr_") {
		t.Errorf("third login = %+v", p3)
	}
	_, err = b.svc.DevLogin(b.ctx, access.DevLoginIn{UserID: access.DemoUser, Email: "other@example.com"})
	wantKind(t, err, errs.Conflict)

	_, err = b.svc.DevLogin(b.ctx, access.DevLoginIn{Roles: []string{"boss"}, Apps: []string{"nope"}, TenantID: "-"})
	wantKind(t, err, errs.Invalid)
	if got := len(errs.Violations(err)); got != 3 {
		t.Errorf("violations = %v, want 3", errs.Violations(err))
	}
}

func TestAuthenticateRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess, p := b.login(t, access.DevLoginIn{})
	inv, err := b.svc.Invite(b.ctx, p, access.InviteIn{Email: "x@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	forged := sess.Token[:len(sess.Token)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(sess.Token, "a")]
	for _, test := range []struct{ name, token string }{
		{"empty", ""},
		{"garbage", "hello"},
		{"unknown tag", "xxxx_" + sess.Token[5:]},
		{"upper case", strings.ToUpper(sess.Token)},
		{"right lookup, wrong secret", forged},
		{"unknown lookup", "bass_" + strings.Repeat("a", 40)},
		{"an invitation token", inv.Token},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := b.svc.Authenticate(b.ctx, test.token)
			wantKind(t, err, errs.Unauthenticated)
		})
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, admin := b.login(t, access.DevLoginIn{})
	k := b.key(t, admin, access.APIKeyIn{Name: "ci", Roles: []string{"viewer"}, Apps: []string{"docs", "crm"}, ExpiresDays: ptr(2)})
	if !regexp.MustCompile(`^bask_[0-9a-z]{40}$`).MatchString(k.Secret) || !strings.HasPrefix(k.Secret, k.Prefix) || len(k.Prefix) != 13 {
		t.Fatalf("secret %q, prefix %q", k.Secret, k.Prefix)
	}
	p := b.auth(t, k.Secret)
	want := &access.Principal{Tenant: access.DemoTenant, UserID: access.DemoUser, Email: access.DemoEmail,
		Roles: []string{"viewer"}, Apps: []string{"crm", "docs"}, KeyID: k.ID, KeyExpiresAt: k.ExpiresAt, Perms: access.Roles["viewer"]}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("key principal (-want +got):\n%s", diff)
	}

	// Listed without the secret; expired after two days, at once.
	list, _, err := b.svc.Keys(b.ctx, admin, store.Page{})
	if err != nil || len(list) != 1 || list[0].Status != access.KeyActive {
		t.Fatalf("Keys = %+v, %v", list, err)
	}
	raw, _ := json.Marshal(list)
	if bytes.Contains(raw, []byte(k.Secret)) || bytes.Contains(raw, []byte("secret")) {
		t.Errorf("the list shows the secret: %s", raw)
	}
	b.clock.Advance(48 * time.Hour)
	_, err = b.svc.Authenticate(b.ctx, k.Secret)
	wantKind(t, err, errs.Unauthenticated)
	got, err := b.svc.Key(b.ctx, access.DemoTenant, k.ID)
	if err != nil || got.Status != access.KeyExpired {
		t.Errorf("Key = %+v, %v; want expired", got, err)
	}

	// Revocation works at once; revoking twice is not found.
	k2 := b.key(t, admin, access.APIKeyIn{Name: "robot"})
	b.auth(t, k2.Secret)
	if err := b.svc.RevokeKey(b.ctx, admin, k2.ID); err != nil {
		t.Fatal(err)
	}
	_, err = b.svc.Authenticate(b.ctx, k2.Secret)
	wantKind(t, err, errs.Unauthenticated)
	wantKind(t, b.svc.RevokeKey(b.ctx, admin, k2.ID), errs.NotFound)
}

func TestKeyNeverExceedsItsCreator(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, member := b.login(t, access.DevLoginIn{Roles: []string{"member"}})
	_, limited := b.login(t, access.DevLoginIn{Email: "lim@example.com", Roles: []string{"admin"}, Apps: []string{"docs"}})
	for _, test := range []struct {
		name string
		p    *access.Principal
		in   access.APIKeyIn
		ok   bool
	}{
		{"member makes a member key", member, access.APIKeyIn{Name: "a"}, true},
		{"member makes a viewer key", member, access.APIKeyIn{Name: "a", Roles: []string{"viewer"}}, true},
		{"member makes an approver key", member, access.APIKeyIn{Name: "a", Roles: []string{"approver"}}, false},
		{"member makes an admin key", member, access.APIKeyIn{Name: "a", Roles: []string{"admin"}}, false},
		{"limited admin, same app", limited, access.APIKeyIn{Name: "a", Apps: []string{"docs"}}, true},
		{"limited admin, every app", limited, access.APIKeyIn{Name: "a"}, false},
		{"limited admin, other app", limited, access.APIKeyIn{Name: "a", Apps: []string{"docs", "crm"}}, false},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := b.svc.CreateKey(b.ctx, test.p, test.in)
			if test.ok && err != nil {
				t.Fatalf("CreateKey: %v", err)
			}
			if !test.ok {
				wantKind(t, err, errs.Forbidden)
			}
		})
	}
}

func TestSecretsAreStoredOnlyAsHashes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess, admin := b.login(t, access.DevLoginIn{})
	k := b.key(t, admin, access.APIKeyIn{Name: "ci"})
	inv, err := b.svc.Invite(b.ctx, admin, access.InviteIn{Email: "new@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"session": sess.Token, "key": k.Secret, "invitation": inv.Token}
	err = b.st.View(b.ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{}, func(key, val []byte) error {
			if bytes.HasPrefix(key, store.Key(access.DemoTenant, "r", "mail")) {
				return nil // the outbox holds the invitation it delivered
			}
			for name, s := range secrets {
				if bytes.Contains(key, []byte(s)) || bytes.Contains(val, []byte(s)) {
					t.Errorf("the %s secret is stored in clear under %q", name, key)
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEmailSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, admin := b.login(t, access.DevLoginIn{})
	code := func(t *testing.T) string {
		t.Helper()
		b.clock.Advance(time.Second) // so the new message sorts first
		if err := b.svc.SendCode(b.ctx, access.EmailIn{Email: "Demo@Example.com"}); err != nil {
			t.Fatal(err)
		}
		msgs := b.outbox(t, admin.Tenant)
		m := regexp.MustCompile(`code for Demo workspace is (\d{8})\.`).FindStringSubmatch(msgs[0].Body)
		if m == nil || !cmp.Equal(msgs[0].To, []string{access.DemoEmail}) {
			t.Fatalf("newest message = %+v", msgs[0])
		}
		return m[1]
	}
	wrong := func(c string) string {
		if c == "00000000" {
			return "11111111"
		}
		return "00000000"
	}

	t.Run("right code", func(t *testing.T) {
		c := code(t)
		sess, err := b.svc.SignIn(b.ctx, access.CodeIn{Email: access.DemoEmail, Code: c})
		if err != nil {
			t.Fatal(err)
		}
		if p := b.auth(t, sess.Token); p.UserID != access.DemoUser {
			t.Errorf("signed in as %s", p.UserID)
		}
		_, err = b.svc.SignIn(b.ctx, access.CodeIn{Email: access.DemoEmail, Code: c})
		wantKind(t, err, errs.Unauthenticated) // a code works once
	})
	t.Run("four wrong tries leave the code", func(t *testing.T) {
		c := code(t)
		for i := 0; i < access.MaxCodeTries-1; i++ {
			_, err := b.svc.SignIn(b.ctx, access.CodeIn{Email: access.DemoEmail, Code: wrong(c)})
			wantKind(t, err, errs.Unauthenticated)
		}
		if _, err := b.svc.SignIn(b.ctx, access.CodeIn{Email: access.DemoEmail, Code: c}); err != nil {
			t.Fatalf("right code after four wrong: %v", err)
		}
	})
	t.Run("five wrong tries burn the code", func(t *testing.T) {
		c := code(t)
		for i := 0; i < access.MaxCodeTries; i++ {
			_, err := b.svc.SignIn(b.ctx, access.CodeIn{Email: access.DemoEmail, Code: wrong(c)})
			wantKind(t, err, errs.Unauthenticated)
		}
		_, err := b.svc.SignIn(b.ctx, access.CodeIn{Email: access.DemoEmail, Code: c})
		wantKind(t, err, errs.Unauthenticated)
	})
	t.Run("expired code", func(t *testing.T) {
		c := code(t)
		b.clock.Advance(15 * time.Minute)
		_, err := b.svc.SignIn(b.ctx, access.CodeIn{Email: access.DemoEmail, Code: c})
		wantKind(t, err, errs.Unauthenticated)
	})
	t.Run("unknown address gets nothing", func(t *testing.T) {
		n := len(b.outbox(t, admin.Tenant))
		if err := b.svc.SendCode(b.ctx, access.EmailIn{Email: "stranger@example.com"}); err != nil {
			t.Fatal(err)
		}
		if got := len(b.outbox(t, admin.Tenant)); got != n {
			t.Errorf("outbox grew from %d to %d", n, got)
		}
	})
}

func TestEmailSignInWithoutMailer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := access.New(access.Config{Store: b.st, Clock: b.clock})
	wantKind(t, svc.SendCode(b.ctx, access.EmailIn{Email: access.DemoEmail}), errs.Unavailable)
}

func TestLogout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess, p := b.login(t, access.DevLoginIn{})
	if err := b.svc.Logout(b.ctx, p); err != nil {
		t.Fatal(err)
	}
	_, err := b.svc.Authenticate(b.ctx, sess.Token)
	wantKind(t, err, errs.Unauthenticated)
	k := b.key(t, b.auth(t, mustLogin(t, b).Token), access.APIKeyIn{Name: "k"})
	wantKind(t, b.svc.Logout(b.ctx, b.auth(t, k.Secret)), errs.Conflict)
}

func mustLogin(t *testing.T, b *bundle) *access.Session {
	s, _ := b.login(t, access.DevLoginIn{})
	return s
}

func TestSessionsExpireAndAreSwept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old, _ := b.login(t, access.DevLoginIn{})
	b.clock.Advance(7 * 24 * time.Hour)
	_, err := b.svc.Authenticate(b.ctx, old.Token)
	wantKind(t, err, errs.Unauthenticated)
	b.login(t, access.DevLoginIn{}) // a sign-in sweeps what expired
	count := 0
	err = b.st.View(b.ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "r", "cred"), KeysOnly: true},
			func(_, _ []byte) error { count++; return nil })
	})
	if err != nil || count != 1 {
		t.Errorf("credentials left = %d, %v; want 1 (the live session)", count, err)
	}
}

func TestInvitations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, admin := b.login(t, access.DevLoginIn{})
	inv, err := b.svc.Invite(b.ctx, admin, access.InviteIn{Email: "Bea@Example.com", Roles: []string{"approver"}, Apps: []string{"tasks"}})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Status != access.InvitationPending || !inv.EmailSent || !inv.ExpiresAt.Equal(start.Add(7*24*time.Hour)) {
		t.Fatalf("invitation = %+v", inv)
	}
	msg := b.outbox(t, admin.Tenant)[0]
	if !strings.Contains(msg.Body, inv.Token) || msg.To[0] != "bea@example.com" {
		t.Fatalf("invitation email = %+v", msg)
	}
	sess, err := b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{Name: ptr("Bea")})
	if err != nil {
		t.Fatal(err)
	}
	p := b.auth(t, sess.Token)
	if !cmp.Equal(p.Roles, []string{"approver"}) || !cmp.Equal(p.Apps, []string{"tasks"}) || p.Email != "bea@example.com" {
		t.Errorf("invitee = %+v", p)
	}
	_, err = b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{})
	wantKind(t, err, errs.Conflict)
	wantKind(t, b.svc.RevokeInvitation(b.ctx, admin, inv.ID), errs.Conflict)

	members, _, err := b.svc.Members(b.ctx, admin.Tenant, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	// Ids sort by creation; the fixed demo id sorts after generated ones.
	wantMembers := []*access.Member{
		{UserID: access.DemoUser, Email: access.DemoEmail, Roles: []string{"admin"}, Departments: []string{}},
		{UserID: p.UserID, Email: "bea@example.com", Name: "Bea", Roles: []string{"approver"}, Apps: []string{"tasks"}, Departments: []string{}},
	}
	if diff := cmp.Diff(wantMembers, members); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}

	// An existing member who accepts another invitation gains its grant.
	inv2, err := b.svc.Invite(b.ctx, admin, access.InviteIn{Email: "bea@example.com", Apps: []string{"docs"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Accept(b.ctx, inv2.Token, access.AcceptIn{}); err != nil {
		t.Fatal(err)
	}
	if p := b.auth(t, sess.Token); !cmp.Equal(p.Roles, []string{"approver", "member"}) || !cmp.Equal(p.Apps, []string{"docs", "tasks"}) {
		t.Errorf("after a second invitation: roles %v apps %v", p.Roles, p.Apps)
	}

	t.Run("revoked", func(t *testing.T) {
		inv, err := b.svc.Invite(b.ctx, admin, access.InviteIn{Email: "c@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.svc.RevokeInvitation(b.ctx, admin, inv.ID); err != nil {
			t.Fatal(err)
		}
		wantKind(t, b.svc.RevokeInvitation(b.ctx, admin, inv.ID), errs.NotFound)
		_, err = b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{})
		wantKind(t, err, errs.Conflict)
	})
	t.Run("unknown token", func(t *testing.T) {
		_, err := b.svc.Accept(b.ctx, "basi_"+strings.Repeat("z", 40), access.AcceptIn{})
		wantKind(t, err, errs.NotFound)
	})
	t.Run("cannot exceed the inviter", func(t *testing.T) {
		_, limited := b.login(t, access.DevLoginIn{Email: "lim@example.com", Apps: []string{"docs"}})
		_, err := b.svc.Invite(b.ctx, limited, access.InviteIn{Email: "d@example.com", Apps: []string{"crm"}})
		wantKind(t, err, errs.Forbidden)
	})
	t.Run("expired after seven days", func(t *testing.T) {
		inv, err := b.svc.Invite(b.ctx, admin, access.InviteIn{Email: "e@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(access.InvitationTTL)
		got, err := b.svc.Invitation(b.ctx, admin.Tenant, inv.ID)
		if err != nil || got.Status != access.InvitationExpired {
			t.Errorf("status = %+v, %v", got, err)
		}
		_, err = b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{})
		wantKind(t, err, errs.Conflict)
	})
}

func TestFourEyesAdminKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, alice := b.login(t, access.DevLoginIn{})
	_, bob := b.login(t, access.DevLoginIn{Email: "bob@example.com"})
	_, vera := b.login(t, access.DevLoginIn{Email: "vera@example.com", Roles: []string{"approver"}})
	b.fourEyes(t, alice)

	k := b.key(t, alice, access.APIKeyIn{Name: "ops", Roles: []string{"admin"}})
	if k.Status != access.KeyPending || k.ChangeID == "" {
		t.Fatalf("admin key under four-eyes = %+v", k.Key)
	}
	_, err := b.svc.Authenticate(b.ctx, k.Secret)
	wantKind(t, err, errs.Unauthenticated)
	pending, _, err := b.svc.Changes(b.ctx, alice.Tenant, access.ChangePending, store.Page{})
	if err != nil || len(pending) != 1 || pending[0].ID != k.ChangeID {
		t.Fatalf("pending changes = %+v, %v", pending, err)
	}

	// The requester cannot approve, not even through a key of its own.
	_, err = b.svc.Approve(b.ctx, alice, k.ChangeID, "")
	wantKind(t, err, errs.Forbidden)
	aliceKey := b.key(t, alice, access.APIKeyIn{Name: "alice-bot", Roles: []string{"member"}})
	_, err = b.svc.Approve(b.ctx, b.auth(t, aliceKey.Secret), k.ChangeID, "")
	wantKind(t, err, errs.Forbidden)
	_, err = b.svc.Approve(b.ctx, vera, k.ChangeID, "") // lacks access.manage
	wantKind(t, err, errs.Forbidden)

	ch, err := b.svc.Approve(b.ctx, bob, k.ChangeID, "checked with Alice")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Status != access.ChangeApproved || *ch.DecidedBy != bob.UserID || ch.Note != "checked with Alice" {
		t.Errorf("change = %+v", ch)
	}
	if p := b.auth(t, k.Secret); !p.Can(access.PermAccessManage) {
		t.Errorf("approved key = %+v", p)
	}
	_, err = b.svc.Approve(b.ctx, bob, k.ChangeID, "")
	wantKind(t, err, errs.Conflict)

	// A rejected admin key is gone.
	k2 := b.key(t, alice, access.APIKeyIn{Name: "ops2", Roles: []string{"admin"}})
	if _, err := b.svc.Reject(b.ctx, bob, k2.ChangeID, "no"); err != nil {
		t.Fatal(err)
	}
	_, err = b.svc.Key(b.ctx, alice.Tenant, k2.ID)
	wantKind(t, err, errs.NotFound)

	// Revoking a pending key withdraws its change.
	k3 := b.key(t, alice, access.APIKeyIn{Name: "ops3", Roles: []string{"admin"}})
	if err := b.svc.RevokeKey(b.ctx, alice, k3.ID); err != nil {
		t.Fatal(err)
	}
	ch3, err := b.svc.Change(b.ctx, alice.Tenant, k3.ChangeID)
	if err != nil || ch3.Status != access.ChangeWithdrawn {
		t.Errorf("change of a revoked key = %+v, %v", ch3, err)
	}
}

func TestBreakGlass(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, alice := b.login(t, access.DevLoginIn{})
	b.fourEyes(t, alice)

	k := b.key(t, alice, access.APIKeyIn{Name: "incident", Roles: []string{"admin"}, ExpiresDays: ptr(30),
		BreakGlassReason: ptr("INC-42: the approver is away")})
	if k.Status != access.KeyActive || !k.ExpiresAt.Equal(start.Add(24*time.Hour)) {
		t.Fatalf("break-glass key = %+v", k.Key)
	}
	b.auth(t, k.Secret)

	inv, err := b.svc.Invite(b.ctx, alice, access.InviteIn{Email: "temp@example.com", Roles: []string{"admin", "member"},
		BreakGlassReason: ptr("INC-42")})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{})
	if err != nil {
		t.Fatal(err)
	}
	if p := b.auth(t, sess.Token); !cmp.Equal(p.Roles, []string{"admin", "member"}) {
		t.Errorf("roles during the grant = %v", p.Roles)
	}

	entries := auditOf(t, b, alice.Tenant, audit.Query{Entity: "api_key"})
	if len(entries) != 1 || entries[0].Reason != "INC-42: the approver is away" || entries[0].Action != "api_key.create" {
		t.Errorf("audit of the key = %+v", entries)
	}

	b.clock.Advance(24 * time.Hour)
	_, err = b.svc.Authenticate(b.ctx, k.Secret)
	wantKind(t, err, errs.Unauthenticated)
	if p := b.auth(t, sess.Token); !cmp.Equal(p.Roles, []string{"member"}) {
		t.Errorf("roles after the grant = %v, want [member]", p.Roles)
	}
}

func TestFourEyesInvitationAndWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, alice := b.login(t, access.DevLoginIn{})
	_, bob := b.login(t, access.DevLoginIn{Email: "bob@example.com"})
	b.fourEyes(t, alice)

	inv, err := b.svc.Invite(b.ctx, alice, access.InviteIn{Email: "new@example.com", Roles: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Status != access.InvitationAwaiting || !inv.EmailSent {
		t.Fatalf("invitation = %+v", inv.Invitation)
	}
	_, err = b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{})
	wantKind(t, err, errs.Conflict)
	if _, err := b.svc.Approve(b.ctx, bob, inv.ChangeID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{}); err != nil {
		t.Fatalf("accept after approval: %v", err)
	}

	// Turning four-eyes off waits for a second person; renaming does not.
	off := false
	ws, ch, err := b.svc.UpdateWorkspace(b.ctx, alice, access.WorkspacePatch{FourEyes: &off, Name: ptr("Acme")})
	if err != nil || ws != nil || ch == nil {
		t.Fatalf("UpdateWorkspace = %+v, %+v, %v", ws, ch, err)
	}
	if on, _ := b.svc.FourEyes(b.ctx, alice.Tenant); !on {
		t.Error("four-eyes went off before approval")
	}
	if _, err := b.svc.Approve(b.ctx, bob, ch.ID, ""); err != nil {
		t.Fatal(err)
	}
	ws, err = b.svc.Workspace(b.ctx, alice.Tenant)
	if err != nil || ws.FourEyes || ws.Name != "Acme" {
		t.Errorf("workspace after approval = %+v, %v", ws, err)
	}
	ws, ch, err = b.svc.UpdateWorkspace(b.ctx, alice, access.WorkspacePatch{Name: ptr("Acme Ltd")})
	if err != nil || ch != nil || ws.Name != "Acme Ltd" {
		t.Errorf("rename = %+v, %+v, %v", ws, ch, err)
	}
}

// widening is a change kind of another app, for the generic queue's tests.
type widening struct {
	Limit int `json:"limit"`
}

func TestChangeQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, alice := b.login(t, access.DevLoginIn{})
	_, bob := b.login(t, access.DevLoginIn{Email: "bob@example.com"})
	_, ann := b.login(t, access.DevLoginIn{Email: "ann@example.com", Roles: []string{"approver"}})
	applied := store.Key(alice.Tenant, "test", "limit")
	b.svc.RegisterChangeKind("test.limit", func(ctx context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
		var w widening
		if err := json.Unmarshal(payload, &w); err != nil {
			return err
		}
		if w.Limit < 0 {
			return errs.Conflictf("limit below zero")
		}
		return tx.Set(applied, []byte(approver+":"+string(payload)))
	}, access.DecidedWith(access.PermApprovalsDecide))

	read := func() string {
		var got string
		_ = b.st.View(b.ctx, func(r store.Reader) error {
			v, err := r.Get(applied)
			got = string(v)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
		return got
	}

	ch, err := b.svc.ProposeChange(b.ctx, alice.Tenant, "test.limit", alice.UserID, "raise the limit", widening{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.svc.Approve(b.ctx, alice, ch.ID, "")
	wantKind(t, err, errs.Forbidden)
	if _, err := b.svc.Approve(b.ctx, ann, ch.ID, ""); err != nil { // the kind's permission suffices
		t.Fatal(err)
	}
	if got := read(); got != ann.UserID+`:{"limit":5}` {
		t.Errorf("applied = %q", got)
	}

	// A failing apply leaves the change pending and applies nothing.
	b.clock.Advance(time.Second)
	bad, err := b.svc.ProposeChange(b.ctx, alice.Tenant, "test.limit", alice.UserID, "lower", widening{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.svc.Approve(b.ctx, bob, bad.ID, "")
	wantKind(t, err, errs.Conflict)
	if got, _ := b.svc.Change(b.ctx, alice.Tenant, bad.ID); got.Status != access.ChangePending {
		t.Errorf("status after a failed apply = %s", got.Status)
	}
	if _, err := b.svc.Reject(b.ctx, bob, bad.ID, "negative"); err != nil {
		t.Fatal(err)
	}

	// Another tenant's change is not found.
	_, other := b.login(t, access.DevLoginIn{TenantID: "other"})
	_, err = b.svc.Approve(b.ctx, other, ch.ID, "")
	wantKind(t, err, errs.NotFound)

	all, _, err := b.svc.Changes(b.ctx, alice.Tenant, "", store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, c := range all {
		statuses = append(statuses, c.Status)
	}
	if diff := cmp.Diff([]string{access.ChangeRejected, access.ChangeApproved}, statuses); diff != "" {
		t.Errorf("statuses, newest first (-want +got):\n%s", diff)
	}
	actions := map[string]int{}
	for _, e := range auditOf(t, b, alice.Tenant, audit.Query{Entity: "change"}) {
		actions[e.Action]++
	}
	if diff := cmp.Diff(map[string]int{"change.propose": 2, "change.approve": 1, "change.reject": 1}, actions); diff != "" {
		t.Errorf("audit actions (-want +got):\n%s", diff)
	}
}

func TestRegisterChangeKindTwicePanics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	apply := func(context.Context, store.Txn, string, json.RawMessage, string) error { return nil }
	b.svc.RegisterChangeKind("x", apply)
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	b.svc.RegisterChangeKind("x", apply)
}

func auditOf(t *testing.T, b *bundle, tenant string, q audit.Query) []*audit.Entry {
	t.Helper()
	var out []*audit.Entry
	err := b.st.View(b.ctx, func(r store.Reader) error {
		var err error
		out, _, err = audit.List(r, tenant, q, store.Page{Limit: 200})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAuditOfAccessChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, admin := b.login(t, access.DevLoginIn{})
	k := b.key(t, admin, access.APIKeyIn{Name: "ci"})
	if err := b.svc.RevokeKey(b.ctx, admin, k.ID); err != nil {
		t.Fatal(err)
	}
	inv, err := b.svc.Invite(b.ctx, admin, access.InviteIn{Email: "x@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Accept(b.ctx, inv.Token, access.AcceptIn{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.SetDepartments(b.ctx, admin.Tenant, admin.UserID, admin.UserID, []string{"department:finance"}); err != nil {
		t.Fatal(err)
	}
	entries := auditOf(t, b, admin.Tenant, audit.Query{})
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
		for _, s := range []string{k.Secret, inv.Token} {
			if bytes.Contains(e.Before, []byte(s)) || bytes.Contains(e.After, []byte(s)) {
				t.Errorf("audit entry %s holds a secret", e.Action)
			}
		}
	}
	// The fake clock stands still, so entries share a millisecond and their
	// order is not defined: compare them as a set.
	want := []string{"api_key.create", "api_key.revoke", "invitation.accept", "invitation.create",
		"member.create", "member.create", "member.departments", "workspace.create"}
	slices.Sort(actions)
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("audit actions (-want +got):\n%s", diff)
	}
	me, err := b.svc.Me(b.ctx, admin)
	if err != nil || !cmp.Equal(me.Departments, []string{"department:finance"}) {
		t.Errorf("Me = %+v, %v", me, err)
	}
}

func TestCreateWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws, owner, err := b.svc.CreateWorkspace(b.ctx, access.NewWorkspace{Name: "Acme", OwnerEmail: "Owner@Acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ws.ID, "ten_") || owner.Email != "owner@acme.test" || !cmp.Equal(owner.Roles, []string{"admin"}) {
		t.Errorf("workspace %+v owner %+v", ws, owner)
	}
	_, _, err = b.svc.CreateWorkspace(b.ctx, access.NewWorkspace{ID: ws.ID, Name: "Again", OwnerEmail: "a@b.test"})
	wantKind(t, err, errs.Conflict)
	_, _, err = b.svc.CreateWorkspace(b.ctx, access.NewWorkspace{ID: "bad id", OwnerEmail: "nope"})
	if got := len(errs.Violations(err)); got != 3 {
		t.Errorf("violations = %v, want 3 (id, name, owner_email)", errs.Violations(err))
	}
	// The owner signs in by email code.
	if err := b.svc.SendCode(b.ctx, access.EmailIn{Email: "owner@acme.test"}); err != nil {
		t.Fatal(err)
	}
	if msgs := b.outbox(t, ws.ID); len(msgs) != 1 {
		t.Errorf("outbox of the new workspace = %d messages", len(msgs))
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	svc := access.New(access.Config{Store: st, Logger: quiet})
	sess, err := svc.DevLogin(ctx, access.DevLoginIn{})
	if err != nil {
		b.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, sess.Token)
	if err != nil {
		b.Fatal(err)
	}
	k, err := svc.CreateKey(ctx, p, access.APIKeyIn{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for _, bench := range []struct{ name, token string }{{"key", k.Secret}, {"session", sess.Token}} {
		b.Run(bench.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := svc.Authenticate(ctx, bench.token); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// TestAuthenticateSeesChangesAtOnce: a sign-out, a revoked key
// and a role change act on the very next request: on a shared store when
// another node (another service) made them, and on a store the service
// writes alone, where it keeps what it read between writes, when it made
// them itself.
func TestAuthenticateSeesChangesAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"shared store, another node writes", true}, {"sole writer", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			writer := b.svc
			if tc.shared {
				b.svc = access.New(access.Config{Store: b.st, Clock: b.clock, Logger: quiet, Shared: true})
				writer = access.New(access.Config{Store: b.st, Clock: b.clock, Logger: quiet, Shared: true})
			}
			sess, err := writer.DevLogin(b.ctx, access.DevLoginIn{UserID: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			p := b.auth(t, sess.Token)
			b.auth(t, sess.Token)
			if _, err := writer.DevLogin(b.ctx, access.DevLoginIn{UserID: "ann", Roles: []string{access.RoleViewer}}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{access.RoleViewer}, b.auth(t, sess.Token).Roles); diff != "" {
				t.Errorf("roles after the change (-want +got):\n%s", diff)
			}
			if err := writer.Logout(b.ctx, p); err != nil {
				t.Fatal(err)
			}
			_, err = b.svc.Authenticate(b.ctx, sess.Token)
			wantKind(t, err, errs.Unauthenticated)

			adminSess, err := writer.DevLogin(b.ctx, access.DevLoginIn{})
			if err != nil {
				t.Fatal(err)
			}
			admin := b.auth(t, adminSess.Token)
			k, err := writer.CreateKey(b.ctx, admin, access.APIKeyIn{Name: "k"})
			if err != nil {
				t.Fatal(err)
			}
			kp := b.auth(t, k.Secret)
			b.auth(t, k.Secret)
			if err := writer.RevokeKey(b.ctx, admin, kp.KeyID); err != nil {
				t.Fatal(err)
			}
			_, err = b.svc.Authenticate(b.ctx, k.Secret)
			wantKind(t, err, errs.Unauthenticated)
		})
	}
}

// TestAuthenticateRevokedUnderLoad: while requests authenticate a session
// over and over (kept between writes), a sign-out by the same service
// stops every request that begins after the sign-out returned.
func TestAuthenticateRevokedUnderLoad(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sess, p := b.login(t, access.DevLoginIn{UserID: "ann"})
	var (
		done    atomic.Bool
		stale   atomic.Int64
		wg      sync.WaitGroup
		started = make(chan struct{}, 8)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for {
				after := done.Load()
				_, err := b.svc.Authenticate(b.ctx, sess.Token)
				if after && err == nil {
					stale.Add(1)
				}
				if after {
					return
				}
			}
		}()
	}
	for range 8 {
		testwait.Recv(t, started, "8 callers started")
	}
	if err := b.svc.Logout(b.ctx, p); err != nil {
		t.Fatal(err)
	}
	done.Store(true)
	testwait.Wait(t, &wg, "the callers returned")
	if n := stale.Load(); n > 0 {
		t.Errorf("%d requests begun after the sign-out were authenticated", n)
	}
}

// viewCounting is a store that counts its read transactions.
type viewCounting struct {
	store.Store
	views atomic.Int64
}

func (s *viewCounting) View(ctx context.Context, fn func(store.Reader) error) error {
	s.views.Add(1)
	return s.Store.View(ctx, fn)
}

// TestAuthenticateReadsOnlyAfterWrites: a service that writes its store
// alone authenticates a session and a key it read before without reading
// again until it writes; on a shared store it reads on every request.
func TestAuthenticateReadsOnlyAfterWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		shared bool
		want   []int64 // reads of each Authenticate below
	}{{"sole writer", false, []int64{1, 0, 0, 1, 0}}, {"shared store", true, []int64{1, 1, 1, 1, 1}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			st := &viewCounting{Store: b.st}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			b.svc = access.New(access.Config{Store: st, Clock: b.clock, Logger: quiet, Shared: tc.shared})
			sess, _ := b.login(t, access.DevLoginIn{UserID: "ann"})
			other, err := b.svc.DevLogin(b.ctx, access.DevLoginIn{UserID: "bob"})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			auth := func() {
				before := st.views.Load()
				b.auth(t, sess.Token)
				got = append(got, st.views.Load()-before)
			}
			auth() // the write of bob's sign-in came after ann's was read
			auth()
			auth()
			if err := b.svc.Logout(b.ctx, b.auth(t, other.Token)); err != nil {
				t.Fatal(err)
			}
			auth()
			auth()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reads of each Authenticate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuthenticateAllocations: a request whose credential the service
// already decoded is authenticated (secret, expiry, revocation) with no
// allocation beyond the principal and its role and permission lists, for
// a session and for an API key.
func TestAuthenticateAllocations(t *testing.T) {
	b := setup(t)
	sess, p := b.login(t, access.DevLoginIn{UserID: "ann"})
	key, err := b.svc.CreateKey(b.ctx, p, access.APIKeyIn{Name: "ci", Roles: []string{access.RoleMember}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token string
		want        float64
	}{{"session", sess.Token, 3}, {"key", key.Secret, 3}} {
		b.auth(t, tc.token)
		got := testing.AllocsPerRun(50, func() {
			if _, err := b.svc.Authenticate(b.ctx, tc.token); err != nil {
				t.Fatal(err)
			}
		})
		if got > tc.want {
			t.Errorf("%s: %v allocations per Authenticate, want at most %v", tc.name, got, tc.want)
		}
	}
}

// TestViolationsAtFieldNames: the Go API locates violations at the input's
// field names (["email"], ["roles", 0]), not under "body" (the HTTP API's
// prefix), and one of the profile as a whole at an empty location.
func TestViolationsAtFieldNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, admin := b.login(t, access.DevLoginIn{})
	long := strings.Repeat("a", 2001)
	for _, test := range []struct {
		name string
		call func() error
		want []string // "loc type"
	}{
		{"dev login", func() error {
			_, err := b.svc.DevLogin(b.ctx, access.DevLoginIn{TenantID: "no way", Roles: []string{"boss"}, Email: "x"})
			return err
		}, []string{"roles.0 enum", "tenant_id string_pattern_mismatch", "email value_error"}},
		{"send code", func() error { return b.svc.SendCode(b.ctx, access.EmailIn{Email: "x"}) }, []string{"email value_error"}},
		{"sign in", func() error {
			_, err := b.svc.SignIn(b.ctx, access.CodeIn{Email: "a@example.com", Code: "1"})
			return err
		}, []string{"code string_too_short"}},
		{"key", func() error {
			_, err := b.svc.CreateKey(b.ctx, admin, access.APIKeyIn{Name: " ", Apps: []string{"nope"}, ExpiresDays: ptr(0)})
			return err
		}, []string{"name string_too_short", "expires_days greater_than_equal", "apps.0 enum"}},
		{"invitation", func() error {
			_, err := b.svc.Invite(b.ctx, admin, access.InviteIn{Email: "a@example.com", Roles: []string{}, BreakGlassReason: ptr(" ")})
			return err
		}, []string{"roles too_short", "break_glass_reason string_too_short"}},
		{"accept", func() error { return access.CheckAcceptIn(access.AcceptIn{Password: &long}) }, []string{"password string_too_long"}},
		{"workspace", func() error { return access.CheckWorkspacePatch(access.WorkspacePatch{Name: ptr(" ")}) }, []string{"name string_too_short"}},
		{"departments", func() error {
			_, err := b.svc.SetDepartments(b.ctx, access.DemoTenant, admin.Actor(), admin.UserID, make([]string, access.MaxDepartments+1))
			return err
		}, []string{"departments too_long"}},
		{"note", func() error {
			_, err := b.svc.Reject(b.ctx, admin, "nope", long)
			return err
		}, []string{"note string_too_long"}},
		{"profile", func() error {
			_, err := b.svc.SetProfile(b.ctx, access.DemoTenant, admin.Actor(), json.RawMessage(`[]`))
			return err
		}, []string{" type_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			err := test.call()
			wantKind(t, err, errs.Invalid)
			var got []string
			for _, v := range errs.Violations(err) {
				got = append(got, v.Where()+" "+v.Type)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}
