package badgerstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// benchValue is the 512-byte value the commit benchmarks write.
func benchValue() []byte {
	v := make([]byte, 512)
	for i := range v {
		v[i] = byte(i * 7)
	}
	return v
}

// BenchmarkCommitDurable measures synced commits of one 512-byte write
// under a fresh key, from 1, 8 and 64 concurrent writers, on disk. It
// reports commits/s; concurrent writers share syncs.
func BenchmarkCommitDurable(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := open(b, badgerstore.Options{Dir: b.TempDir()})
			value := benchValue()
			b.SetBytes(int64(len(value)))
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						err := s.Update(b.Context(), func(tx store.Txn) error {
							return tx.Set(store.Key("bench", i), value)
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// BenchmarkCommitBatched writes the same 512-byte values as
// BenchmarkCommitDurable, 1,000 per synced commit, from one writer, on
// disk. It reports writes/s.
func BenchmarkCommitBatched(b *testing.B) {
	const batch = 1000
	s := open(b, badgerstore.Options{Dir: b.TempDir()})
	value := benchValue()
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for start := 0; start < b.N; start += batch {
		end := min(start+batch, b.N)
		err := s.Update(b.Context(), func(tx store.Txn) error {
			for i := start; i < end; i++ {
				if err := tx.Set(store.Key("bench", i), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkReverseScanBelowDeletes reverse-scans a prefix of one key, and
// an empty one, just above 100,000 deleted keys that compaction has not
// dropped (the index entries of runs that ended): the scan must end at
// its prefix's edge, not walk the deleted keys below it.
func BenchmarkReverseScanBelowDeletes(b *testing.B) {
	s := open(b, badgerstore.Options{InMemory: true})
	const deleted = 100_000
	for done := 0; done < deleted; done += 10_000 {
		benchUpdate(b, s, func(tx store.Txn) error {
			for i := done; i < done+10_000; i++ {
				if err := tx.Set(fmt.Appendf(nil, "d/%08d", i), []byte("x")); err != nil {
					return err
				}
			}
			return nil
		})
		benchUpdate(b, s, func(tx store.Txn) error {
			for i := done; i < done+10_000; i++ {
				if err := tx.Delete(fmt.Appendf(nil, "d/%08d", i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	benchUpdate(b, s, func(tx store.Txn) error { return tx.Set([]byte("e/1"), []byte("x")) })
	for _, prefix := range []string{"e/", "f/"} {
		b.Run("prefix="+prefix, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := s.View(context.Background(), func(r store.Reader) error {
					return r.Scan(store.ScanOptions{Prefix: []byte(prefix), Reverse: true, KeysOnly: true}, func(_, _ []byte) error { return nil })
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchUpdate(b *testing.B, s store.Store, fn func(store.Txn) error) {
	b.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		b.Fatal(err)
	}
}
