// Command tracepath explains the slowest of a benchmark's runs from a Go
// execution trace: for each run, a region the benchmark marked with
// runtime/trace (BenchmarkFairness marks its measured runs "quiet", flooded,
// and "alone"), it walks the critical path back from the region's end: the
// goroutine that ended it, how long it ran, how long it waited ready to run
// for a processor, what woke it (the goroutine that made it ready, or that
// created it), and so on back to the region's start. Where a goroutine on
// the path waited ready to run for long, it prints what held the processors
// meanwhile (goroutines running, goroutines in system calls, the
// collector's workers). Then it sums the path's time by state and goroutine
// over the slowest runs and over the runs around the median, so the two can
// be compared.
//
//	go test -c -o /tmp/re.test ./runengine
//	/tmp/re.test -test.run '^$' -test.bench 'Fairness/flooded-wide$' \
//	    -test.benchtime 1000x -test.trace /tmp/wide.trace
//	go run ./internal/tracepath -region quiet /tmp/wide.trace
//
// A goroutine is named by the function it was started in (its creation's
// stack), or, for one that existed before the trace began, by the outermost
// function of its first stack seen.
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	region := flag.String("region", "", "the region type to explain (empty: every type)")
	top := flag.Float64("top", 0.01, "the share of the slowest runs to explain, per type")
	wait := flag.Duration("wait", 200*time.Microsecond, "a wait ready to run at least this long shows what held the processors")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tracepath [-region TYPE] [-top 0.01] [-wait 200us] TRACE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracepath:", err)
		os.Exit(1)
	}
	defer f.Close()
	t, err := read(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracepath:", err)
		os.Exit(1)
	}
	t.report(os.Stdout, *region, *top, *wait)
}

// transition is one change of a goroutine's state: at t, from one state to
// another, made by goroutine by (trace.NoGoroutine when none: a timer, the
// network poller, a system call's return), with the goroutine's stack's
// innermost function of ours when it went to wait or into a system call.
type transition struct {
	t        trace.Time
	from, to trace.GoState
	by       trace.GoID
	at       string
}

// region is one run of a region type on goroutine g.
type region struct {
	typ  string
	g    trace.GoID
	b, e trace.Time
}

// timeRange is a range of the runtime's (a stop of the world, a
// collection's phase).
type timeRange struct {
	name string
	b, e trace.Time
}

// parsed is what tracepath keeps of a trace.
type parsed struct {
	gs      map[trace.GoID][]transition
	names   map[trace.GoID]string
	regions []region
	ranges  []timeRange
}

// read parses a trace.
func read(r io.Reader) (*parsed, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	p := &parsed{gs: map[trace.GoID][]transition{}, names: map[trace.GoID]string{}}
	open := map[trace.GoID][]region{}
	openRange := map[string]trace.Time{}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind() {
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			from, to := st.Goroutine()
			if _, ok := p.names[g]; !ok {
				p.names[g] = goName(st.Stack, from == trace.GoNotExist)
			}
			var at string
			if to == trace.GoWaiting || to == trace.GoSyscall {
				at = innermost(st.Stack)
			}
			p.gs[g] = append(p.gs[g], transition{t: ev.Time(), from: from, to: to, by: ev.Goroutine(), at: at})
		case trace.EventRegionBegin:
			g := ev.Goroutine()
			open[g] = append(open[g], region{typ: ev.Region().Type, g: g, b: ev.Time()})
		case trace.EventRegionEnd:
			g := ev.Goroutine()
			if n := len(open[g]); n > 0 && open[g][n-1].typ == ev.Region().Type {
				x := open[g][n-1]
				x.e = ev.Time()
				open[g] = open[g][:n-1]
				p.regions = append(p.regions, x)
			}
		case trace.EventRangeBegin:
			openRange[ev.Range().Name] = ev.Time()
		case trace.EventRangeEnd:
			name := ev.Range().Name
			if b, ok := openRange[name]; ok {
				p.ranges = append(p.ranges, timeRange{name, b, ev.Time()})
				delete(openRange, name)
			}
		}
	}
	return p, nil
}

// goName names a goroutine by the function it started in (created) or by
// the outermost function of a stack seen first.
func goName(s trace.Stack, created bool) string {
	var fns []string
	for f := range s.Frames() {
		fns = append(fns, f.Func)
	}
	switch {
	case len(fns) == 0:
		return "(no stack: the runtime's, such as the collector's workers)"
	case created:
		return fns[0]
	default:
		return fns[len(fns)-1]
	}
}

// innermost is the innermost function of s outside the runtime and the
// standard library's sync and syscall packages: where a goroutine waited.
func innermost(s trace.Stack) string {
	for f := range s.Frames() {
		if fn := f.Func; !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "sync.") &&
			!strings.HasPrefix(fn, "internal/") && !strings.HasPrefix(fn, "syscall.") {
			return fn
		}
	}
	return ""
}

// segment is one stretch of a critical path: goroutine g in state from b
// to e.
type segment struct {
	g     trace.GoID
	state trace.GoState
	at    string
	b, e  trace.Time
}

// path walks the critical path of x back from its end.
func (p *parsed) path(x region) []segment {
	var segs []segment
	g, t := x.g, x.e
	i := p.last(g, t)
	for t > x.b && i >= 0 {
		cur := p.gs[g][i]
		b := max(cur.t, x.b)
		segs = append(segs, segment{g: g, state: cur.to, at: cur.at, b: b, e: t})
		t = cur.t
		made := cur.to == trace.GoRunnable && (cur.from == trace.GoWaiting || cur.from == trace.GoNotExist)
		if made && cur.by != trace.NoGoroutine && cur.by != g {
			// Woken or created by another goroutine: the path goes on
			// in it, in the state it was in just before it did so (a
			// transition of its at that very moment is not yet its
			// state, and taking it could walk two goroutines that made
			// each other ready at one timestamp round for ever).
			g = cur.by
			i = p.last(g, t-1)
			continue
		}
		if made {
			break // woken by no goroutine (a timer, the poller): the path starts here
		}
		i--
	}
	return segs
}

// last is the index of g's last transition at or before t, -1 when none.
func (p *parsed) last(g trace.GoID, t trace.Time) int {
	ts := p.gs[g]
	return sort.Search(len(ts), func(i int) bool { return ts[i].t > t }) - 1
}

// held sums what the processors did between b and e: each goroutine name's
// time running and in system calls.
func (p *parsed) held(b, e trace.Time) map[string]time.Duration {
	out := map[string]time.Duration{}
	for g, ts := range p.gs {
		for i, x := range ts {
			if x.to != trace.GoRunning && x.to != trace.GoSyscall {
				continue
			}
			end := e
			if i+1 < len(ts) {
				end = ts[i+1].t
			}
			s0, e0 := max(x.t, b), min(end, e)
			if e0 <= s0 {
				continue
			}
			k := "running " + p.names[g]
			if x.to == trace.GoSyscall {
				k = "in a system call " + p.names[g] + " at " + x.at
			}
			out[k] += e0.Sub(s0)
		}
	}
	return out
}

func (p *parsed) report(w io.Writer, only string, top float64, wait time.Duration) {
	byType := map[string][]region{}
	for _, x := range p.regions {
		if only == "" || x.typ == only {
			byType[x.typ] = append(byType[x.typ], x)
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(byType)) {
		rs := byType[typ]
		sort.Slice(rs, func(i, j int) bool { return rs[i].e-rs[i].b > rs[j].e-rs[j].b })
		n := max(1, int(top*float64(len(rs))))
		mid := rs[len(rs)/2]
		fmt.Fprintf(w, "== %s: %d runs, median %v, the slowest %d from %v\n", typ, len(rs), mid.e.Sub(mid.b), n, rs[n-1].e.Sub(rs[n-1].b))
		slow := map[string]time.Duration{}
		for _, x := range rs[:n] {
			fmt.Fprintf(w, "-- %v\n", x.e.Sub(x.b))
			for _, r := range p.ranges {
				if r.e > x.b && r.b < x.e && r.e.Sub(r.b) >= 20*time.Microsecond {
					fmt.Fprintf(w, "   during %s (%v)\n", r.name, r.e.Sub(r.b))
				}
			}
			for _, s := range p.path(x) {
				d, k := s.e.Sub(s.b), s.key(p)
				slow[k] += d
				if d < 20*time.Microsecond {
					continue
				}
				fmt.Fprintf(w, "   %10v %s\n", d, k)
				if s.state == trace.GoRunnable && d >= wait {
					printSums(w, "        ", p.held(s.b, s.e), 1, 6)
				}
			}
		}
		median := map[string]time.Duration{}
		lo, hi := max(0, len(rs)/2-n), min(len(rs), len(rs)/2+n)
		for _, x := range rs[lo:hi] {
			for _, s := range p.path(x) {
				median[s.key(p)] += s.e.Sub(s.b)
			}
		}
		fmt.Fprintf(w, "   the slowest %d's path, per run:\n", n)
		printSums(w, "     ", slow, n, 10)
		fmt.Fprintf(w, "   the %d around the median's path, per run:\n", hi-lo)
		printSums(w, "     ", median, hi-lo, 10)
	}
}

// key names a segment by state, goroutine and, for a wait or a system
// call, where.
func (s segment) key(p *parsed) string {
	k := s.state.String() + " " + p.names[s.g]
	if s.at != "" {
		k += " at " + s.at
	}
	return k
}

// printSums prints the largest sums, each divided by n.
func printSums(w io.Writer, indent string, sums map[string]time.Duration, n, most int) {
	keys := slices.SortedFunc(maps.Keys(sums), func(a, b string) int { return cmp.Compare(sums[b], sums[a]) })
	for _, k := range keys[:min(most, len(keys))] {
		fmt.Fprintf(w, "%s%10v %s\n", indent, sums[k]/time.Duration(n), k)
	}
}
