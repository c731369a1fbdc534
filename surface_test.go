package bas_test

import (
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// knownInternal lists the exported identifiers of public packages that
// still name a type from internal/, each with why; it is empty and stays so.
// A new entry is a mistake: what an embedder can see, an embedder must be
// able to build and read.
var knownInternal = map[string]string{}

// TestPublicSurface checks that no exported identifier of a public package
// (its constants, variables, functions, types, their exported fields and
// methods) names a type from an internal package. It type-checks the
// packages from the build's export data (go list -export).
func TestPublicSurface(t *testing.T) {
	if testing.Short() {
		t.Skip("lists and builds every package")
	}
	t.Parallel()
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export,Module,Standard", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	var public []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath, Export string
			Standard           bool
			Module             *struct{ Path string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == "github.com/bas-platform/bas" && !isInternal(p.ImportPath) &&
			!strings.Contains(p.ImportPath, "/examples/") {
			public = append(public, p.ImportPath)
		}
	}
	if len(public) < 5 {
		t.Fatalf("found only %v", public)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	got := map[string]string{}
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, v := range publicViolations(pkg) {
			got[v[0]] = v[1]
		}
	}
	var added, gone []string
	for k, v := range got {
		if _, ok := knownInternal[k]; !ok {
			added = append(added, k+" names "+v)
		}
	}
	for k := range knownInternal {
		if _, ok := got[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Strings(added)
	sort.Strings(gone)
	if diff := cmp.Diff([]string(nil), added); diff != "" {
		t.Errorf("exported identifiers that name internal types (-want +got):\n%s", strings.Join(added, "\n"))
	}
	if len(gone) > 0 {
		t.Errorf("fixed, remove from knownInternal: %v", gone)
	}
}

func isInternal(path string) bool {
	return strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// publicViolations returns [identifier, internal type] pairs of pkg.
func publicViolations(pkg *types.Package) [][2]string {
	var out [][2]string
	name := pkg.Path()
	check := func(ident string, t types.Type) {
		if bad := internalNamed(t, map[types.Type]bool{}); bad != "" {
			out = append(out, [2]string{ident, bad})
		}
	}
	scope := pkg.Scope()
	for _, n := range scope.Names() {
		obj := scope.Lookup(n)
		if !obj.Exported() {
			continue
		}
		ident := name + "." + n
		tn, ok := obj.(*types.TypeName)
		if !ok {
			check(ident, obj.Type())
			continue
		}
		if tn.IsAlias() {
			check(ident, obj.Type())
			continue
		}
		named, ok := obj.Type().(*types.Named)
		if !ok {
			continue
		}
		switch u := named.Underlying().(type) {
		case *types.Struct:
			for i := range u.NumFields() {
				if f := u.Field(i); f.Exported() {
					check(ident+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for i := range u.NumMethods() {
				if m := u.Method(i); m.Exported() {
					check(ident+"."+m.Name(), m.Type())
				}
			}
		default:
			check(ident, u)
		}
		for i := range named.NumMethods() {
			if m := named.Method(i); m.Exported() {
				check(ident+"."+m.Name(), m.Type())
			}
		}
	}
	return out
}

// internalNamed returns the first type from an internal package t names,
// looking through pointers, slices, maps, channels, signatures and
// unnamed structs, but not into other named types.
func internalNamed(t types.Type, seen map[types.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		return internalNamed(types.Unalias(t), seen)
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && isInternal(p.Path()) {
			return t.String()
		}
		for i := range t.TypeArgs().Len() {
			if s := internalNamed(t.TypeArgs().At(i), seen); s != "" {
				return s
			}
		}
	case *types.Pointer:
		return internalNamed(t.Elem(), seen)
	case *types.Slice:
		return internalNamed(t.Elem(), seen)
	case *types.Array:
		return internalNamed(t.Elem(), seen)
	case *types.Map:
		if s := internalNamed(t.Key(), seen); s != "" {
			return s
		}
		return internalNamed(t.Elem(), seen)
	case *types.Chan:
		return internalNamed(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				if s := internalNamed(tup.At(i).Type(), seen); s != "" {
					return s
				}
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() {
				if s := internalNamed(f.Type(), seen); s != "" {
					return s
				}
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			if s := internalNamed(t.Method(i).Type(), seen); s != "" {
				return s
			}
		}
	}
	return ""
}
