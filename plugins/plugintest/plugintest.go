// Package plugintest builds provider plugins for tests: a Set builds its
// binaries once, on first use, and Link gives each test its own copy.
package plugintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Build runs `go build` for each package (an import path), concurrently,
// writing binaries[name] = package to dir/name. It returns the first
// failure with the compiler's output.
func Build(dir string, binaries map[string]string) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for name, pkg := range binaries {
		wg.Go(func() {
			out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// Set is a set of plugin binaries built together, once per test binary,
// into a temporary directory. Call Remove from TestMain after m.Run.
type Set struct {
	// Packages maps each binary's name to the package it is built from.
	Packages map[string]string

	once sync.Once
	dir  string
	err  error
}

// Path returns the path of the binary name, building the set first if it
// is not built yet; a build failure fails tb.
func (s *Set) Path(tb testing.TB, name string) string {
	tb.Helper()
	s.once.Do(func() {
		s.dir, s.err = os.MkdirTemp("", "bas-plugins-")
		if s.err == nil {
			s.err = Build(s.dir, s.Packages)
		}
	})
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return filepath.Join(s.dir, name)
}

// Remove deletes the built binaries.
func (s *Set) Remove() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// Link puts the file src into dir under name as a hard link (so no test
// writes a file another test executes) and returns its path.
func Link(tb testing.TB, src, dir, name string) string {
	tb.Helper()
	dst := filepath.Join(dir, name)
	if err := os.Link(src, dst); err != nil {
		tb.Fatal(err)
	}
	return dst
}
