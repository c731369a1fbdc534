package bas_test

// The waiting-runs scale test: N runs that each wait a day are started in a
// child process, which is killed (SIGKILL) once the last start is durable;
// the workspace is then reopened, listed, and the fake clock moved a day so
// every timer comes due at once. In CI it runs with 9,000 runs (above the
// 2,048 timers the engine hands out at a time);
// for the scale figures:
//
//	go test -run TestWaitingRunsScale -waiting 1000000 -v -timeout 60m .
//
// It logs, for the base size (10,000, or N/2 below that) and for N: the
// start rate and the child's RSS while starting (peak, and the median of
// the second half), the reopen time, the median of 401 first pages of the
// run list and of 401 cockpits (wall time, and the CPU time of the calling
// thread: the call's own cost, without the compactions a reopen starts in
// the background, which take a core of two for a second at a million
// runs; 401 calls of 10-100 µs span more than one collection cycle, whose
// mark assists fell on every one of 21 calls in some runs); then the same
// medians with the calls of the two sizes alternated, both stores open, so
// that the machine's load of the moment (other processes, N's compactions)
// falls on both alike; and the rate at which the due runs fired
// and completed (with its CPU and the bytes written to disk per fired
// run), with the ratio of each list and cockpit figure to the base's. It
// asserts only what must hold at any size: every start answered,
// every run found waiting after the kill, and every run completed once its
// timer fired. -waiting-dir keeps the directory of the N runs (for the
// server's start-up time on it). BAS_WAITING_HEAPPROFILE=file makes the child write a heap
// profile once its starts are done, and this process another (file.firing)
// half way through the firing. BAS_WAITING_PEAKPROFILE=file makes this
// process, while firing, sample its memory every 100 ms and, whenever its
// anonymous memory reaches a new high, write a heap profile to file and log
// the runtime's memory classes of that moment (what sets the peak).
// BAS_WAITING_LISTPROFILE=file writes a CPU profile of 2 s of each kind of
// list and cockpit call, at each size, to file.<n>.<kind>.
// BAS_WAITING_MEMLIMIT=300MiB runs it all in a memory cgroup with that
// limit (waiting_memlimit_test.go).

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/procstat"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"golang.org/x/sys/unix"
)

var (
	waitingRuns = flag.Int("waiting", 9000, "TestWaitingRunsScale: how many waiting runs to start")
	waitingDir  = flag.String("waiting-dir", "", "TestWaitingRunsScale: keep the directory of the -waiting runs here (new or empty), all fired")
	waitingVT   = flag.Int64("waiting-value-threshold", 0, "TestWaitingRunsScale: open the store with this badgerstore.Options.ValueThreshold (0: the default)")
)

const (
	waitingTenant   = "ten_scale"
	waitingStarters = 64
	waitingChildEnv = "BAS_WAITING_CHILD" // dir:n, set for the child process
)

// waitingT0 is the fake clock's time in the child and at the reopen.
var waitingT0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const waitingProcess = `{"name": "Wait a day", "function": "operations", "trigger": {"type": "manual"},
  "steps": [
    {"key": "wait", "type": "wait", "config": {"duration": "24h"}},
    {"key": "route", "type": "route", "config": {"rules": [{"when": {"subject.type": "delivery"}, "queue": "receiving"}], "default": {"queue": "ap"}}}
  ]}`

func openWaiting(dir string, clk bas.Clock) (*bas.Workspace, error) {
	opts := bas.Options{Dir: dir, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if *waitingVT > 0 {
		// The store bas.Open makes under Dir, with the value threshold an
		// embedder passes as its own Store.
		st, err := badgerstore.Open(badgerstore.Options{Dir: filepath.Clean(dir), ValueThreshold: *waitingVT, Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		opts.Store = st
	}
	return bas.Open(context.Background(), opts)
}

// TestWaitingRunsChild is the child process of TestWaitingRunsScale; it
// does nothing unless BAS_WAITING_CHILD is set.
func TestWaitingRunsChild(t *testing.T) {
	spec := os.Getenv(waitingChildEnv)
	if spec == "" {
		t.Skip("the child of TestWaitingRunsScale")
	}
	dir, nstr, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(nstr)
	ws, err := openWaiting(dir, clock.NewFake(waitingT0))
	if err != nil {
		fmt.Println("error", err)
		return
	}
	in, err := process.DecodeIn([]byte(waitingProcess))
	if err != nil {
		fmt.Println("error", err)
		return
	}
	ctx := context.Background()
	def, err := ws.Processes().Create(ctx, waitingTenant, "usr_scale", in)
	if err != nil {
		fmt.Println("error", err)
		return
	}
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range waitingStarters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				_, err := ws.Start(ctx, bas.StartParams{Tenant: waitingTenant, ProcessID: def.ID,
					Subject: bas.Subject{Type: "delivery", Label: "DN-" + strconv.FormatInt(i, 10)}})
				if err != nil {
					if failed.Add(1) == 1 {
						fmt.Println("error", err)
					}
					return
				}
				if i%int64(max(1, n/20)) == 0 {
					fmt.Println("started", i)
				}
			}
		}()
	}
	wg.Wait()
	secs := time.Since(began).Seconds()
	if f := os.Getenv("BAS_WAITING_HEAPPROFILE"); f != "" { // what holds the memory
		runtime.GC()
		writeHeapProfile(f)
	}
	fmt.Println("done", failed.Load(), secs)
	select {} // until the parent kills this process
}

// waitingFigures are one size's figures.
type waitingFigures struct {
	n                        int
	startRate                float64
	rssPeakMiB, rssHalfMiB   float64
	anonPeakMiB, anonHalfMiB float64
	reopen                   time.Duration
	list, listWaiting, cock  time.Duration // wall medians
	listCPU, listWaitingCPU  time.Duration // the calling thread's CPU medians
	cockCPU                  time.Duration
	fireRate                 float64
	parentPeakMiB            float64
	firingAnonPeakMiB        float64
	firingAnonMedMiB         float64
	// Under BAS_WAITING_MEMLIMIT (waiting_memlimit_test.go): the memory
	// group's figures while the child started the runs, while this
	// process reopened and listed them, and while it fired them; and
	// this process's own memory as the child began.
	groupStart, groupOpen, groupFire memGroupPhase
	parentAtStart                    memSample
}

func TestWaitingRunsScale(t *testing.T) {
	if os.Getenv(waitingChildEnv) != "" {
		t.Skip("in the child")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("samples /proc")
	}
	var grp *memGroup
	if v := os.Getenv(waitingMemLimitEnv); v != "" {
		limit, err := parseMemLimit(v)
		if err != nil {
			t.Fatal(err)
		}
		grp = newMemGroup(t, limit)
		t.Logf("in memory group %s, limit %s (%d bytes; 0: none)", grp.dir, v, limit)
	}
	n := *waitingRuns
	base := min(10_000, n/2)
	b := openWaitingRuns(t, base, grp)
	f := openWaitingRuns(t, n, grp)
	ratio := func(x, y time.Duration) float64 { return float64(x) / float64(y) }
	t.Logf("list x%.2f, list waiting x%.2f, cockpit x%.2f (%d runs against %d, each measured after its reopen); "+
		"by the calling thread's CPU: list x%.2f, list waiting x%.2f, cockpit x%.2f",
		ratio(f.list, b.list), ratio(f.listWaiting, b.listWaiting), ratio(f.cock, b.cock), n, base,
		ratio(f.listCPU, b.listCPU), ratio(f.listWaitingCPU, b.listWaitingCPU), ratio(f.cockCPU, b.cockCPU))
	// The same calls with the two sizes alternated, so that the machine's
	// load of the moment falls on both alike.
	var wall, cpu [3][2]time.Duration
	for i, call := range waitingCalls {
		wall[i][0], cpu[i][0], wall[i][1], cpu[i][1] = medianOfPairs(401, b.call(call), f.call(call), t)
	}
	t.Logf("alternated: %d runs %v / %v / %v, %d runs %v / %v / %v (list / list waiting / cockpit; the calling thread's CPU: %v / %v / %v against %v / %v / %v); "+
		"list x%.2f, list waiting x%.2f, cockpit x%.2f; by CPU x%.2f, x%.2f, x%.2f",
		base, wall[0][0].Round(time.Microsecond), wall[1][0].Round(time.Microsecond), wall[2][0].Round(time.Microsecond),
		n, wall[0][1].Round(time.Microsecond), wall[1][1].Round(time.Microsecond), wall[2][1].Round(time.Microsecond),
		cpu[0][1].Round(time.Microsecond), cpu[1][1].Round(time.Microsecond), cpu[2][1].Round(time.Microsecond),
		cpu[0][0].Round(time.Microsecond), cpu[1][0].Round(time.Microsecond), cpu[2][0].Round(time.Microsecond),
		ratio(wall[0][1], wall[0][0]), ratio(wall[1][1], wall[1][0]), ratio(wall[2][1], wall[2][0]),
		ratio(cpu[0][1], cpu[0][0]), ratio(cpu[1][1], cpu[1][0]), ratio(cpu[2][1], cpu[2][0]))
	// The base's runs fire after N's, with N's store closed: its open
	// store would otherwise count in N's memory figures.
	b.close(t)
	f.fire(t, grp)
	f.close(t)
	b.reopen(t)
	b.fire(t, grp)
	b.close(t)
}

// waitingCalls are the calls whose cost TestWaitingRunsScale compares
// between the sizes: the first page of runs, of waiting runs, and the
// cockpit.
var waitingCalls = []func(ctx context.Context, eng *runengine.Engine) error{
	func(ctx context.Context, eng *runengine.Engine) error {
		_, _, err := eng.ListRuns(ctx, waitingTenant, runengine.RunQuery{}, store.Page{Limit: 50})
		return err
	},
	func(ctx context.Context, eng *runengine.Engine) error {
		_, _, err := eng.ListRuns(ctx, waitingTenant, runengine.RunQuery{Status: runengine.RunWaiting}, store.Page{Limit: 50})
		return err
	},
	func(ctx context.Context, eng *runengine.Engine) error {
		_, err := eng.Cockpit(ctx, waitingTenant, waitingViewer, nil)
		return err
	},
}

// waitingViewer is who reads the cockpit in TestWaitingRunsScale.
var waitingViewer = runengine.Viewer{CanWork: true, CanDecide: true}

// waitingSet is one size of TestWaitingRunsScale: its directory, reopened
// after the child's kill, and its figures.
type waitingSet struct {
	waitingFigures
	dir string
	clk *clock.Fake
	ws  *bas.Workspace
	c   *runengine.Cockpit // the last read
}

// call returns call on s's engine.
func (s *waitingSet) call(call func(context.Context, *runengine.Engine) error) func() error {
	return func() error { return call(context.Background(), s.ws.Engine()) }
}

// close closes s's workspace.
func (s *waitingSet) close(t *testing.T) {
	t.Helper()
	ws := s.ws
	s.ws = nil
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
}

// reopen opens s's workspace again (after close), at the fake clock's
// start.
func (s *waitingSet) reopen(t *testing.T) {
	t.Helper()
	s.clk = clock.NewFake(waitingT0)
	ws, err := openWaiting(s.dir, s.clk)
	if err != nil {
		t.Fatal(err)
	}
	s.ws = ws
	if s.c, err = ws.Engine().Cockpit(context.Background(), waitingTenant, waitingViewer, nil); err != nil || s.c.Running != s.n {
		t.Fatalf("cockpit after the second open: %+v %v; want %d running", s.c, err, s.n)
	}
}

// openWaitingRuns makes n waiting runs in a child process, kills it,
// reopens and lists them (see the file comment); the caller fires them.
// With grp, it measures the memory group while the child starts the runs,
// and while this process reopens and lists them.
func openWaitingRuns(t *testing.T, n int, grp *memGroup) *waitingSet {
	t.Helper()
	s := &waitingSet{waitingFigures: waitingFigures{n: n}}
	fig := &s.waitingFigures
	dir := t.TempDir()
	if *waitingDir != "" && n == *waitingRuns {
		dir = *waitingDir
	}
	// The child ends at the parent's timeout at the latest: a hung child
	// would otherwise outlive the parent go test killed.
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWaitingRunsChild$", "-test.count", "1",
		"-test.timeout", flag.Lookup("test.timeout").Value.String(), "-waiting-value-threshold", strconv.FormatInt(*waitingVT, 10))
	cmd.Env = append(os.Environ(), waitingChildEnv+"="+dir+":"+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var endPhase func() memGroupPhase
	if grp != nil {
		fig.parentAtStart = memOf(procstat.Self())
		endPhase = grp.begin()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		samples []memSample
		stop    = make(chan struct{})
		sampled = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if m := memOf(procstat.Of(cmd.Process.Pid)); m.rss > 0 {
					mu.Lock()
					samples = append(samples, m)
					mu.Unlock()
				}
			}
		}
	}()
	sc := bufio.NewScanner(out)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "done "); ok {
			var failed int
			var secs float64
			fmt.Sscan(rest, &failed, &secs)
			if failed > 0 {
				t.Errorf("%d starts failed", failed)
			}
			fig.startRate = float64(n) / secs
			done = true
			break
		}
		if strings.HasPrefix(line, "error") {
			t.Error("child:", line)
		}
	}
	close(stop)
	testwait.Recv(t, sampled, "the memory sampler stopped")
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if endPhase != nil {
		fig.groupStart = endPhase()
	}
	if !done || t.Failed() {
		t.Fatalf("the child did not start its %d runs (its end: %v; memory group while starting: %v)", n, cmd.ProcessState, fig.groupStart)
	}
	if len(samples) > 0 {
		peak := func(f func(memSample) float64) float64 {
			return f(slices.MaxFunc(samples, func(a, b memSample) int { return cmpFloat(f(a), f(b)) }))
		}
		half := func(f func(memSample) float64) float64 {
			var xs []float64
			for _, m := range samples[len(samples)/2:] {
				xs = append(xs, f(m))
			}
			slices.Sort(xs)
			return xs[len(xs)/2]
		}
		rss := func(m memSample) float64 { return m.rss }
		anon := func(m memSample) float64 { return m.anon }
		fig.rssPeakMiB, fig.rssHalfMiB = peak(rss), half(rss)
		fig.anonPeakMiB, fig.anonHalfMiB = peak(anon), half(anon)
	}

	if grp != nil {
		endPhase = grp.begin()
		defer func() { fig.groupOpen = endPhase() }()
	}
	clk := clock.NewFake(waitingT0)
	began := time.Now()
	ws, err := openWaiting(dir, clk)
	if err != nil {
		t.Fatal(err)
	}
	s.dir, s.clk, s.ws = dir, clk, ws
	t.Cleanup(func() {
		if s.ws != nil {
			_ = s.ws.Close()
		}
	})
	ctx := context.Background()
	eng := ws.Engine()
	page, _, err := eng.ListRuns(ctx, waitingTenant, runengine.RunQuery{}, store.Page{Limit: 50})
	fig.reopen = time.Since(began)
	if err != nil || len(page) != min(50, n) {
		t.Fatalf("first page after the reopen: %d runs, %v", len(page), err)
	}
	if s.c, err = eng.Cockpit(ctx, waitingTenant, waitingViewer, nil); err != nil || s.c.Running != n {
		t.Fatalf("cockpit after the reopen: %+v %v; want %d running", s.c, err, n)
	}
	fig.list, fig.listCPU = medianOf(401, s.call(waitingCalls[0]), t)
	fig.listWaiting, fig.listWaitingCPU = medianOf(401, s.call(waitingCalls[1]), t)
	fig.cock, fig.cockCPU = medianOf(401, s.call(waitingCalls[2]), t)
	if f := os.Getenv("BAS_WAITING_LISTPROFILE"); f != "" {
		// What the calls cost: a CPU profile of each kind, long enough
		// (2 s) for the profiler's 100 Hz to see it.
		for i, kind := range []string{"list", "waiting", "cockpit"} {
			profileCalls(t, fmt.Sprintf("%s.%d.%s", f, n, kind), s.call(waitingCalls[i]))
		}
	}
	return s
}

// fire moves s's fake clock a day, so that every timer comes due at once,
// waits for every run to complete and logs the figures of s (with grp,
// the memory group's while firing).
func (s *waitingSet) fire(t *testing.T, grp *memGroup) {
	t.Helper()
	ctx, eng, clk, n, fig, c := context.Background(), s.ws.Engine(), s.clk, s.n, &s.waitingFigures, s.c
	var err error
	// Every timer comes due at once. The cockpit's running count (a
	// counter) says when the last run completed; it is read every 20 ms.
	st0, cpu0, io0 := eng.Stats(), cpuTime(), diskWritten()
	if f := os.Getenv("BAS_WAITING_PEAKPROFILE"); f != "" {
		stopPeak := watchPeak(t, f)
		defer stopPeak()
	}
	if grp != nil {
		endPhase := grp.begin()
		defer func() {
			fig.groupFire = endPhase()
			t.Logf("%d runs in the memory group: starting (the child; this process then RSS %.0f MiB, anonymous %.0f): %v; "+
				"reopening and listing: %v; firing: %v", n, fig.parentAtStart.rss, fig.parentAtStart.anon, fig.groupStart, fig.groupOpen, fig.groupFire)
		}()
	}
	began := time.Now()
	clk.Advance(24*time.Hour + time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Minute)
	halfway := false
	var firingAnon []float64
	for c.Running > 0 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d of %d runs still running after 30 minutes", c.Running, n)
		}
		if c, err = eng.Cockpit(ctx, waitingTenant, waitingViewer, nil); err != nil {
			t.Fatal(err)
		}
		firingAnon = append(firingAnon, memOf(procstat.Self()).anon)
		if f := os.Getenv("BAS_WAITING_HEAPPROFILE"); f != "" && c.Running <= n/2 && !halfway {
			halfway = true // what holds the memory half way through the firing
			writeHeapProfile(f + ".firing")
		}
	}
	fig.fireRate = float64(n) / time.Since(began).Seconds()
	st := eng.Stats()
	commits, deltas, busy := st.Commits-st0.Commits, st.Deltas-st0.Deltas, st.CommitTime-st0.CommitTime
	t.Logf("firing: %.0f CPU-µs per run; %d commits of %.0f changes each, %.1f ms each; %.0f bytes written to disk per run",
		float64((cpuTime()-cpu0).Microseconds())/float64(n), commits,
		float64(deltas)/float64(max(1, commits)), float64(busy.Microseconds())/1000/float64(max(1, commits)),
		float64(diskWritten()-io0)/float64(n))
	if c.Completed30d != n {
		t.Errorf("completed %d runs, want %d", c.Completed30d, n)
	}
	fig.parentPeakMiB = memOf(procstat.Self()).peak
	if len(firingAnon) > 0 {
		fig.firingAnonPeakMiB = slices.Max(firingAnon)
		slices.Sort(firingAnon)
		fig.firingAnonMedMiB = firingAnon[len(firingAnon)/2]
	}
	t.Logf("%d waiting runs: started at %.0f/s (RSS peak %.0f MiB, median of the second half %.0f MiB; "+
		"of which anonymous, not mapped files: %.0f / %.0f MiB); "+
		"reopened after SIGKILL in %v; first page of runs %v, of waiting runs %v, cockpit %v "+
		"(the calling thread's CPU: %v, %v, %v); "+
		"fired and completed at %.0f runs/s (this process's RSS peak %.0f MiB; anonymous while firing: median %.0f, peak %.0f MiB)",
		n, fig.startRate, fig.rssPeakMiB, fig.rssHalfMiB, fig.anonPeakMiB, fig.anonHalfMiB, fig.reopen.Round(time.Millisecond),
		fig.list.Round(time.Microsecond), fig.listWaiting.Round(time.Microsecond), fig.cock.Round(time.Microsecond),
		fig.listCPU.Round(time.Microsecond), fig.listWaitingCPU.Round(time.Microsecond), fig.cockCPU.Round(time.Microsecond),
		fig.fireRate, fig.parentPeakMiB, fig.firingAnonMedMiB, fig.firingAnonPeakMiB)
}

// watchPeak samples this process's anonymous memory every 100 ms until the
// returned func is called; at each new high (by 4 MiB or more) it writes a
// heap profile to file and keeps the runtime's /memory/classes/ of that
// moment, which it logs at the end.
func watchPeak(t *testing.T, file string) (stop func()) {
	t.Helper()
	done, stopped := make(chan struct{}), make(chan struct{})
	var at string
	var high float64
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var samples []metrics.Sample
		for _, d := range metrics.All() {
			if strings.HasPrefix(d.Name, "/memory/classes/") || d.Name == "/gc/heap/goal:bytes" {
				samples = append(samples, metrics.Sample{Name: d.Name})
			}
		}
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			anon := memOf(procstat.Self()).anon
			if anon < high+4 {
				continue
			}
			high = anon
			metrics.Read(samples)
			var b strings.Builder
			fmt.Fprintf(&b, "anonymous %.0f MiB:", anon)
			for _, s := range samples {
				if s.Value.Kind() == metrics.KindUint64 {
					fmt.Fprintf(&b, " %s=%.1f", strings.TrimSuffix(strings.TrimPrefix(s.Name, "/memory/classes/"), ":bytes"), float64(s.Value.Uint64())/(1<<20))
				}
			}
			at = b.String()
			writeHeapProfile(file)
		}
	}()
	return func() {
		close(done)
		testwait.Recv(t, stopped, "the peak sampler stopped")
		t.Logf("at the firing's anonymous peak: %s", at)
	}
}

// writeHeapProfile writes a heap profile to file, if it can be made (a
// profile is a measure's aid: failing to write one fails nothing).
func writeHeapProfile(file string) {
	if fh, err := os.Create(file); err == nil {
		_ = pprof.WriteHeapProfile(fh)
		_ = fh.Close()
	}
}

// profileCalls calls fn for 2 s under a CPU profile written to file.
func profileCalls(t *testing.T, file string, fn func() error) {
	t.Helper()
	fh, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := pprof.StartCPUProfile(fh); err != nil {
		t.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		if err := fn(); err != nil {
			t.Fatal(err)
		}
	}
}

// medianOf calls fn k times and returns the median of its wall times and
// of the CPU time the calling thread spent in it. The CPU figure is the
// call's own cost: on two cores the wall time also holds whatever the
// store does in the background meanwhile (the compactions a reopen
// starts), which the CPU of the caller's thread leaves out.
func medianOf(k int, fn func() error, t *testing.T) (wall, cpu time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ds, cs := make([]time.Duration, k), make([]time.Duration, k)
	for i := range ds {
		began, cpu0 := time.Now(), threadCPU(t)
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		ds[i], cs[i] = time.Since(began), threadCPU(t)-cpu0
	}
	slices.Sort(ds)
	slices.Sort(cs)
	return ds[k/2], cs[k/2]
}

// medianOfPairs calls a and b k times each, alternately (a first, then b
// first), and returns the medians of the wall and CPU times of each, as
// medianOf does.
func medianOfPairs(k int, a, b func() error, t *testing.T) (aWall, aCPU, bWall, bCPU time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ds, cs [2][]time.Duration
	for j := range ds {
		ds[j], cs[j] = make([]time.Duration, k), make([]time.Duration, k)
	}
	fns := [2]func() error{a, b}
	for i := range k {
		for o := range 2 {
			j := (i + o) % 2
			began, cpu0 := time.Now(), threadCPU(t)
			if err := fns[j](); err != nil {
				t.Fatal(err)
			}
			ds[j][i], cs[j][i] = time.Since(began), threadCPU(t)-cpu0
		}
	}
	for j := range ds {
		slices.Sort(ds[j])
		slices.Sort(cs[j])
	}
	return ds[0][k/2], cs[0][k/2], ds[1][k/2], cs[1][k/2]
}

// threadCPU is the CPU time of the calling OS thread (the caller locks
// its goroutine to it).
func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// memSample is a process's memory, in MiB: resident (rss), of it
// anonymous (anon: heap and stacks; the rest is mapped files, the
// database's tables, which the kernel reclaims under pressure), and the
// peak resident.
type memSample struct{ rss, anon, peak float64 }

// memOf is st in MiB; all 0 when err is set (it could not be read).
func memOf(st procstat.Status, err error) memSample {
	if err != nil {
		return memSample{}
	}
	return memSample{rss: procstat.MiB(st.RSS), anon: procstat.MiB(st.Anon), peak: procstat.MiB(st.Peak)}
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// diskWritten is the bytes this process has caused to be written to the
// disk so far (/proc/self/io's write_bytes: the store's log, its flushes
// and compactions; those still running when the last run completed are
// not counted), or 0 where the kernel does not count them. Unlike CPU
// time it hardly depends on the machine's load, so it tells a change in
// the store's write amplification apart from noise.
func diskWritten() int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			x, _ := strconv.ParseInt(v, 10, 64)
			return x
		}
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
