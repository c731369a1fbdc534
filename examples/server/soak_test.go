package main

// The soak: a steady keyed load on the server for a fixed time with its
// memory (RSS), threads and open files sampled every second; nothing may
// grow without bound. Off by default:
//
//	go test ./examples/server -run TestSoak -soak 10m -v -timeout 30m

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/procstat"
)

var soakFor = flag.Duration("soak", 0, "run TestSoak for this long (0 skips it)")

// procSample is one sample of a process.
type procSample struct {
	rssKB, threads, fds int
}

// sampleProc reads /proc for pid.
func sampleProc(pid int) (procSample, error) {
	var s procSample
	st, err := procstat.Of(pid)
	if err != nil {
		return s, err
	}
	s.rssKB, s.threads = int(st.RSS), int(st.Threads)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	s.fds = len(fds)
	return s, err
}

func median(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// TestSoak is the soak; -soak sets its length.
func TestSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("set -soak (e.g. -soak 10m) to run the soak")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("the soak samples /proc")
	}
	bin := buildServer(t)
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, bin, dir, "soak")
	var sess struct {
		Token string `json:"token"`
	}
	newClient(srv.base, "").must(t, "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": "ten_soak"}, http.StatusCreated, &sess)
	c := newClient(srv.base, sess.Token)
	var chase, look record
	c.must(t, "POST", "/v1/processes", json.RawMessage(chaseProcess), http.StatusCreated, &chase)
	c.must(t, "POST", "/v1/processes", json.RawMessage(taskProcess), http.StatusCreated, &look)

	var (
		stop    atomic.Bool
		ops     atomic.Int64
		wg      sync.WaitGroup
		samples []procSample
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("soak-%d-%d", w, i)
				var err error
				switch i % 4 {
				case 0:
					_, _, _, err = c.keyedCall("/v1/processes/"+chase.ID+"/start", key, map[string]any{"subject": map[string]any{"type": "delivery", "label": key}})
				case 1:
					_, _, _, err = c.keyedCall("/v1/crm/companies", key, map[string]any{"name": "Co " + key})
				case 2:
					_, _, _, err = c.call("GET", "/v1/process-runs?limit=50", nil)
				case 3:
					_, _, _, err = c.call("GET", "/v1/cockpit", nil)
				}
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				ops.Add(1)
			}
		}()
	}
	pid := srv.cmd.Process.Pid
	for end := time.Now().Add(*soakFor); time.Now().Before(end) && !t.Failed(); {
		time.Sleep(time.Second)
		s, err := sampleProc(pid)
		if err != nil {
			t.Fatalf("sample: %v", err)
		}
		samples = append(samples, s)
	}
	stop.Store(true)
	wg.Wait()
	if len(samples) < 8 {
		t.Fatalf("only %d samples", len(samples))
	}
	// Compare the second quarter (warmed up) with the last.
	q := len(samples) / 4
	col := func(from, to int, f func(procSample) int) []int {
		var out []int
		for _, s := range samples[from:to] {
			out = append(out, f(s))
		}
		return out
	}
	rss := func(s procSample) int { return s.rssKB }
	fds := func(s procSample) int { return s.fds }
	thr := func(s procSample) int { return s.threads }
	early, late := median(col(q, 2*q, rss)), median(col(3*q, len(samples), rss))
	t.Logf("%d ops in %v (%.0f/s); RSS median %d MiB -> %d MiB (max %d MiB); open files %d -> %d; threads %d -> %d; data dir %d MiB",
		ops.Load(), *soakFor, float64(ops.Load())/soakFor.Seconds(), early>>10, late>>10, slices.Max(col(0, len(samples), rss))>>10,
		median(col(q, 2*q, fds)), median(col(3*q, len(samples), fds)), median(col(q, 2*q, thr)), median(col(3*q, len(samples), thr)),
		dirSize(dir)>>20)
	if late > early*3/2+64<<10 {
		t.Errorf("RSS grew from %d KiB to %d KiB", early, late)
	}
	if f0, f1 := median(col(q, 2*q, fds)), median(col(3*q, len(samples), fds)); f1 > f0+32 {
		t.Errorf("open files grew from %d to %d", f0, f1)
	}
	if t0, t1 := median(col(q, 2*q, thr)), median(col(3*q, len(samples), thr)); t1 > t0+16 {
		t.Errorf("threads grew from %d to %d", t0, t1)
	}
}
