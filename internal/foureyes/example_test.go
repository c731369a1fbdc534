package foureyes_test

import (
	"context"
	"fmt"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/foureyes"
	"github.com/bas-platform/bas/store"
)

// rule is a queue whose workspaces have the rule on or off.
type rule map[string]bool

func (r rule) FourEyes(_ context.Context, tenant string) (bool, error) {
	on, ok := r[tenant]
	if !ok {
		return false, errs.NotFoundf("workspace not found")
	}
	return on, nil
}

func (rule) ProposeChangeTx(store.Txn, string, string, string, string, any) (*foureyes.Change, error) {
	return &foureyes.Change{Status: foureyes.ChangePending}, nil
}

// Required reads the rule the same way for every app: no queue or no
// workspace means the change applies at once.
func ExampleRequired() {
	ctx := context.Background()
	q := rule{"ten_on": true, "ten_off": false}
	for _, tenant := range []string{"ten_on", "ten_off", "ten_new"} {
		on, err := foureyes.Required(ctx, q, tenant)
		fmt.Println(tenant, on, err)
	}
	on, err := foureyes.Required(ctx, nil, "ten_on")
	fmt.Println("no queue", on, err)
	// Output:
	// ten_on true <nil>
	// ten_off false <nil>
	// ten_new false <nil>
	// no queue false <nil>
}
