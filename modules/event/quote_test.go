package event

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "''"},
		{"/books/42", "'/books/42'"},
		{strings.Repeat("a", 100), "'" + strings.Repeat("a", 100) + "'"},
		{strings.Repeat("a", 15<<20), "'" + strings.Repeat("a", 100) + "…'"},
		// A cut never splits a character: ü is two bytes, the 100th byte starts one.
		{strings.Repeat("a", 99) + "üxyz", "'" + strings.Repeat("a", 99) + "…'"},
	}
	for _, tc := range cases {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%d bytes) = %q, want %q", len(tc.in), got, tc.want)
		}
	}
}
