package automation

import (
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/store"
)

// RampSteps are the percents the ramp climbs through: from a percent, it
// goes to the next step above it, never past max_percent.
var RampSteps = []int{10, 25, 50, 75, 100}

// NextStep returns the percent the ramp goes to from percent under
// maxPercent: the first of RampSteps above percent, at most maxPercent.
func NextStep(percent, maxPercent int) int {
	for _, s := range RampSteps {
		if s > percent {
			return min(s, maxPercent)
		}
	}
	return min(MaxPercent, maxPercent)
}

// agreement counts the agreeing verdicts of vs and returns their share.
func agreement(vs []*decisions.Verdict) float64 {
	agree := 0
	for _, v := range vs {
		if v.Agreed {
			agree++
		}
	}
	return float64(agree) / float64(len(vs))
}

// rollback stops a process that people have stopped agreeing with: when
// something of it runs without a person (percent in force above 0) and the
// agreement over its last rollback_min_decisions verdicts since its last
// change by a person (or last rollback) is below rollback_agreement, its
// percent drops to 0, it pauses with the reason, its own exception ends,
// and the change is audited (actor system). It reports whether it rolled
// back. seq is the verdict just recorded; w begins before proc is written.
func (s *Service) rollback(tx store.Txn, tenant string, proc *Level, e effective, seq int64, now time.Time, w *levelWrite) (bool, error) {
	if e.current() == 0 {
		return false, nil
	}
	recent, err := decisions.RecentVerdicts(tx, tenant, decisions.ProcessScope(proc.ID), proc.RollbackFrom, e.rollbackMinDecisions)
	if err != nil || len(recent) < e.rollbackMinDecisions {
		return false, err
	}
	rate := agreement(recent)
	if rate >= e.rollbackAgreement {
		return false, nil
	}
	before := proc.clone()
	reason := fmt.Sprintf("rolled back: agreement %.2f over the last %d decisions is below %.2f", rate, len(recent), e.rollbackAgreement)
	proc.Percent, proc.Paused, proc.PausedReason, proc.Exception = ptr(0), ptr(true), ptr(reason), nil
	proc.RampFrom, proc.RollbackFrom = seq, seq
	proc.UpdatedAt, proc.UpdatedBy = &now, audit.System
	w.begin()
	if err := levels.Put(tx, tenant, proc); err != nil {
		return false, err
	}
	return true, audit.Write(tx, tenant, &s.ids, audit.Entry{
		At: now, Actor: audit.System, Action: "automation.rolled_back", Entity: "automation", EntityID: proc.ID,
		Before: audit.Marshal(before), After: audit.Marshal(proc), Reason: reason,
	})
}

// ramp raises a process people keep agreeing with: with auto_ramp on, not
// paused and percent below max_percent, when the process has at least
// ramp_min_decisions verdicts since its level last changed and the
// agreement over the last ramp_min_decisions of them is at least
// ramp_min_agreement, its percent goes to NextStep and the change is
// audited (actor system). seq is the verdict just recorded; w begins
// before proc is written.
func (s *Service) ramp(tx store.Txn, tenant string, proc *Level, e effective, seq int64, now time.Time, w *levelWrite) error {
	if !e.autoRamp || e.paused || e.percent >= e.maxPercent {
		return nil
	}
	recent, err := decisions.RecentVerdicts(tx, tenant, decisions.ProcessScope(proc.ID), proc.RampFrom, e.rampMinDecisions)
	if err != nil || len(recent) < e.rampMinDecisions {
		return err
	}
	rate := agreement(recent)
	if rate < e.rampMinAgreement {
		return nil
	}
	whatIf := ""
	if need := e.rampMinWhatIf; need != nil {
		var got *float64
		if s.whatIf != nil {
			if got, err = s.whatIf(tx, tenant, proc.ID); err != nil {
				return err
			}
		}
		if got == nil || *got < *need {
			return nil
		}
		whatIf = fmt.Sprintf(", and the latest what-if's agreement %.2f is at least %.2f", *got, *need)
	}
	next := NextStep(e.percent, e.maxPercent)
	before := proc.clone()
	proc.Percent, proc.RampFrom = ptr(next), seq
	proc.UpdatedAt, proc.UpdatedBy = &now, audit.System
	w.begin()
	if err := levels.Put(tx, tenant, proc); err != nil {
		return err
	}
	return audit.Write(tx, tenant, &s.ids, audit.Entry{
		At: now, Actor: audit.System, Action: "automation.ramped", Entity: "automation", EntityID: proc.ID,
		Before: audit.Marshal(before), After: audit.Marshal(proc),
		Reason: fmt.Sprintf("agreement %.2f over the last %d decisions is at least %.2f%s: percent %d -> %d",
			rate, len(recent), e.rampMinAgreement, whatIf, e.percent, next),
	})
}
