// Package docrefs holds the tests that keep the repository's prose honest:
// every package states its contract in a doc comment (docs/design.md, rule
// of taste 9), every § a comment, golden or document cites exists in
// docs/semantics.md or docs/routes.md, and nothing cites a document or an
// issue tracker entry a reader of the repository cannot open.
package docrefs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the repository root, relative to this package's directory.
const root = "../.."

// TestPackagesHaveDocComments fails for a package (a directory with Go
// files) that has no package doc comment, or one that does not start as
// godoc expects ("Package name ..." or, for a command, "Command ...").
// A package made only of tests may keep its comment in a _test.go file.
func TestPackagesHaveDocComments(t *testing.T) {
	dirs := goDirs(t)
	if len(dirs) < 10 {
		t.Fatalf("found only %d package directories under %s: is root wrong?", len(dirs), root)
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		name, doc := packageDoc(t, dir)
		switch {
		case doc == "":
			t.Errorf("%s: package %s has no doc comment (add a doc.go saying what it is for and its contract)", rel, name)
		case name == "main" && !strings.HasPrefix(doc, "Command "):
			t.Errorf("%s: a command's doc comment starts with \"Command \": %.60q", rel, doc)
		case name != "main" && !strings.HasPrefix(doc, "Package "+name+" "):
			t.Errorf("%s: doc comment should start with \"Package %s \": %.60q", rel, name, doc)
		}
	}
}

// goDirs lists the directories holding .go files, outside testdata and
// outside other modules (a directory with its own go.mod).
func goDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (n == "testdata" || strings.HasPrefix(n, ".") || exists(filepath.Join(p, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			seen[filepath.Dir(p)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(seen))
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// packageDoc returns a directory's package name and doc comment: from its
// non-test files, or from its in-package test files when it has no others.
func packageDoc(t *testing.T, dir string) (name, doc string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var testDoc, testName string
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		pkg := af.Name.Name
		if strings.HasSuffix(f, "_test.go") {
			if !strings.HasSuffix(pkg, "_test") {
				testName = pkg
				if af.Doc != nil && testDoc == "" {
					testDoc = af.Doc.Text()
				}
			}
			continue
		}
		name = pkg
		if af.Doc != nil && doc == "" {
			doc = af.Doc.Text()
		}
	}
	if name == "" {
		return testName, testDoc
	}
	return name, doc
}
