package badgerstore_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/cockroachdb/errors"
)

// crashDirEnv tells the test binary, run again as a child, to be the writer
// of TestCrashKeepsAcknowledgedCommits in that directory.
const crashDirEnv = "BADGERSTORE_CRASH_DIR"

const (
	crashWriters = 4    // concurrent writers in the child, so syncs are shared
	crashAcks    = 300  // acknowledgements the parent waits for before the kill
	crashMax     = 5000 // commits per writer after which the child stops on its own
)

// TestCrashKeepsAcknowledgedCommits kills a writing process with SIGKILL
// and checks that every commit it acknowledged is in the store afterwards:
// each commit writes a small value (kept in the LSM tree) and one the size
// of a run's record (kept in the value log with ValueThreshold 512).
func TestCrashKeepsAcknowledgedCommits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashHelperProcess$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Every line read was written after an Update returned. Keep reading
	// after the kill: lines already in the pipe were acknowledged too.
	var acked []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		key, ok := strings.CutPrefix(sc.Text(), "ack ")
		if !ok {
			continue
		}
		acked = append(acked, key)
		if len(acked) == crashAcks {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the writer ended with %v after %d acknowledgements, want killed; its stderr:\n%s", err, len(acked), stderr.String())
	}

	s := open(t, badgerstore.Options{Dir: dir, ValueThreshold: 512})
	stored := 0
	err = s.View(t.Context(), func(r store.Reader) error {
		for _, key := range acked {
			v, err := r.Get([]byte(key))
			if err != nil {
				return errors.Wrapf(err, "acknowledged key %q", key)
			}
			if string(v) != "value of "+key {
				return errors.Newf("acknowledged key %q holds %q", key, v)
			}
			if v, err = r.Get([]byte(key + "/record")); err != nil || !bytes.Equal(v, crashRecord(key)) {
				return errors.Newf("acknowledged key %q/record holds %d bytes, %v; want its %d", key, len(v), err, len(crashRecord(key)))
			}
		}
		return r.Scan(store.ScanOptions{Prefix: []byte("crash/"), KeysOnly: true}, func(k, _ []byte) error {
			if !bytes.HasSuffix(k, []byte("/record")) {
				stored++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commits acknowledged before the kill, %d found after it", len(acked), stored)
}

// crashRecord is the value written with key beside its small one: the
// size of a run's record, so kept in the value log rather than the LSM
// tree (the child's ValueThreshold is 512).
func crashRecord(key string) []byte {
	return bytes.Repeat([]byte(key+";"), 800/(len(key)+1)+1)
}

// TestCrashHelperProcess is the writer of TestCrashKeepsAcknowledgedCommits;
// it does nothing unless run by it.
func TestCrashHelperProcess(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestCrashKeepsAcknowledgedCommits")
	}
	s, err := badgerstore.Open(badgerstore.Options{Dir: dir, Logger: quiet, ValueThreshold: 512})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range crashMax {
				key := fmt.Sprintf("crash/%d/%05d", w, i)
				err := s.Update(t.Context(), func(tx store.Txn) error {
					if err := tx.Set([]byte(key), []byte("value of "+key)); err != nil {
						return err
					}
					return tx.Set([]byte(key+"/record"), crashRecord(key))
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				out.Lock()
				fmt.Fprintf(os.Stdout, "ack %s\n", key) // one write: whole lines only
				out.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Fprintln(os.Stderr, "the writer finished without being killed")
	os.Exit(3)
}
