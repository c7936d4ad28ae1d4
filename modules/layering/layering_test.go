package layering

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// sourceFile is one non-test Go file with its imports.
type sourceFile struct {
	dir, path string
	imports   []string
}

// sources parses the imports of every non-test Go file of the repository,
// except the separate e2e module.
func sources(t *testing.T) []sourceFile {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	var files []sourceFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "e2e" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		sf := sourceFile{dir: filepath.ToSlash(filepath.Dir(rel)), path: filepath.ToSlash(rel)}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			sf.imports = append(sf.imports, p)
		}
		files = append(files, sf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestEveryPackageHasALayer(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range sources(t) {
		if !seen[f.dir] && layerOf(f.dir) < 0 {
			t.Errorf("package %s has no layer: place it in layers (modules/layering)", f.dir)
		}
		seen[f.dir] = true
	}
	if len(seen) < 20 {
		t.Fatalf("found only %d packages: the walk missed the tree", len(seen))
	}
}

func TestImportsFollowTheLayers(t *testing.T) {
	for _, f := range sources(t) {
		for _, v := range violations(f) {
			t.Error(v)
		}
	}
}

// violations returns every rule f breaks.
func violations(f sourceFile) []string {
	var out []string
	from := layerOf(f.dir)
	if from < 0 {
		return nil // TestEveryPackageHasALayer reports it
	}
	for _, imp := range f.imports {
		if dir, ok := strings.CutPrefix(imp, modulePath); ok {
			if to := layerOf(dir); to > from {
				out = append(out, fmt.Sprintf("%s (layer %s) imports %s (layer %s): a layer never imports one above it; %s is %s",
					f.path, layers[from].name, dir, layers[to].name, layers[from].name, layers[from].why))
			}
		}
		for _, rule := range forbidden {
			if !slices.Contains(rule.layers, layers[from].name) {
				continue
			}
			for _, bad := range rule.imports {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					out = append(out, fmt.Sprintf("%s (layer %s) imports %s: %s", f.path, layers[from].name, imp, rule.why))
				}
			}
		}
		if imp == "go.uber.org/fx" && !fxOnlyIn(f.dir, f.path) {
			out = append(out, fmt.Sprintf("%s imports go.uber.org/fx: only module.go files and cmd/ wire modules", f.path))
		}
	}
	return out
}

// TestRulesCatchViolations feeds the checks made-up files, so that a rule
// that stopped working fails here.
func TestRulesCatchViolations(t *testing.T) {
	cases := []struct {
		file, imp string
		bad       bool
	}{
		{"modules/store/store.go", modulePath + "modules/health", true},
		{"modules/store/pebblestore/open.go", modulePath + "modules/datadir", true},
		{"modules/eventql/exec.go", modulePath + "modules/httpkit", true},
		{"modules/event/record.go", modulePath + "modules/store", true},
		{"modules/health/health.go", modulePath + "modules/storage", true},
		{"modules/config/config.go", modulePath + "cmd/eventstore", true},
		{"modules/store/store.go", "net/http", true},
		{"modules/eventql/storedb/storedb.go", "github.com/prometheus/client_golang/prometheus", true},
		{"modules/store/module.go", "go.uber.org/fx", true},
		{"modules/storage/metrics.go", "go.uber.org/fx", true},
		{"modules/storage/module.go", "go.uber.org/fx", false},
		{"modules/storage/module.go", modulePath + "modules/store", false},
		{"modules/eventql/storedb/storedb.go", modulePath + "modules/store", false},
		{"modules/eventapi/api.go", "net/http", false},
		{"cmd/eventstore/main.go", "go.uber.org/fx", false},
		{"modules/store/trace.go", "go.opentelemetry.io/otel/trace", false},
		{"modules/store/trace.go", "go.opentelemetry.io/otel/sdk/trace", true},
		{"modules/subscriptions/x.go", "go.opentelemetry.io/otel/exporters/otlp/otlptrace", true},
		{"modules/tracing/tracing.go", "go.opentelemetry.io/otel/sdk/trace", false},
	}
	for _, tc := range cases {
		f := sourceFile{dir: filepath.Dir(tc.file), path: tc.file, imports: []string{tc.imp}}
		if got := violations(f); (len(got) > 0) != tc.bad {
			t.Errorf("%s importing %s: violations %q, want a violation: %v", tc.file, tc.imp, got, tc.bad)
		}
	}
}

// TestLayersAreDisjoint makes sure no package is claimed by two layers.
func TestLayersAreDisjoint(t *testing.T) {
	var all []string
	for _, l := range layers {
		all = append(all, l.packages...)
	}
	sort.Strings(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Errorf("%s is listed twice", all[i])
		}
	}
	for _, l := range layers {
		if l.why == "" {
			t.Errorf("layer %s says nothing of why it is a layer", l.name)
		}
	}
}
