// Package plugintest builds provider plugins for tests: a test that loads
// a real plugin binary builds it with Build once, then gives each test its
// own copy with Link.
package plugintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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

// Link puts the file src into dir under name as a hard link (so no test
// writes a file another test executes) and returns its path.
func Link(src, dir, name string) (string, error) {
	dst := filepath.Join(dir, name)
	return dst, os.Link(src, dst)
}
