package process

import (
	"fmt"
	"slices"
	"strings"
)

// Widening reports why going from the steps old to the steps new loosens a
// step control (interface rule 5), one reason per loosening, in step
// order; nil when nothing is loosened. Steps are paired by key. Loosening
// is:
//
//   - removing require_approval from a step, or removing a step that had it;
//   - raising amount_cap_cents, or removing it;
//   - allowing more tools: removing the allowed_tools list, or adding a
//     tool to it.
//
// Tightening (adding approvals, lowering caps, removing tools), new steps
// and other edits are not widening.
func Widening(old, new []Step) []string {
	byKey := make(map[string]Step, len(new))
	for _, s := range new {
		byKey[s.Key] = s
	}
	var reasons []string
	for _, o := range old {
		n, ok := byKey[o.Key]
		if !ok {
			if o.Controls.RequireApproval {
				reasons = append(reasons, fmt.Sprintf("step %s, which required approval, is removed", o.Key))
			}
			continue
		}
		oc, nc := o.Controls, n.Controls
		if oc.RequireApproval && !nc.RequireApproval {
			reasons = append(reasons, fmt.Sprintf("step %s no longer requires approval", o.Key))
		}
		if oc.AmountCapCents != nil {
			switch {
			case nc.AmountCapCents == nil:
				reasons = append(reasons, fmt.Sprintf("step %s: amount cap of %d cents is removed", o.Key, *oc.AmountCapCents))
			case *nc.AmountCapCents > *oc.AmountCapCents:
				reasons = append(reasons, fmt.Sprintf("step %s: amount cap is raised from %d to %d cents", o.Key,
					*oc.AmountCapCents, *nc.AmountCapCents))
			}
		}
		if oc.AllowedTools != nil {
			if nc.AllowedTools == nil {
				reasons = append(reasons, fmt.Sprintf("step %s: allowed_tools is removed, so every tool is allowed", o.Key))
				continue
			}
			var added []string
			for _, t := range nc.AllowedTools {
				if !slices.Contains(oc.AllowedTools, t) && !slices.Contains(added, t) {
					added = append(added, t)
				}
			}
			if len(added) > 0 {
				reasons = append(reasons, fmt.Sprintf("step %s: allowed_tools adds %s", o.Key, strings.Join(added, ", ")))
			}
		}
	}
	return reasons
}
