package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/procstat"
)

// benchConns is the number of connections (and vegeta workers) of
// BenchmarkServerStart.
const benchConns = 64

// benchProcess routes the item, then sends a mail through email.send (the
// built-in outbox) behind the autonomy gate.
const benchProcess = `{
  "name": "Route and notify",
  "trigger": {"type": "manual"},
  "steps": [
    {"key": "route", "type": "route",
     "config": {"rules": [{"when": {"subject.type": "delivery"}, "queue": "receiving"}], "default": {"queue": "ap"}}},
    {"key": "notify", "type": "execute", "capability": "email.send",
     "config": {"args": {"to": "supplier@example.com", "subject": "Delivery received", "body": "We received your delivery."}}}
  ]
}`

// benchServer is the example server's handler (newHandler, with the
// workspace options and logger the server uses; access lines go to
// io.Discard) on a loopback listener, over Badger in a temp dir.
type benchServer struct {
	ws     *bas.Workspace
	base   string
	token  string
	tenant string
}

func newBenchServer(b *testing.B) *benchServer {
	b.Helper()
	prev := setMemoryLimit()
	b.Cleanup(func() { debug.SetMemoryLimit(prev) })
	logger := newLogger(io.Discard)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	opts, _ := workspaceOptions(b.TempDir(), "", "", "http://"+ln.Addr().String()+"/api", nil, true, logger)
	ws, err := bas.Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	h, basePath := newHandler(ws, true, logger)
	srv := newServer(h, defaultTimeouts())
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() {
		_ = srv.Close()
		_ = ws.Close()
	})
	s := &benchServer{ws: ws, base: "http://" + ln.Addr().String() + basePath}
	var sess struct {
		Token    string `json:"token"`
		TenantID string `json:"tenant_id"`
	}
	s.must(b, "POST", "/v1/auth/dev-login", `{"tenant_id": "ten_bench"}`, http.StatusCreated, &sess)
	s.token, s.tenant = sess.Token, sess.TenantID
	return s
}

func (s *benchServer) must(b *testing.B, method, path, body string, want int, v any) {
	b.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gcCPU is the CPU time the garbage collector has spent so far (the
// runtime's estimate: its background and assisting marking, its pauses and
// its idle-time marking).
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// BenchmarkServerStart drives the example server's handler on a loopback
// listener with vegeta (github.com/tsenart/vegeta/v12/lib) at 64
// keep-alive connections, as fast as the server answers: b.N
// POST /v1/processes/{id}/start requests, each with an Idempotency-Key and
// a session token, of a two-step run (a route step, then email.send behind
// the autonomy gate set to act without a person). Each answer comes once
// the start is durable (synced); after the attack every run is checked
// completed. It reports starts/s, the answers' p50 and p99, runs/s (until
// the last run completed), the engine's commits per start (the runs'
// changes it committed, and syncs/start the group commits that carried
// them, until every run completed), CPU per start and allocations per
// start (the process's, over the attack: the server's and vegeta's, with
// the runs' steps that ran meanwhile), of that CPU the collector's share
// per start (the runtime's estimate) and the process's RSS at the end and
// at its peak, and the anonymous part of the RSS at the end. The Go heap's soft
// limit is the server's (setMemoryLimit).
func BenchmarkServerStart(b *testing.B) {
	s := newBenchServer(b)
	s.must(b, "PATCH", "/v1/automation", `{"percent": 100, "max_percent": 100, "sample_percent": 0}`, http.StatusOK, nil)
	var proc struct{ ID string }
	s.must(b, "POST", "/v1/processes", benchProcess, http.StatusCreated, &proc)
	var probe struct{ ID string }
	s.must(b, "POST", "/v1/processes/"+proc.ID+"/start", `{"subject": {"type": "delivery", "label": "probe"}}`,
		http.StatusCreated, &probe)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := s.ws.WaitRun(ctx, s.tenant, probe.ID); err != nil || r.Status != bas.RunCompleted {
		b.Fatalf("probe run: %+v %v", r, err)
	}

	url := s.base + "/v1/processes/" + proc.ID + "/start"
	header := http.Header{"Authorization": {"Bearer " + s.token}, "Content-Type": {"application/json"}}
	var next atomic.Int64
	targeter := func(t *vegeta.Target) error {
		i := next.Add(1)
		if i > int64(b.N) {
			return vegeta.ErrNoTargets
		}
		h := header.Clone()
		h.Set("Idempotency-Key", "bench-"+strconv.FormatInt(i, 10))
		*t = vegeta.Target{Method: "POST", URL: url, Header: h,
			Body: fmt.Appendf(nil, `{"subject": {"type": "delivery", "label": "DN-%d"}}`, i)}
		return nil
	}
	attacker := vegeta.NewAttacker(vegeta.Workers(benchConns), vegeta.MaxWorkers(benchConns),
		vegeta.Connections(benchConns), vegeta.MaxConnections(benchConns), vegeta.KeepAlive(true),
		vegeta.HTTP2(false), vegeta.Timeout(30*time.Second))
	ids := make([]string, 0, b.N)
	var metrics vegeta.Metrics
	var failed []string
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, gc0, began, st0 := cpuTime(), gcCPU(), time.Now(), s.ws.Engine().Stats()
	for res := range attacker.Attack(targeter, vegeta.Rate{}, 0, "start") {
		if res.Error == vegeta.ErrNoTargets.Error() {
			continue
		}
		metrics.Add(res)
		if res.Code != http.StatusCreated {
			if len(failed) < 5 {
				failed = append(failed, fmt.Sprintf("%d %s %s", res.Code, res.Error, res.Body))
			}
			continue
		}
		i := bytes.Index(res.Body, []byte(`"id":"`))
		if i < 0 {
			failed = append(failed, "no id in "+string(res.Body))
			continue
		}
		id := res.Body[i+6:]
		ids = append(ids, string(id[:bytes.IndexByte(id, '"')]))
	}
	attacked := time.Since(began)
	cpu, gc := cpuTime()-cpu0, gcCPU()-gc0
	b.StopTimer()
	metrics.Close()
	if len(failed) > 0 || len(ids) != b.N {
		b.Fatalf("%d of %d starts answered 201; first failures: %q", len(ids), b.N, failed)
	}
	// Every run completes; the last completion ends runs/s. (The runs'
	// ends after the attack are not in the CPU and allocation figures.)
	var wg sync.WaitGroup
	var notDone atomic.Int64
	last := make([]time.Time, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ids); i += 8 {
				r, err := s.ws.WaitRun(ctx, s.tenant, ids[i])
				if err != nil || r.Status != bas.RunCompleted || r.CompletedAt == nil {
					if notDone.Add(1) == 1 {
						b.Errorf("run %s: %+v %v", ids[i], r, err)
					}
					continue
				}
				if r.CompletedAt.After(last[w]) {
					last[w] = *r.CompletedAt
				}
			}
		}()
	}
	wg.Wait()
	if n := notDone.Load(); n > 0 {
		b.Fatalf("%d of %d runs did not complete", n, len(ids))
	}
	completed := slices.MaxFunc(last, time.Time.Compare).Sub(began)
	st := s.ws.Engine().Stats()
	b.ReportMetric(float64(b.N)/attacked.Seconds(), "starts/s")
	b.ReportMetric(float64(b.N)/completed.Seconds(), "runs/s")
	b.ReportMetric(float64(metrics.Latencies.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(metrics.Latencies.P99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/start")
	b.ReportMetric(float64(gc.Microseconds())/float64(b.N), "gc-µs/start")
	b.ReportMetric(float64(st.Commits-st0.Commits)/float64(b.N), "syncs/start")
	b.ReportMetric(float64(st.Deltas-st0.Deltas)/float64(b.N), "commits/start")
	if mem, err := procstat.Self(); err == nil {
		b.ReportMetric(procstat.MiB(mem.RSS), "rss-MiB")
		b.ReportMetric(procstat.MiB(mem.Peak), "peak-rss-MiB")
		b.ReportMetric(procstat.MiB(mem.Anon), "anon-MiB")
	}
}

var startupDir = flag.String("startup-dir", "", "BenchmarkServerStartup: also time the start on this data directory (e.g. one kept by TestWaitingRunsScale -waiting-dir)")

// BenchmarkServerStartup times the built server from its start until
// GET /api/healthz answers 200, on an empty directory (a new one each
// time) and, with -startup-dir, on that directory; each start after the
// first follows a SIGKILL of the one before (a hard exit). It reports
// ms/start.
func BenchmarkServerStartup(b *testing.B) {
	bin := buildServer(b)
	dirs := map[string]func() string{"empty": func() string { return filepath.Join(b.TempDir(), "data") }}
	if *startupDir != "" {
		dirs["dir"] = func() string { return *startupDir }
	}
	for _, name := range []string{"empty", "dir"} {
		dir, ok := dirs[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += startOnce(b, bin, dir())
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
		})
	}
}

// startOnce starts the server on dir, waits until it answers, kills it
// (SIGKILL) and returns how long it took to answer.
func startOnce(b *testing.B, bin, dir string) time.Duration {
	b.Helper()
	began := time.Now()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-metrics-addr", "", "-data", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var base string
	for sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		b.Fatalf("the server on %s exited before serving", dir)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("healthz: %d", resp.StatusCode)
	}
	return time.Since(began)
}
