package runengine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoClosureKeepsAnExec holds the rule worker.release relies on: a
// worker reuses the exec of a command that is done, so no function literal
// may refer to an exec (a method's receiver, a parameter, or a variable
// newExec made), as one left for after a commit would then act on another
// command's exec.
func TestNoClosureKeepsAnExec(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			execs := execNames(fd)
			if len(execs) == 0 {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				fl, ok := n.(*ast.FuncLit)
				if !ok {
					return true
				}
				ast.Inspect(fl.Body, func(m ast.Node) bool {
					if id, ok := m.(*ast.Ident); ok && execs[id.Name] {
						t.Errorf("%s: a function literal in %s refers to the exec %s", fset.Position(id.Pos()), fd.Name.Name, id.Name)
						return false
					}
					return true
				})
				return true
			})
		}
	}
}

// execNames are the names fd binds to an exec: the receiver of an exec's
// or stepEnv's method, parameters of those types, and variables newExec
// made.
func execNames(fd *ast.FuncDecl) map[string]bool {
	names := map[string]bool{}
	isExec := func(e ast.Expr) bool {
		star, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		id, ok := star.X.(*ast.Ident)
		return ok && (id.Name == "exec" || id.Name == "stepEnv")
	}
	var fields []*ast.Field
	if fd.Recv != nil {
		fields = append(fields, fd.Recv.List...)
	}
	fields = append(fields, fd.Type.Params.List...)
	for _, p := range fields {
		if isExec(p.Type) {
			for _, n := range p.Names {
				names[n.Name] = true
			}
		}
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok {
			return true
		}
		for i, r := range as.Rhs {
			call, ok := r.(*ast.CallExpr)
			if !ok || i >= len(as.Lhs) {
				continue
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "newExec" {
				if id, ok := as.Lhs[i].(*ast.Ident); ok {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}
