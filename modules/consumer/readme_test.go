package consumer

import (
	"os"
	"strings"
	"testing"
)

// TestDocSnippetsCompile keeps the Go code of the docs true: each snippet
// must be, line for line, the body of an example, which go test compiles.
func TestDocSnippetsCompile(t *testing.T) {
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, snippet := range []struct{ file, after, example string }{
		{"../../README.md", "### Go consumers\n", "ExampleClient_Consume"},
		{"../../docs/eventql.md", "### 13.1 Decisions across entities\n", "ExampleClient_Decide"},
	} {
		doc, err := os.ReadFile(snippet.file)
		if err != nil {
			t.Fatal(err)
		}
		_, section, ok := strings.Cut(string(doc), snippet.after)
		if !ok {
			t.Fatalf("%s has no %q", snippet.file, strings.TrimSpace(snippet.after))
		}
		_, code, ok := strings.Cut(section, "```go\n")
		if ok {
			code, _, ok = strings.Cut(code, "```")
		}
		if !ok {
			t.Fatalf("%s: %q has no Go code", snippet.file, strings.TrimSpace(snippet.after))
		}
		_, body, _ := strings.Cut(string(example), "func "+snippet.example+"() {\n")
		body, _, _ = strings.Cut(body, "\n}\n")
		trim := func(s string) []string {
			var out []string
			for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
				out = append(out, strings.TrimSpace(l))
			}
			return out
		}
		if got, want := trim(code), trim(body); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: the code after %q differs from %s:\n%s\n---\n%s", snippet.file, strings.TrimSpace(snippet.after), snippet.example, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
