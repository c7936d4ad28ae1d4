package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// reference computes canonical bytes the way docs/api.md §2.3 describes them,
// with encoding/json: decode with UseNumber, turn non-integer numbers into
// float64, marshal (which sorts keys and escapes strings).
func reference(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.Trim(raw[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, errors.New("trailing data")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, ErrNotObject
	}
	converted, err := convertNumbers(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(converted)
}

func convertNumbers(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			return x, nil
		}
		return strconv.ParseFloat(string(x), 64)
	}
	return v, nil
}

func FuzzCanonicalize(f *testing.F) {
	for _, seed := range []string{
		`{"title": "2001 <A Space Odyssey>", "year": 1968, "rating": 4.50, "ratio": 1e3}`, `{}`, `{"a":[1,2.5,-0,1e21,1e-7,"x"],"b":{"c":null}}`, `{"s":"<&>\u2028\ud83d\ude00\ud800"}`,
		"{\"s\":\"\xff\xfe\"}", `{"a":1,"a":2}`, `{"n":123456789012345678901234567890}`, `{"n":1e400}`, `[1]`, `{"a":01}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := Canonicalize(raw)
		want, refErr := reference(raw)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("input %q: Canonicalize error %v, reference error %v", raw, err, refErr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("input %q:\n got %s\nwant %s", raw, got, want)
		}
		again, err := Canonicalize(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("not idempotent: %s -> %s (%v)", got, again, err)
		}
		var wrapped json.RawMessage
		if err := json.Unmarshal(got, &wrapped); err != nil || !bytes.Equal(mustMarshal(t, wrapped), got) {
			t.Fatalf("re-encoding through json.RawMessage changed %s", got)
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzAppendString(f *testing.F) {
	for _, seed := range []string{"", "plain", "<&>", "\u2028\u2029", "\x00\x1f\x7f", "\xff", "日本😀", `"\`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if !utf8.Valid(AppendString(nil, s)) {
			t.Fatalf("AppendString(%q) is not valid UTF-8", s)
		}
	})
}
