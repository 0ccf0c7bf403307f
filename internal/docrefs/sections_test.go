package docrefs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The contract documents whose sections the code cites, by number: §1–§7
// are in docs/semantics.md, §8–§11 in docs/routes.md.
var contracts = []string{"docs/semantics.md", "docs/routes.md"}

var (
	// A citation: "§2.7", optionally named with its document
	// ("docs/semantics.md §2.7").
	citation = regexp.MustCompile(`(?:(docs/[a-z-]+\.md) )?§(\d+(?:\.\d+)*)`)
	// Sections: "## 2. Title", "### 8.1 Title"; inside a "## N." section,
	// a top-level numbered rule "3. ..." is §N.3.
	heading  = regexp.MustCompile(`^##+ (\d+(?:\.\d+)*)\.? `)
	listItem = regexp.MustCompile(`^(\d+)\. `)
	// What a reader of the repository cannot open: the project card's
	// documents outside it (by path or by their old upper-case names), and
	// the project's own issue numbers (cite an upstream issue as
	// owner/repo#N instead).
	unreachable = regexp.MustCompile(`\.\./shared/|\b(SEMANTICS|DESIGN|ROUTES)(\.md\b| ?§)|(?i)\bissues? #?\d+\b`)
)

// sections parses the § numbers a contract document defines.
func sections(t *testing.T, doc string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	top := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := heading.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
			if strings.HasPrefix(line, "## ") {
				top = m[1]
			}
			continue
		}
		if strings.HasPrefix(line, "## ") {
			top = "" // an unnumbered section (an appendix, an amendment)
		}
		if m := listItem.FindStringSubmatch(line); m != nil && top != "" {
			out[top+"."+m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// citedFiles lists the files whose text may cite the contract: Go code and
// tests, goldens, documents, manifests, scripts and the Makefile.
func citedFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".txtar", ".md", ".yaml", ".sh", ".txt":
			files = append(files, p)
		default:
			if d.Name() == "Makefile" {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestSectionCitationsExist fails when a file cites a § that no contract
// document defines, or names a document that does not define it: a
// renumbered or deleted section must take its citations with it.
func TestSectionCitationsExist(t *testing.T) {
	byDoc := map[string]map[string]bool{}
	all := map[string]bool{}
	for _, doc := range contracts {
		byDoc[doc] = sections(t, doc)
		for s := range byDoc[doc] {
			all[s] = true
		}
	}
	for _, want := range []string{"1", "2.7", "7", "8.1", "11"} {
		if !all[want] {
			t.Fatalf("the contract documents define no §%s: is the section parser broken?", want)
		}
	}
	cited := 0
	for _, p := range citedFiles(t) {
		rel, _ := filepath.Rel(root, p)
		forEachLine(t, p, func(n int, line string) {
			for _, m := range citation.FindAllStringSubmatch(line, -1) {
				cited++
				doc, sec := m[1], m[2]
				switch {
				case doc != "" && byDoc[doc] == nil:
					continue // another document's own numbering
				case doc != "" && !byDoc[doc][sec]:
					t.Errorf("%s:%d: cites %s §%s, which it does not define", rel, n, doc, sec)
				case !all[sec]:
					t.Errorf("%s:%d: cites §%s, which no contract document defines", rel, n, sec)
				}
			}
		})
	}
	if cited < 50 {
		t.Errorf("found only %d citations: is the walk broken?", cited)
	}
}

// TestNoUnreachableReferences fails when a file points a reader outside
// the repository: at the project card's documents in a sibling folder, or at this
// project's issue numbers. The contract lives in docs/.
func TestNoUnreachableReferences(t *testing.T) {
	for _, p := range citedFiles(t) {
		rel, _ := filepath.Rel(root, p)
		forEachLine(t, p, func(n int, line string) {
			if m := unreachable.FindString(line); m != "" {
				t.Errorf("%s:%d: %q: cite docs/ (and its § sections) instead", rel, n, m)
			}
		})
	}
}

func forEachLine(t *testing.T, p string, fn func(n int, line string)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		fn(i+1, line)
	}
}
