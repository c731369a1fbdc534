package runengine

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/process"
)

// approvalDigest is the SHA-256 (hex) of what an approval shows: its tool,
// summary and args, as canonical JSON (object keys sorted).
func approvalDigest(a *Approval) string {
	b, err := jsonvalue.Append(nil, map[string]any{"tool": a.Tool, "summary": a.Summary, "args": a.Args})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// holdVote checks a decision against what the decider was shown and the
// step's separation of duties, and records an approval that still needs
// more people; it reports whether it handled the decision (refused it or
// kept it as a vote), leaving nothing for settleApproval.
func (x *exec) holdVote(a *Approval, d *decideArgs) bool {
	if d.digest != "" && d.digest != a.Digest {
		x.err = errs.Conflictf("the approval changed since it was shown (its digest is now %s); read it again", a.Digest)
		return true
	}
	def := x.stepDef(a.StepKey)
	actor := x.cmd.actor
	// is reports whether who (a run's starter, a task's completer, a vote)
	// is the decider, under any of its names.
	is := func(who string) bool { return who != "" && (who == actor || slices.Contains(d.aliases, who)) }
	if def != nil && def.Controls.SeparateDuties {
		if why := x.dutyConflict(def, is); why != "" {
			x.err = errs.Forbiddenf("separation of duties: %s, so you may not decide its approval", why)
			return true
		}
	}
	if !d.approve || a.ApprovalsRequired < 2 {
		return false
	}
	if slices.ContainsFunc(a.Approvals, func(v ApprovalVote) bool { return is(v.By) }) {
		x.err = errs.Conflictf("you approved this already; it needs %d distinct approvers", a.ApprovalsRequired)
		return true
	}
	old := *a
	a.Approvals = slices.Clone(a.Approvals)
	if d.args != nil && !reflect.DeepEqual(normalize(d.args), normalize(a.Args)) {
		// Edited args are a new proposal: the earlier approvals were of
		// other args.
		a.Args, a.Edited, a.Approvals = d.args, true, nil
		a.Digest = approvalDigest(a)
	}
	a.Approvals = append(a.Approvals, ApprovalVote{By: actor, At: x.now})
	if len(a.Approvals) >= a.ApprovalsRequired {
		d.args = nil // applied above
		return false
	}
	x.putApproval(&old, a)
	return true
}

// stepDef is the version's step of key, nil when none.
func (x *exec) stepDef(key string) *process.Step {
	for i := range x.ver.Steps {
		if x.ver.Steps[i].Key == key {
			return &x.ver.Steps[i]
		}
	}
	return nil
}

// dutyConflict says why the decider (is tells its names) may not approve
// the step of the run: they started it (or published the event that did),
// or completed a human task of an earlier step; "" when nothing stands in
// the way.
func (x *exec) dutyConflict(def *process.Step, is func(who string) bool) string {
	r := x.r
	if x.cmd.actor == "" {
		return ""
	}
	if is(r.StartedBy) || is(r.Trigger.EmittedBy) {
		return "you requested this run"
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.Key == def.Key {
			break
		}
		if st.TaskID == nil {
			continue
		}
		if t, err := x.task(*st.TaskID); err == nil && t.CompletedBy != nil && is(*t.CompletedBy) {
			return "you completed step " + st.Key + " of this run"
		}
	}
	return ""
}
