package bas_test

// TestWaitingRunsScale under a memory limit that counts the page cache too: with
// BAS_WAITING_MEMLIMIT=300MiB (or 1GiB, or a number of bytes; "max" for a
// group without a limit, to compare like with like) the test process moves
// itself, before it opens anything, into a new memory cgroup under its own
// with that limit, and its children (the processes that start the runs) are
// made in it. The kernel then charges to the group every page the test and
// its children bring in: the Go heap and stacks, the page cache of the
// store's files (tables, memtable logs, value log) whether mapped or
// written; not the binary's pages already in memory when the test joined
// (the test's binary is 27-30 MiB resident). It reclaims the group's
// reclaimable pages before it would go over the limit, or kills a process in
// the group: an OOM kill fails the test (the child's), or ends it (this
// process's, with "signal: killed"). The test logs, for each phase (each
// size's start in the child, N's reopen and list calls, N's firing), the
// group's peak usage, how often the limit was hit (v1's memory.failcnt, v2's
// "max" events), the OOM kills, and the group's anonymous and file memory at
// its peak (sampled every 100 ms). Cgroup v1's memory controller
// (memory.limit_in_bytes) and cgroup v2's (memory.max) are both supported;
// the test skips, saying why, where neither can be made under the test's own
// group. The group is removed at the end (a test killed before its end, by
// the limit too, leaves an empty group behind). Under -race the test needs
// several times the memory: a limit of 300MiB kills it.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

// waitingMemLimitEnv names the environment variable that sets the limit.
const waitingMemLimitEnv = "BAS_WAITING_MEMLIMIT"

// memGroup is a memory cgroup the test made under its own.
type memGroup struct {
	dir    string // the new group
	from   string // the group the test process was in (its cgroup.procs)
	v2     bool
	limit  int64 // bytes; 0 for none
	mu     sync.Mutex
	sample memGroupSample // at the phase's highest usage
	stop   chan struct{}
	done   chan struct{}
}

// memGroupSample is a group's memory at one moment, in MiB.
type memGroupSample struct{ usage, anon, file, mapped float64 }

// parseMemLimit reads a limit as 300MiB, 1GiB, 512KiB, a number of bytes,
// or "max" (none: 0).
func parseMemLimit(s string) (int64, error) {
	if s == "max" {
		return 0, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.Newf("%s=%q: want a size such as 300MiB, 1GiB or a number of bytes, or max", waitingMemLimitEnv, s)
	}
	return n * mult, nil
}

// TestParseMemLimit checks the sizes BAS_WAITING_MEMLIMIT takes.
func TestParseMemLimit(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"300MiB", 300 << 20, false},
		{"1GiB", 1 << 30, false},
		{"512KiB", 512 << 10, false},
		{"1048576", 1 << 20, false},
		{"max", 0, false},
		{"", 0, true},
		{"300MB", 0, true},
		{"-1MiB", 0, true},
		{"0", 0, true},
	} {
		got, err := parseMemLimit(test.in)
		if got != test.want || (err != nil) != test.err {
			t.Errorf("parseMemLimit(%q) = %d, %v; want %d, error %v", test.in, got, err, test.want, test.err)
		}
	}
}

// ownMemGroup finds the directory of this process's memory cgroup: v1's
// memory controller if mounted, else v2's unified hierarchy.
func ownMemGroup() (dir string, v2 bool, err error) {
	cgroup, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	return memGroupDir(string(cgroup), string(mountinfo))
}

// memGroupDir finds the directory of a process's memory cgroup from its
// /proc/<pid>/cgroup and /proc/<pid>/mountinfo.
func memGroupDir(cgroup, mountinfo string) (dir string, v2 bool, err error) {
	// A mountinfo line: id parent major:minor root mountpoint options...
	// - fstype source superoptions. The group's path is relative to the
	// hierarchy's root; the mount shows the hierarchy from its own root
	// (a container's group, say) at its mount point.
	under := func(fstype, option, path string) (string, bool) {
		for _, line := range strings.Split(mountinfo, "\n") {
			pre, post, ok := strings.Cut(line, " - ")
			f, g := strings.Fields(pre), strings.Fields(post)
			if !ok || len(f) < 5 || len(g) < 3 || g[0] != fstype {
				continue
			}
			if option != "" && !slices.Contains(strings.Split(g[2], ","), option) {
				continue
			}
			root, at := f[3], f[4]
			if rel, ok := strings.CutPrefix(path, root); ok && (root == "/" || rel == "" || rel[0] == '/') {
				return filepath.Join(at, rel), true
			}
		}
		return "", false
	}
	var unified string
	for _, line := range strings.Split(strings.TrimSpace(cgroup), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "memory") {
			if d, ok := under("cgroup", "memory", parts[2]); ok {
				return d, false, nil
			}
		}
	}
	if unified != "" {
		if d, ok := under("cgroup2", "", unified); ok {
			return d, true, nil
		}
	}
	return "", false, errors.New("no memory cgroup (v1's memory controller or v2) is mounted where this process's group is")
}

// TestMemGroupDir checks where memGroupDir finds a process's memory group.
func TestMemGroupDir(t *testing.T) {
	t.Parallel()
	const (
		v1 = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`
		v2 = `24 1 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate`
		// A container's view: its hierarchy mounted from its own group.
		container = `35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,cpu,memory`
	)
	for _, test := range []struct {
		name, cgroup, mountinfo string
		dir                     string
		v2, err                 bool
	}{
		{"v1 memory, v2 beside", "4:memory:/process_api/b10e\n1:cpu:/\n0::/", v1, "/sys/fs/cgroup/memory/process_api/b10e", false, false},
		{"v2 alone", "0::/user.slice/session-1.scope", v2, "/sys/fs/cgroup/user.slice/session-1.scope", true, false},
		{"v2 where v1 has no memory", "1:cpu:/x\n0::/y", v1, "/sys/fs/cgroup/unified/y", true, false},
		{"v1 controllers mounted together", "5:cpu,memory:/docker/abc/sub", container, "/sys/fs/cgroup/memory/sub", false, false},
		{"v1 the container's own group", "5:cpu,memory:/docker/abc", container, "/sys/fs/cgroup/memory", false, false},
		{"v1 group outside the mount", "5:cpu,memory:/docker/abcd", container, "", false, true},
		{"nothing mounted", "4:memory:/x\n0::/x", "", "", false, true},
	} {
		dir, v2, err := memGroupDir(test.cgroup, test.mountinfo)
		if dir != test.dir || v2 != test.v2 || (err != nil) != test.err {
			t.Errorf("%s: memGroupDir = %q, v2 %v, %v; want %q, v2 %v, error %v", test.name, dir, v2, err, test.dir, test.v2, test.err)
		}
	}
}

// newMemGroup makes a memory cgroup under this process's own, with limit
// (0: none), and moves this process into it; its children are then made
// in it. It skips t where that cannot be done.
func newMemGroup(t *testing.T, limit int64) *memGroup {
	t.Helper()
	own, v2, err := ownMemGroup()
	if err != nil {
		t.Skipf("%s is set, but: %v", waitingMemLimitEnv, err)
	}
	g := &memGroup{dir: filepath.Join(own, fmt.Sprintf("bas-waiting-%d", os.Getpid())), from: filepath.Join(own, "cgroup.procs"), v2: v2, limit: limit}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		t.Skipf("%s is set, but no memory cgroup can be made under %s: %v", waitingMemLimitEnv, own, err)
	}
	limitFile, value := "memory.limit_in_bytes", strconv.FormatInt(limit, 10)
	if v2 {
		limitFile = "memory.max"
	}
	if limit == 0 {
		value = map[bool]string{false: "-1", true: "max"}[v2]
	}
	if err := os.WriteFile(filepath.Join(g.dir, limitFile), []byte(value), 0); err != nil {
		_ = os.Remove(g.dir)
		t.Skipf("%s is set, but the new group %s takes no limit (v2's memory controller not enabled for it?): %v", waitingMemLimitEnv, g.dir, err)
	}
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		_ = os.Remove(g.dir)
		t.Skipf("%s is set, but this process cannot join %s: %v", waitingMemLimitEnv, g.dir, err)
	}
	t.Cleanup(func() {
		if g.done != nil { // a phase a failed test left open
			select {
			case <-g.done:
			default:
				close(g.stop)
				<-g.done
			}
		}
		// Back to the group it came from, so that the new one, empty, can
		// be removed.
		if err := os.WriteFile(g.from, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			t.Errorf("back to %s: %v", g.from, err)
			return
		}
		// A killed child's pages are moved to the parent group as the
		// group goes; its removal may wait for the kill to be done.
		for i := 0; ; i++ {
			err := os.Remove(g.dir)
			if err == nil {
				return
			}
			if i == 50 {
				t.Errorf("removing %s: %v", g.dir, err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return g
}

// read reads one of the group's files as a number (0 if absent or not a
// number, as "max").
func (g *memGroup) read(name string) int64 {
	raw, _ := os.ReadFile(filepath.Join(g.dir, name))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n
}

// keyed reads a file of "key value" lines (memory.stat, memory.events,
// v1's memory.oom_control).
func (g *memGroup) keyed(name string) map[string]int64 {
	m := map[string]int64{}
	fh, err := os.Open(filepath.Join(g.dir, name))
	if err != nil {
		return m
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		m[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return m
}

// now is the group's memory at this moment.
func (g *memGroup) now() memGroupSample {
	const mib = 1 << 20
	st := g.keyed("memory.stat")
	if g.v2 {
		return memGroupSample{usage: float64(g.read("memory.current")) / mib, anon: float64(st["anon"]) / mib,
			file: float64(st["file"]) / mib, mapped: float64(st["file_mapped"]) / mib}
	}
	return memGroupSample{usage: float64(g.read("memory.usage_in_bytes")) / mib, anon: float64(st["total_rss"]) / mib,
		file: float64(st["total_cache"]) / mib, mapped: float64(st["total_mapped_file"]) / mib}
}

// memGroupPhase is what a group went through in one phase.
type memGroupPhase struct {
	peakMiB   float64        // the kernel's own peak of the phase (v2: since the group was made)
	at        memGroupSample // the sample of highest usage
	limitHits int64          // v1 failcnt, v2 "max" events, in the phase
	oomKills  int64          // in the phase
}

// String gives the phase's figures as the test logs them.
func (p memGroupPhase) String() string {
	return fmt.Sprintf("group peak %.0f MiB (sampled at its highest: %.0f, of which anonymous %.0f, page cache %.0f, mapped %.0f); limit reached %d times; OOM kills %d",
		p.peakMiB, p.at.usage, p.at.anon, p.at.file, p.at.mapped, p.limitHits, p.oomKills)
}

// counters are the group's limit hits and OOM kills so far.
func (g *memGroup) counters() (hits, kills int64) {
	if g.v2 {
		ev := g.keyed("memory.events")
		return ev["max"], ev["oom_kill"]
	}
	return g.read("memory.failcnt"), g.keyed("memory.oom_control")["oom_kill"]
}

// begin starts a phase: it resets the kernel's peak (v1) and samples the
// group every 100 ms until end.
func (g *memGroup) begin() (end func() memGroupPhase) {
	if !g.v2 {
		_ = os.WriteFile(filepath.Join(g.dir, "memory.max_usage_in_bytes"), []byte("0"), 0)
	}
	hits0, kills0 := g.counters()
	g.sample = memGroupSample{}
	g.stop, g.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(g.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		sample := func() {
			if s := g.now(); s.usage > g.sample.usage {
				g.mu.Lock()
				g.sample = s
				g.mu.Unlock()
			}
		}
		for {
			sample()
			select {
			case <-g.stop:
				sample() // a phase shorter than a tick has its end too
				return
			case <-tick.C:
			}
		}
	}()
	return func() memGroupPhase {
		close(g.stop)
		<-g.done
		hits, kills := g.counters()
		peak := g.read("memory.max_usage_in_bytes")
		if g.v2 {
			peak = g.read("memory.peak")
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		return memGroupPhase{peakMiB: float64(peak) / (1 << 20), at: g.sample, limitHits: hits - hits0, oomKills: kills - kills0}
	}
}
