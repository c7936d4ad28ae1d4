package schema

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestCompileRules(t *testing.T) {
	cases := []struct {
		name, schema, want string
	}{
		{"array", `[]`, "invalid schema: schema must be a JSON object"},
		{"string", `"object"`, "invalid schema: schema must be a JSON object"},
		{"null", `null`, "invalid schema: schema must be a JSON object"},
		{"no type and no properties", `{"x":"asd"}`, "invalid schema: missing properties: 'type', 'properties'"},
		{"no properties", `{"type":"object","additionalProperties":false}`, "invalid schema: missing properties: 'properties'"},
		{"not an object type", `{"type":"gurkenwasser","properties":{}}`, `invalid schema: at '/type': value must be "object"`},
		{"array type", `{"type":["object"],"properties":{}}`, `invalid schema: at '/type': value must be "object"`},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{}}`, "invalid schema: unsupported $schema 'http://json-schema.org/draft-04/schema#'"},
		{"unknown dialect", `{"$schema":"https://example.com/schema","type":"object","properties":{}}`, "invalid schema: unsupported $schema 'https://example.com/schema'"},
		{"not a schema", `{"type":"object","properties":{"a":{"type":5}}}`, "invalid schema: at '/properties/a/type': "},
		{"remote reference", `{"type":"object","properties":{"a":{"$ref":"https://example.com/other.json"}}}`, "invalid schema: "},
		{"local file reference", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "references outside the schema are not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]byte(tc.schema))
			var invalidErr *InvalidError
			if !errors.As(err, &invalidErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile(%s) = %v, want an InvalidError containing %q", tc.schema, err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("message is not one line: %q", err)
			}
		})
	}
}

func TestCompileKeepsTheSchemaAsWritten(t *testing.T) {
	for _, dialect := range []string{"", `"$schema":"https://json-schema.org/draft/2020-12/schema",`, `"$schema":"http://json-schema.org/draft/2019-09/schema#",`,
		`"$schema":"http://json-schema.org/draft-07/schema#",`, `"$schema":"https://json-schema.org/draft-07/schema",`} {
		raw := `{ ` + dialect + ` "type" : "object", "required": ["n"], "properties": { "n": { "minimum": 1.50, "maximum": 1E3 } },
			"$defs": {"x": {"type":"string"}}, "definitions": {"y": {"type":"string"}} }`
		s, err := Compile([]byte(raw))
		if err != nil {
			t.Fatalf("Compile with %q: %v", dialect, err)
		}
		if want := `{` + strings.ReplaceAll(strings.ReplaceAll(dialect, " ", ""), "\t", "") + `"type":"object","required":["n"],"properties":{"n":{"minimum":1.50,"maximum":1E3}},"$defs":{"x":{"type":"string"}},"definitions":{"y":{"type":"string"}}}`; string(s.Raw) != want {
			t.Fatalf("stored form:\n got %s\nwant %s", s.Raw, want)
		}
		if err := s.Validate([]byte(`{"n":2}`)); err != nil {
			t.Fatalf("valid data rejected: %v", err)
		}
		if err := s.Validate([]byte(`{"n":1}`)); err == nil || err.Error() != "at '/n': must be >= 1.5 but found 1" {
			t.Fatalf("minimum: %v", err)
		}
	}
}

func TestMessages(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","additionalProperties":false,"required":["a"],"properties":{
		"a":{"type":"string","minLength":2,"maxLength":4,"pattern":"^x"},
		"b":{"type":["integer","null"],"minimum":5,"maximum":10,"exclusiveMinimum":1,"exclusiveMaximum":11},
		"c":{"const":"fixed"},
		"d":{"enum":[1,"two",null]},
		"e":{"type":"array","minItems":2,"maxItems":3},
		"f":false,
		"g":{"type":"object","properties":{"deep/er":{"type":"boolean"}}},
		"h":{"exclusiveMinimum":1,"exclusiveMaximum":11}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ data, want string }{
		{`{"a":"xx","extra":1,"more":2}`, "additionalProperties 'extra', 'more' not allowed"},
		{`{}`, "missing properties: 'a'"},
		{`{"a":5}`, "at '/a': expected string, but got number"},
		{`{"a":"x"}`, "at '/a': length must be >= 2, but got 1"},
		{`{"a":"xxxxx"}`, "at '/a': length must be <= 4, but got 5"},
		{`{"a":"yy"}`, "at '/a': does not match pattern '^x'"},
		{`{"a":"xx","b":"q"}`, "at '/b': expected null or integer, but got string"},
		{`{"a":"xx","b":3}`, "at '/b': must be >= 5 but found 3"},
		{`{"a":"xx","b":12}`, "at '/b': must be <= 10 but found 12"},
		{`{"a":"xx","h":1}`, "at '/h': must be > 1 but found 1"},
		{`{"a":"xx","h":11.5}`, "at '/h': must be < 11 but found 11.5"},
		{`{"a":"xx","c":"other"}`, `at '/c': value must be "fixed"`},
		{`{"a":"xx","d":3}`, `at '/d': value must be one of 1, "two", null`},
		{`{"a":"xx","e":[1]}`, "at '/e': minimum 2 items required, but found 1 items"},
		{`{"a":"xx","e":[1,2,3,4]}`, "at '/e': maximum 3 items required, but found 4 items"},
		{`{"a":"xx","f":1}`, "at '/f': not allowed"},
		{`{"a":"xx","g":{"deep/er":"no"}}`, "at '/g/deep~1er': expected boolean, but got string"},
	}
	for _, tc := range cases {
		err := s.Validate([]byte(tc.data))
		var violation *ViolationError
		if !errors.As(err, &violation) || violation.Msg != tc.want {
			t.Errorf("Validate(%s) = %v, want %q", tc.data, err, tc.want)
		}
	}
	if err := s.Validate([]byte(`{"a":"xyz","b":null,"d":"two","e":[1,2],"g":{"deep/er":true},"h":5}`)); err != nil {
		t.Errorf("valid data rejected: %v", err)
	}
}

func TestSpecExample(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(`{"extra":1,"reason":"lost"}`)); err == nil || err.Error() != "additionalProperties 'extra' not allowed" {
		t.Fatalf("got %v", err)
	}
	if err := s.Validate([]byte(`{"reason":"lost"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(`{"reason":12345678901234567890123}`)); err == nil || err.Error() != "at '/reason': expected string, but got number" {
		t.Fatalf("big number: %v", err)
	}
}

func TestStoredCompilesOnFirstUse(t *testing.T) {
	raw := `{ "type": "object", "properties": { "reason": { "type": "string" } }, "required": ["reason"], "additionalProperties": false }`
	compiled, err := Compile([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	s := Stored([]byte(raw))
	if s.Compiled() || string(s.Raw) != string(compiled.Raw) {
		t.Fatalf("stored: compiled %v, raw %s, want %s", s.Compiled(), s.Raw, compiled.Raw)
	}
	// The first uses, at once, compile it once; all decide as Compile's.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, data := range []string{`{"extra":1,"reason":"lost"}`, `{"reason":1}`, `{}`, `{"reason":"lost"}`} {
				want, got := compiled.Validate([]byte(data)), s.Validate([]byte(data))
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: stored %v, compiled %v", data, got, want)
				}
			}
		}()
	}
	wg.Wait()
	if !s.Compiled() || s.Check() != nil {
		t.Fatalf("after use: compiled %v, check %v", s.Compiled(), s.Check())
	}
}

func TestStoredThatDoesNotCompile(t *testing.T) {
	s := Stored([]byte(`{"type":"string","properties":{}}`))
	var invalid *InvalidError
	if err := s.Check(); !errors.As(err, &invalid) || s.Compiled() {
		t.Fatalf("check: %v (compiled %v)", err, s.Compiled())
	}
	if err := s.Validate([]byte(`{}`)); !errors.As(err, &invalid) || err.Error() != `compile the stored schema: invalid schema: at '/type': value must be "object"` {
		t.Fatalf("validate: %v", err)
	}
}

// BenchmarkValidate measures validating a typical event against a schema
// of the fast subset.
func BenchmarkValidate(b *testing.B) {
	s, err := Compile([]byte(`{"type":"object","properties":{"amount":{"type":"integer","minimum":0},"currency":{"type":"string","enum":["EUR","USD"]},` +
		`"customer":{"type":"string","pattern":"^c-[0-9]+$"},"note":{"type":"string","maxLength":200},` +
		`"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}}},` +
		`"required":["amount","currency","customer","items"],"additionalProperties":false}`))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"amount":42,"currency":"EUR","customer":"c-000042","items":[{"qty":1,"sku":"a-1"},{"qty":3,"sku":"b-2"}],"note":"an ordinary event of a few hundred bytes"}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := s.Validate(data); err != nil {
			b.Fatal(err)
		}
	}
}
