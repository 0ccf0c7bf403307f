package reducer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds every function of the package (docs/design.md, rules
// of taste 10, with room: a reducer case stays under ~25 lines).
const maxFuncLines = 60

// TestFunctionsShort: no function or function literal of the package
// (tests aside) is longer than maxFuncLines, counting its signature and
// closing brace.
func TestFunctionsShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				checked++
				from, to := fset.Position(n.Pos()), fset.Position(n.End())
				if lines := to.Line - from.Line + 1; lines > maxFuncLines {
					t.Errorf("%s: %d lines, over %d: split it", from, lines, maxFuncLines)
				}
			}
			return true
		})
	}
	if checked < 100 {
		t.Fatalf("only %d functions found: is the test in the package directory?", checked)
	}
}
