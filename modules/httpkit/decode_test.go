package httpkit

import (
	"strings"
	"testing"
)

// byteDepth is depth as a plain byte loop: the reference depth must agree with.
func byteDepth(raw []byte) int {
	deepest, current := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			current++
			deepest = max(deepest, current)
		case c == '}' || c == ']':
			current--
		}
	}
	return deepest
}

var depthCases = []string{
	``, `{}`, `[[[]]]`, `{"a":[{"b":{}}]}`, `"[[["`, `{"a":"[\"{"}`, `{"a":"\\"}`, `{"a":"\\\"[["}`,
	`{"a":"\\\\"}[`, `["\\\\\"]"]`, `{"unterminated":"[[[`, `"\`, `"\\`, `["a\"b\\", [[]], "c\\\\\\\"[" ]`,
	`{"a":"b"}]]]}{{`, `{"k\u0022":"[", "x":[1,2,{"y":"}"}]}`,
	`{"events":[` + strings.Repeat(`{"data":{"a":"\\\"{[","b":[`, 20) + strings.Repeat(`]}}`, 20) + `]}`,
}

func TestDepthMatchesByteLoop(t *testing.T) {
	for _, c := range depthCases {
		if got, want := depth([]byte(c)), byteDepth([]byte(c)); got != want {
			t.Errorf("depth(%q) = %d, want %d", c, got, want)
		}
	}
}

func FuzzDepth(f *testing.F) {
	for _, c := range depthCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := depth(raw), byteDepth(raw); got != want {
			t.Fatalf("depth(%q) = %d, want %d", raw, got, want)
		}
	})
}

// BenchmarkDepth measures the depth check of a one-event write body.
func BenchmarkDepth(b *testing.B) {
	body := []byte(`{"events":[{"source":"https://bench.eventstore.example","subject":"/bench/api/1","type":"io.eventstore.bench.recorded","data":{"amount":1,"currency":"EUR","customer":"c-000001","note":"an ordinary event of a few hundred bytes","items":[{"sku":"a-1","qty":1},{"sku":"b-2","qty":3}]}}]}`)
	b.SetBytes(int64(len(body)))
	for _, fn := range []struct {
		name  string
		depth func([]byte) int
	}{{"skip-strings", depth}, {"byte-loop", byteDepth}} {
		b.Run(fn.name, func(b *testing.B) {
			for b.Loop() {
				if fn.depth(body) != 6 {
					b.Fatal("wrong depth")
				}
			}
		})
	}
}
