package runengine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/bas-platform/bas/store/pgstore"
)

// BenchmarkChain3Postgres is BenchmarkChain3 on PostgreSQL (BAS_PG_DSN;
// start a durable throwaway cluster with BAS_PG_DURABLE=1
// .ci/postgres.sh start), one engine on one database. pipeline=off hides
// pgstore's store.Pipeliner from the engine, to show what it brings;
// lease=on puts the store behind the engine lease a workspace on
// PostgreSQL holds (every transaction checks it).
func BenchmarkChain3Postgres(b *testing.B) {
	dsn := pgtest.DSN(b)
	for _, bench := range []struct {
		starters        int
		pipeline, lease bool
	}{{1, true, false}, {64, true, false}, {1, false, false}, {64, false, false}, {1, true, true}, {64, true, true}} {
		name := fmt.Sprintf("starters=%d", bench.starters)
		if !bench.pipeline {
			name += "/pipeline=off"
		}
		if bench.lease {
			name += "/lease=on"
		}
		b.Run(name, func(b *testing.B) {
			pg, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Schema: pgtest.Schema(b, dsn)})
			if err != nil {
				b.Fatal(err)
			}
			var st store.Store = pg
			if !bench.pipeline {
				st = struct{ store.Store }{pg}
			}
			if bench.lease {
				st, err = lease.Exclusive(context.Background(), pg, lease.Config{Store: pg, Owner: "bench"}, "engine", nil)
				if err != nil {
					b.Fatal(err)
				}
			}
			be := benchEngineOn(b, st)
			pid := be.process(b, 3)
			measure(b, be, bench.starters, false, func(ctx context.Context) (string, error) {
				r, err := be.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: pid,
					Subject: runengine.Subject{Type: "bench", Label: "run"}})
				if err != nil {
					return "", err
				}
				return r.ID, nil
			})
			s := be.eng.Stats()
			b.ReportMetric(float64(s.Deltas)/float64(s.Commits), "deltas/commit")
			b.ReportMetric(float64(s.CommitTime.Microseconds())/float64(s.Commits)/1000, "ms/commit")
		})
	}
}

// benchEngineOn is newBenchEngine on a store of the caller's, which it
// closes at the end.
func benchEngineOn(b *testing.B, st store.Store) *benchEngine {
	b.Helper()
	clk := clock.Real{}
	be := &benchEngine{st: st, done: map[string]*runEnd{}}
	be.procs = process.NewService(process.Config{Store: st, Clock: clk})
	reg := registry.New(registry.Config{Store: st, Clock: clk})
	if err := reg.Register(noopProvider{}); err != nil {
		b.Fatal(err)
	}
	var err error
	be.eng, err = runengine.New(runengine.Config{Store: st, Clock: clk, Capabilities: reg, Processes: be.procs,
		Gate: &autoGate{auto: true}, OnFinish: be.finished})
	if err != nil {
		b.Fatal(err)
	}
	if err := be.eng.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		be.eng.Close()
		st.Close()
	})
	return be
}
