//go:build !race

package httpapi

// raceDetector says the tests run under -race (see race_internal_test.go).
const raceDetector = false
