package layering

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// citation is a reference to a numbered section of a document in docs/:
// "docs/api.md §4.3", "[api.md](api.md) §4.3", "eventql.md §13".
var citation = regexp.MustCompile(`\b([a-z]+)\.md(?:\]\([^)]*\))?\)? §\s?([0-9]+(?:\.[0-9]+)*[a-z]?)`)

// heading is a numbered heading: "## 4. Endpoints", "### 4.3 `POST …`".
var heading = regexp.MustCompile(`(?m)^#{2,4} ([0-9]+(?:\.[0-9]+)*[a-z]?)\.? `)

// TestCitationsResolve checks that the repository stands on its own: every
// section a file cites of a document in docs/ exists there, and nothing
// points at the specification the documents were made from.
func TestCitationsResolve(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	sections := map[string]map[string]bool{}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(string(raw), -1) {
			found[m[1]] = true
		}
		sections[strings.TrimSuffix(filepath.Base(doc), ".md")] = found
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".js", ".css", ".html", ".yaml", ".sh":
		default:
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(raw)
		if strings.Contains(text, "shared/"+"spec") {
			t.Errorf("%s points at a specification outside the repository", rel)
		}
		for _, m := range citation.FindAllStringSubmatch(text, -1) {
			found, ok := sections[m[1]]
			if !ok {
				continue // a document of another project (an RFC, a README)
			}
			checked++
			if !found[m[2]] {
				t.Errorf("%s cites docs/%s.md §%s, which has no such section", rel, m[1], m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d citations found: the pattern no longer matches how they are written", checked)
	}
}
