package runengine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/bas-platform/bas/process"
	"github.com/google/go-cmp/cmp"
)

func TestDefCacheKeepsAtMostItsLimit(t *testing.T) {
	c := newDefCache(3)
	def := func(i int) *process.Definition { return &process.Definition{ID: fmt.Sprintf("prc_%d", i)} }
	for i := range 3 {
		c.fill("ten_a", def(i).ID, c.generation(), def(i))
	}
	c.get("ten_a", "prc_0") // used: prc_1 is now the least recently used
	for i := 3; i < 6; i++ {
		c.fill("ten_b", def(i).ID, c.generation(), def(i))
		if c.size() > 3 {
			t.Fatalf("%d entries, limit 3", c.size())
		}
	}
	var kept []string
	for _, k := range []defKey{{"ten_a", "prc_0"}, {"ten_a", "prc_1"}, {"ten_a", "prc_2"}, {"ten_b", "prc_3"}, {"ten_b", "prc_4"}, {"ten_b", "prc_5"}} {
		if _, ok := c.get(k.tenant, k.id); ok {
			kept = append(kept, k.tenant+"/"+k.id)
		}
	}
	if diff := cmp.Diff([]string{"ten_b/prc_3", "ten_b/prc_4", "ten_b/prc_5"}, kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if len(c.entries) != c.lru.Len() {
		t.Errorf("%d keys for %d entries", len(c.entries), c.lru.Len())
	}
}

// A fill that began before a change's hook is dropped; while the change is
// pending, only a read of what it writes is kept.
func TestDefCacheFillRacingAChange(t *testing.T) {
	old := &process.Definition{ID: "prc_1", Enabled: true, Version: 1}
	next := &process.Definition{ID: "prc_1", Enabled: false, Version: 1}
	c := newDefCache(10)
	gen := c.generation()
	if err := c.changed(nil, "ten_a", old, next); err != nil {
		t.Fatal(err)
	}
	c.fill("ten_a", "prc_1", gen, old) // began before the hook
	if _, ok := c.get("ten_a", "prc_1"); ok {
		t.Fatal("a fill begun before the change was kept")
	}
	c.fill("ten_a", "prc_1", c.generation(), old) // read before the commit
	if _, ok := c.get("ten_a", "prc_1"); ok {
		t.Fatal("a fill of the definition before the pending change was kept")
	}
	c.fill("ten_a", "prc_1", c.generation(), &process.Definition{ID: "prc_1", Version: 1}) // read after the commit
	if got, ok := c.get("ten_a", "prc_1"); !ok || got.Enabled {
		t.Fatalf("after the commit: %+v, %v; want the disabled definition", got, ok)
	}
	if len(c.pending) != 0 {
		t.Errorf("pending %v after a read saw the change", c.pending)
	}
	c.fill("ten_a", "prc_1", gen, old) // began before the hook, ends after a read saw the commit
	if got, ok := c.get("ten_a", "prc_1"); !ok || got.Enabled {
		t.Fatal("a fill begun before the change replaced its definition")
	}
	c.fill("ten_a", "prc_1", c.generation(), old) // cannot happen, but a fill replaces
	if err := c.changed(nil, "ten_a", old, next); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get("ten_a", "prc_1"); ok {
		t.Error("a change left the entry")
	}
}

// Definitions changed and never started are remembered by a digest of what
// each change writes, not by its JSON: the marks of many large definitions
// take little memory.
func TestDefCachePendingKeepsNoBodies(t *testing.T) {
	const defs, body = 256, 128 << 10
	c := newDefCache(10)
	desc := strings.Repeat("x", body)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range defs {
		def := &process.Definition{ID: fmt.Sprintf("prc_%d", i), Description: desc}
		if err := c.changed(nil, "ten_a", nil, def); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(c.pending) != defs {
		t.Fatalf("%d pending marks, want %d", len(c.pending), defs)
	}
	// The bodies alone would be defs*body = 32 MiB.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Errorf("the heap grew by %d bytes for %d pending marks, want at most 4 MiB", grew, defs)
	}
	runtime.KeepAlive(c)
	// A read of what a change writes still clears its mark and is kept.
	def := &process.Definition{ID: "prc_7", Description: desc}
	c.fill("ten_a", "prc_7", c.generation(), def)
	if _, ok := c.get("ten_a", "prc_7"); !ok {
		t.Error("a read of the pending change was not kept")
	}
	if _, ok := c.pending[defKey{"ten_a", "prc_7"}]; ok {
		t.Error("the mark stayed after a read saw the change")
	}
}
