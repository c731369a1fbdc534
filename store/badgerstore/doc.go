// Package badgerstore is the default store.Store, on Badger
// (github.com/dgraph-io/badger/v4): an embedded, ordered key-value database
// with serializable snapshot transactions. It passes store/storetest.
//
//	s, err := badgerstore.Open(badgerstore.Options{Dir: "data", Logger: logger})
//	...
//	defer s.Close()
//
// # Durability
//
// Badger runs with SyncWrites on: Update returns only once its commit is
// synced to disk, so an acknowledged commit survives a crash of the process
// or the machine. A synced commit costs a couple of milliseconds; Badger
// merges the commits pending at the same moment into one write and one
// sync, so concurrent Updates share syncs (about 500 commits/s from one
// writer, several thousand/s from hundreds on 2 cores, see LIBRARIES.md and
// BenchmarkCommitDurable). Durable throughput therefore comes from putting
// many writes into one transaction or many concurrent transactions into one
// sync, never from one commit per write in a loop.
//
// A crash in the moment between Badger's creating a new memtable's log file
// and its sizing leaves that file empty, and Badger's Open then fails with
// "Create a new file" (dgraph-io/badger#2207; seen once when a child holding
// a million waiting runs was SIGKILLed). The file holds nothing, and the
// failed Open sized it, so Open here opens again once on that error.
//
// # Conflicts
//
// Transactions are optimistic: a commit fails when a key the transaction
// read (by Get, or visited by Scan, or looked up and found missing) was
// written by another commit since the transaction began. Update then runs
// fn again (store.Retry). Scans do not detect phantoms (a key inserted into
// a scanned range by someone else): enforce uniqueness with point keys you
// Get, as store.Collection's unique indexes do.
//
// # Limits
//
// One transaction may write about 15% of Options.MemTableSize (about
// 1.2 MiB with the defaults): past that Set fails with an error marked
// bas.ErrTooLarge. On disk a value kept in the value log (see Value log)
// counts there by its key and a 12-byte pointer only; in memory every
// value counts whole. A key may have 65,000 bytes; a value may have
// Options.ValueLogFileSize bytes on disk and less than 1 MiB in memory.
//
// # Memory on a small machine
//
// Badger's defaults use about 1.4 GB of RSS under write load. Open applies
// a smaller set, measured with the run engine's benchmarks (a peak of 224
// to 266 MiB over BenchmarkChain3 and up to about 370 MiB over the chains
// with people, of which the Go heap's headroom is about a third; with later
// rounds' changes the chains with people peak at 181-191 MiB over 40,000
// runs, of which 109-116 MiB anonymous, the rest mostly mapped tables: see
// Mapped tables and RSS):
//
//   - MemTableSize 8 MiB (Options.MemTableSize): the in-memory write buffer
//     and, at 15%, the size bound of one transaction. The table built from
//     a full memtable is held in memory while it is written, so this sets
//     the largest share of Badger's own memory. 4 MiB (with three
//     memtables) brings the peak to about 230 MiB at the same throughput,
//     but bounds a transaction at 600 KB, below the values of up to 1 MiB
//     a store must take, so it is not the default.
//   - NumMemtables 2: one memtable being written and one being flushed.
//   - NumLevelZeroTables 4 and NumLevelZeroTablesStall 16: level 0 gathers
//     a few small tables before compaction starts; writes stall at 16.
//     A flushed table spans nearly the whole key range (a commit of fired
//     timers deletes due keys under the system prefix and rewrites records
//     and indexes under the tenant), so each compaction of level 0 rewrites
//     the whole base level. Gathering 12 tables (stall at 24) does that a
//     third as often: firing 100,000 timers wrote 3.9-4.2 instead of 6.3-6.5
//     KB per run to disk, at 58-59 instead of 69-71 CPU-µs per run (three
//     interleaved pairs), though part of that is work put off, not saved:
//     when the last run completed, up to 12 tables (96 MiB) could still
//     wait for compaction instead of 4, a difference of up to 2-3 KB per
//     run at 100,000 runs. And reads then merge up to 12 tables of level 0:
//     BenchmarkChain3 with 64 starters over 30,000 runs (compactions under
//     way) ran at 1,693-2,798 against 2,043-3,353 runs/s. 8 tables (stall
//     at 24) kept Chain3 alike but fired at 64-68 against 66-67 µs, with the
//     cockpit after a crash at 107-139 against 71-74 µs. At a million
//     runs (one run each, load 10-16), 12 tables wrote 8.1 against 10.9 KB
//     per fired run at 80 against 93 CPU-µs, with anonymous memory while
//     firing peaking at 541 against 394 MiB. Neither is taken.
//   - No block compression: a compressing table builder keeps every block
//     twice, which doubled the memory of flushes and compactions. Measured
//     again on a million timers firing at once (the waiting-runs scale
//     test): Snappy wrote 3.3 instead of 9.3 KB to disk per fired run, at
//     71 instead of 91 CPU-µs per run (12-16% less at 100,000 runs), but
//     anonymous memory while firing rose to a median of 369 MiB, peak 709,
//     against 166 and 332: half way, Badger's table builders held 265 MiB
//     of buffers, many of them in flight at once during compactions (and
//     Badger counts a table's compressed bytes, so each holds 2-4 times the
//     data). Tables of 256 KiB compressed (what 1 MiB holds uncompressed)
//     with an 8 MiB block cache: 88 µs, median 229, peak 564 MiB. Not
//     taken: the memory target (300 MiB) matters more.
//   - BlockCacheSize 32 MiB (Options.BlockCacheSize): table blocks. No
//     cache at all (Badger's advice for uncompressed tables, which are read
//     in place) was tried: a million timers fired alike (one pair, 63
//     against 63 CPU-µs per run; at 300,000, three pairs, 53-55 against
//     51-58), but the example server's start took more CPU (11 interleaved
//     pairs, load 8-14: x1.04 and x1.06, higher in 8 of 11; its reads come
//     back to the same blocks, which the cache keeps parsed). Not taken.
//   - IndexCacheSize 16 MiB (Options.IndexCacheSize): table indexes and
//     bloom filters, so they are not all pinned in memory.
//   - NumCompactors 2: Badger refuses 1, and more compete for 2 cores.
//   - BaseLevelSize 10 MiB and LevelSizeMultiplier 10 (Badger's). Fewer,
//     wider levels (multiplier 4, base level 64 MiB, so that a fired
//     run's record is rewritten by fewer compactions) were tried on
//     300,000 timers firing, two pairs: 54 / 56 against 51 / 59 CPU-µs per
//     run, 6.5 / 6.6 against 6.0 / 6.7 KB written per run, peaking at 222
//     / 215 against 192 / 201 MiB: no fewer bytes, a higher peak.
//   - ValueLogFileSize 64 MiB (Options.ValueLogFileSize): value-log files
//     are mapped into memory and collected one file at a time.
//   - BaseTableSize 2 MiB and TableSizeMultiplier 1: tables of 2 MiB at
//     every level. Badger builds each table of a compaction in a buffer
//     of twice its size, and a compaction builds up to 8 tables (plus one
//     per sub-compaction, up to 5 more) at once while earlier ones are
//     synced to disk; with Badger's own multiplier (tables doubling at
//     each level below the first) the deep levels of a large tree have
//     tables of 4-8 MiB, each built in 8-16 MiB. Waiting runs fired at once
//     (the waiting-runs scale test) are where that shows: at the firing's
//     peak of anonymous memory, 300,000 runs, table builders in flight
//     held 104 MiB of the 154 MiB live heap (ten of them building 4 MiB
//     tables), and the collector's headroom doubles what is live. Tables
//     of 2 MiB at every level hold the builders at 4 MiB each (plus a
//     3 MiB index builder while one finishes; at a million runs 15
//     builders and 8 index builders were in flight at the peak, 84 of a
//     140 MiB live heap); see the README's performance table for the
//     figures. How many are in flight is Badger's (it waits for each new
//     table's msync), with no option. One size of 1 MiB (tried
//     in an earlier round) made reads look in more, smaller tables: at
//     300,000 runs starts 11%, firing 5%, a page of runs 40% and the
//     cockpit 80% slower; 2 MiB halves the tables of that, and Badger's
//     own 1 MiB base with doubling (the earlier default) fired at a higher
//     peak. The cost: a million timers fired on a quiet machine (five runs
//     each) at a median 92 against 77 CPU-µs per run, 19,009 against 22,573
//     runs/s, writing 7.9 against 6.8 KB per run, while peaking at 257-283
//     against 291-337 MiB; the memory bound is taken over the rate. Five
//     pairs of runs alternated on a shared machine at load 3-10, 2 MiB
//     tables against round ten's: CPU per fired run alike (medians 62
//     against 61 µs, 61-73 against 51-69), 5.9-9.0 against 6.2-7.6 KB
//     written per run (medians 8.7 against 6.9), firing at a median 16,873
//     against 19,854 runs/s, peaking at 223-314 against 292-347 MiB (over
//     300 in 1 of 5 against 3 of 5); at load 15-23 (three and two runs)
//     55-63 against 66-67 µs, 6.5-8.2 against 8.6-9.8 KB, 258-289 against
//     323-360 MiB. The bytes written by one setting vary by up to 50%
//     between runs (the compactions a firing's end leaves undone are not
//     counted), and the CPU goes with them. What a table costs whatever
//     its size (a CPU
//     profile at a million, load 8-19): Badger's 3 MiB index builder,
//     zeroed for every table (2%), creating, unmapping and deleting its
//     file (2.5%), a fresh builder buffer when the pool had none (2%); the
//     rest of the compactions' cost (copying each table into its mapped
//     file 13%, its msync 10%, merging and building 16%) goes with the
//     bytes written.
//
// Badger builds every table (a memtable flush, each table of a compaction)
// in an allocator it takes from a pool of up to 8 and puts back with every
// buffer it grew: without the jemalloc build tag those buffers are Go heap,
// and a flush of an 8 MiB memtable grows one to 14-30 MiB. Badger frees a
// pooled allocator only after 2 seconds without any table build, so under
// a sustained load the pool ends up holding 8 grown allocators, about 90 of
// the 110 MiB of live heap after 40,000 HTTP starts, and has no option to
// bound it. The store therefore releases, every 250 ms, the allocators idle
// in that pool (a table build then starts a fresh one, as Badger does when
// the pool is empty). It reaches the pool by reflection; a Badger version
// that moves it leaves the store working with Badger's own pool, and
// TestIdleBuildersFindsBadgersPool fails. Measured after 10,000 HTTP starts
// of the example server (four interleaved runs, load 2-3): RSS 167-190 ->
// 120-128 MiB (anonymous 103-127 -> 55-64). That costs CPU: 306-340 ->
// 332-350 µs per start, 93 -> 98 KB allocated per start; the run engine's
// human-task chain 154-165 -> 163-181 CPU-µs per run (medians 160 -> 169,
// five pairs) at a lower peak RSS (151-163 -> 122-156 MiB); BenchmarkChain3
// unchanged. Most of it is the collector's: the pooled buffers held no
// pointers and cost it nothing to mark, but doubled its headroom, so with
// the smaller heap it runs more often (5.3% -> 7.1% of the CPU in one
// profile, and the scavenger 0.5% -> 1%); the rest is builders allocated
// afresh. Releasing every second instead kept more of the speed (306-416,
// median 318 µs per start; the human-task chain +3%) but not the memory:
// RSS at the end 122-174 MiB, as the end of a run often falls before a
// tick has released what the last flush left.
//
// # Mapped tables and RSS
//
// Badger v4 maps every table file into memory (it has no option to read
// them instead) and writes a new table by copying it into its mapping and
// syncing that, so a table is resident in full from the moment it is
// written: the resident memory of a process grows with the store's
// tables, as clean file pages that the kernel reclaims under memory
// pressure and reads back on use. smaps of the process starting a million
// runs waiting a day (the waiting-runs scale test, seven runs): at the end,
// an RSS of 451-517 MiB held 365-369 MiB of tables (216-237 files, every
// page resident and clean), 49-120 MiB anonymous (heap and stacks), 27-30
// MiB of the binary and 1-6 MiB of the memtable's log (16 MiB mapped); the
// value log (128 MiB mapped) had no page resident, and no file a
// compaction deleted was still mapped. Under a memory cgroup limit of 300
// MiB (and of 270), which also counts the page cache of the store's files,
// mapped or not, the same test started, reopened and fired the million
// runs with no process killed: the kernel kept 128-192 MiB of the tables
// resident, the CPU per fired run was within 5% of that of runs without
// a limit, and the rates within their spread (see the README's figures).
// A bound on the tables' share without such a limit would need Badger to
// read its tables instead of mapping them, or advice to the kernel about
// mappings the store does not own.
//
// Badger's process-wide expvar metrics are off: two stores in one process
// share nothing.
//
// # Value log
//
// On disk, values of 1 MiB and more live in the value log, written once at
// their commit, and the LSM tree holds a pointer to them; smaller ones stay
// in the tree. Options.ValueThreshold lowers that size. At 512 a run's
// record of form 2 (JSON, 600-1,100 bytes) went to the log; those of
// forms 3 and 4 (binary; form 4, which the engine writes now, is 110-240
// bytes for the common runs) stay in the tree unless the threshold is lower still (not
// measured). The log pays where runs are rewritten while the tree is
// large: kept in the tree, every rewrite of a
// record is copied again by each compaction down the levels. A million
// runs whose timers came due together fired at 54-65 against 84 CPU-µs
// per run, with anonymous memory while firing at a median of 84-88
// against 159 MiB (the waiting-runs scale test, see the README). It is
// not the default because every synced commit that writes such a value
// syncs two files, the value log and then the memtable's log: a lone
// writer's commits of 512-byte values ran at 227 against 425 per second,
// and BenchmarkChain3 with one starter took 30% more CPU per run; with 64
// starters, whose commits are shared, CPU per run was alike. A store
// written with one threshold reads the same with any other; values move
// as they are rewritten.
//
// # Value-log GC
//
// Values of the value log live there until garbage collection rewrites a
// file whose values are mostly overwritten or deleted; so the directory
// holds their old versions for a while. Every Options.GCInterval (5
// minutes by default) a goroutine calls Badger's RunValueLogGC(0.5) until
// it reports that no file is worth rewriting; RunGC does the same on
// demand. Close stops it. A file counts as overwritten only once
// compactions of the LSM tree dropped the pointers to its old values
// (Badger learns what a file holds of no use from them): rewrites that
// have not been compacted yet hold their files whatever the GC's schedule.
// With ValueThreshold 512, 500 run-sized records rewritten 300 times left
// 126 MB of value log, which one RunGC took to 2.5 MB once compactions had
// run; rewritten 100 times, before any compaction of the tree, nothing was
// reclaimed yet. With GCInterval negative nothing collects the log unless
// the host calls RunGC: with a low ValueThreshold the directory then grows
// with every rewrite.
//
// Badger logs (at Error), but does not return, a failure to sync the value
// log: a commit whose value-log sync failed is acknowledged once the
// memtable's log synced, and its values may be lost with the machine. A
// host that sets ValueThreshold should watch for "Error while curlf sync"
// in its logs; values kept in the tree have no such gap.
//
// # Logging
//
// Badger's own log lines go to Options.Logger with component=badger, its
// levels mapped to slog's (DEBUG to Debug, INFO to Info, WARNING to Warn,
// ERROR to Error), instead of to stderr.
package badgerstore
