package names

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for name, want := range map[string]bool{
		"billing": true, "w-1.a_B": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, "a b": false, "a/b": false, "ä": false,
	} {
		if got := Valid(name); got != want {
			t.Errorf("Valid(%q) = %v", name, got)
		}
	}
}
