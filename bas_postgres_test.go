package bas_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// A workspace keeps its state in PostgreSQL: a process runs to completion
// there, and the run is there after the workspace is opened again.
func TestWorkspaceOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	schema := pgtest.Schema(t, dsn)
	ctx := t.Context()
	open := func() *bas.Workspace {
		ws, err := bas.Open(ctx, bas.Options{PostgresDSN: dsn, PostgresSchema: schema, Providers: []bas.Provider{rates{}}})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return ws
	}
	ws := open()
	in, err := process.DecodeIn([]byte(`{"name": "Convert thrice", "trigger": {"type": "manual"}, "steps": [
	  {"key": "a", "type": "execute", "capability": "fx.convert", "config": {"args": {"usd_cents": 100}}},
	  {"key": "b", "type": "execute", "capability": "fx.convert", "config": {"args": {"usd_cents": 1000}}},
	  {"key": "c", "type": "execute", "capability": "fx.convert", "config": {"args": {"usd_cents": 10000}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := ws.Processes().Create(ctx, "acme", "usr_ann", in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	started, err := ws.Engine().Start(ctx, runengine.StartParams{Tenant: "acme", ProcessID: def.ID,
		Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_ann"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	run := awaitFinished(t, ws, started.ID)
	outputs := func(run *runengine.Run) []string {
		var out []string
		for _, s := range run.Steps {
			b, _ := json.Marshal(s.Output)
			out = append(out, s.Key+" "+string(s.Status)+" "+string(b))
		}
		return out
	}
	want := []string{`a completed {"eur_cents":92}`, `b completed {"eur_cents":920}`, `c completed {"eur_cents":9200}`}
	if run.Status != "completed" {
		t.Errorf("run status = %s, want completed", run.Status)
	}
	if diff := cmp.Diff(want, outputs(run)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if err := ws.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	ws = open()
	defer ws.Close()
	again, err := ws.Engine().GetRun(ctx, "acme", started.ID)
	if err != nil {
		t.Fatalf("GetRun after reopening: %v", err)
	}
	if diff := cmp.Diff(want, outputs(again)); again.Status != "completed" || diff != "" {
		t.Errorf("run after reopening: status %s, steps (-want +got):\n%s", again.Status, diff)
	}
}

// awaitFinished waits for the run to finish (WaitRunUntil wakes on each
// committed change of it), for at most 30 seconds, approving each step that
// waits for approval (a new capability is not yet trusted to run unattended).
func awaitFinished(t *testing.T, ws *bas.Workspace, id string) *runengine.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		run, err := ws.WaitRunUntil(ctx, "acme", id, func(r *bas.Run) bool {
			return r.Finished() || approvalID(r) != ""
		})
		if err != nil {
			t.Fatalf("run %s never finished: %v (%+v)", id, err, run)
		}
		if run.Finished() {
			return run
		}
		// A decision that meets the run's shard moving (503) is sent
		// again, as a client does.
		_, err = ws.Decide(ctx, bas.DecideParams{Tenant: "acme", ApprovalID: approvalID(run), Approve: true, Actor: "usr_bob"})
		switch {
		case errors.Is(err, bas.ErrUnavailable):
			time.Sleep(50 * time.Millisecond) // a client's pause before it tries again
		case err != nil:
			t.Fatalf("Decide: %v", err)
		}
	}
}

// approvalID is the approval a step of r waits on, or "".
func approvalID(r *bas.Run) string {
	for _, s := range r.Steps {
		if s.Status == "waiting_approval" && s.ApprovalID != nil {
			return *s.ApprovalID
		}
	}
	return ""
}

func TestPostgresOptions(t *testing.T) {
	t.Parallel()
	_, err := bas.Open(context.Background(), bas.Options{InMemory: true, PostgresDSN: "postgres://h/db"})
	if err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("Open with InMemory and a DSN: %v, want a refusal", err)
	}
	_, err = bas.Open(context.Background(), bas.Options{PostgresDSN: "postgres://u:pw@h:bad/db"})
	if err == nil || !strings.Contains(err.Error(), "not a valid PostgreSQL connection string") {
		t.Errorf("Open with a bad DSN: %v, want a refusal", err)
	}
}

// A second workspace on the same database waits as a standby, and takes
// over when the first closes.
func TestPostgresStandby(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	schema := pgtest.Schema(t, dsn)
	first, err := bas.Open(t.Context(), bas.Options{PostgresDSN: dsn, PostgresSchema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	// The second gives up once it says it waits.
	impatient, cancel := context.WithCancel(t.Context())
	defer cancel()
	logger := slog.New(onMessage{"waiting for the store's lease", cancel})
	if _, err := bas.Open(impatient, bas.Options{PostgresDSN: dsn, PostgresSchema: schema, Logger: logger}); err == nil || !strings.Contains(err.Error(), "held by") {
		t.Fatalf("a second workspace that gave up waiting: %v, want the lease held by the first", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := bas.Open(t.Context(), bas.Options{PostgresDSN: dsn, PostgresSchema: schema})
	if err != nil {
		t.Fatalf("Open after the first closed: %v", err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
}

// onMessage is a slog handler that calls fn on a record whose message
// starts with msg.
type onMessage struct {
	msg string
	fn  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.msg) {
		h.fn()
	}
	return nil
}
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onMessage) WithGroup(string) slog.Handler      { return h }
