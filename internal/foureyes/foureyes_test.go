package foureyes_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/foureyes"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// broken is a queue whose store fails.
type broken struct{}

func (broken) FourEyes(context.Context, string) (bool, error) {
	return false, errors.Mark(errors.New("disk on fire"), errs.Unavailable)
}

func (broken) ProposeChangeTx(store.Txn, string, string, string, string, any) (*foureyes.Change, error) {
	return nil, nil
}

func TestRequiredReportsAFailingQueue(t *testing.T) {
	t.Parallel()
	on, err := foureyes.Required(context.Background(), broken{}, "ten_1")
	if on || !errors.Is(err, errs.Unavailable) || err.Error() != "read the four-eyes setting: disk on fire" {
		t.Errorf("Required = %v, %v", on, err)
	}
}

// TestAfterDecided: what an ApplyFunc asks to run after its transaction
// runs once, in order, when the queue says the transaction ended, and not
// before; a context the queue did not make cannot tell, and says so.
func TestAfterDecided(t *testing.T) {
	t.Parallel()
	if foureyes.AfterDecided(context.Background(), func() { t.Error("ran") }) {
		t.Error("a plain context took a function")
	}
	ctx, ended := foureyes.WithAfterDecided(context.Background())
	var ran []int
	for i := range 3 { // a transaction run three times (conflicts)
		if !foureyes.AfterDecided(ctx, func() { ran = append(ran, i) }) {
			t.Fatal("the queue's context refused a function")
		}
	}
	if len(ran) != 0 {
		t.Fatalf("ran before the end: %v", ran)
	}
	ended()
	ended()
	if diff := cmp.Diff([]int{0, 1, 2}, ran); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
}
