//go:build race

package httpapi

// raceDetector says the tests run under -race, where a sync.Pool drops
// some of what it is given back (so counts of allocations vary).
const raceDetector = true
