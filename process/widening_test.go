package process

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWidening(t *testing.T) {
	t.Parallel()
	step := func(key string, c Controls) Step {
		return Step{Key: key, Type: StepExecute, Capability: "payments.pay", Controls: c}
	}
	approve := Controls{RequireApproval: true}
	capped := func(n int64) Controls { return Controls{AmountCapCents: &n} }
	tools := func(ts ...string) Controls { return Controls{AllowedTools: ts} }
	for _, test := range []struct {
		name     string
		old, new []Step
		want     []string
	}{
		{name: "unchanged", old: []Step{step("pay", approve)}, new: []Step{step("pay", approve)}},
		{name: "approval removed", old: []Step{step("pay", approve)}, new: []Step{step("pay", Controls{})},
			want: []string{"step pay no longer requires approval"}},
		{name: "approval added is tightening", old: []Step{step("pay", Controls{})}, new: []Step{step("pay", approve)}},
		{name: "step with approval removed", old: []Step{step("check", Controls{}), step("pay", approve)}, new: []Step{step("check", Controls{})},
			want: []string{"step pay, which required approval, is removed"}},
		{name: "step without approval removed", old: []Step{step("check", Controls{}), step("pay", capped(5))}, new: []Step{step("check", Controls{})}},
		{name: "renamed step loses its approval", old: []Step{step("pay", approve)}, new: []Step{step("pay2", Controls{})},
			want: []string{"step pay, which required approval, is removed"}},
		{name: "cap raised", old: []Step{step("pay", capped(1000))}, new: []Step{step("pay", capped(1001))},
			want: []string{"step pay: amount cap is raised from 1000 to 1001 cents"}},
		{name: "cap lowered", old: []Step{step("pay", capped(1000))}, new: []Step{step("pay", capped(999))}},
		{name: "cap kept", old: []Step{step("pay", capped(1000))}, new: []Step{step("pay", capped(1000))}},
		{name: "cap added", old: []Step{step("pay", Controls{})}, new: []Step{step("pay", capped(1000))}},
		{name: "cap removed", old: []Step{step("pay", capped(1000))}, new: []Step{step("pay", Controls{})},
			want: []string{"step pay: amount cap of 1000 cents is removed"}},
		{name: "tools list removed", old: []Step{step("pay", tools("payments.pay"))}, new: []Step{step("pay", Controls{})},
			want: []string{"step pay: allowed_tools is removed, so every tool is allowed"}},
		{name: "tool added", old: []Step{step("pay", tools("payments.pay"))}, new: []Step{step("pay", tools("payments.pay", "email.send", "crm.deal.update"))},
			want: []string{"step pay: allowed_tools adds email.send, crm.deal.update"}},
		{name: "tool removed is tightening", old: []Step{step("pay", tools("payments.pay", "email.send"))}, new: []Step{step("pay", tools("payments.pay"))}},
		{name: "tool swapped", old: []Step{step("pay", tools("payments.pay", "email.send"))}, new: []Step{step("pay", tools("payments.pay", "sms.send"))},
			want: []string{"step pay: allowed_tools adds sms.send"}},
		{name: "tools list added", old: []Step{step("pay", Controls{})}, new: []Step{step("pay", tools("payments.pay"))}},
		{name: "new step without controls", old: []Step{step("pay", approve)}, new: []Step{step("pay", approve), step("notify", Controls{})}},
		{name: "several at once, in step order",
			old: []Step{step("a", Controls{RequireApproval: true, AmountCapCents: i64(10), AllowedTools: []string{"payments.pay"}}), step("b", approve)},
			new: []Step{step("a", Controls{AmountCapCents: i64(20)})},
			want: []string{
				"step a no longer requires approval",
				"step a: amount cap is raised from 10 to 20 cents",
				"step a: allowed_tools is removed, so every tool is allowed",
				"step b, which required approval, is removed",
			}},
		{name: "sla raised is not widening", old: []Step{step("pay", Controls{SLAHours: f64(4)})}, new: []Step{step("pay", Controls{SLAHours: f64(400)})}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, Widening(test.old, test.new)); diff != "" {
				t.Errorf("Widening (-want +got):\n%s", diff)
			}
		})
	}
}
