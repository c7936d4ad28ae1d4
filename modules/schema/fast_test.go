package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// libraryAccepts validates with the library alone.
func libraryAccepts(t testing.TB, s *Schema, data []byte) bool {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.compiled.Validate(v) == nil
}

// gen makes random schemas of the fast subset and random data near them.
type gen struct{ r *rand.Rand }

func (g gen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g gen) number() string {
	return g.pick("0", "1", "-1", "2", "3", "10", "2.5", "-0.5", "1e2", "1.0", "0.1", "100", "9007199254740993", "1e+21", "0.30000000000000004")
}

func (g gen) schema(depth int) string {
	if depth > 2 || g.r.IntN(6) == 0 {
		return g.pick("true", "false", `{}`, `{"type":"string"}`, `{"type":"integer"}`, `{"type":["number","null"]}`)
	}
	var kw []string
	add := func(k, v string) { kw = append(kw, fmt.Sprintf("%q:%s", k, v)) }
	switch g.r.IntN(5) {
	case 0:
		add("type", `"object"`)
		props := []string{}
		for i := 0; i < g.r.IntN(4); i++ {
			props = append(props, fmt.Sprintf(`"%s":%s`, g.pick("a", "b", "c", "é", "a/b"), g.schema(depth+1)))
		}
		add("properties", "{"+strings.Join(props, ",")+"}")
		if g.r.IntN(2) == 0 {
			add("required", g.pick(`["a"]`, `["a","b"]`, `[]`, `["c"]`))
		}
		if g.r.IntN(2) == 0 {
			add("additionalProperties", g.pick("false", "true", g.schema(depth+1)))
		}
	case 1:
		add("type", g.pick(`"array"`, `["array","null"]`))
		if g.r.IntN(3) > 0 {
			add("items", g.schema(depth+1))
		}
		if g.r.IntN(2) == 0 {
			add("minItems", g.pick("0", "1", "2"))
		}
		if g.r.IntN(2) == 0 {
			add("maxItems", g.pick("0", "1", "3"))
		}
	case 2:
		add("type", g.pick(`"string"`, `["string","integer"]`))
		if g.r.IntN(2) == 0 {
			add("minLength", g.pick("0", "1", "2", "3"))
		}
		if g.r.IntN(2) == 0 {
			add("maxLength", g.pick("1", "2", "4"))
		}
		if g.r.IntN(2) == 0 {
			add("pattern", g.pick(`"^a"`, `"b$"`, `"[0-9]+"`, `"é"`))
		}
	case 3:
		add("type", g.pick(`"number"`, `"integer"`, `["integer","string"]`))
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if g.r.IntN(3) == 0 {
				add(k, g.number())
			}
		}
	case 4:
		if g.r.IntN(2) == 0 {
			add("enum", g.pick(`["a","b"]`, `[1,2,null]`, `[{"a":1},[1,"x"]]`, `[true,"1",1]`, `[9007199254740993]`))
		} else {
			add("const", g.pick(`"a"`, `1`, `{"b":[1,2]}`, `null`, `[]`))
		}
	}
	return "{" + strings.Join(kw, ",") + "}"
}

func (g gen) value(depth int) string {
	switch n := g.r.IntN(8); {
	case depth > 2 || n == 0:
		return g.pick(`null`, `true`, `false`, `"a"`, `"ab"`, `"abc"`, `"b"`, `"1"`, `"é"`, `"aéb"`, `""`)
	case n == 1:
		return g.number()
	case n <= 4:
		var members []string
		for i := 0; i < g.r.IntN(4); i++ {
			members = append(members, fmt.Sprintf(`"%s":%s`, g.pick("a", "b", "c", "d", "é", "a/b"), g.value(depth+1)))
		}
		return "{" + strings.Join(members, ",") + "}"
	default:
		var items []string
		for i := 0; i < g.r.IntN(4); i++ {
			items = append(items, g.value(depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
}

// TestFastNeverAcceptsWhatTheLibraryRejects compares the fast path with the
// library on random schemas of the subset and random data.
func TestFastNeverAcceptsWhatTheLibraryRejects(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(1, 2))}
	var compared, fastAccepted, libraryAccepted int
	for i := 0; i < 3000; i++ {
		raw := `{"type":"object","properties":{"x":` + g.schema(0) + `,"y":` + g.schema(1) + `}` +
			g.pick("", `,"required":["x"]`, `,"additionalProperties":false`, `,"additionalProperties":`+g.schema(1)) + `}`
		s, err := Compile([]byte(raw))
		if err != nil {
			continue // e.g. a pattern the library refuses
		}
		if s.fast == nil {
			t.Fatalf("schema of the subset has no fast path: %s", raw)
		}
		for j := 0; j < 20; j++ {
			data, err := jsonscan.Canonicalize([]byte(`{"x":` + g.value(0) + g.pick("", `,"y":`+g.value(0)) + g.pick("", `,"z":1`) + `}`))
			if err != nil {
				t.Fatal(err)
			}
			fast, library := s.fast.accepts(jsonscan.New(nil), data), libraryAccepts(t, s, data)
			if fast && !library {
				t.Fatalf("fast path accepts what the library rejects:\nschema %s\ndata   %s", raw, data)
			}
			compared++
			if fast {
				fastAccepted++
			}
			if library {
				libraryAccepted++
			}
		}
	}
	if compared < 10000 || libraryAccepted < compared/20 || fastAccepted < libraryAccepted*9/10 {
		t.Fatalf("weak comparison: %d cases, fast accepted %d, library %d", compared, fastAccepted, libraryAccepted)
	}
	t.Logf("%d cases: library accepted %d, fast path %d", compared, libraryAccepted, fastAccepted)
}

func TestFastPathOnlyForTheSubset(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}`,
		`{"type":"object","properties":{"a":{"format":"email"}}}`,
		`{"type":"object","properties":{},"patternProperties":{"^x":{}}}`,
		`{"type":"object","properties":{"a":{"enum":[0.1,2]}}}`,
		`{"type":"object","properties":{"a":{"type":"array","prefixItems":[{}]}}}`,
	} {
		s, err := Compile([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if s.fast != nil {
			t.Errorf("fast path for %s", raw)
		}
	}
}

// FuzzFastAgreesWithLibrary never lets the fast path accept data the
// library rejects, for any schema that has a fast path.
func FuzzFastAgreesWithLibrary(f *testing.F) {
	g := gen{rand.New(rand.NewPCG(3, 4))}
	for i := 0; i < 30; i++ {
		f.Add(`{"type":"object","properties":{"x":`+g.schema(0)+`}}`, `{"x":`+g.value(0)+`}`)
	}
	f.Fuzz(func(t *testing.T, raw, data string) {
		s, err := Compile([]byte(raw))
		if err != nil || s.fast == nil {
			return
		}
		canonical, err := jsonscan.Canonicalize([]byte(data))
		if err != nil {
			return
		}
		if s.fast.accepts(jsonscan.New(nil), canonical) && !libraryAccepts(t, s, canonical) {
			t.Fatalf("fast path accepts what the library rejects:\nschema %s\ndata   %s", raw, canonical)
		}
		if json.Valid(canonical) != true {
			t.Fatal("canonical data is not JSON")
		}
	})
}
