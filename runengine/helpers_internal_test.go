package runengine

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// memStore opens an in-memory store, closed when the test ends.
func memStore(t *testing.T) store.Store {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// memEngine makes an engine with cfg's settings over a memStore, a fake
// clock at 2026-03-02 09:00 UTC, an empty capability registry and a
// process service, which it returns too; the engine is closed when the
// test ends, before its store.
func memEngine(t *testing.T, cfg Config) (*Engine, *process.Service) {
	t.Helper()
	return engineOn(t, memStore(t), clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)), cfg)
}

// engineOn makes an engine with cfg's settings over st at clk's time, with
// an empty capability registry and a process service of its own, which it
// returns too; the engine is closed when the test ends.
func engineOn(t *testing.T, st store.Store, clk *clock.Fake, cfg Config) (*Engine, *process.Service) {
	t.Helper()
	procs := process.NewService(process.Config{Store: st, Clock: clk})
	cfg.Store, cfg.Clock, cfg.Processes = st, clk, procs
	cfg.Capabilities = registry.New(registry.Config{Store: st, Clock: clk})
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng, procs
}

// openOn is engineOn with provider registered, opened: an engine opened
// again on st, as after a restart.
func openOn(t *testing.T, st store.Store, clk *clock.Fake, cfg Config, provider capability.Provider) (*Engine, *process.Service) {
	t.Helper()
	eng, procs := engineOn(t, st, clk, cfg)
	if err := eng.cfg.Capabilities.(*registry.Registry).Register(provider); err != nil {
		t.Fatal(err)
	}
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng, procs
}

// startNew creates tenant's process from raw (a process.ProcessIn in JSON)
// and starts a run of it on eng, returning both.
func startNew(t *testing.T, eng *Engine, procs *process.Service, tenant, raw string) (*process.Definition, *Run) {
	t.Helper()
	def := createNew(t, procs, tenant, raw)
	r, err := eng.Start(context.Background(), StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	return def, r
}

// createNew creates tenant's process from raw (a process.ProcessIn in
// JSON).
func createNew(t *testing.T, procs *process.Service, tenant, raw string) *process.Definition {
	t.Helper()
	in, err := process.DecodeIn([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	def, err := procs.Create(context.Background(), tenant, "usr", in)
	if err != nil {
		t.Fatal(err)
	}
	return def
}
