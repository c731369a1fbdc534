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
	numCompactors           = 2       // Badger refuses 1.
	baseTableSize           = 2 << 20 // at every level: tableSizeMultiplier 1
	tableSizeMultiplier     = 1
	maxValueThreshold       = 1 << 20 // Badger's own ceiling.
	gcDiscardRatio          = 0.5
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
	// allows about 1.2 MiB per transaction (of keys and of values below
	// ValueThreshold; see the package doc, Limits). Defaults to 8 MiB.
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

	// ValueThreshold is, on disk, the size from which a value is kept in
	// the value log and the LSM tree holds only a pointer to it. 0 (the
	// default) keeps every value below 1 MiB in the tree. A lower threshold
	// (512 took a run's record of form 2; forms 3 and 4 are smaller, see the
	// package doc) suits many runs rewritten while the tree
	// is large, such as a million timers firing at once: compactions no
	// longer copy the records, for about a third less CPU per fired run
	// and half the memory. But every synced commit that writes such a
	// value then syncs two files, the value log and the memtable's log,
	// so a lone writer's commits take about twice as long; see the
	// package doc, Value log. Ignored InMemory. Between 0 and 1 MiB.
	// The old versions of such values are reclaimed only by the value-log
	// GC, after compactions (keep GCInterval on, or call RunGC; see the
	// package doc, Value-log GC).
	ValueThreshold int64
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
	case o.ValueThreshold < 0 || o.ValueThreshold > maxValueThreshold:
		return errors.Newf("badgerstore: Options.ValueThreshold %d is outside [0, 1 MiB]: leave it 0 to keep values below 1 MiB in the LSM tree", o.ValueThreshold)
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
	// transaction limit); keep its 1 MiB default when the memtable allows.
	// In memory there is no value log: every value stays in the tree.
	threshold := int64(maxValueThreshold)
	if o.ValueThreshold > 0 && !o.InMemory {
		threshold = o.ValueThreshold
	}
	if limit := 15 * o.MemTableSize / 100; threshold > limit {
		threshold = limit
	}
	bo.TableSizeMultiplier = tableSizeMultiplier // Badger has no With method for it
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
