package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// keyedCall is call with an Idempotency-Key.
func (c *client) keyedCall(path, key string, body any) (int, []byte, http.Header, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, nil, err
	}
	req, err := http.NewRequest("POST", c.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header, err
}

// TestCrashKeyedStartsRetryOnce kills the server with SIGKILL during a
// load of run starts that carry Idempotency-Keys, restarts it and at once
// resends every key, the acknowledged ones and those in flight at the
// kill: each retry answers 201 without waiting for a lease; an
// acknowledged key replays its first answer; and every run the store holds
// is the answer of exactly one key, so no key started two runs.
func TestCrashKeyedStartsRetryOnce(t *testing.T) {
	bin := buildServer(t)
	dir := filepath.Join(t.TempDir(), "data")

	srv := startServer(t, bin, dir, "first")
	anon := newClient(srv.base, "")
	var sess struct {
		Token string `json:"token"`
	}
	anon.must(t, "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": "ten_keys"}, http.StatusCreated, &sess)
	c := newClient(srv.base, sess.Token)
	var proc record
	c.must(t, "POST", "/v1/processes", json.RawMessage(chaseProcess), http.StatusCreated, &proc)
	path := "/v1/processes/" + proc.ID + "/start"
	bodyOf := func(key string) any {
		return map[string]any{"subject": map[string]any{"type": "delivery", "label": key}}
	}

	const starters = 8
	var (
		mu       sync.Mutex
		acked    = map[string]string{} // key -> run id answered
		inFlight []string              // keys sent whose answer never came
		acks     atomic.Int64
		enough   = make(chan struct{}) // closed at the 200th acknowledgement
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	for g := range starters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("start-%d-%d", g, i)
				status, raw, _, err := c.keyedCall(path, key, bodyOf(key))
				if err != nil {
					mu.Lock()
					inFlight = append(inFlight, key)
					mu.Unlock()
					return // the server is gone
				}
				var r record
				if status != http.StatusCreated || json.Unmarshal(raw, &r) != nil || r.ID == "" {
					t.Errorf("keyed start: status %d: %s", status, raw)
					return
				}
				mu.Lock()
				acked[key] = r.ID
				mu.Unlock()
				if acks.Add(1) == 200 {
					close(enough)
				}
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
	}
	srv.kill()
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		t.Fatalf("load failed; server log:\n%s", srv.tail())
	}
	t.Logf("killed after %d acknowledged keyed starts, %d in flight", len(acked), len(inFlight))

	srv = startServer(t, bin, dir, "second")
	c = newClient(srv.base, sess.Token)
	answered := map[string]string{} // key -> run id after the restart
	resend := func(round string) {
		keys := append([]string(nil), inFlight...)
		for k := range acked {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			status, raw, h, err := c.keyedCall(path, key, bodyOf(key))
			if err != nil {
				t.Fatalf("%s: resend %s: %v", round, key, err)
			}
			var r record
			if status != http.StatusCreated || json.Unmarshal(raw, &r) != nil || r.ID == "" {
				t.Errorf("%s: resend %s: status %d: %s", round, key, status, raw)
				continue
			}
			if first, ok := acked[key]; ok && (r.ID != first || h.Get("Idempotent-Replayed") != "true") {
				t.Errorf("%s: acknowledged key %s answered run %s (replayed %q), first answer %s",
					round, key, r.ID, h.Get("Idempotent-Replayed"), first)
			}
			if prev, ok := answered[key]; ok && prev != r.ID {
				t.Errorf("%s: key %s answered run %s, then %s", round, key, prev, r.ID)
			}
			answered[key] = r.ID
		}
	}
	resend("at once after the restart")
	resend("again")

	// Every stored run is the answer of exactly one key.
	want := map[string]string{}
	for key, id := range answered {
		want[id] = key
	}
	got := map[string]string{}
	for _, r := range all[record](t, c, "/v1/process-runs?process_id="+proc.ID) {
		got[r.ID] = want[r.ID]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored runs against the keys' answers (-want +got; an empty key is a run no key answered):\n%s", diff)
	}
	srv.kill()
	if srv.raced() {
		t.Errorf("the restarted server had a data race:\n%s", srv.tail())
	}
}
