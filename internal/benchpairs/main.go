// Command benchpairs judges a change by benchmarks on a shared, busy
// machine: it runs the test binaries of the old and the new code in turn,
// pair after pair (the order flipped each pair, so neither always runs
// first), and reports, per benchmark and metric, each pair's ratio new/old,
// their median and range, in how many pairs the new value was lower, and
// the two-sided sign test's p. A pair runs within a minute or two, so the
// machine's load weighs on its two runs alike, and the verdict rests on
// the ratios, not on figures measured at different moments (the same
// binary's p99 can move by half between two hours of one afternoon). Give
// the same binary as old and new to see how far ratios wander by chance.
//
//	go test -c -o /tmp/old.test ./runengine   (at the old commit)
//	go test -c -o /tmp/new.test ./runengine   (at the new one)
//	go run ./internal/benchpairs -old /tmp/old.test -new /tmp/new.test \
//	    -bench 'Fairness/flooded(-wide)?$' -benchtime 2000x -pairs 7 -dir /tmp/ab
//	go run ./internal/benchpairs -dir /tmp/ab   (report the runs saved there again)
//
// Each run's output is saved in dir as PAIR.old.txt and PAIR.new.txt, its
// first line the machine's load average as the run began.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	oldBin := flag.String("old", "", "the old code's test binary (none: only report the runs saved in -dir)")
	newBin := flag.String("new", "", "the new code's test binary")
	bench := flag.String("bench", ".", "the benchmarks to run (-test.bench)")
	benchtime := flag.String("benchtime", "1x", "-test.benchtime of each run")
	cpu := flag.String("cpu", "", "-test.cpu of each run (empty: the binary's default)")
	pairs := flag.Int("pairs", 5, "how many pairs to run")
	dir := flag.String("dir", "benchpairs", "where the runs are saved")
	metrics := flag.String("metrics", "", "the metrics to report, comma separated (empty: every one)")
	flag.Parse()
	if err := run(*oldBin, *newBin, *bench, *benchtime, *cpu, *pairs, *dir, *metrics, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchpairs:", err)
		os.Exit(1)
	}
}

func run(oldBin, newBin, bench, benchtime, cpu string, pairs int, dir, metrics string, out io.Writer) error {
	if oldBin != "" {
		if newBin == "" {
			return fmt.Errorf("-old needs -new")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		args := []string{"-test.run", "^$", "-test.bench", bench, "-test.benchtime", benchtime}
		if cpu != "" {
			args = append(args, "-test.cpu", cpu)
		}
		for p := 1; p <= pairs; p++ {
			order := []string{"old", "new"}
			if p%2 == 0 {
				order = []string{"new", "old"}
			}
			for _, side := range order {
				bin := map[string]string{"old": oldBin, "new": newBin}[side]
				if err := runOnce(bin, args, filepath.Join(dir, fmt.Sprintf("%d.%s.txt", p, side))); err != nil {
					return err
				}
			}
		}
	}
	runs, err := readDir(dir)
	if err != nil {
		return err
	}
	var want []string
	if metrics != "" {
		want = strings.Split(metrics, ",")
	}
	report(out, runs, want)
	return nil
}

// runOnce runs bin with args, its output and the load average before it
// in file.
func runOnce(bin string, args []string, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(f, "# load %s\n", strings.Fields(string(load) + " ?")[0])
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (see %s)", bin, err, file)
	}
	return nil
}

// result is one run's benchmark lines: benchmark -> metric -> value, and
// the load as it began.
type result struct {
	load    string
	metrics map[string]map[string]float64
}

var runFile = regexp.MustCompile(`^(\d+)\.(old|new)\.txt$`)

// readDir reads the runs saved in dir: pair -> "old" or "new" -> result.
func readDir(dir string) (map[int]map[string]result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	runs := map[int]map[string]result{}
	for _, e := range entries {
		m := runFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		r, err := parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		p, _ := strconv.Atoi(m[1])
		if runs[p] == nil {
			runs[p] = map[string]result{}
		}
		runs[p][m[2]] = r
	}
	return runs, nil
}

// parse reads the output of a test binary's benchmarks: each Benchmark
// line's metrics (ns/op and those reported), by the benchmark's name
// without its -GOMAXPROCS suffix. A line longer than maxLine, or a failed
// read, is an error: the results would be cut short.
func parse(r io.Reader) (result, error) {
	res := result{metrics: map[string]map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine)
	for sc.Scan() {
		line := sc.Text()
		if load, ok := strings.CutPrefix(line, "# load "); ok {
			res.load = load
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		res.metrics[name] = m
	}
	return res, sc.Err()
}

// maxLine bounds a line of a test binary's output that parse reads.
const maxLine = 1 << 20

// report writes, per benchmark and metric, the old and new values'
// median and range, the ratios' median and range, how many pairs the new
// value was lower in, and the sign test's p (over the pairs that differ).
func report(w io.Writer, runs map[int]map[string]result, want []string) {
	pairs := slices.Sorted(func(yield func(int) bool) {
		for p, r := range runs {
			if _, ok := r["old"]; ok {
				if _, ok := r["new"]; ok && !yield(p) {
					return
				}
			}
		}
	})
	if len(pairs) == 0 {
		fmt.Fprintln(w, "no complete pair")
		return
	}
	var loads []string
	for _, p := range pairs {
		loads = append(loads, runs[p]["old"].load+"/"+runs[p]["new"].load)
	}
	fmt.Fprintf(w, "%d pairs; load average old/new at each run's start: %s\n", len(pairs), strings.Join(loads, " "))
	benches := slices.Sorted(maps.Keys(runs[pairs[0]]["old"].metrics))
	for _, b := range benches {
		fmt.Fprintf(w, "\n%s\n", b)
		names := want
		if names == nil {
			names = slices.Sorted(maps.Keys(runs[pairs[0]]["old"].metrics[b]))
		}
		for _, m := range names {
			var olds, news, ratios []float64
			for _, p := range pairs {
				o, ok1 := runs[p]["old"].metrics[b][m]
				n, ok2 := runs[p]["new"].metrics[b][m]
				if !ok1 || !ok2 || o == 0 {
					continue
				}
				olds, news, ratios = append(olds, o), append(news, n), append(ratios, n/o)
			}
			if len(ratios) == 0 {
				continue
			}
			lower, higher := 0, 0
			for _, r := range ratios {
				switch {
				case r < 1:
					lower++
				case r > 1:
					higher++
				}
			}
			fmt.Fprintf(w, "  %-18s old %s | new %s | new/old median x%.3f (%.2f-%.2f), lower in %d/%d, sign test p=%.3f\n",
				m, span(olds), span(news), median(ratios), slices.Min(ratios), slices.Max(ratios), lower, len(ratios),
				signTest(lower, lower+higher))
		}
	}
}

// span is a list's median and range.
func span(xs []float64) string {
	return fmt.Sprintf("%s (%s-%s)", num(median(xs)), num(slices.Min(xs)), num(slices.Max(xs)))
}

func num(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// signTest is the two-sided p of k of n pairs going one way when each goes
// either way with even odds.
func signTest(k, n int) float64 {
	if n == 0 {
		return 1
	}
	k = min(k, n-k)
	p := 0.0
	for i := 0; i <= k; i++ {
		p += binom(n, i)
	}
	return min(1, 2*p/math.Pow(2, float64(n)))
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
