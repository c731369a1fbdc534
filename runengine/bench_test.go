package runengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/procstat"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// noopProvider fills bench.noop and does nothing.
type noopProvider struct{}

func (noopProvider) Info() capability.Info {
	return capability.Info{ID: "bench.provider", Name: "No-op", Kind: capability.KindBuiltin, Capabilities: []string{"bench.noop"}}
}

func (noopProvider) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "bench.noop", Name: "No-op", Description: "Does nothing.", Args: obj, Result: obj}}
}

func (noopProvider) Call(context.Context, capability.Call) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// atOnceNoop is noopProvider saying its calls never block
// (capability.ReturnsAtOnce), so the engine makes them in the run's worker.
// noopProvider itself does not say so: the workspace's own providers do
// not, and the benchmarks measure the path their calls take.
type atOnceNoop struct{ noopProvider }

// ReturnsAtOnce: its calls do nothing, so they never block.
func (atOnceNoop) ReturnsAtOnce() {}

// benchEngine opens an engine on Badger in a temp dir with synced commits.
type benchEngine struct {
	st    store.Store
	procs *process.Service
	eng   *runengine.Engine
	mu    sync.Mutex
	done  map[string]*runEnd
}

// runEnd is closed when its run finishes, at end.
type runEnd struct {
	ch  chan struct{}
	end time.Time
}

func newBenchEngine(b *testing.B) *benchEngine {
	b.Helper()
	return newBenchEngineWith(b, func(*runengine.Config) {})
}

// newBenchEngineWith is newBenchEngine with a changed engine config.
func newBenchEngineWith(b *testing.B, change func(*runengine.Config)) *benchEngine {
	b.Helper()
	return newBenchEngineOn(b, noopProvider{}, change)
}

// newBenchEngineOn is newBenchEngineWith with prov filling bench.noop.
func newBenchEngineOn(b *testing.B, prov capability.Provider, change func(*runengine.Config)) *benchEngine {
	b.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.Real{}
	be := &benchEngine{st: st, done: map[string]*runEnd{}}
	be.procs = process.NewService(process.Config{Store: st, Clock: clk})
	reg := registry.New(registry.Config{Store: st, Clock: clk})
	if err := reg.Register(prov); err != nil {
		b.Fatal(err)
	}
	cfg := runengine.Config{Store: st, Clock: clk, Capabilities: reg, Processes: be.procs,
		Gate: atOnceGate{&autoGate{auto: true}}, OnFinish: be.finished} // at once for atOnceNoop (see atOnceGate)
	change(&cfg)
	be.eng, err = runengine.New(cfg)
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

func (be *benchEngine) end(runID string) *runEnd {
	be.mu.Lock()
	defer be.mu.Unlock()
	e, ok := be.done[runID]
	if !ok {
		e = &runEnd{ch: make(chan struct{})}
		be.done[runID] = e
	}
	return e
}

func (be *benchEngine) finished(_, runID string, _ runengine.RunStatus) {
	e := be.end(runID)
	e.end = time.Now()
	close(e.ch)
}

// wait returns when runID finished.
func (be *benchEngine) wait(runID string) time.Time {
	e := be.end(runID)
	<-e.ch
	return e.end
}

func (be *benchEngine) process(b *testing.B, steps int) string {
	b.Helper()
	var parts []string
	for i := 0; i < steps; i++ {
		parts = append(parts, fmt.Sprintf(`{"key":"s%d","type":"execute","capability":"bench.noop","config":{"args":{"i":%d}}}`, i, i))
	}
	in, err := process.DecodeIn([]byte(`{"name":"Bench","function":"ops","trigger":{"type":"manual"},"steps":[` + strings.Join(parts, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	def, err := be.procs.Create(context.Background(), tenant, "usr_bench", in)
	if err != nil {
		b.Fatal(err)
	}
	return def.ID
}

// runChain starts b.N runs of a chain of execute steps and reports runs/s
// and start-to-completion latency (see measure for closed).
func runChain(b *testing.B, steps, starters int, closed bool) {
	runChainOn(b, noopProvider{}, steps, starters, closed)
}

// runChainOn is runChain with prov filling bench.noop.
func runChainOn(b *testing.B, prov capability.Provider, steps, starters int, closed bool) {
	be := newBenchEngineOn(b, prov, func(*runengine.Config) {})
	pid := be.process(b, steps)
	measure(b, be, starters, closed, func(ctx context.Context) (string, error) {
		r, err := be.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: pid,
			Subject: runengine.Subject{Type: "bench", Label: "run"}})
		if err != nil {
			return "", err
		}
		return r.ID, nil
	})
	st := be.eng.Stats()
	b.ReportMetric(float64(st.Deltas)/float64(st.Commits), "deltas/commit")
	b.ReportMetric(float64(st.CommitTime.Microseconds())/float64(st.Commits)/1000, "ms/commit")
}

// measure runs b.N runs from starters goroutines. run starts one (its
// start is durable when it returns) and does what the run needs of people.
// A starter then starts the next at once, so runs of many starts are in
// flight together, and measure waits until all completed; closed makes a
// starter wait for its run to complete before starting the next (a closed
// loop of starters clients, whose throughput is starters / latency). It
// reports runs/s over the whole, the p50 and p99 of start-to-completion
// latency, the p50 of the start's own latency (start-p50-ms: until the start
// is durable), the CPU time the process spent per run (cpu-µs/run: the
// engine's cost, steadier than the rate on a shared machine), the peak
// resident memory of the process (rss-MiB, since it began: the tables
// Badger maps, which the kernel reclaims under pressure, count in it) and
// the peak of its anonymous part over the runs (anon-peak-MiB: heap and
// stacks, sampled every 50 ms).
func measure(b *testing.B, be *benchEngine, starters int, closed bool, run func(ctx context.Context) (string, error)) {
	ids := make([]string, b.N)
	began := make([]time.Time, b.N)
	acked := make([]time.Duration, b.N)
	var next atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	stopAnon := sampleAnonPeak()
	cpu0 := runengine.CPUTime()
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < starters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				began[i] = time.Now()
				id, err := run(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = id
				acked[i] = time.Since(began[i])
				if closed {
					be.wait(id)
				}
			}
		}()
	}
	wg.Wait()
	lat := make([]time.Duration, b.N)
	for i, id := range ids {
		if id == "" {
			b.FailNow() // its start failed (reported above)
		}
		lat[i] = be.wait(id).Sub(began[i])
	}
	elapsed := time.Since(start)
	cpu := runengine.CPUTime() - cpu0
	b.StopTimer()
	anonPeak := stopAnon()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	slices.Sort(acked)
	b.ReportMetric(float64(acked[len(acked)/2].Microseconds())/1000, "start-p50-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
	if st, err := procstat.Self(); err == nil && st.Peak > 0 {
		b.ReportMetric(procstat.MiB(st.Peak), "rss-MiB")
	}
	if anonPeak > 0 {
		b.ReportMetric(procstat.MiB(anonPeak), "anon-peak-MiB")
	}
}

// anonKB is the process's anonymous resident memory now in KiB, 0 where
// /proc does not tell.
func anonKB() int64 {
	st, _ := procstat.Self()
	return st.Anon
}

// sampleAnonPeak samples the process's anonymous memory every 50 ms until
// the returned func is called, which returns its highest sample in KiB.
func sampleAnonPeak() (stop func() int64) {
	done, stopped := make(chan struct{}), make(chan struct{})
	var high int64
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			high = max(high, anonKB())
			select {
			case <-done:
				high = max(high, anonKB()) // and at the end: runs shorter than a tick count too
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return high
	}
}

// BenchmarkChain3 runs a process of three sequential execute steps on an
// in-process no-op provider, durably on Badger: starters goroutines start
// b.N runs, and the benchmark ends when all completed.
func BenchmarkChain3(b *testing.B) {
	for _, starters := range []int{1, 64} {
		b.Run(fmt.Sprintf("starters=%d", starters), func(b *testing.B) { runChain(b, 3, starters, false) })
	}
}

// BenchmarkChain3AtOnce is BenchmarkChain3 on a provider whose calls
// never block (capability.ReturnsAtOnce), behind a gate that decides at
// once: the run's worker makes each call itself, with no call runner.
func BenchmarkChain3AtOnce(b *testing.B) {
	for _, starters := range []int{1, 64} {
		b.Run(fmt.Sprintf("starters=%d", starters), func(b *testing.B) { runChainOn(b, atOnceNoop{}, 3, starters, false) })
	}
}

// BenchmarkChain1 is BenchmarkChain3 with one step.
func BenchmarkChain1(b *testing.B) {
	for _, starters := range []int{1, 64} {
		b.Run(fmt.Sprintf("starters=%d", starters), func(b *testing.B) { runChain(b, 1, starters, false) })
	}
}

// BenchmarkChain3Closed is BenchmarkChain3 with each starter waiting for
// its run to complete before it starts the next: at most starters runs are
// in flight, so it measures latency-bound throughput.
func BenchmarkChain3Closed(b *testing.B) {
	for _, starters := range []int{1, 64} {
		b.Run(fmt.Sprintf("starters=%d", starters), func(b *testing.B) { runChain(b, 3, starters, true) })
	}
}

// runPeopleChain is runChain for a chain whose first step waits for a
// person: each starter completes the task (or approves the step) through
// the engine's API as soon as the start returns, then waits for the end.
func runPeopleChain(b *testing.B, first string, starters int) {
	b.Helper()
	be := newBenchEngine(b)
	in, err := process.DecodeIn([]byte(`{"name":"Bench","function":"ops","trigger":{"type":"manual"},"steps":[` + first + `,
		{"key":"s1","type":"execute","capability":"bench.noop","config":{"args":{"i":1}}},
		{"key":"s2","type":"execute","capability":"bench.noop","config":{"args":{"i":2}}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	def, err := be.procs.Create(context.Background(), tenant, "usr_bench", in)
	if err != nil {
		b.Fatal(err)
	}
	measure(b, be, starters, false, func(ctx context.Context) (string, error) {
		r, err := be.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "bench", Label: "run"}})
		if err != nil {
			return "", err
		}
		switch {
		case r.Steps[0].TaskID != nil:
			_, err = be.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID,
				Action: "complete", Actor: "usr_bench"})
		case r.Steps[0].ApprovalID != nil:
			_, err = be.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[0].ApprovalID,
				Approve: true, Actor: "usr_bench"})
		default:
			err = fmt.Errorf("run %s waits for no person: %s", r.ID, r.Steps[0].Status)
		}
		return r.ID, err
	})
}

// BenchmarkChain3HumanTask runs a human task completed through the API,
// then two execute steps.
func BenchmarkChain3HumanTask(b *testing.B) {
	for _, starters := range []int{1, 64} {
		b.Run(fmt.Sprintf("starters=%d", starters), func(b *testing.B) {
			runPeopleChain(b, `{"key":"s0","type":"human_task","config":{"title":"Check"}}`, starters)
		})
	}
}

// BenchmarkChain3Approval runs an execute step that requires approval,
// decided through the API, then two more.
func BenchmarkChain3Approval(b *testing.B) {
	for _, starters := range []int{1, 64} {
		b.Run(fmt.Sprintf("starters=%d", starters), func(b *testing.B) {
			runPeopleChain(b, `{"key":"s0","type":"execute","capability":"bench.noop","controls":{"require_approval":true},"config":{"args":{"i":0}}}`, starters)
		})
	}
}
