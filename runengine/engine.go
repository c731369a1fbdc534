// Package runengine runs processes: durable runs advanced by sharded
// workers, a group-commit pipeline that puts many runs' transitions in one
// synced transaction, timers and cron schedules found through a due-time
// index, an event outbox and dispatcher matching event triggers, human
// tasks, approvals, the autonomy gate and the cockpit.
//
// # Promises
//
//   - A caller is answered only after its change is durable.
//   - A run is advanced by one worker at a time (the worker its id hashes
//     to); opening the engine resumes every run where its last durable
//     state left it, and timers whose time passed while it was closed fire.
//   - Every provider call carries an idempotency key run/step/attempt; the
//     attempt comes from durable state, so a call that may have happened
//     before a crash is repeated with the same key.
//   - Finding work costs what the work costs: due work, waiting runs,
//     lists and counts come from indexes and counters, never from scanning
//     all runs.
//   - No change of a run lands behind a failed commit of it: a run has at
//     most one commit in flight, and its later changes wait in memory
//     until that commit is told (they then go in one commit). A store may
//     tell a failure after later commits were ordered, and those still
//     land (see store.PipelinedTxn); a run whose commit failed is read
//     again from the store, and the changes that waited are refused, their
//     callers told to try again.
//
// # Steps
//
// Every step runs through its type in the process step registry
// (process.StepType.Run): the type's executor decides what the step does,
// and the engine, which implements process.StepEnv once, does it. What is
// the engine's stays here: task and approval records, timers, event
// waiters, the commit, settling approvals, firing timers, delivering
// events and cancelling.
package runengine

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Caller performs capability calls (the capability registry).
type Caller interface {
	Call(ctx context.Context, call capability.Call) (json.RawMessage, error)
}

// Processes is what the engine needs of the process definitions.
type Processes interface {
	// Load returns the current definition of a process.
	Load(r store.Reader, tenant, id string) (*process.Definition, error)
	// GetVersion returns an immutable version of a process.
	GetVersion(r store.Reader, tenant, id string, version int) (*process.Version, error)
	// ByEvent returns the enabled processes triggered by event.
	ByEvent(r store.Reader, tenant, event string) ([]*process.Definition, error)
	// OnChange registers fn, called in the transaction of every create,
	// update and archive of a definition. On one node (no Cluster) the
	// engine keeps what Load returned until such a change, so every change
	// of what Load returns must run the hooks.
	OnChange(fn process.ChangeHook)
}

// Config configures New.
type Config struct {
	// Store holds runs, tasks, approvals, timers and the outbox. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Capabilities performs step calls. Required.
	Capabilities Caller
	// Processes reads definitions. Required.
	Processes Processes
	// Gate decides automatic actions. Defaults to Supervised.
	Gate Gate
	// Workers is the number of run workers. Defaults to 2 x GOMAXPROCS.
	Workers int
	// MaxBatch bounds the deltas in one commit. Defaults to 1000.
	MaxBatch int
	// MaxAttempts bounds the attempts of a failing call before the step
	// fails. Defaults to 5.
	MaxAttempts int
	// RetryBase is the first retry delay; it doubles per attempt up to
	// RetryMax. Defaults to 1s and 5m.
	RetryBase, RetryMax time.Duration
	// ApprovalTTL is how long an approval stays pending before it expires
	// and stops its run. Defaults to 7 days.
	ApprovalTTL time.Duration
	// CallTimeout bounds one capability call; an execute step's gate
	// decision and the call it allows share one such bound. Defaults to
	// 30s.
	CallTimeout time.Duration
	// StepTypes are the step types runs may use; they must be the ones
	// the process definitions were checked with. Defaults to
	// process.BuiltinStepRegistry().
	StepTypes *process.StepRegistry
	// MaxCallsPerTenant and MaxCallsPerProcess cap the capability calls
	// (and gate decisions) in flight per tenant and per process; a call
	// over a cap waits for a call of its tenant to end, high priority runs'
	// first. When the engine opens, the calls its runs make again wait
	// until every run in flight is resumed, then go out by priority too.
	// 0 (the default) caps nothing.
	MaxCallsPerTenant, MaxCallsPerProcess int
	// MaxRunsPerTenant and MaxRunsPerProcess cap the runs running (not
	// waiting for a person, a timer or an event, nor paused) per tenant and
	// per process, so one tenant cannot take all the workers. A run that
	// starts waiting frees its slot, and takes one again when it goes on,
	// even over the cap, so nothing a run waits for queues behind it. A
	// run started over a cap is saved at once, running, with its
	// waiting_reason, and takes its first step when a run of its tenant (or
	// process) ends or starts waiting, high priority runs first, then
	// oldest first. The queue is rebuilt from the active runs when the
	// engine opens: the runs that held a slot are counted first, then the
	// free slots go to the waiting runs by priority. A run paused before
	// its first step queues again when resumed. They count the runs of
	// this engine only, and do nothing when Cluster is set. 0 (the
	// default) caps nothing.
	MaxRunsPerTenant, MaxRunsPerProcess int
	// MaxStartingPerTenant caps the starts of one tenant in progress at
	// once (from the call of Start, Rerun, Retry or Publish, or a
	// schedule's tick, to its durable answer): a caller over the cap
	// waits, in the order it came, until one of them is answered, or until
	// its context ends; a tick over it waits in the same line without
	// holding up the scheduler, and is not lost if the engine stops
	// meanwhile (its due key stays until its run's start is durable). The
	// runs an event starts pass as their Publish; those of an event a run
	// or an app emits pass no door (one dispatcher serves every tenant's
	// events in order), only the run caps. A tenant flooding the engine with starts
	// then cannot fill the workers' queues and the commits, nor the
	// processors with goroutines, and another tenant's runs keep close to
	// the latency they have alone (BenchmarkFairness). 0 (the default)
	// caps nothing.
	MaxStartingPerTenant int
	// FairStartingPerTenant is the same cap, applied only while another
	// tenant is active too (has a start in progress, or started a run or
	// committed a change beside another tenant's within the last second):
	// a tenant alone keeps the whole engine, and once tenants share it, one
	// flooding Start waits at the door, in turn, rather than keep the
	// processors and the commits from the others' runs, as SQS's fair
	// queues serve the quiet tenants first once one floods. Defaults to
	// GOMAXPROCS (one start in progress per processor); a negative value
	// turns it off. A flooding tenant's work weighs on the others beyond
	// the commits and the processors it takes: it drives the collector and
	// the store's flushes of its writes, during which a run of any tenant
	// waits, so the cap bounds how much of it goes on beside them
	// (BenchmarkFairness: the quiet tenant's p99 within 2x of alone, the
	// flood at about 60% of its rate under 2 x GOMAXPROCS).
	FairStartingPerTenant int
	// RateLimits bound the capability calls of runs (see RateLimit); a
	// call over one waits, its run showing why (waiting_reason). The slots
	// reserved for the waiting calls are kept in the store, and taken back
	// when the engine opens, before any call takes one; so are the limits'
	// buckets Close keeps, with the calls made just before it. After a
	// crash, the calls made without waiting just before it are not counted
	// (the limits may let as many through again at once). On a cluster
	// each node limits its own calls, and keeps nothing across a restart.
	RateLimits []RateLimit
	// OnFinish, when set, is called once a run's end (completed, failed,
	// rejected or cancelled) is durable. It must not block.
	OnFinish func(tenant, runID string, status RunStatus)
	// Grace is how long Close lets capability calls in flight finish
	// before it cancels them (their runs resume on the next Open, and
	// make the call again: a call or gate decision that fails once
	// cancelled is not counted as an attempt). Defaults to 5s.
	Grace time.Duration
	// SubscribeBuffer is how many recent events the engine keeps for
	// subscribers (see Subscribe); one that falls further behind is told
	// it missed events. Defaults to 4096.
	SubscribeBuffer int
	// Tap, when set, sees every event in the transaction that emits it
	// (outbound webhooks). Defaults to none.
	Tap EventTap
	// Observer, when set, is told of runs, steps and commits (metrics and
	// traces). Defaults to none, at no cost.
	Observer Observer
	// Failpoints are test hooks, empty (and free) unless built with the
	// failpoints tag.
	Failpoints Failpoints
	// Cluster, when set, makes this engine one node of several sharing
	// Store (see ClusterConfig). Defaults to none: the engine is the only
	// one working on Store, and pays for no lease.
	Cluster *ClusterConfig
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.StepTypes == nil {
		c.StepTypes = process.BuiltinStepRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Gate == nil {
		c.Gate = Supervised{}
	}
	if c.Workers <= 0 {
		c.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if c.FairStartingPerTenant == 0 {
		c.FairStartingPerTenant = runtime.GOMAXPROCS(0)
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 1000
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.RetryBase <= 0 {
		c.RetryBase = time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 5 * time.Minute
	}
	if c.ApprovalTTL <= 0 {
		c.ApprovalTTL = 7 * 24 * time.Hour
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = 5 * time.Second
	}
	if c.SubscribeBuffer <= 0 {
		c.SubscribeBuffer = 4096
	}
	return c
}

// Engine runs processes. Create it with New, then Open it.
type Engine struct {
	cfg     Config
	st      store.Store
	clock   clock.Clock
	log     *slog.Logger
	commits *committer
	workers []*worker
	sched   *scheduler
	disp    *dispatcher

	versions sync.Map // versionKey -> *process.Version
	configs  sync.Map // configKey -> pointer to a decoded step config (see exec.config)

	listenedMu sync.RWMutex
	listened   map[eventName]bool // whether an event may have a consumer (see heard)

	stepTypes *process.StepRegistry
	appTimers sync.Map // app timer kind -> AppTimerFunc (see HandleTimers)
	startKeys keyLocks // idempotency keys of starts in progress (see Start)
	ends      endWatch // callers of WaitRun
	changes   endWatch // callers waiting for any committed change of a run
	hub       *hub     // events kept for subscribers (see Subscribe)

	calls    sync.WaitGroup // in-flight capability calls
	runWork  chan callJob   // hands a call to an idle runner
	runners  sync.WaitGroup // call runners (see goCall)
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closeMu  sync.RWMutex
	closed   bool
	openOnce sync.Once

	ids ids.Generator // makes the ids of the records and audit entries it writes

	pausedProcs sync.Map       // pausedRef -> true while the process is paused
	pausedN     atomic.Int32   // entries in pausedProcs: none spares the lookup
	jobsRunning sync.Map       // tenant+"\x00"+job id -> true while a goroutine runs the job
	jobWG       sync.WaitGroup // job goroutines
	limiter     *limiter       // nil without RateLimits
	admission   *admission     // nil without call caps
	runCaps     *admission     // nil without run caps
	resuming    atomic.Int64   // with run or call caps, the commands of Open's recovery not yet handled (see recover)
	starting    *startGate     // nil without a cap on starts in progress
	cluster     *cluster       // nil on one node
	defs        *defCache      // the definitions Start loaded; nil on a cluster
	countCache  *countCache    // the cockpit counters and newest run ids of tenants read lately; nil on a cluster

	// recordBufs holds buffers of stored run records for reuse (*[]byte),
	// runCommits the values of runs' commits (*runCommit).
	recordBufs, runCommits sync.Pool
	// forgets counts the runs workers forgot from memory (see
	// worker.forget), so a run read ahead of its command is known fresh.
	forgets atomic.Uint64
}

// New returns an engine; call Open to start it.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if cfg.Store == nil || cfg.Capabilities == nil || cfg.Processes == nil {
		return nil, errors.New("runengine: Config needs Store, Capabilities and Processes")
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{cfg: cfg, st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, ctx: ctx, cancel: cancel,
		runWork: make(chan callJob), stepTypes: cfg.StepTypes, listened: map[eventName]bool{}}
	lim, err := newLimiter(cfg.RateLimits)
	if err != nil {
		cancel()
		return nil, err
	}
	e.limiter = lim
	e.admission = newAdmission("call", cfg.MaxCallsPerTenant, cfg.MaxCallsPerProcess)
	e.starting = newStartGate(cfg.MaxStartingPerTenant, cfg.FairStartingPerTenant, cfg.Clock)
	if cfg.Cluster == nil {
		e.runCaps = newAdmission("run", cfg.MaxRunsPerTenant, cfg.MaxRunsPerProcess)
	}
	if cfg.Cluster != nil {
		if e.cluster, err = newCluster(e, *cfg.Cluster); err != nil {
			cancel()
			return nil, err
		}
	}
	e.commits = newCommitter(cfg.Store, cfg.MaxBatch, cfg.Observer, cfg.Failpoints, e.cluster)
	if e.starting != nil {
		e.commits.shared = e.starting.active
	}
	e.workers = make([]*worker, cfg.Workers)
	for i := range e.workers {
		e.workers[i] = newWorker(e)
	}
	e.sched = newScheduler(e)
	e.disp = newDispatcher(e)
	e.hub = newHub(cfg.SubscribeBuffer)
	cfg.Processes.OnChange(e.onProcessChange)
	if e.cluster == nil {
		e.defs = newDefCache(defCacheMax)
		cfg.Processes.OnChange(e.defs.changed)
		e.countCache = newCountCache(maxCountTenants)
		e.commits.counted = e.countCache.landed
	}
	return e, nil
}

// Open starts the workers, the scheduler and the dispatcher, and resumes
// the runs that were in flight.
func (e *Engine) Open(ctx context.Context) error {
	var err error
	e.openOnce.Do(func() {
		// The paused processes are known before a worker or the scheduler
		// starts: a timer of a paused process's run due at open, or a run
		// the restart advances, pauses instead of taking a step.
		var paused map[pausedRef]bool
		var jobs []jobRef
		if paused, jobs, err = e.openPauses(ctx); err != nil {
			return
		}
		if err = e.openRateWaits(ctx); err != nil {
			return
		}
		for _, w := range e.workers {
			e.wg.Add(1)
			go func() { defer e.wg.Done(); w.loop() }()
		}
		e.wg.Add(2)
		go func() { defer e.wg.Done(); e.sched.loop() }()
		go func() { defer e.wg.Done(); e.disp.loop() }()
		if e.cluster != nil {
			// The first lease round starts the jobs of the shards it takes,
			// from what openPauses read.
			e.cluster.opened = &sharedState{paused: paused, jobs: jobs}
			err = e.cluster.start(ctx) // resumes the runs of the shards it takes
			e.sched.wake()
			e.disp.kick()
			return
		}
		if err = e.recover(ctx); err == nil {
			for _, j := range jobs {
				e.startJob(j.tenant, j.id)
			}
		}
	})
	return err
}

// Close stops the engine gracefully: new commands are refused, in-flight
// calls get a short grace period, and everything queued is committed.
// Runs still in flight resume on the next Open.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	if e.closed {
		e.closeMu.Unlock()
		return nil
	}
	e.closed = true
	e.closeMu.Unlock()
	grace := time.Now().Add(e.cfg.Grace)
	waitUntil(&e.calls, grace)
	e.cancel()
	for _, w := range e.workers {
		w.stop()
	}
	e.sched.stop()
	e.disp.stop()
	e.wg.Wait()
	if e.cluster != nil {
		defer e.cluster.close() // once what is queued is committed
	}
	e.jobWG.Wait()
	e.saveBuckets()
	// A provider that ignores its cancelled context keeps its runner; Close
	// does not wait for it past the grace period.
	waitUntil(&e.runners, grace)
	e.commits.close()
	return nil
}

// Done is closed once the engine's Close has let its calls' grace period
// pass and stops its work: work beside the engine that reads its store
// (a cache filling in the background) ends with it, before the store
// closes.
func (e *Engine) Done() <-chan struct{} { return e.ctx.Done() }

// waitUntil waits for wg, or until deadline.
func waitUntil(wg *sync.WaitGroup, deadline time.Time) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// runnerIdle is how long a call runner waits for work before it exits.
const runnerIdle = 10 * time.Second

// callJob is work for a call runner.
type callJob interface{ run() }

// funcJob is a function as a callJob.
type funcJob func()

func (f funcJob) run() { f() }

// goCall runs fn, a capability call or a gate decision, on a call runner:
// an idle one when there is one, else a new one. Runners outlive their
// call so that a goroutine's stack, grown once by providers and schema
// validation, serves many calls; a slow call never holds up another.
func (e *Engine) goCall(fn func()) { e.goJob(funcJob(fn)) }

// addCall counts a call in flight, which Close waits for, and reports
// whether it did: none may be added once Close began (the run resumes on
// the next Open, or on the node taking its shard over).
func (e *Engine) addCall() bool {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed {
		return false
	}
	e.calls.Add(1)
	return true
}

// goJob is goCall of a callJob (a pendingCall is one, with no closure to
// make).
func (e *Engine) goJob(j callJob) {
	if !e.addCall() {
		return
	}
	select {
	case e.runWork <- j:
		return
	default:
	}
	e.runners.Add(1)
	go e.runCalls(j)
}

func (e *Engine) runCalls(j callJob) {
	defer e.runners.Done()
	idle := time.NewTimer(runnerIdle)
	defer idle.Stop()
	for {
		j.run()
		e.calls.Done()
		select {
		case j = <-e.runWork: // more work waits: no idle timer to arm
			continue
		default:
		}
		idle.Reset(runnerIdle)
		select {
		case j = <-e.runWork:
		case <-idle.C:
			return
		case <-e.ctx.Done():
			return
		}
	}
}

func (e *Engine) isClosed() bool {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	return e.closed
}

// workerFor returns the worker owning runID.
func (e *Engine) workerFor(runID string) *worker {
	return e.workers[runHash(runID)%uint32(len(e.workers))]
}

// runHash is runID's FNV-1a hash, without a hash.Hash to allocate.
func runHash(runID string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(runID); i++ {
		h ^= uint32(runID[i])
		h *= 16777619
	}
	return h
}

type versionKey struct {
	tenant, process string
	version         int
}

// version returns an immutable process version, cached.
func (e *Engine) version(tenant, processID string, v int) (*process.Version, error) {
	k := versionKey{tenant, processID, v}
	if pv, ok := e.versions.Load(k); ok {
		return pv.(*process.Version), nil
	}
	var pv *process.Version
	err := e.st.View(e.ctx, func(r store.Reader) error {
		var err error
		pv, err = e.cfg.Processes.GetVersion(r, tenant, processID, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.versions.Store(k, pv)
	return pv, nil
}

// recover re-enqueues the runs that were in flight: only the active index
// is read. Under run caps, no run waiting for a slot takes one until every
// run is resumed, so that the runs that held one before are counted first:
// then the free slots go to the waiting runs by priority, and the caps
// hold (see admission.resume). Under call caps likewise, the calls the
// resumed runs make again wait until every run is resumed, then go out by
// priority, not in the order the runs were resumed.
func (e *Engine) recover(ctx context.Context) error {
	resumes := e.runCaps != nil || e.admission != nil
	if resumes {
		if caps := e.runCaps; caps != nil {
			caps.resume()
		}
		if calls := e.admission; calls != nil {
			calls.resume()
		}
		e.resuming.Store(1) // until every command is routed
		defer e.resumedOne()
	}
	type ref struct{ tenant, id string }
	var refs []ref
	err := e.st.View(ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "active"), KeysOnly: true},
			func(key, _ []byte) error {
				parts, err := store.DecodeKey(key)
				if err != nil || len(parts) != 4 {
					return errors.Newf("runengine: bad active key %q", key)
				}
				refs = append(refs, ref{parts[2].(string), parts[3].(string)})
				return nil
			})
	})
	if err != nil {
		return errors.Wrap(err, "runengine: read active runs")
	}
	if resumes {
		e.resuming.Add(int64(len(refs)))
	}
	for _, rf := range refs {
		e.route(&command{kind: cmdAdvance, tenant: rf.tenant, runID: rf.id, resumes: resumes})
	}
	e.sched.wake()
	e.disp.kick()
	return nil
}

// resumedOne counts a command of Open's recovery handled (see recover):
// the run caps' waiting runs, and the calls waiting under the call caps,
// take the free slots after the last one.
func (e *Engine) resumedOne() {
	if e.resuming.Add(-1) == 0 {
		if caps := e.runCaps; caps != nil {
			caps.resumed()
		}
		if calls := e.admission; calls != nil {
			calls.resumed()
		}
	}
}

// errClosed is returned for commands sent after Close.
var errClosed = errs.Unavailablef("engine is closed")
