package main

import (
	"os"
	"strings"
)

// Example reports three pairs of a benchmark's runs: the new code's p99
// was lower in each.
func Example() {
	runs := map[int]map[string]result{}
	for p, lines := range [][2]string{
		{"BenchmarkFairness/flooded-2 2000 100 ns/op 4.0 p99-ms", "BenchmarkFairness/flooded-2 2000 100 ns/op 3.0 p99-ms"},
		{"BenchmarkFairness/flooded-2 2000 100 ns/op 5.0 p99-ms", "BenchmarkFairness/flooded-2 2000 100 ns/op 4.5 p99-ms"},
		{"BenchmarkFairness/flooded-2 2000 100 ns/op 3.0 p99-ms", "BenchmarkFairness/flooded-2 2000 100 ns/op 2.4 p99-ms"},
	} {
		before, _ := parse(strings.NewReader("# load 1.5\n" + lines[0]))
		after, _ := parse(strings.NewReader("# load 1.7\n" + lines[1]))
		runs[p+1] = map[string]result{"old": before, "new": after}
	}
	report(os.Stdout, runs, []string{"p99-ms"})
	// Output:
	// 3 pairs; load average old/new at each run's start: 1.5/1.7 1.5/1.7 1.5/1.7
	//
	// BenchmarkFairness/flooded
	//   p99-ms             old 4.000 (3.000-5.000) | new 3.000 (2.400-4.500) | new/old median x0.800 (0.75-0.90), lower in 3/3, sign test p=0.250
}
