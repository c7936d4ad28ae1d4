package eventql

import (
	"fmt"
	"strings"
	"testing"
)

// tokens renders the tokens of a query as "kind:text@line:col".
func tokens(t *testing.T, query string) string {
	t.Helper()
	toks, err := lex(nil, query)
	if err != nil {
		t.Fatalf("lex %q: %v", query, err)
	}
	var parts []string
	for _, tok := range toks {
		kind := [...]string{"eof", "word", "int", "dec", "str", "sym"}[tok.kind]
		text := tok.text
		switch tok.kind {
		case tokInt:
			text = fmt.Sprint(tok.i)
		case tokDecimal:
			text = fmt.Sprint(tok.f)
		}
		parts = append(parts, fmt.Sprintf("%s:%s@%s", kind, text, tok.pos))
	}
	return strings.Join(parts, " ")
}

func TestLexTokens(t *testing.T) {
	for query, want := range map[string]string{
		`a.b==1`:                    "word:a@1:1 sym:.@1:2 word:b@1:3 sym:==@1:4 int:1@1:6 eof:@1:7",
		"x <= y\n  >= 'z' != \"w\"": "word:x@1:1 sym:<=@1:3 word:y@1:6 sym:>=@2:3 str:z@2:6 sym:!=@2:10 str:w@2:13 eof:@2:16",
		"007 1.5e2 2E-1 0.25":       "int:7@1:1 dec:150@1:5 dec:0.2@1:11 dec:0.25@1:16 eof:@1:20",
		"ä /* x\ny */ _a1 // c\n(":  "", // ä is not a word character: error below
		`{[(,:)]}+-*/<>`:            "sym:{@1:1 sym:[@1:2 sym:(@1:3 sym:,@1:4 sym::@1:5 sym:)@1:6 sym:]@1:7 sym:}@1:8 sym:+@1:9 sym:-@1:10 sym:*@1:11 sym:/@1:12 sym:<@1:13 sym:>@1:14 eof:@1:15",
		"'añ' b":                    "str:añ@1:1 word:b@1:6 eof:@1:7",
		"/* a */ /* b */":           "eof:@1:16",
		"a//b\nc":                   "word:a@1:1 word:c@2:1 eof:@2:2",
		`"\u00e9\ud83d\ude00\/"`:    "str:é😀/@1:1 eof:@1:23",
	} {
		if want == "" {
			if _, err := lex(nil, query); err == nil {
				t.Errorf("lex %q: no error", query)
			}
			continue
		}
		if got := tokens(t, query); got != want {
			t.Errorf("lex %q\n got %s\nwant %s", query, got, want)
		}
	}
}

func TestLexErrors(t *testing.T) {
	for query, want := range map[string]string{
		"a = b":                "1:3: unexpected character '='",
		"a\n  !":               "2:3: unexpected character '!'",
		"1.":                   "1:1: malformed number",
		"1e+":                  "1:1: malformed number",
		"12ab":                 "1:1: malformed number",
		"99999999999999999999": "1:1: integer 99999999999999999999 is out of range",
		"1e999":                "1:1: number 1e999 is out of range",
		`"abc`:                 "1:1: unterminated string literal",
		"'a\nb'":               "1:1: unterminated string literal",
		`"\x"`:                 `1:2: unknown escape sequence '\x'`,
		`"\u00g0"`:             "1:2: malformed \\u escape",
		`"\udc00"`:             "1:2: lone surrogate",
		"/* never":             "1:1: unterminated block comment",
		"é":                    "1:1: unexpected character 'é'",
	} {
		_, err := lex(nil, query)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("lex %q: error %v, want prefix %q", query, err, want)
		}
	}
}
