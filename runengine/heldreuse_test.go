package runengine

import (
	"fmt"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestHeldChangeReusedOnceTold: a change held back for the tenants' fair
// share and then added to a transaction by a change that reads (settle)
// may be told at once, when it fails on its own; once told it may be
// reused (a run's commit value is), so the committer must not touch it
// after. Here the failed change is "reused" by its after (it names another
// tenant), as newRunCommit hands the value to the next change.
func TestHeldChangeReusedOnceTold(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	c := newCommitter(st, 1000, nil, Failpoints{}, nil)
	defer c.close()
	// The first change holds the committer until the others are queued,
	// so they are added in one go: 64 of the flood fill its share of the
	// open transaction beside another tenant's change, the next two of the
	// flood are held back, and a change that reads adds them.
	started, unblock := make(chan struct{}), make(chan struct{})
	free := sync.OnceFunc(func() { close(unblock) })
	defer free() // before c.close, which waits for the held change
	first := make(chan error, 1)
	c.submit(&delta{apply: func(tx store.Txn) error {
		close(started)
		<-unblock
		return tx.Set([]byte("first"), nil)
	}, after: func(err error) { first <- err }})
	testwait.Recv(t, started, "the first change was applied")
	kc := newKeyedChanges(c)
	var keys []string
	for i := range commitQuantum {
		keys = append(keys, fmt.Sprintf("flood-%02d", i))
	}
	kc.submit("flood", keys...)
	kc.submit("other", "other")
	kc.submit("flood", "flood-held")
	failed := make(chan error, 1)
	bad := &delta{tenant: "flood", apply: func(store.Txn) error { return errors.New("refused") }}
	bad.after = func(err error) {
		bad.tenant = "next" // reused for another change once told
		failed <- err
	}
	c.submit(bad)
	reads := make(chan error, 1)
	c.submit(&delta{reads: true, apply: func(tx store.Txn) error {
		if _, err := tx.Get([]byte("first")); err != nil {
			return err
		}
		return tx.Set([]byte("read"), nil)
	}, after: func(err error) { reads <- err }})
	free()
	wait := func(name string, ch chan error, wantErr bool) {
		t.Helper()
		if err := testwait.Recv(t, ch, name+" is told"); (err != nil) != wantErr {
			t.Fatalf("%s: error %v, want an error: %v", name, err, wantErr)
		}
	}
	wait("first", first, false)
	wait("the failing change", failed, true)
	wait("the change that reads", reads, false)
	kc.wait(t, append(keys, "other", "flood-held")...)
	if diff := cmp.Diff("next", bad.tenant); diff != "" {
		t.Errorf("the told change was changed after it was told (-want +got):\n%s", diff)
	}
	if got := readKeys(t, st, nil); len(got) != commitQuantum+4 {
		t.Errorf("the store holds %d keys, want %d: %v", len(got), commitQuantum+4, got)
	}
}
