package storetest_test

import (
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/storetest"
)

// A Store implementation runs the conformance suite from two tests in its
// own package: Exercise with a new, empty store each time (an in-memory one
// keeps the suite fast), and ExerciseReopen with a store kept in a
// directory. Here the implementation is badgerstore.
//
// The example has no Output: the suite needs the *testing.T of a test, so
// it is compiled here and run by badgerstore's TestConformance.
func Example() {
	testStore := func(t *testing.T) {
		storetest.Exercise(t, func(t *testing.T) store.Store {
			s, err := badgerstore.Open(badgerstore.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	}
	testReopen := func(t *testing.T) {
		storetest.ExerciseReopen(t, func(t *testing.T, dir string) store.Store {
			s, err := badgerstore.Open(badgerstore.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	}
	// In a _test.go file of the implementation:
	//
	//	func TestStore(t *testing.T)  { testStore(t) }
	//	func TestReopen(t *testing.T) { testReopen(t) }
	_, _ = testStore, testReopen
}
