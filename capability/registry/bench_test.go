package registry_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/capability"
)

// BenchmarkRegistryCall measures a call to an in-process provider through
// the registry: resolve (a cached binding), validate the arguments, call,
// validate the result.
func BenchmarkRegistryCall(b *testing.B) {
	po := json.RawMessage(`{"number":"PO-1","supplier":"Acme","currency":"EUR","total_cents":1000,"lines":[{"sku":"A","description":"a","quantity":1,"unit_cents":1000}],"status":"open"}`)
	p := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get")
	p.fn = func(context.Context, capability.Call) (json.RawMessage, error) { return po, nil }
	other := newProvider("plugin.erp2", capability.KindPlugin, "erp.purchase_order.get")
	bn := setup(b, p, other)
	ctx := context.Background()
	if err := bn.reg.Bind(ctx, "ten_a", "erp.purchase_order.get", "plugin.erp", "usr_1"); err != nil {
		b.Fatal(err)
	}
	c := call("ten_a", "erp.purchase_order.get", `{"number":"PO-1"}`)
	if _, err := bn.reg.Call(ctx, c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := bn.reg.Call(ctx, c); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
