package decisions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// TestDeleteLeavesNothing deletes a decision with more cases and tallies
// than one batch holds and checks none remain under its id.
func TestDeleteLeavesNothing(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	svc := New(Config{Store: st})
	rec, err := svc.Create(ctx, "t1", "u1", Decision{Name: "d", Description: "d",
		InputSchema: json.RawMessage(`{"required": ["k"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	const n = deleteBatch + 20 // distinct inputs: n cases, 2n tallies
	err = st.Update(ctx, func(tx store.Txn) error {
		for i := range n {
			input := json.RawMessage(fmt.Sprintf(`{"k": %d}`, i))
			exact, fields, err := matchKeys(rec, input)
			if err != nil {
				return err
			}
			c := &Case{ID: fmt.Sprintf("dcs_%04d", i), DecisionID: rec.ID, Input: input, Outcome: json.RawMessage(`1`),
				Status: CaseRecorded, ExactKey: exact, FieldsKey: fields}
			if err := cases.Put(tx, "t1", c); err != nil {
				return err
			}
			if err := confirm(tx, "t1", c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func() (int, int) {
		var nc, nt int
		_ = st.View(ctx, func(r store.Reader) error {
			nc, _ = cases.CountBy(r, "t1", "decision", rec.ID)
			nt, _ = outcomeTallies.CountBy(r, "t1", "decision", rec.ID)
			return nil
		})
		return nc, nt
	}
	if c, tl := count(); c != n || tl != 2*n {
		t.Fatalf("before: %d cases, %d tallies", c, tl)
	}
	if err := svc.Delete(ctx, "t1", "u1", "d"); err != nil {
		t.Fatal(err)
	}
	if c, tl := count(); c != 0 || tl != 0 {
		t.Errorf("after delete: %d cases, %d tallies remain", c, tl)
	}
}

func TestOutcomeTallyForgetsTheLeastConfirmed(t *testing.T) {
	t.Parallel()
	var tl outcomeTally
	tl.add(json.RawMessage(`"keep"`))
	tl.add(json.RawMessage(`"keep"`))
	for i := range MaxOutcomes {
		tl.add(json.RawMessage(fmt.Sprintf(`%d`, i)))
	}
	if len(tl.Outcomes) != MaxOutcomes || tl.Total != MaxOutcomes+2 {
		t.Fatalf("%d outcomes, total %d", len(tl.Outcomes), tl.Total)
	}
	if string(tl.Outcomes[0].Output) != `"keep"` || string(tl.Outcomes[1].Output) != `1` {
		t.Errorf("forgot the wrong one: first two are %s, %s", tl.Outcomes[0].Output, tl.Outcomes[1].Output)
	}
	if b := tl.best(); string(b.Output) != `"keep"` || b.Count != 2 {
		t.Errorf("best = %+v", b)
	}
}
