// Package procstat reads the figures of a process that Linux's
// /proc/<pid>/status gives and the project's tests and benchmarks report:
// its resident memory now and at its peak, the anonymous part of it, and
// its threads. Where /proc is not there (other systems) a read fails, and
// a benchmark reports nothing rather than a zero.
package procstat

import (
	"bytes"
	"os"
	"strconv"

	"github.com/cockroachdb/errors"
)

// Status is what the project reads of a process's /proc/<pid>/status. The
// memory figures are in KiB, as the file gives them; a field the file
// does not have is 0.
type Status struct {
	// RSS is the resident memory now (VmRSS).
	RSS int64
	// Peak is the highest resident memory so far (VmHWM).
	Peak int64
	// Anon is the anonymous part of RSS (RssAnon): heap and stacks; the
	// rest is mapped files, such as the database's tables, which the
	// kernel takes back under pressure.
	Anon int64
	// Threads is how many threads the process has (Threads).
	Threads int64
}

// Self reads this process's status.
func Self() (Status, error) { return read("self") }

// Of reads the status of the process pid.
func Of(pid int) (Status, error) { return read(strconv.Itoa(pid)) }

func read(pid string) (Status, error) {
	raw, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return Status{}, errors.WithStack(err)
	}
	return Parse(raw)
}

// Parse reads the fields of Status from the text of a status file; a
// field whose value is not a whole number is an error that names it.
func Parse(raw []byte) (Status, error) {
	var s Status
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var to *int64
		switch string(name) {
		case "VmRSS":
			to = &s.RSS
		case "VmHWM":
			to = &s.Peak
		case "RssAnon":
			to = &s.Anon
		case "Threads":
			to = &s.Threads
		default:
			continue
		}
		value = bytes.TrimSpace(value)
		value = bytes.TrimSpace(bytes.TrimSuffix(value, []byte("kB")))
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil {
			return Status{}, errors.Newf("procstat: %s is %q, not a whole number", name, value)
		}
		*to = n
	}
	return s, nil
}

// MiB is kib KiB in MiB.
func MiB(kib int64) float64 { return float64(kib) / 1024 }
