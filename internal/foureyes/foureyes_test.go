package foureyes_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/foureyes"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
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
