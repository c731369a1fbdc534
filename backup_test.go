package bas_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// TestBackupUnderLoadRestores: a backup taken while runs start in two
// tenants restores into an empty directory, and the restored workspace
// has every run acknowledged before the backup began, in the state it was.
func TestBackupUnderLoadRestores(t *testing.T) {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	in, err := process.DecodeIn([]byte(`{"name": "Review", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look at ${subject.label}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	procs := map[string]string{}
	for _, tenant := range []string{"acme", "beta"} {
		def, err := ws.Processes().Create(ctx, tenant, "usr_ann", in)
		if err != nil {
			t.Fatal(err)
		}
		procs[tenant] = def.ID
	}
	var (
		mu    sync.Mutex
		acked = map[string]string{} // run id -> tenant
		stop  = make(chan struct{})
		acks  = make(chan struct{}, 10000) // one per run acknowledged by the load
		wg    sync.WaitGroup
	)
	start := func(tenant string, i int) {
		r, err := ws.Engine().Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: procs[tenant],
			Subject: runengine.Subject{Type: "invoice", Label: tenant + "-" + string(rune('a'+i%26))}, Actor: "usr_ann"})
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		acked[r.ID] = tenant
		mu.Unlock()
	}
	for i := range 20 {
		start([]string{"acme", "beta"}[i%2], i)
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start([]string{"acme", "beta"}[w%2], i)
				acks <- struct{}{}
			}
		}()
	}
	for range 40 { // the load is going
		testwait.Recv(t, acks, "the load acknowledged 40 runs")
	}
	mu.Lock()
	before := make(map[string]string, len(acked))
	for id, tenant := range acked {
		before[id] = tenant
	}
	mu.Unlock()
	var backup bytes.Buffer
	if err := ws.Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	for range 20 { // and went on after the backup
		testwait.Recv(t, acks, "the load acknowledged 20 runs after the backup")
	}
	close(stop)
	testwait.Wait(t, &wg, "the load stopped")
	mu.Lock()
	total := len(acked)
	mu.Unlock()
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs acknowledged before the backup, %d in all; backup of %d bytes", len(before), total, backup.Len())

	dir := filepath.Join(t.TempDir(), "restored")
	if err := bas.Restore(ctx, bytes.NewReader(backup.Bytes()), dir); err != nil {
		t.Fatal(err)
	}
	restored, err := bas.Open(ctx, bas.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	for id, tenant := range before {
		r, err := restored.Engine().GetRun(ctx, tenant, id)
		if err != nil {
			t.Errorf("run %s of %s acknowledged before the backup: %v", id, tenant, err)
			continue
		}
		if r.Status != "waiting" || r.Steps[0].TaskID == nil {
			t.Errorf("run %s restored as %s", id, r.Status)
		}
	}
	// The restored runs go on: a task completes and its run finishes.
	for id, tenant := range before {
		r, _ := restored.Engine().GetRun(ctx, tenant, id)
		if _, err := restored.Engine().CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant,
			TaskID: *r.Steps[0].TaskID, Action: "complete", Actor: "usr_ann"}); err != nil {
			t.Fatalf("complete a restored task: %v", err)
		}
		break
	}
}

// TestRestoreRefusesBadInput: a restore needs an empty directory and a
// whole, unchanged backup; otherwise it fails and leaves the directory
// empty.
func TestRestoreRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := process.DecodeIn([]byte(`{"name": "P", "trigger": {"type": "manual"}, "steps": [{"key": "t", "type": "human_task", "config": {"title": "T"}}]}`))
	if _, err := ws.Processes().Create(ctx, "acme", "usr_ann", in); err != nil {
		t.Fatal(err)
	}
	var good bytes.Buffer
	if err := ws.Backup(ctx, &good); err != nil {
		t.Fatal(err)
	}
	_ = ws.Close()
	b := good.Bytes()
	flipped := bytes.Clone(b)
	flipped[len(flipped)/2] ^= 1
	tests := map[string][]byte{
		"empty":         nil,
		"not a backup":  []byte("hello, world"),
		"broken off":    b[:len(b)/2],
		"no checksum":   b[:len(b)-10],
		"a flipped bit": flipped,
		"trailing junk": append(bytes.Clone(b[:len(b)-32]), bytes.Repeat([]byte{0}, 32)...),
	}
	for name, data := range tests {
		dir := filepath.Join(t.TempDir(), "r")
		if err := bas.Restore(ctx, bytes.NewReader(data), dir); err == nil {
			t.Errorf("%s: restored", name)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: %d files left in the directory", name, len(entries))
		}
	}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := bas.Restore(ctx, bytes.NewReader(b), full); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore into a full directory: %v", err)
	}
	if err := bas.Restore(ctx, bytes.NewReader(b), filepath.Join(t.TempDir(), "ok")); err != nil {
		t.Errorf("the good backup: %v", err)
	}
}
