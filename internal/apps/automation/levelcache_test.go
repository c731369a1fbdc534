package automation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestGateSeesEveryLevelWrite: the gate on the store's only writer keeps
// the levels it read in memory, and each way levels are written is seen
// by the next decision of a new item: a patch, a four-eyes approval (the
// change waiting is not), an exception that lapsed, and a change applied
// in a transaction that does not tell its end.
func TestGateSeesEveryLevelWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	u2 := &access.Principal{Tenant: tenant, UserID: "u2", Perms: access.PermissionsOf([]string{access.RoleAdmin})}
	n := 0
	decide := func() bool { // twice: the second from memory
		n += 2
		b.decideHanded("prc_1", "new-"+string(rune('a'+n)), true)
		return b.decideHanded("prc_1", "new-"+string(rune('b'+n)), true).d.Auto
	}
	var change string
	steps := []struct {
		name  string
		write func()
		auto  bool
	}{
		{"break-glass patch to 100%", func() {
			b.patch("", `{"percent": 100, "max_percent": 100, "break_glass_reason": "go"}`)
		}, true},
		{"process paused", func() { b.patch("prc_1", `{"paused": true}`) }, false},
		{"unpausing waits for a second person", func() {
			res := b.patch("prc_1", `{"paused": false}`)
			if res.Change == nil {
				t.Fatal("unpausing applied at once")
			}
			change = res.Change.ID
		}, false},
		{"approved", func() {
			if _, err := b.access.Approve(context.Background(), u2, change, ""); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"exception of 1%", func() {
			b.patch("", `{"exception_percent": 1, "exception_days": 1, "exception_reason": "freeze"}`)
		}, false},
		{"exception lapsed", func() { b.clock.Advance(48 * time.Hour) }, true},
		{"applied in a transaction of its own", func() {
			payload, err := json.Marshal(map[string]any{"process_id": "prc_1", "requested_by": "u1",
				"patch": parse(t, `{"paused": true}`)})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.st.Update(context.Background(), func(tx store.Txn) error {
				return b.svc.ApplyChangeTx(context.Background(), tx, tenant, payload, "u2")
			}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"patched after that", func() { b.patch("prc_1", `{"paused": false, "break_glass_reason": "go"}`) }, true},
	}
	var got, want []string
	for _, s := range steps {
		s.write()
		got = append(got, s.name+": "+map[bool]string{true: "auto", false: "supervised"}[decide()])
		want = append(want, s.name+": "+map[bool]string{true: "auto", false: "supervised"}[s.auto])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions after each write (-want +got):\n%s", diff)
	}
}

// TestGateSeesObservedLevelWrites: the levels an outcome writes (a ramp
// up by agreement, a rollback by disagreement) are seen by the next
// decision of a new item on the store's only writer, not the level in
// force the gate kept in memory before.
func TestGateSeesObservedLevelWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"auto_ramp": true, "ramp_min_decisions": 5, "rollback_min_decisions": 5}`)
	percent := regexp.MustCompile(`\d+%`)
	n := 0
	inForce := func() string { // the level the second decision, from memory, applied
		n += 2
		b.decideHanded("prc_1", fmt.Sprintf("new-%d", n), true)
		d := b.decideHanded("prc_1", fmt.Sprintf("new-%d", n+1), true).d
		if strings.HasPrefix(d.Reason, "supervised: automation is paused") {
			return "paused"
		}
		return percent.FindString(d.Reason)
	}
	observe := func(agreed bool, times int) func() {
		return func() {
			for range times {
				b.observe("prc_1", agreed)
			}
		}
	}
	steps := []struct {
		name  string
		write func()
		want  string
	}{
		{"supervised", func() {}, "0%"},
		{"ramped by 5 agreeing verdicts", observe(true, 5), "10%"},
		{"ramped again", observe(true, 5), "25%"},
		{"rolled back by 2 disagreeing", observe(false, 2), "paused"},
	}
	var got, want []string
	for _, s := range steps {
		s.write()
		got = append(got, s.name+": "+inForce())
		want = append(want, s.name+": "+s.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the level in force after each outcome (-want +got):\n%s", diff)
	}
}
