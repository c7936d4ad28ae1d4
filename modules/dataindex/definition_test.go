package dataindex

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		def  Definition
		want error
	}{
		{"all types", Definition{Name: "by-reader", Path: "/borrowedBy"}, nil},
		{"some types", Definition{Name: "tags", Path: "/tags", EventTypes: []string{"io.x.b", "io.x.a", "io.x.b"}}, nil},
		{"the whole data", Definition{Name: "whole", Path: ""}, nil},
		{"escapes", Definition{Name: "esc", Path: "/a~1b/c~0d"}, nil},
		{"bad name", Definition{Name: "a b", Path: "/x"}, ErrInvalidName},
		{"no name", Definition{Path: "/x"}, ErrInvalidName},
		{"no leading slash", Definition{Name: "x", Path: "x"}, ErrInvalidPath},
		{"bad escape", Definition{Name: "x", Path: "/a~2"}, ErrInvalidPath},
		{"trailing tilde", Definition{Name: "x", Path: "/a~"}, ErrInvalidPath},
		{"17 tokens", Definition{Name: "x", Path: strings.Repeat("/a", 17)}, ErrInvalidPath},
		{"16 tokens", Definition{Name: "x", Path: strings.Repeat("/a", 16)}, nil},
		{"bad type", Definition{Name: "x", Path: "/a", EventTypes: []string{"nope"}}, ErrInvalidEventType},
		{"no types", Definition{Name: "x", Path: "/a", EventTypes: []string{}}, ErrInvalidTypes},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.def.Validate()
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("Validate: %v, want %v", err, c.want)
			}
		})
	}
	d := Definition{Name: "tags", Path: "/tags", EventTypes: []string{"io.x.b", "io.x.a", "io.x.b"}}
	if err := d.Validate(); err != nil || !slices.Equal(d.EventTypes, []string{"io.x.a", "io.x.b"}) {
		t.Fatalf("types after Validate: %v %v", d.EventTypes, err)
	}
	if !d.Covers("io.x.a") || d.Covers("io.x.c") || !(Definition{}).Covers("io.x.c") {
		t.Fatal("Covers")
	}
	if !d.Same(Definition{Name: "tags", Path: "/tags", EventTypes: []string{"io.x.a", "io.x.b"}}) ||
		d.Same(Definition{Name: "tags", Path: "/tags"}) {
		t.Fatal("Same")
	}
	if got := (&Definition{Name: "x", Path: "/a"}).Validate(); got != nil {
		t.Fatal(got)
	}
	if err := (&Definition{Name: "x", Path: "x"}).Validate(); err.Error() != "invalid path 'x'" {
		t.Fatalf("message %q", err)
	}
}

func TestTokensAndPath(t *testing.T) {
	for path, want := range map[string][]string{
		"":          nil,
		"/":         {""},
		"/a/b":      {"a", "b"},
		"/a~1b~0c":  {"a/b~c"},
		"/~01":      {"~1"},
		"/tags//x/": {"tags", "", "x", ""},
	} {
		got, err := Tokens(path)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Tokens(%q) = %q %v, want %q", path, got, err, want)
		}
		if path != "" && Path(got) != path {
			t.Errorf("Path(%q) = %q, want %q", got, Path(got), path)
		}
	}
}
