package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/pgtest"
)

// TestServerOnPostgres runs the server with -store on PostgreSQL, kills it
// with SIGKILL under a load of run starts, and checks on restart (a new
// process on the same database, which waits until the dead one's lease
// lapses) that every acknowledged run completes and sends its one message.
func TestServerOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	storeURL := u.String()
	bin := buildServer(t)

	// The -data directory stays unused: state is in PostgreSQL.
	srv := startServer(t, bin, t.TempDir(), "first", "-store", storeURL)
	anon := newClient(srv.base, "")
	var sess struct {
		Token string `json:"token"`
	}
	anon.must(t, "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": "ten_pg"}, http.StatusCreated, &sess)
	c := newClient(srv.base, sess.Token)
	var proc record
	c.must(t, "POST", "/v1/processes", json.RawMessage(chaseProcess), http.StatusCreated, &proc)

	const starters, each = 4, 25
	var (
		mu   sync.Mutex
		runs []string
		wg   sync.WaitGroup
	)
	for g := range starters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var r record
				body := map[string]any{"subject": map[string]any{"type": "delivery", "label": fmt.Sprintf("PO-%d-%d", g, i)}}
				c.must(t, "POST", "/v1/processes/"+proc.ID+"/start", body, http.StatusCreated, &r)
				mu.Lock()
				runs = append(runs, r.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	srv.kill() // runs are now in every state
	if srv.raced() {
		t.Errorf("the server had a data race:\n%s", srv.tail())
	}

	srv = startServer(t, bin, t.TempDir(), "second", "-store", storeURL)
	c = newClient(srv.base, sess.Token)
	for _, id := range runs {
		waitCompleted(t, c, srv, id)
	}
	sent := map[string]int{}
	for _, m := range all[message](t, c, "/v1/outbox") {
		if runID, _, ok := strings.Cut(m.IdempotencyKey, "/"); ok {
			sent[runID]++
		}
	}
	for _, id := range runs {
		if sent[id] != 1 {
			t.Errorf("run %s sent %d messages, want 1", id, sent[id])
		}
	}
	t.Logf("%d runs completed once across a SIGKILL, on PostgreSQL", len(runs))
	srv.kill()
}

// TestStoreFlagRefusesOtherURLs: -store takes PostgreSQL connection
// strings only, and never echoes a password.
func TestStoreFlagRefusesOtherURLs(t *testing.T) {
	t.Parallel()
	err := run([]string{"-store", "mysql://u:hunter2@h/db", "-addr", "127.0.0.1:0"}, nil)
	if err == nil || !strings.Contains(err.Error(), "postgres://") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("run with a mysql:// store: %v, want a refusal naming postgres:// without the password", err)
	}
}
