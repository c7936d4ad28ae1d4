package consumer

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippetCompiles keeps the README's "Go consumers" code true:
// it must be, line for line, the body of ExampleClient_Consume, which go
// test compiles.
func TestReadmeSnippetCompiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Go consumers\n")
	if !ok {
		t.Fatal(`README.md has no "### Go consumers" section`)
	}
	_, code, ok := strings.Cut(section, "```go\n")
	if ok {
		code, _, ok = strings.Cut(code, "```")
	}
	if !ok {
		t.Fatal(`the "Go consumers" section has no Go code`)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(example), "func ExampleClient_Consume() {\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	trim := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	got, want := trim(code), trim(body)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md's Go consumers code differs from ExampleClient_Consume:\n%s\n---\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
