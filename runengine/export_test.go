package runengine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// CPUTime is the CPU time the process has used (see cpuTime), for the
// benchmarks outside the package.
func CPUTime() time.Duration { return cpuTime() }

// seedBatch is how many runs (each with its task) one seeding transaction
// writes: about 330 KB, well under Badger's limit of 15% of the default
// 8 MiB memtable.
const seedBatch = 250

// SeedTasks creates a process of one human-task step in st under tenant
// and writes n runs of it straight into st, each waiting on its open,
// unassigned task, with the index entries, active keys and counters the
// engine keeps for them, in large transactions: a scale fixture for
// benchmarks of lists (starting a million runs through the engine takes
// minutes). Runs and tasks are made one millisecond apart, so their ids
// order them. An engine opened on the store resumes every seeded run.
func SeedTasks(st store.Store, tenant string, n int) error {
	var gen ids.Generator
	t0 := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	ctx := context.Background()
	in, err := process.DecodeIn([]byte(`{"name": "Review invoices", "function": "finance", "trigger": {"type": "manual"},
	  "steps": [{"key": "review", "type": "human_task", "config": {"title": "Review ${subject.label}", "actions": ["approve", "reject"]}}]}`))
	if err != nil {
		return err
	}
	def, err := process.NewService(process.Config{Store: st}).Create(ctx, tenant, "usr_seed", in)
	if err != nil {
		return errors.Wrap(err, "create the seeded runs' process")
	}
	processID := def.ID
	for done := 0; done < n; {
		size := min(seedBatch, n-done)
		type rec struct {
			run          *Run
			task         *Task
			runRaw, tRaw []byte
		}
		batch := make([]rec, size)
		for i := range batch {
			at := t0.Add(time.Duration(done+i) * time.Millisecond)
			runID, taskID := gen.New("run", at), gen.New("tsk", at)
			step := "review"
			label := "INV-" + runID[len(runID)-6:]
			r := &Run{ID: runID, Tenant: tenant, ProcessID: processID, ProcessName: "Review invoices",
				ProcessVersion: 1, Function: "finance", Status: RunWaiting,
				Subject: Subject{Type: "invoice", Label: label}, Trigger: RunTrigger{Type: "manual"},
				CurrentStep: &step, StartedAt: at,
				Steps: []StepRun{{Key: step, Type: "human_task", Status: StepWaitingTask, StartedAt: &at, TaskID: &taskID}}}
			t := &Task{ID: taskID, RunID: runID, ProcessID: processID, ProcessName: r.ProcessName, StepKey: step,
				Title: "Review " + label, Subject: r.Subject, Actions: []string{"approve", "reject"},
				Status: TaskOpen, CreatedAt: at, Kind: "step"}
			runRaw, err := appendStoredRun(nil, r)
			if err != nil {
				return errors.Wrap(err, "encode run")
			}
			tRaw, err := json.Marshal(t)
			if err != nil {
				return errors.Wrap(err, "encode task")
			}
			batch[i] = rec{r, t, runRaw, tRaw}
		}
		err := st.Update(ctx, func(tx store.Txn) error {
			for _, b := range batch {
				if err := runs.PutOver(tx, tenant, nil, b.run, b.runRaw); err != nil {
					return err
				}
				if err := tasks.PutOver(tx, tenant, nil, b.task, b.tRaw); err != nil {
					return err
				}
			}
			return addCounters(tx, map[string]int64{
				counterKey(tenant, "inflight", "finance"): int64(size),
				counterKey(tenant, "waiting", "finance"):  int64(size),
				counterKey(tenant, "tasks-open", "*"):     int64(size),
			})
		})
		if err != nil {
			return errors.Wrapf(err, "seed runs %d to %d", done, done+size)
		}
		done += size
	}
	return nil
}

// addCounters adds to counters in tx, for seeding a store the engine has
// not opened.
func addCounters(tx store.Txn, counters map[string]int64) error {
	for k, inc := range counters {
		cur, err := readCounter(tx, []byte(k))
		if err != nil {
			return err
		}
		if err := tx.Set([]byte(k), binary.BigEndian.AppendUint64(nil, uint64(cur+inc))); err != nil {
			return err
		}
	}
	return nil
}

// Heard exposes heard: whether an event of tenant would be written to the
// outbox.
func (e *Engine) Heard(tenant, name string) bool { return e.heard(tenant, name) }

// Reminders is how many reminders a follow_up step has sent.
func (s StepRun) Reminders() int { return s.internal.Reminders }

// Checks is how many checks a monitor step has made.
func (s StepRun) Checks() int { return s.internal.Checks }

// SeedJob writes a running bulk job straight into st, as a close in the
// middle of a job leaves it: an engine opened on st goes on with it.
func SeedJob(st store.Store, tenant string, f JobFilter, action string) (string, error) {
	var gen ids.Generator
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	rec := &jobRecord{Job: Job{ID: gen.New("job", at), Type: "bulk", Action: action, Filter: f, Status: JobRunning,
		Errors: []JobError{}, CreatedAt: at, UpdatedAt: at}}
	err := st.Update(context.Background(), func(tx store.Txn) error {
		if err := jobs.Put(tx, tenant, rec); err != nil {
			return err
		}
		return tx.Set(jobsRunningKey(tenant, rec.ID), nil)
	})
	return rec.ID, err
}

// CommitUnder commits a write of key as a change of run runID: under the
// lease this node holds on the run's shard, when clustered.
func (e *Engine) CommitUnder(runID string, key []byte) error {
	return e.commits.commitWait(e.ctx, &delta{fence: e.fence(runID), apply: setKey(key, []byte("x"))})
}

// ClusterRound runs one of a cluster node's lease rounds now (as its
// upkeep loop does every LeaseTTL/3), on an engine opened or not.
func (e *Engine) ClusterRound(ctx context.Context) error { return e.cluster.round(ctx) }

// Queued is how many commands wait in the workers' queues.
func (e *Engine) Queued() int {
	n := 0
	for _, w := range e.workers {
		w.mu.Lock()
		n += len(w.q.ordered)
		for _, t := range w.q.active {
			n += len(t.q)
		}
		w.mu.Unlock()
	}
	return n
}

// CheckStoredRunDecoding decodes every run record of tenant in st (see
// storedRecordDiff) and returns how many it checked and a description
// of each record that is not of form 4, or decodes otherwise than its
// form-2 JSON or than itself written again.
func CheckStoredRunDecoding(st store.Store, tenant string) (int, []string, error) {
	var n int
	var bad []string
	err := st.View(context.Background(), func(rd store.Reader) error {
		return rd.Scan(store.ScanOptions{Prefix: store.Key(tenant, "r", runs.Name)}, func(key, raw []byte) error {
			n++
			parts, err := store.DecodeKey(key)
			if err != nil {
				return err
			}
			id, _ := parts[len(parts)-1].(string)
			if msg := storedRecordDiff(id, raw); msg != "" {
				bad = append(bad, msg)
			}
			return nil
		})
	})
	return n, bad, err
}

// CockpitFromStore is Cockpit's counter figures for v read from the store,
// as on a cluster (no lists): what the counters kept in memory must equal.
func (e *Engine) CockpitFromStore(ctx context.Context, tenant string, v Viewer) (*Cockpit, error) {
	c := &Cockpit{ByFunction: map[string]FunctionCounts{}, Daily: make([]DayCount, 30)}
	now := e.clock.Now().UTC()
	err := e.st.View(ctx, func(r store.Reader) error { return e.cockpitCounters(r, tenant, now, v, c) })
	return c, err
}

// CountTenantsHeld is how many tenants' cockpit counters the engine holds
// in memory.
func (e *Engine) CountTenantsHeld() int {
	if e.countCache == nil {
		return 0
	}
	return int(e.countCache.held.Load())
}

// SchedHeld reports how many due keys e's scheduler has in flight, and how
// many schedule ticks it holds for paused processes.
func SchedHeld(e *Engine) (inflight, held int) {
	s := e.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight), len(s.heldTicks)
}
