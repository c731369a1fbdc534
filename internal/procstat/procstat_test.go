package procstat_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/bas-platform/bas/internal/procstat"
	"github.com/google/go-cmp/cmp"
)

// TestParse reads the fields it names from a status file's text, in KiB,
// whatever their order, without a trailing newline, and with the others
// left out; a missing field is 0, and a value that is not a number is an
// error.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name    string
		raw     string
		want    procstat.Status
		wantErr bool
	}{
		{
			name: "linux 6",
			raw: "Name:\tbas.test\nUmask:\t0022\nState:\tR (running)\nVmPeak:\t 2478060 kB\nVmSize:\t 2412524 kB\n" +
				"VmHWM:\t  131072 kB\nVmRSS:\t  102400 kB\nRssAnon:\t   61440 kB\nRssFile:\t   40960 kB\n" +
				"RssShmem:\t       0 kB\nThreads:\t12\nSigQ:\t0/94857\n",
			want: procstat.Status{RSS: 102400, Peak: 131072, Anon: 61440, Threads: 12},
		},
		{
			name: "other order, no last newline",
			raw:  "Threads:\t3\nRssAnon:\t7 kB\nVmRSS:\t9 kB\nVmHWM:\t11 kB",
			want: procstat.Status{RSS: 9, Peak: 11, Anon: 7, Threads: 3},
		},
		{
			name: "kernel without RssAnon",
			raw:  "VmHWM:\t200 kB\nVmRSS:\t100 kB\nThreads:\t1\n",
			want: procstat.Status{RSS: 100, Peak: 200, Threads: 1},
		},
		{name: "empty", raw: ""},
		{name: "lines without a colon", raw: "garbage\n\n\nVmRSS 5 kB\n"},
		{name: "not a number", raw: "VmRSS:\tmany kB\n", wantErr: true},
		{name: "no value", raw: "VmHWM:\n", wantErr: true},
	} {
		t.Run(test.name, func(t *testing.T) {
			got, err := procstat.Parse([]byte(test.raw))
			if (err != nil) != test.wantErr {
				t.Fatalf("Parse: error %v, want one: %v", err, test.wantErr)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSelfAndOf: on a system with /proc, this process and a child each
// have resident memory, a peak no lower than it and threads; a process
// that cannot be is an error.
func TestSelfAndOf(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc here")
	}
	self, err := procstat.Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.RSS <= 0 || self.Peak < self.RSS || self.Anon <= 0 || self.Threads < 1 {
		t.Errorf("Self = %+v, want resident memory, a peak at least that, anonymous memory and threads", self)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no child to read: %v", err)
	}
	child, err := procstat.Of(cmd.Process.Pid)
	if err != nil {
		t.Error(err)
	}
	if child.RSS <= 0 || child.Threads < 1 {
		t.Errorf("Of(child) = %+v, want resident memory and threads", child)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := procstat.Of(-1); err == nil {
		t.Error("Of(-1), a process that cannot be: no error")
	}
}

// TestMiB: KiB to MiB.
func TestMiB(t *testing.T) {
	t.Parallel()
	if got := procstat.MiB(1536); got != 1.5 {
		t.Errorf("MiB(1536) = %v, want 1.5", got)
	}
}

// FuzzParse: any text is parsed without a panic, and what parses again
// from the fields it gave, written back as a status file, is the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte("VmHWM:\t  131072 kB\nVmRSS:\t  102400 kB\nRssAnon:\t   61440 kB\nThreads:\t12\n"))
	f.Add([]byte("Threads:\t3\nVmRSS:\t9 kB"))
	f.Add([]byte("VmRSS:\tmany kB\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := procstat.Parse(raw)
		if err != nil {
			return
		}
		again, err := procstat.Parse(fmt.Appendf(nil, "VmRSS:\t%d kB\nVmHWM:\t%d kB\nRssAnon:\t%d kB\nThreads:\t%d\n",
			s.RSS, s.Peak, s.Anon, s.Threads))
		if err != nil || again != s {
			t.Errorf("Parse of %+v written back = %+v, %v", s, again, err)
		}
	})
}
