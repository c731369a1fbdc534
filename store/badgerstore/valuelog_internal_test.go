package badgerstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/bas-platform/bas/store"
)

// runSized is a value the size of a run's record (600-1,100 bytes).
func runSized(i int) []byte {
	return bytes.Repeat([]byte{byte('a' + i%26)}, 800)
}

// tableBytes is the size of the files of the LSM tree's tables in dir
// (Badger's own table sizes count the values they point to).
func tableBytes(t *testing.T, dir string) (n int64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tables in %s: %v", dir, err)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestRunSizedValuesLeaveTheTree checks that with ValueThreshold 512
// values of a run's record size are kept in the value log on disk, so
// that the LSM tree (whose compactions copy everything in it again at each
// level) holds only pointers to them: 2,000 values of 800 bytes make
// tables of a small fraction of their 1.6 MB.
func TestRunSizedValuesLeaveTheTree(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	s, err := Open(Options{Dir: dir, Logger: quiet, GCInterval: -1, ValueThreshold: 512})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	ctx := context.Background()
	for i := 0; i < n; i += 100 {
		err := s.Update(ctx, func(tx store.Txn) error {
			for j := i; j < i+100; j++ {
				if err := tx.Set(fmt.Appendf(nil, "run/%05d", j), runSized(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil { // flushes the memtable into a table
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir, Logger: quiet, GCInterval: -1, ValueThreshold: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, values := tableBytes(t, dir), int64(n*800); got > values/4 {
		t.Errorf("tables hold %d bytes for %d bytes of values; want at most a quarter", got, values)
	}
	checkRunSized(t, s, n)
}

// TestLargeValuesLeaveTheTransactionBound checks that on disk a
// transaction's values kept in the value log count against the
// transaction bound (15% of the memtable) by their pointers only: 3 MB of
// 100 KB values, over that bound with the default threshold, commit with
// ValueThreshold 512.
func TestLargeValuesLeaveTheTransactionBound(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), GCInterval: -1, ValueThreshold: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	value := bytes.Repeat([]byte("v"), 100<<10)
	err = s.Update(context.Background(), func(tx store.Txn) error {
		for i := range 30 {
			if err := tx.Set(store.Key("big", i), value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(context.Background(), func(r store.Reader) error {
		v, err := r.Get(store.Key("big", 29))
		if err == nil && !bytes.Equal(v, value) {
			err = fmt.Errorf("read %d bytes, want %d", len(v), len(value))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestValuesInTheTreeStayReadable checks that a store written with the
// default threshold (values below 1 MiB in the LSM tree) reads back whole
// when reopened with ValueThreshold 512, and takes new writes beside them.
func TestValuesInTheTreeStayReadable(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	s, err := Open(Options{Dir: dir, Logger: quiet, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	err = s.Update(context.Background(), func(tx store.Txn) error {
		for i := range n {
			if err := tx.Set(fmt.Appendf(nil, "run/%05d", i), runSized(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := tableBytes(t, dir); got < n*800 {
		t.Fatalf("tables hold %d bytes: the default did not keep the values in the tree", got)
	}
	s, err = Open(Options{Dir: dir, Logger: quiet, GCInterval: -1, ValueThreshold: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkRunSized(t, s, n)
	err = s.Update(context.Background(), func(tx store.Txn) error {
		return tx.Set(fmt.Appendf(nil, "run/%05d", n), runSized(n))
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRunSized(t, s, n+1)
}

// checkRunSized checks that s holds the first n values of runSized, whole.
func checkRunSized(t *testing.T, s *Store, n int) {
	t.Helper()
	got := 0
	err := s.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: []byte("run/")}, func(k, v []byte) error {
			if want := runSized(got); !bytes.Equal(v, want) || string(k) != fmt.Sprintf("run/%05d", got) {
				return fmt.Errorf("%s: %d bytes %.10q, want run/%05d: %d bytes %.10q", k, len(v), v, got, len(want), want)
			}
			got++
			return nil
		})
	})
	if err != nil || got != n {
		t.Fatalf("read %d values, %v; want %d", got, err, n)
	}
}

// TestValueThresholdInsideItsBounds opens stores at the edges ValueThreshold
// accepts (TestOpenRejectsBadOptions has those just outside) and checks that
// each keeps what it is given.
func TestValueThresholdInsideItsBounds(t *testing.T) {
	for _, threshold := range []int64{1, maxValueThreshold} {
		t.Run(fmt.Sprint(threshold), func(t *testing.T) {
			s, err := Open(Options{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), GCInterval: -1,
				ValueThreshold: threshold})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = s.Update(context.Background(), func(tx store.Txn) error {
				return tx.Set([]byte("run/00000"), runSized(0))
			})
			if err != nil {
				t.Fatal(err)
			}
			checkRunSized(t, s, 1)
		})
	}
}
