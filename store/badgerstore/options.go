package badgerstore

import (
	"log/slog"
	"time"

	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Defaults of Options: a small-machine set (see the package doc, Memory on
// a small machine).
const (
	// DefaultGCInterval is the default of Options.GCInterval.
	DefaultGCInterval = 5 * time.Minute
	// DefaultMemTableSize is the default of Options.MemTableSize.
	DefaultMemTableSize = 8 << 20
	// DefaultBlockCacheSize is the default of Options.BlockCacheSize.
	DefaultBlockCacheSize = 32 << 20
	// DefaultIndexCacheSize is the default of Options.IndexCacheSize.
	DefaultIndexCacheSize = 16 << 20
	// DefaultValueLogFileSize is the default of Options.ValueLogFileSize.
	DefaultValueLogFileSize = 64 << 20
)

// Settings Open applies that Options does not expose (see the package doc).
const (
	numMemtables            = 2
	numLevelZeroTables      = 4
	numLevelZeroTablesStall = 16
	numCompactors           = 2 // Badger refuses 1.
	baseTableSize           = 1 << 20
	maxValueThreshold       = 1 << 20 // Badger's own ceiling.
	// valueThreshold is the size from which a value is kept in the value
	// log and the LSM tree holds only a pointer to it (on disk; in memory
	// every value stays in the tree). A run's record (600-1,100 bytes) is
	// rewritten at every step, so kept in the tree it was copied again by
	// every compaction down the levels; see the package doc.
	valueThreshold = 512
	gcDiscardRatio = 0.5
)

// Options configure Open. The zero value of every field but Dir/InMemory is
// a working default.
type Options struct {
	// Dir is the directory holding the database; it is created when missing.
	// Exactly one of Dir and InMemory must be set.
	Dir string

	// InMemory keeps everything in memory: nothing is written to disk and
	// nothing survives Close. For tests.
	InMemory bool

	// Logger receives Badger's log lines (its DEBUG, INFO, WARNING and
	// ERROR become slog Debug, Info, Warn and Error, with component=badger)
	// and the value-log GC's reports. Defaults to discarding them.
	Logger *slog.Logger

	// GCInterval is how often the value-log GC runs: each round calls
	// Badger's RunValueLogGC(0.5) until it finds no file worth rewriting.
	// Defaults to 5 minutes; a negative value turns the schedule off (RunGC
	// still works). Unused InMemory.
	GCInterval time.Duration

	// Clock times the GC schedule. Defaults to clock.Real{}.
	Clock clock.Clock

	// MemTableSize is the size of one memtable. Badger keeps two (one being
	// written, one being flushed) and refuses a transaction that writes more
	// than 15% of it, so it also bounds one commit: the 8 MiB default
	// allows about 1.2 MiB per transaction (on disk, of keys and of values
	// under 512 bytes; see the package doc, Limits). Defaults to 8 MiB.
	MemTableSize int64

	// BlockCacheSize is the cache of decompressed table blocks. Defaults to
	// 32 MiB.
	BlockCacheSize int64

	// IndexCacheSize is the cache of table indexes and bloom filters; with a
	// bound, indexes are not all pinned in memory. Defaults to 16 MiB.
	IndexCacheSize int64

	// ValueLogFileSize is the size at which a value-log file is rotated; GC
	// reclaims space a whole file at a time. It also bounds one value.
	// Defaults to 64 MiB; Badger accepts 1 MiB up to 2 GiB.
	ValueLogFileSize int64
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.GCInterval == 0 {
		o.GCInterval = DefaultGCInterval
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.BlockCacheSize == 0 {
		o.BlockCacheSize = DefaultBlockCacheSize
	}
	if o.IndexCacheSize == 0 {
		o.IndexCacheSize = DefaultIndexCacheSize
	}
	if o.ValueLogFileSize == 0 {
		o.ValueLogFileSize = DefaultValueLogFileSize
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.Dir == "" && !o.InMemory:
		return errors.New("badgerstore: Options.Dir is empty: set Dir to the database directory, or InMemory for a throwaway store")
	case o.Dir != "" && o.InMemory:
		return errors.New("badgerstore: Options.Dir and Options.InMemory are both set: an in-memory store has no directory, unset one of them")
	case o.MemTableSize < 1<<20:
		return errors.Newf("badgerstore: Options.MemTableSize %d is below 1 MiB: leave it 0 for the 8 MiB default", o.MemTableSize)
	case o.BlockCacheSize < 0:
		return errors.Newf("badgerstore: Options.BlockCacheSize %d is negative: leave it 0 for the 32 MiB default", o.BlockCacheSize)
	case o.IndexCacheSize < 0:
		return errors.Newf("badgerstore: Options.IndexCacheSize %d is negative: leave it 0 for the 8 MiB default", o.IndexCacheSize)
	case o.ValueLogFileSize < 1<<20 || o.ValueLogFileSize >= 2<<30:
		return errors.Newf("badgerstore: Options.ValueLogFileSize %d is outside [1 MiB, 2 GiB): leave it 0 for the 64 MiB default", o.ValueLogFileSize)
	}
	return nil
}

// badgerOptions translates o (with defaults applied) into Badger's options.
func (o Options) badgerOptions() badger.Options {
	bo := badger.DefaultOptions(o.Dir)
	if o.InMemory {
		bo = badger.DefaultOptions("").WithInMemory(true)
	}
	// Badger refuses a value threshold above 15% of the memtable (its
	// transaction limit). In memory there is no value log: every value
	// stays in the tree, up to Badger's 1 MiB ceiling when the memtable
	// allows.
	threshold := int64(valueThreshold)
	if o.InMemory {
		threshold = maxValueThreshold
	}
	if limit := 15 * o.MemTableSize / 100; threshold > limit {
		threshold = limit
	}
	return bo.
		WithSyncWrites(true).
		WithLogger(newLogger(o.Logger)).
		WithMetricsEnabled(false).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(numMemtables).
		WithNumLevelZeroTables(numLevelZeroTables).
		WithNumLevelZeroTablesStall(numLevelZeroTablesStall).
		WithNumCompactors(numCompactors).
		WithBaseTableSize(baseTableSize).
		WithBlockCacheSize(o.BlockCacheSize).
		WithIndexCacheSize(o.IndexCacheSize).
		WithValueLogFileSize(o.ValueLogFileSize).
		WithValueThreshold(threshold).
		WithCompression(options.None)
}
