package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// accessFile is the form of an --access-file (docs/operations.md, "Access control").
type accessFile struct {
	Tokens []fileToken `yaml:"tokens"`
}

// fileToken is one token of an access file: its name, its digest or the
// file that holds it, its grants and when it expires.
type fileToken struct {
	Name      string     `yaml:"name"`
	SHA256    string     `yaml:"sha256"`
	TokenFile string     `yaml:"tokenFile"`
	Grants    Grants     `yaml:"grants"`
	Expires   *time.Time `yaml:"expires"`
}

// validName matches a token's name.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// LoadAccessFile reads the access file at path and the token files it
// names (relative to its directory unless absolute). It fails on anything
// the file may not hold: unknown keys, an invalid or duplicate name, a
// token given both or neither ways, a digest that is not hex SHA-256, a
// token that repeats, a grant beyond those of docs/api.md §1.2a, an
// unreadable or empty token file, or no token at all.
func LoadAccessFile(path string) (*Tokens, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f accessFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Tokens) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	ts := &Tokens{}
	names := map[string]bool{}
	digests := map[[sha256.Size]byte]string{}
	for i, ft := range f.Tokens {
		t, err := ft.token(filepath.Dir(path))
		if err != nil {
			return nil, fmt.Errorf("%s: token %d (%q): %w", path, i+1, ft.Name, err)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("%s: token %d: the name %q repeats", path, i+1, t.Name)
		}
		if other, ok := digests[t.digest]; ok {
			return nil, fmt.Errorf("%s: token %d (%q): the same token as %q", path, i+1, t.Name, other)
		}
		names[t.Name], digests[t.digest] = true, t.Name
		ts.list = append(ts.list, t)
		if ft.TokenFile != "" {
			ts.files = append(ts.files, ft.resolved(filepath.Dir(path)))
		}
	}
	return ts.index(), nil
}

// resolved returns the path of ft's token file, relative to dir unless
// absolute.
func (ft fileToken) resolved(dir string) string {
	if filepath.IsAbs(ft.TokenFile) {
		return ft.TokenFile
	}
	return filepath.Join(dir, ft.TokenFile)
}

// token returns the Token of ft, whose token file is read relative to dir.
func (ft fileToken) token(dir string) (Token, error) {
	t := Token{Name: ft.Name, Grants: ft.Grants}
	if !validName.MatchString(ft.Name) {
		return t, errors.New("the name must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}
	if err := ft.Grants.validate(); err != nil {
		return t, err
	}
	if ft.Expires != nil {
		t.Expires = *ft.Expires
	}
	switch {
	case (ft.SHA256 == "") == (ft.TokenFile == ""):
		return t, errors.New("give exactly one of sha256 and tokenFile")
	case ft.SHA256 != "":
		d, err := hex.DecodeString(ft.SHA256)
		if err != nil || len(d) != sha256.Size {
			return t, errors.New("sha256 must be the 64 hex digits of the token's SHA-256")
		}
		copy(t.digest[:], d)
	default:
		file := ft.resolved(dir)
		raw, err := os.ReadFile(file)
		if err != nil {
			return t, fmt.Errorf("tokenFile: %w", err)
		}
		token := strings.TrimSpace(string(raw))
		if token == "" {
			return t, fmt.Errorf("tokenFile %s holds no token", file)
		}
		t.digest = sha256.Sum256([]byte(token))
	}
	return t, nil
}
