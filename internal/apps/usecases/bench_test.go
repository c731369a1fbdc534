package usecases

import (
	"fmt"
	"testing"
)

// BenchmarkList serves the whole catalog (scope=all) for a workspace with
// a profile and 40 adoptions: fit, for_me, readiness and adoption of every
// entry.
func BenchmarkList(b *testing.B) {
	bd := setup(b, nil)
	if _, err := bd.svc.SetProfile(bd.ctx, bd.tenant, "usr_x", ProfileIn{Industries: []string{"industry:retail"}}); err != nil {
		b.Fatal(err)
	}
	for i, e := range bd.svc.catalog.Entries()[:40] {
		if _, err := bd.svc.SetAdoption(bd.ctx, bd.tenant, "usr_x", e.ID, AdoptionIn{Status: ptr(Statuses[i%len(Statuses)])}); err != nil {
			b.Fatal(err)
		}
	}
	v := Viewer{Tenant: bd.tenant, Departments: []string{"department:finance"}}
	for _, scope := range []string{ScopeAll, ScopeMine} {
		b.Run(fmt.Sprintf("scope=%s", scope), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bd.svc.List(bd.ctx, v, Query{Scope: scope}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("register", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bd.svc.Register(bd.ctx, v, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
