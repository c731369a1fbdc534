package runengine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkChain3Cluster is BenchmarkChain3 on PostgreSQL (BAS_PG_DSN)
// with clustered engines: nodes=1 is one node holding every shard (what
// a node pays for leases and fencing), nodes=3 three nodes in this process
// on one database, the starts spread over them (most land on a node that
// does not own the run, which hands it over through the due index). All
// nodes share this process's CPUs: the figure shows the coordination's
// cost, not what three machines would add.
func BenchmarkChain3Cluster(b *testing.B) {
	dsn := pgtest.DSN(b)
	for _, bench := range []struct{ nodes, starters int }{{1, 1}, {1, 64}, {3, 64}} {
		nodes := bench.nodes
		b.Run(fmt.Sprintf("nodes=%d/starters=%d", nodes, bench.starters), func(b *testing.B) {
			schema := pgtest.Schema(b, dsn)
			be := &benchEngine{done: map[string]*runEnd{}}
			var engs []*runengine.Engine
			var pid string
			for i := range nodes {
				pg, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Schema: schema})
				if err != nil {
					b.Fatal(err)
				}
				clk := clock.Real{}
				procs := process.NewService(process.Config{Store: pg, Clock: clk})
				reg := registry.New(registry.Config{Store: pg, Clock: clk})
				if err := reg.Register(noopProvider{}); err != nil {
					b.Fatal(err)
				}
				eng, err := runengine.New(runengine.Config{Store: pg, Clock: clk, Capabilities: reg, Processes: procs,
					Gate: &autoGate{auto: true}, OnFinish: be.finished,
					Cluster: &runengine.ClusterConfig{NodeID: fmt.Sprintf("n%d", i), LeaseTTL: 3 * time.Second}})
				if err != nil {
					b.Fatal(err)
				}
				if err := eng.Open(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() {
					eng.Close()
					pg.Close()
				})
				engs = append(engs, eng)
				if i == 0 {
					be.procs = procs
					pid = be.process(b, 3)
				}
			}
			// Measure the steady state: every node holds exactly the shards
			// the balance gives it (none still on its way to another).
			var members []string
			for i := range nodes {
				members = append(members, fmt.Sprintf("n%d", i))
			}
			for deadline := time.Now().Add(30 * time.Second); ; {
				spread := true
				for n, eng := range engs {
					var want []int
					for i := range 32 { // the default shards
						if lease.Assign(members, i) == members[n] {
							want = append(want, i)
						}
					}
					spread = spread && fmt.Sprint(eng.Shards()) == fmt.Sprint(want)
				}
				if spread {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal("the shards never spread over the nodes")
				}
				time.Sleep(50 * time.Millisecond)
			}
			var turn atomic.Int64
			measure(b, be, bench.starters, false, func(ctx context.Context) (string, error) {
				eng := engs[int(turn.Add(1))%len(engs)]
				r, err := eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: pid,
					Subject: runengine.Subject{Type: "bench", Label: "run"}})
				if err != nil {
					return "", err
				}
				return r.ID, nil
			})
		})
	}
}
