package badgerstore_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

func ExampleOpen() {
	// A real store names its directory: badgerstore.Options{Dir: "data"}.
	s, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()

	// Update returns once the commit is durable.
	err = s.Update(ctx, func(tx store.Txn) error {
		for _, lang := range []string{"en", "de", "fr"} {
			if err := tx.Set(store.Key("greeting", lang), []byte("hello in "+lang)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	err = s.View(ctx, func(r store.Reader) error {
		v, err := r.Get(store.Key("greeting", "en"))
		if err != nil {
			return err
		}
		fmt.Printf("en: %s\n", v)
		// Newest-first lists are reverse scans of a prefix.
		return r.Scan(store.ScanOptions{Prefix: store.Key("greeting"), Reverse: true}, func(key, value []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil {
				return err
			}
			fmt.Printf("%v = %s\n", parts, value)
			return nil
		})
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// en: hello in en
	// [greeting fr] = hello in fr
	// [greeting en] = hello in en
	// [greeting de] = hello in de
}
