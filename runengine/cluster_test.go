package runengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// killable is one node's view of a shared store: kill makes every later
// call fail, as if the node's process had died (calls already under way
// end as the store ends them).
type killable struct {
	store.Store
	dead atomic.Bool
}

var errKilled = errs.Unavailablef("node killed")

func (k *killable) View(ctx context.Context, fn func(store.Reader) error) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Store.View(ctx, fn)
}

func (k *killable) Update(ctx context.Context, fn func(store.Txn) error) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Store.Update(ctx, fn)
}

// Close leaves the shared store open (the test closes it).
func (k *killable) Close() error { return nil }

// recorder is a provider of test.step, shared by every node: it records
// each call's idempotency key, and blocks the calls of a node told to.
type recorder struct {
	node  string
	block chan struct{} // nil: answer at once
	mu    *sync.Mutex
	keys  map[string]map[string]int // run/step -> idempotency key -> calls
}

func newRecorders() (*sync.Mutex, map[string]map[string]int) {
	return &sync.Mutex{}, map[string]map[string]int{}
}

func (p *recorder) Info() capability.Info {
	return capability.Info{ID: "test.cluster", Name: "Cluster test", Kind: capability.KindBuiltin, Capabilities: []string{"test.step"}}
}

func (p *recorder) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.step", Name: "Step", Description: "Records its call.", Args: obj, Result: obj}}
}

func (p *recorder) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := c.IdempotencyKey[:strings.LastIndexByte(c.IdempotencyKey, '/')] // run/step
	if p.keys[k] == nil {
		p.keys[k] = map[string]int{}
	}
	p.keys[k][c.IdempotencyKey]++
	return json.RawMessage(`{}`), nil
}

// node is one engine of a cluster test.
type node struct {
	st    *killable
	procs *process.Service
	eng   *runengine.Engine
}

type nodeConfig struct {
	id       string
	lease    clock.Clock // the lease clock
	clock    clock.Clock // the engine's clock
	prov     capability.Provider
	shards   int
	ttl      time.Duration
	onFinish func(tenant, runID string, status runengine.RunStatus)
	logger   *slog.Logger
	gate     runengine.Gate // nil: every call automatic
}

func openNode(t *testing.T, base store.Store, nc nodeConfig) *node {
	t.Helper()
	n := newNode(t, base, nc)
	if err := n.eng.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	return n
}

// newNode makes a node whose engine is not opened yet.
func newNode(t *testing.T, base store.Store, nc nodeConfig) *node {
	t.Helper()
	n := &node{st: &killable{Store: base}}
	n.procs = process.NewService(process.Config{Store: n.st, Clock: nc.clock})
	reg := registry.New(registry.Config{Store: n.st, Clock: nc.clock})
	if err := reg.Register(nc.prov); err != nil {
		t.Fatal(err)
	}
	var gate runengine.Gate = &autoGate{auto: true}
	if nc.gate != nil {
		gate = nc.gate
	}
	var err error
	n.eng, err = runengine.New(runengine.Config{Store: n.st, Clock: nc.clock, Capabilities: reg, Processes: n.procs,
		Gate: gate, OnFinish: nc.onFinish, Grace: time.Millisecond, Logger: nc.logger,
		Cluster: &runengine.ClusterConfig{NodeID: nc.id, Shards: nc.shards, LeaseTTL: nc.ttl, Clock: nc.lease}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.eng.Close() })
	return n
}

// kill makes the node's store refuse everything, then closes its engine:
// it neither renews nor releases its leases, which the others take over
// at their expiry.
func (n *node) kill() {
	n.st.dead.Store(true)
	_ = n.eng.Close()
}

func chainProcess(t *testing.T, procs *process.Service, trigger string, steps int) *process.Definition {
	t.Helper()
	var parts []string
	for i := range steps {
		parts = append(parts, `{"key":"s`+string(rune('1'+i))+`","type":"execute","capability":"test.step","config":{"args":{}}}`)
	}
	raw := `{"name":"Chain","function":"ops","trigger":` + trigger + `,"steps":[` + join(parts) + `]}`
	in, err := process.DecodeIn([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	def, err := procs.Create(context.Background(), tenant, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

func join(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ","
		}
		out += p
	}
	return out
}

func sharedBadger(t *testing.T) store.Store {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// newsGate records GateRequest.New of every request.
type newsGate struct {
	autoGate
	mu   sync.Mutex
	news []bool
}

func (g *newsGate) Decide(ctx context.Context, req runengine.GateRequest) (runengine.GateDecision, error) {
	g.mu.Lock()
	g.news = append(g.news, req.New)
	g.mu.Unlock()
	return g.autoGate.Decide(ctx, req)
}

// TestClusterGateRequestsAreNotNew: on a cluster a run's first gate
// request is never marked new (GateRequest.New lets the gate write its
// answer without looking): a node that lost the run's shard may still ask
// after the new owner did, and the gate's answers are not fenced.
func TestClusterGateRequestsAreNotNew(t *testing.T) {
	t.Parallel()
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	gate := &newsGate{autoGate: autoGate{auto: true}}
	finished := make(chan string, 1)
	a := openNode(t, base, nodeConfig{id: "a", lease: lc, clock: ec, prov: &recorder{node: "a", mu: mu, keys: keys},
		shards: 8, ttl: 10 * time.Second, gate: gate, onFinish: func(_, id string, _ runengine.RunStatus) { finished <- id }})
	def := chainProcess(t, a.procs, `{"type":"manual"}`, 1)
	r, err := a.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	if id := testwait.Recv(t, finished, "the run finished"); id != r.ID {
		t.Fatalf("finished %s, want %s", id, r.ID)
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if diff := cmp.Diff([]bool{false}, gate.news); diff != "" {
		t.Errorf("gate requests' New on a cluster (-want +got):\n%s", diff)
	}
}

// TestClusterLeaseExpiry: a node that dies keeps its shards until its
// leases expire (on the lease clock); then the live node takes them over
// and finishes the dead node's run, repeating its call in flight with the
// same idempotency key.
func TestClusterLeaseExpiry(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	block := make(chan struct{})
	defer close(block)
	finished := make(chan string, 2)
	a := openNode(t, base, nodeConfig{id: "a", lease: lc, clock: ec, prov: &recorder{node: "a", block: block, mu: mu, keys: keys},
		shards: 8, ttl: ttl})
	if got := len(a.eng.Shards()); got != 8 {
		t.Fatalf("a alone holds %d shards, want 8", got)
	}
	def := chainProcess(t, a.procs, `{"type":"manual"}`, 2)
	r, err := a.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	a.kill() // with its first call in flight (blocked)

	b := openNode(t, base, nodeConfig{id: "b", lease: lc, clock: ec, prov: &recorder{node: "b", mu: mu, keys: keys},
		shards: 8, ttl: ttl, onFinish: func(_, id string, _ runengine.RunStatus) { finished <- id }})
	if got := b.eng.Shards(); len(got) != 0 {
		t.Fatalf("b took shards %v while a's leases had not expired", got)
	}
	// A run started on b, which holds no shard yet, is written for its
	// owner to advance.
	handed, err := b.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	armed := func() bool { return lc.Timers() == 1 } // b's next lease round
	waitFor(t, "b's lease round is armed", armed)
	lc.Advance(ttl / 2)
	waitFor(t, "b's lease round ran and is armed again", armed)
	if got := b.eng.Shards(); len(got) != 0 {
		t.Fatalf("b took shards %v before a's leases expired", got)
	}
	lc.Advance(ttl / 2)
	waitFor(t, "b takes every shard over", func() bool { return len(b.eng.Shards()) == 8 })
	ended := map[string]bool{}
	for range 2 {
		select {
		case id := <-finished:
			ended[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("b finished only %v of a's run %s and the handed-over %s", ended, r.ID, handed.ID)
		}
	}
	for _, id := range []string{r.ID, handed.ID} {
		got, err := b.eng.GetRun(t.Context(), tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != runengine.RunCompleted || !ended[id] {
			t.Fatalf("run %s is %s (finished: %v), want completed", id, got.Status, ended[id])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]map[string]int{
		r.ID + "/s1":      {r.ID + "/s1/1": 1},
		r.ID + "/s2":      {r.ID + "/s2/1": 1},
		handed.ID + "/s1": {handed.ID + "/s1/1": 1},
		handed.ID + "/s2": {handed.ID + "/s2/1": 1},
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Fatalf("calls by idempotency key (-want +got):\n%s", diff)
	}
}

// TestClusterGainedShardKeepsRunsMadeSince: a start that reaches a node's
// worker after the node took the run's shard over, but before the worker
// drops what it held of the shards that changed hands, is kept: its first
// commit lands after the takeover read the shard's running runs (so the
// takeover does not resume it), and its calls go out once that commit is
// durable, answering to the entry that made them. The node finishes the
// run. (Dropped, the run stayed running for good: the calls' results met a
// fresh read of the run, which took them for stale.)
func TestClusterGainedShardKeepsRunsMadeSince(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	finished := make(chan string, 1)

	// Node a holds the only shard, then dies.
	a, err := lease.New(lease.Config{Store: base, Clock: lc, Owner: "a", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Balance(t.Context(), 1, nil); err != nil {
		t.Fatal(err)
	}
	b := newNode(t, base, nodeConfig{id: "b", lease: lc, clock: ec, prov: &recorder{node: "b", mu: mu, keys: keys},
		shards: 1, ttl: ttl, onFinish: func(_, id string, _ runengine.RunStatus) { finished <- id }})
	def := chainProcess(t, b.procs, `{"type":"manual"}`, 1)

	// A start comes to b, which holds no shard yet; its workers have not
	// begun, so it waits in the queue.
	started := make(chan *runengine.Run, 1)
	go func() {
		r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
		if err != nil {
			t.Error(err)
		}
		started <- r
	}()
	waitFor(t, "the start is queued", func() bool { return b.eng.Queued() == 1 })

	// a's leases expire; b takes the shard over (and queues the drop of
	// what it held of it behind the start), finding no running run.
	lc.Advance(ttl)
	if err := b.eng.ClusterRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := b.eng.Shards(); len(got) != 1 {
		t.Fatalf("b holds shards %v, want the one", got)
	}
	if err := b.eng.Open(t.Context()); err != nil { // the worker: the start, then the drop
		t.Fatal(err)
	}
	r := testwait.Recv(t, started, "the queued start was answered")
	if r == nil {
		t.FailNow()
	}
	select {
	case id := <-finished:
		if id != r.ID {
			t.Fatalf("run %s finished, want %s", id, r.ID)
		}
	case <-time.After(10 * time.Second):
		got, err := b.eng.GetRun(t.Context(), tenant, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Fatalf("run %s is still %s with its step %s", r.ID, got.Status, got.Steps[0].Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]map[string]int{r.ID + "/s1": {r.ID + "/s1/1": 1}}, keys); diff != "" {
		t.Fatalf("calls by idempotency key (-want +got):\n%s", diff)
	}
}

// TestClusterInboxAnswerLeftBehindExpires: a node forwards a command to
// the run's owner and dies before it reads the owner's refusal; the
// refusal (an answer key) is removed by the node dispatching the outbox
// once it is a minute old on the lease clock, and not before.
func TestClusterInboxAnswerLeftBehindExpires(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	count := func(prefix []byte, token string) int {
		n := 0
		err := base.View(t.Context(), func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(k, _ []byte) error {
				if strings.Contains(string(k), token) {
					n++
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	inbox := func() int { return count(store.Key(store.System, "due"), "inbox:") }
	answers := func() int { return count(store.Key(store.System, "inbox-answer"), "") }

	// a holds the shard but is not running yet; b forwards to it.
	a := newNode(t, base, nodeConfig{id: "a", lease: lc, clock: ec, prov: &recorder{node: "a", mu: mu, keys: keys},
		shards: 1, ttl: ttl})
	if err := a.eng.ClusterRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := openNode(t, base, nodeConfig{id: "b", lease: lc, clock: ec, prov: &recorder{node: "b", mu: mu, keys: keys},
		shards: 1, ttl: ttl})
	def := chainProcess(t, b.procs, `{"type":"manual"}`, 1)
	r, err := b.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	resumed := make(chan error, 1)
	go func() {
		_, err := b.eng.Resume(context.Background(), tenant, r.ID, "usr_test") // refused: the run is not paused
		resumed <- err
	}()
	waitFor(t, "b forwards the resume to a's inbox", func() bool { return inbox() == 1 })
	b.kill()
	if err := testwait.Recv(t, resumed, "the killed node's resume returned"); err == nil {
		t.Fatal("the killed node answered its resume")
	}

	// a applies the command, refuses it, and answers b, which is gone.
	if err := a.eng.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a answers the forwarded resume", func() bool { return inbox() == 0 && answers() == 1 })
	armed := func() bool { return lc.Timers() == 1 } // a's next lease round
	waitFor(t, "a's lease round is armed", armed)
	lc.Advance(ttl / 3)
	waitFor(t, "a's lease round ran and is armed again", armed)
	if got := answers(); got != 1 {
		t.Fatalf("%d answers after a round a third of the lease long, want the 1 kept", got)
	}
	lc.Advance(time.Minute)
	waitFor(t, "a removes the answer left behind", func() bool { return answers() == 0 })
}

// TestClusterSubscribeSeesEveryNode: a subscription on any node of a
// cluster delivers every node's events, each once: the node dispatching
// the outbox copies them to the feed the other nodes read.
func TestClusterSubscribeSeesEveryNode(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	a := openNode(t, base, nodeConfig{id: "a", lease: lc, clock: ec, prov: &recorder{node: "a", mu: mu, keys: keys},
		shards: 4, ttl: ttl}) // it holds every shard and dispatches the outbox
	b := openNode(t, base, nodeConfig{id: "b", lease: lc, clock: ec, prov: &recorder{node: "b", mu: mu, keys: keys},
		shards: 4, ttl: ttl})
	def := chainProcess(t, a.procs, `{"type":"manual"}`, 1)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type seen struct{ run, name string }
	subscribe := func(n *node) <-chan seen {
		out := make(chan seen, 16)
		seq := n.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant, Names: []string{"process.run.*"}})
		go func() {
			for nt, err := range seq {
				if err != nil {
					return
				}
				out <- seen{nt.Event.Data["run_id"].(string), nt.Event.Name}
			}
		}()
		return out
	}
	onA, onB := subscribe(a), subscribe(b)
	waitFor(t, "b says it has a subscriber", func() bool {
		err := base.View(t.Context(), func(r store.Reader) error {
			_, err := r.Get(store.Key(store.System, "feed-sub", tenant, "b"))
			return err
		})
		return err == nil
	})

	// One run started on a, one on b (which holds no shard: a runs it).
	r1, err := a.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := map[seen]int{{r1.ID, "process.run.started"}: 1, {r1.ID, "process.run.completed"}: 1,
		{r2.ID, "process.run.started"}: 1, {r2.ID, "process.run.completed"}: 1}
	for name, ch := range map[string]<-chan seen{"a": onA, "b": onB} {
		got := map[seen]int{}
		for range len(want) {
			select {
			case s := <-ch:
				got[s]++
			case <-time.After(10 * time.Second):
				t.Fatalf("a subscriber on %s got %v, want %v", name, got, want)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events a subscriber on %s got (-want +got):\n%s", name, diff)
		}
	}
}

// TestClusterStartKeyActsOnceAcrossNodes: starts with one idempotency key
// made on two nodes at once start one run: the node whose commit comes
// second finds the key taken in its transaction and answers with the
// other's run.
func TestClusterStartKeyActsOnceAcrossNodes(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	var nodes [2]*node
	for i, id := range []string{"a", "b"} {
		nodes[i] = openNode(t, base, nodeConfig{id: id, lease: lc, clock: ec, prov: &recorder{node: id, mu: mu, keys: keys},
			shards: 4, ttl: ttl})
	}
	def := chainProcess(t, nodes[0].procs, `{"type":"manual"}`, 1)
	const n = 16
	var ids [n][2]string
	var wg sync.WaitGroup
	for k := range n {
		for i, nd := range nodes {
			wg.Go(func() {
				r, err := nd.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
					IdempotencyKey: fmt.Sprintf("start-%d", k)})
				if err != nil {
					t.Errorf("start %d on %d: %v", k, i, err)
					return
				}
				ids[k][i] = r.ID
			})
		}
	}
	testwait.Wait(t, &wg, "the starts on both nodes returned")
	for k, pair := range ids {
		if pair[0] != pair[1] {
			t.Errorf("key start-%d: the nodes started runs %s and %s, want one", k, pair[0], pair[1])
		}
	}
}

// TestClusterFencing: a node whose shard lease another owner took over
// (it stalled past the expiry and has not noticed) has its commit refused
// in the transaction, writes nothing, and drops the shard; a start it
// then gets is written for the owner to advance, and makes no call here.
func TestClusterFencing(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	a := openNode(t, base, nodeConfig{id: "a", lease: lc, clock: ec, prov: &recorder{node: "a", mu: mu, keys: keys},
		shards: 4, ttl: ttl})
	def := chainProcess(t, a.procs, `{"type":"manual"}`, 1)

	// Another node, whose clock says a's leases expired, takes every shard.
	thiefClock := clock.NewFake(t0.Add(ttl + time.Second))
	thief, err := lease.New(lease.Config{Store: base, Clock: thiefClock, Owner: "thief", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		l, err := thief.Acquire(t.Context(), lease.ShardName(i))
		if err != nil {
			t.Fatal(err)
		}
		if l.Token != 2 {
			t.Fatalf("thief's token %d, want 2", l.Token)
		}
	}
	if got := len(a.eng.Shards()); got != 4 {
		t.Fatalf("a believes it holds %d shards, want 4 (it has not noticed)", got)
	}
	key := store.Key("fencing-test", "write")
	err = a.eng.CommitUnder("run_x", key)
	if !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a commit of the stale owner: %v, want lease.ErrFenced", err)
	}
	if err := base.View(t.Context(), func(r store.Reader) error {
		_, err := r.Get(key)
		return err
	}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused commit's write: %v, want none", err)
	}
	waitFor(t, "a drops the shards it lost", func() bool { return len(a.eng.Shards()) == 0 })

	// A start on a is now handed to the owner: a writes the run, and
	// leaves it to the thief (which never comes).
	r, err := a.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != runengine.RunRunning || r.Steps[0].Status != runengine.StepPending {
		t.Fatalf("the handed-over run is %s with its step %s, want running and pending", r.Status, r.Steps[0].Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 0 {
		t.Fatalf("the stale owner made calls: %v", keys)
	}
}

// TestClusterCountersPerNode: each node keeps its own share of the
// tenant's counters (no two nodes' commits write one key), and the
// cockpit sums the shares.
func TestClusterCountersPerNode(t *testing.T) {
	t.Parallel()
	base := sharedBadger(t)
	ec := clock.NewFake(t0)
	mu, keys := newRecorders()
	finished := make(chan string, 2)
	onFinish := func(_, id string, _ runengine.RunStatus) { finished <- id }
	var def *process.Definition
	for _, id := range []string{"a", "b"} {
		// Leases of 10s on the real clock: one of 1s lapses when a loaded
		// machine delays a renewal. (b opens once a released them.)
		n := openNode(t, base, nodeConfig{id: id, lease: clock.Real{}, clock: ec, prov: &recorder{node: id, mu: mu, keys: keys},
			shards: 4, ttl: 10 * time.Second, onFinish: onFinish})
		waitFor(t, id+" holds every shard", func() bool { return len(n.eng.Shards()) == 4 })
		if def == nil {
			def = chainProcess(t, n.procs, `{"type":"manual"}`, 2)
		}
		if _, err := n.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Fatalf("node %s's run did not finish", id)
		}
		if id == "a" {
			if err := n.eng.Close(); err != nil { // releases its leases
				t.Fatal(err)
			}
		} else {
			c, err := n.eng.Cockpit(t.Context(), tenant, runengine.Viewer{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			completed := 0
			for _, d := range c.Daily {
				completed += d.Completed
			}
			if completed != 2 || c.Running != 0 {
				t.Errorf("cockpit: %d completed, %d running; want 2, 0", completed, c.Running)
			}
		}
	}
	shares := map[any]int{}
	err := base.View(t.Context(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(tenant, "count")}, func(k, _ []byte) error {
			parts, err := store.DecodeKey(k)
			if err != nil {
				return err
			}
			shares[parts[len(parts)-1]]++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(shares) != 2 || shares["a"] == 0 || shares["b"] == 0 {
		t.Fatalf("counter keys end in %v, want every one in a node id (a or b)", shares)
	}
}

// TestClusterDecideKeepsAliases: a decision forwarded to the node owning
// the run keeps the decider's aliases, so separation of duties holds
// whichever node takes it: the requester's other name is refused on both
// nodes, and another person's approval goes through.
func TestClusterDecideKeepsAliases(t *testing.T) {
	t.Parallel()
	base := sharedBadger(t)
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	var nodes [2]*node
	for i, id := range []string{"a", "b"} {
		nodes[i] = openNode(t, base, nodeConfig{id: id, lease: lc, clock: ec, prov: &recorder{node: id, mu: mu, keys: keys},
			shards: 4, ttl: 10 * time.Second})
	}
	in, err := process.DecodeIn([]byte(`{"name":"Pay","trigger":{"type":"manual"},"steps":[{"key":"pay","type":"execute",
		"capability":"test.step","config":{"args":{}},"controls":{"require_approval":true,"separate_duties":true}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := nodes[0].procs.Create(t.Context(), tenant, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	r, err := nodes[0].eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID, Actor: "key_alice"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err = nodes[1].eng.WaitRunUntil(ctx, tenant, r.ID, func(r *runengine.Run) bool { return r.Steps[0].ApprovalID != nil })
	if err != nil {
		t.Fatal(err)
	}
	for i, nd := range nodes {
		_, err := nd.eng.Decide(t.Context(), runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[0].ApprovalID,
			Approve: true, Actor: "alice", Aliases: []string{"key_alice", "alice"}})
		if !errors.Is(err, errs.Forbidden) {
			t.Errorf("the requester's session deciding on node %d: %v, want forbidden", i, err)
		}
	}
	d, err := nodes[1].eng.Decide(t.Context(), runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[0].ApprovalID,
		Approve: true, Actor: "bob", Aliases: []string{"bob"}})
	if err != nil || d.Approval.Status != runengine.ApprovalApproved {
		t.Fatalf("another person's approval: %+v, %v", d, err)
	}
}
