package dataindex

import (
	"slices"
	"testing"
)

func TestKeys(t *testing.T) {
	for _, c := range []struct {
		data, path string
		want       []Key
	}{
		{`{"x":"a"}`, "/x", []Key{String("a"), StringKind}},
		{`{"x":"42"}`, "/x", []Key{String("42"), StringKind}},
		{`{"x":42}`, "/x", []Key{Int(42), NumberKind}},
		{`{"x":-0}`, "/x", []Key{Int(0), NumberKind}},
		{`{"x":42.0}`, "/x", []Key{Int(42), NumberKind}},
		{`{"x":4.2e1}`, "/x", []Key{Int(42), NumberKind}},
		{`{"x":42.5}`, "/x", []Key{NumberKind}},
		{`{"x":9007199254740992.0}`, "/x", []Key{Int(1 << 53), NumberKind}},
		{`{"x":9007199254740994.0}`, "/x", []Key{NumberKind}},
		{`{"x":9007199254740993}`, "/x", []Key{Int(1<<53 + 1), NumberKind}},
		{`{"x":12345678901234567890}`, "/x", []Key{NumberKind}},
		{`{"x":1e400}`, "/x", []Key{NumberKind}},
		{`{"x":true}`, "/x", []Key{Bool(true), BoolKind}},
		{`{"x":false}`, "/x", []Key{Bool(false), BoolKind}},
		{`{"x":null}`, "/x", nil},
		{`{"x":{"y":1}}`, "/x", []Key{ObjectKind}},
		{`{"x":{"y":1}}`, "/x/y", []Key{Int(1), NumberKind}},
		{`{"x":{"y":1}}`, "/x/z", nil},
		{`{"x":[{"y":1}]}`, "/x/0/y", nil}, // EventQL reads no member of an array
		{`{"tags":["a","b","a",1,1.0,true,null,{},[]]}`, "/tags", []Key{ArrayKind, String("a"), String("b"), Int(1), Bool(true)}},
		{`{"tags":[]}`, "/tags", []Key{ArrayKind}},
		{`{"x":"\u00e9\n"}`, "/x", []Key{String("é\n"), StringKind}},
		{`{"a/b":{"c~d":"v"}}`, "/a~1b/c~0d", []Key{String("v"), StringKind}},
		{`{"x":1,"x":2}`, "/x", []Key{Int(2), NumberKind}},
		{`{"x":1}`, "", []Key{ObjectKind}},
		{`"top"`, "/x", nil},
		{`not json`, "/x", nil},
		{``, "", nil},
	} {
		tokens, err := Tokens(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Keys(nil, []byte(c.data), tokens); !slices.Equal(got, c.want) {
			t.Errorf("Keys(%s, %q) = %q, want %q", c.data, c.path, got, c.want)
		}
	}
}

func TestLookupKeys(t *testing.T) {
	if got := Equal(String("a")); !slices.Equal(got, []Key{String("a"), NumberKind, BoolKind, ArrayKind, ObjectKind}) {
		t.Errorf("Equal(string) = %q", got)
	}
	if got := Equal(Int(1)); !slices.Equal(got, []Key{Int(1), StringKind, BoolKind, ArrayKind, ObjectKind}) {
		t.Errorf("Equal(int) = %q", got)
	}
	if got := Equal(Bool(false)); !slices.Equal(got, []Key{Bool(false), StringKind, NumberKind, ArrayKind, ObjectKind}) {
		t.Errorf("Equal(bool) = %q", got)
	}
	if got := Contains(Int(1)); !slices.Equal(got, []Key{Int(1), StringKind, NumberKind, BoolKind, ObjectKind}) {
		t.Errorf("Contains = %q", got)
	}
}
