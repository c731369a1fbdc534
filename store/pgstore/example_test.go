package pgstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/pgstore"
)

// Open a store on a PostgreSQL database (or CockroachDB, YugabyteDB) and
// use it as any store.Store.
func Example() {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgstore.Options{
		DSN:    "postgres://bas@localhost:5432/bas?sslmode=disable",
		Schema: "bas",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	err = s.Update(ctx, func(tx store.Txn) error {
		return tx.Set([]byte("greeting"), []byte("hello"))
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = s.View(ctx, func(r store.Reader) error {
		v, err := r.Get([]byte("greeting"))
		fmt.Println(string(v), err)
		return nil
	})
}
