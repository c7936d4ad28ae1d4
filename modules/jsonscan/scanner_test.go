package jsonscan

import (
	"errors"
	"testing"
)

// TestAppendDecoded holds AppendDecoded to String: the same text for every
// string, escaped or not, and the same error for a value that is none.
func TestAppendDecoded(t *testing.T) {
	for _, in := range []string{`""`, `"plain"`, `"\u003chtml\u003e \"q\" \\ \/ \n"`, `"grüße"`, "\"bad \xff utf-8\"", `"\ud800 lone"`, `"\x"`, `"open`, `12`, ``} {
		want, _, wantErr := New([]byte(in)).String()
		got, err := New([]byte(in)).AppendDecoded([]byte("kept|"))
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%s: error %v, String's %v", in, err, wantErr)
			continue
		}
		if err == nil && string(got) != "kept|"+want {
			t.Errorf("%s: appended %q, String read %q", in, got, want)
		}
		var typeErr *TypeError
		if errors.As(wantErr, &typeErr) != errors.As(err, &typeErr) {
			t.Errorf("%s: error %v, String's %v", in, err, wantErr)
		}
	}
	var typeErr *TypeError
	if _, err := New([]byte(`null`)).AppendDecoded(nil); !errors.As(err, &typeErr) {
		t.Errorf("null: %v, want a *TypeError (only String reads null as \"\")", err)
	}
}

// TestStringErrorsMatchSkip holds the errors of reading a malformed string
// to those of skipping it: the same character at the same offset.
func TestStringErrorsMatchSkip(t *testing.T) {
	for _, in := range []string{`"a\qb"`, `"\x"`, `"\`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", `"open`, `"ok\n\q"`} {
		_, _, got := New([]byte(in)).String()
		want := New([]byte(in)).Skip()
		if got == nil || want == nil || got.Error() != want.Error() {
			t.Errorf("%s: String fails with %v, Skip with %v", in, got, want)
		}
	}
}
