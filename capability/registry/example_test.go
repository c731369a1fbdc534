package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store/badgerstore"
)

// purchaseOrders is an in-process provider of erp.purchase_order.get.
type purchaseOrders struct{}

func (purchaseOrders) Info() capability.Info {
	return capability.Info{ID: "builtin.po-book", Name: "PO book", Kind: capability.KindBuiltin,
		Capabilities: []string{capability.ERPPurchaseOrder}}
}

func (purchaseOrders) Call(_ context.Context, call capability.Call) (json.RawMessage, error) {
	var args capability.PurchaseOrderGetArgs
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return nil, err
	}
	if args.Number != "PO-1001" {
		return nil, errs.NotFoundf("purchase order %s not found", args.Number)
	}
	return json.Marshal(capability.PurchaseOrder{
		Number: "PO-1001", Supplier: "Acme Tools", Currency: "EUR", TotalCents: 125000, Status: "open",
		Lines: []capability.PurchaseOrderLine{{SKU: "DRL-18V", Description: "Cordless drill", Quantity: 10, UnitCents: 12500}},
	})
}

// poRegistry returns a registry on an in-memory store with purchaseOrders
// registered, and the function that closes the store.
func poRegistry() (*registry.Registry, func()) {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	reg := registry.New(registry.Config{Store: st})
	if err := reg.Register(purchaseOrders{}); err != nil {
		panic(err)
	}
	return reg, func() { st.Close() }
}

func ExampleRegistry_Call() {
	reg, closeStore := poRegistry()
	defer closeStore()
	ctx := context.Background()

	// The only provider of a capability is its default.
	out, err := reg.Call(ctx, capability.Call{Tenant: "ten_demo", Capability: capability.ERPPurchaseOrder,
		Args: json.RawMessage(`{"number":"PO-1001"}`), IdempotencyKey: "run_1/lookup/1"})
	if err != nil {
		panic(err)
	}
	var po capability.PurchaseOrder
	_ = json.Unmarshal(out, &po)
	fmt.Println(po.Supplier, po.TotalCents, po.Currency)

	// Arguments are checked before any provider sees them.
	_, err = reg.Call(ctx, capability.Call{Tenant: "ten_demo", Capability: capability.ERPPurchaseOrder,
		Args: json.RawMessage(`{"number":1001}`)})
	for _, v := range errs.Violations(err) {
		fmt.Println(v.Loc, v.Type)
	}

	// Nothing fills ledger.post yet.
	_, err = reg.Call(ctx, capability.Call{Tenant: "ten_demo", Capability: capability.LedgerPost,
		Args: json.RawMessage(`{"date":"2025-03-01","currency":"EUR","lines":[{"account":"6000","debit_cents":100},{"account":"2000","credit_cents":100}]}`)})
	fmt.Println(errs.PublicMessage(err))
	// Output:
	// Acme Tools 125000 EUR
	// [args number] type_error
	// no provider is bound to ledger.post
}

// A caller that asks several things of one call (whether its provider
// joins the caller's commit, whether it returns at once) resolves the
// provider once and calls through the Route; once the providers or any
// tenant's bindings change, the Route is no longer current and the call
// resolves its provider again.
func ExampleRegistry_Route() {
	reg, closeStore := poRegistry()
	defer closeStore()
	ctx := context.Background()
	call := capability.Call{Tenant: "ten_demo", Capability: capability.ERPPurchaseOrder,
		Args: json.RawMessage(`{"number":"PO-1001"}`), IdempotencyKey: "run_1/lookup/1"}

	rt := reg.Route(ctx, call.Tenant, call.Capability)
	fmt.Println(reg.Current(&rt), rt.JoinsWrites(), rt.ReturnsAtOnce())
	out, err := reg.CallRoute(ctx, &rt, call)
	if err != nil {
		panic(err)
	}
	var po capability.PurchaseOrder
	_ = json.Unmarshal(out, &po)
	fmt.Println(po.Supplier)

	// The provider goes: the Route is stale, and its call finds none.
	reg.Unregister("builtin.po-book")
	fmt.Println(reg.Current(&rt))
	_, err = reg.CallRoute(ctx, &rt, call)
	fmt.Println(errs.PublicMessage(err))
	// Output:
	// true false false
	// Acme Tools
	// false
	// no provider is bound to erp.purchase_order.get
}

func ExampleIntegrations() {
	for _, in := range registry.Integrations([]string{"QBO", "MS Teams", "Zapier", "Acme Legacy ERP"}) {
		fmt.Println(in.App, in.Recognized, in.How, in.Provides)
	}
	// Output:
	// QuickBooks true coming [erp.supplier.get erp.bill.create ledger.post customer.create invoice.create invoice.send invoice.get]
	// Microsoft Teams true coming [chat.message.send]
	// Zapier true connector []
	// Acme Legacy ERP false manual []
}
