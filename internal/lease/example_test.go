package lease_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// A node claims a shard and fences every write acting on it; once another
// node takes the shard over, the first node's writes are refused.
func Example() {
	ctx := context.Background()
	st, _ := badgerstore.Open(badgerstore.Options{InMemory: true})
	defer st.Close()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, _ := lease.New(lease.Config{Store: st, Clock: clk, Owner: "node-a", TTL: 10 * time.Second})
	b, _ := lease.New(lease.Config{Store: st, Clock: clk, Owner: "node-b", TTL: 10 * time.Second})

	la, _ := a.Acquire(ctx, lease.ShardName(3))
	write := func(m *lease.Manager, l lease.Lease) error {
		return st.Update(ctx, func(tx store.Txn) error {
			if err := m.Check(tx, l); err != nil {
				return err
			}
			return tx.Set([]byte("run/1"), []byte(m.Owner()))
		})
	}
	fmt.Println(la.Token, write(a, la) == nil)

	clk.Advance(10 * time.Second) // node-a stopped renewing
	lb, _ := b.Acquire(ctx, lease.ShardName(3))
	fmt.Println(lb.Token, write(b, lb) == nil, write(a, la) != nil)
	// Output:
	// 1 true
	// 2 true true
}
