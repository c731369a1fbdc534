package registry_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/cockroachdb/errors"
)

// TestUses: a tenant uses a provider (and may receive the events it emits)
// when it bound one of the provider's capabilities to it, or when the
// provider is its default for a capability its processes need. A lone
// provider is every tenant's default, so the default alone does not count.
func TestUses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// plugin.erp alone fills erp.purchase_order.get; it and plugin.ledger
	// both fill ledger.post, so that has no default.
	erp := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get", "ledger.post")
	ledger := newProvider("plugin.ledger", capability.KindPlugin, "ledger.post")
	b := setup(t, erp, ledger)
	needs := map[string][]string{
		"ten_po":     {"erp.purchase_order.get", "sms.send"},
		"ten_ledger": {"ledger.post"},
		"ten_broken": nil,
	}
	b.reg.SetNeededBy(func(_ context.Context, tenant string) ([]string, error) {
		if tenant == "ten_broken" {
			return nil, errors.New("the store is down")
		}
		return needs[tenant], nil
	})
	for _, bind := range []struct{ tenant, capability, provider string }{
		{"ten_bound", "ledger.post", "plugin.erp"},
		{"ten_bound_default", "erp.purchase_order.get", "plugin.erp"},
		{"ten_elsewhere", "ledger.post", "plugin.ledger"},
	} {
		if err := b.reg.Bind(ctx, bind.tenant, bind.capability, bind.provider, "usr_1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, test := range []struct {
		name, tenant, provider string
		want, wantErr          bool
	}{
		{"never bound, needs nothing of it", "ten_plain", "plugin.erp", false, false},
		{"its processes need the capability it is the default of", "ten_po", "plugin.erp", true, false},
		{"its processes need a capability with no default", "ten_ledger", "plugin.erp", false, false},
		{"bound a capability to it", "ten_bound", "plugin.erp", true, false},
		{"bound the capability it is the default of", "ten_bound_default", "plugin.erp", true, false},
		{"bound the capability to the other provider", "ten_elsewhere", "plugin.erp", false, false},
		{"the other provider", "ten_elsewhere", "plugin.ledger", true, false},
		{"the other provider, bound to the first", "ten_bound", "plugin.ledger", false, false},
		{"unknown provider", "ten_bound", "plugin.nope", false, false},
		{"what its processes need cannot be read", "ten_broken", "plugin.erp", false, true},
	} {
		got, err := b.reg.Uses(ctx, test.tenant, test.provider)
		if (err != nil) != test.wantErr || got != test.want {
			t.Errorf("%s: Uses(%s, %s) = %v, %v; want %v (error: %v)", test.name, test.tenant, test.provider, got, err, test.want, test.wantErr)
		}
	}
}

// TestUsesKeepsNoUnknownTenant: the tenant Uses is asked about is the one a
// plugin's event names, any string; Uses keeps nothing of the tenants it
// reads. Before, each tenant asked about stayed in the bindings cache for
// good, so a plugin emitting into ever new tenants grew the host's memory
// without bound. A tenant it binds later is seen at once.
func TestUsesKeepsNoUnknownTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get"))
	for i := range 100 {
		tenant := fmt.Sprintf("ten_made_up_%d", i)
		if used, err := b.reg.Uses(ctx, tenant, "plugin.erp"); err != nil || used {
			t.Fatalf("Uses(%s) = %v, %v; want false", tenant, used, err)
		}
	}
	if n := registry.CachedTenants(b.reg); n != 0 {
		t.Errorf("%d tenants cached after Uses of 100 unknown ones, want 0", n)
	}
	if err := b.reg.Bind(ctx, "ten_made_up_7", "erp.purchase_order.get", "plugin.erp", "usr_1"); err != nil {
		t.Fatal(err)
	}
	if used, err := b.reg.Uses(ctx, "ten_made_up_7", "plugin.erp"); err != nil || !used {
		t.Errorf("Uses after the tenant bound the provider = %v, %v; want true", used, err)
	}
}
