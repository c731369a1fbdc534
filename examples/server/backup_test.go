package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupRestoreFlags: -backup writes a backup of a data directory and
// -restore reads it into a new one, which serves the same records and
// sessions; a restore into a directory in use is refused.
func TestBackupRestoreFlags(t *testing.T) {
	bin := buildServer(t)
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, bin, dir, "original")
	var sess struct {
		Token string `json:"token"`
	}
	newClient(srv.base, "").must(t, "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": "ten_bk"}, http.StatusCreated, &sess)
	c := newClient(srv.base, sess.Token)
	var proc, run record
	c.must(t, "POST", "/v1/processes", json.RawMessage(taskProcess), http.StatusCreated, &proc)
	c.must(t, "POST", "/v1/processes/"+proc.ID+"/start", map[string]any{"subject": map[string]any{"type": "x", "label": "y"}}, http.StatusCreated, &run)
	srv.kill()

	file := filepath.Join(t.TempDir(), "bas.backup")
	if out, err := exec.Command(bin, "-data", dir, "-backup", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "backed up") {
		t.Fatalf("-backup: %v\n%s", err, out)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := exec.Command(bin, "-data", restored, "-restore", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "restored") {
		t.Fatalf("-restore: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "-data", dir, "-restore", file).CombinedOutput(); err == nil || !strings.Contains(string(out), "not empty") {
		t.Fatalf("-restore into the original directory: %v\n%s", err, out)
	}
	srv = startServer(t, bin, restored, "restored")
	c = newClient(srv.base, sess.Token)
	c.must(t, "GET", "/v1/processes/"+proc.ID, nil, http.StatusOK, nil)
	var got record
	c.must(t, "GET", "/v1/process-runs/"+run.ID, nil, http.StatusOK, &got)
	if got.Status != "waiting" {
		t.Errorf("restored run is %s, want waiting", got.Status)
	}
}
