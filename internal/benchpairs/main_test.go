package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	got, err := parse(strings.NewReader(`# load 3.25
goos: linux
BenchmarkFairness/flooded-wide-2    	    2000	  34230112 ns/op	         1.704 alone-p50-ms	      1004 flood-starts/s
BenchmarkChain3/starters=64-2 3000 52000 ns/op 143 allocs/op
PASS
`))
	want := result{load: "3.25", metrics: map[string]map[string]float64{
		"BenchmarkFairness/flooded-wide": {"ns/op": 34230112, "alone-p50-ms": 1.704, "flood-starts/s": 1004},
		"BenchmarkChain3/starters=64":    {"ns/op": 52000, "allocs/op": 143},
	}}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("parse (-want +got):\n%s", diff)
	}
}

// TestParseLongLine: a line of maxLine bytes with its newline is read; one
// byte more is an error, not results cut short.
func TestParseLongLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int // the long line's length without its newline
		fail bool
	}{
		{name: "just inside", n: maxLine - 1},
		{name: "just outside", n: maxLine, fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Repeat("x", tc.n) + "\nBenchmarkChain3-2 3000 52000 ns/op\n"
			got, err := parse(strings.NewReader(in))
			if (err != nil) != tc.fail {
				t.Fatalf("parse error %v, want an error: %v", err, tc.fail)
			}
			if !tc.fail && got.metrics["BenchmarkChain3"]["ns/op"] != 52000 {
				t.Errorf("the line after the long one was not read: %v", got.metrics)
			}
		})
	}
}

func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		k, n int
		want float64
	}{{0, 5, 0.0625}, {5, 5, 0.0625}, {1, 7, 0.125}, {3, 6, 1}, {0, 10, 2.0 / 1024}, {0, 0, 1}} {
		if got := signTest(c.k, c.n); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("signTest(%d, %d) = %v, want %v", c.k, c.n, got, c.want)
		}
	}
}

// TestRun runs a stand-in binary as old and new in pairs, flipping the
// order, and reports the pairs saved.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake.test")
	script := "#!/bin/sh\necho \"BenchmarkX-2 1 10 ns/op 2.0 p99-ms\"\necho \"$@\" >> " + filepath.Join(dir, "calls") + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(bin, bin, "X", "10x", "2", 2, filepath.Join(dir, "runs"), "p99-ms", &out); err != nil {
		t.Fatal(err)
	}
	calls, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(calls), "-test.bench X -test.benchtime 10x -test.cpu 2"); n != 4 {
		t.Errorf("%d runs with the flags, want 4:\n%s", n, calls)
	}
	if !strings.Contains(out.String(), "new/old median x1.000 (1.00-1.00), lower in 0/2, sign test p=1.000") {
		t.Errorf("report:\n%s", out.String())
	}
}
