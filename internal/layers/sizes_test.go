package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The size rules of the code: no function over maxFuncLines lines, no
// file over maxFileLines, no struct over maxFields fields (a table of
// test cases is data: a variable, not a function).
const (
	maxFuncLines = 100
	maxFileLines = 750
	maxFields    = 20
)

// TestSizes holds every Go file of the module but generated ones to the
// size rules.
func TestSizes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d", rel, n, maxFileLines)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				if x.Body != nil {
					if k := fset.Position(x.End()).Line - fset.Position(x.Pos()).Line + 1; k > maxFuncLines {
						t.Errorf("%s: func %s: %d lines, more than %d", rel, x.Name.Name, k, maxFuncLines)
					}
				}
			case *ast.StructType:
				if k := x.Fields.NumFields(); k > maxFields {
					t.Errorf("%s:%d: a struct of %d fields, more than %d", rel, fset.Position(x.Pos()).Line, k, maxFields)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
