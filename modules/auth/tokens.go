package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// Token is one token the service knows, by its name: never the token
// itself, only its SHA-256 digest.
type Token struct {
	Name    string
	Grants  Grants
	Expires time.Time // zero: never
	digest  [sha256.Size]byte
	// validity is watched by the token's streams (Watch); the same token
	// kept by a reload keeps it (Tokens.carry).
	validity *validity
}

// Expired reports whether t expired at now.
func (t *Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// Tokens are the tokens the service knows. Identify compares a presented
// token with every one of them in constant time.
type Tokens struct {
	list  []Token
	files []string    // the token files an access file named
	words [][4]uint64 // the digests of list, for find (index)
	// static says that the tokens never change (--api-token): a request
	// then carries no token in its context, and is allowed everything.
	static bool
}

// SingleToken returns the tokens of --api-token: one, named api-token,
// that may do everything.
func SingleToken(token string) *Tokens {
	ts := &Tokens{list: []Token{{Name: "api-token", Grants: AllGrants, digest: sha256.Sum256([]byte(token))}}}
	return ts.index()
}

// TokenLines returns the tokens of an --api-token-file: one per line that
// is not blank, whitespace-trimmed, each of which may do everything, named
// api-token-1, api-token-2, … in the order of the lines (a single one:
// api-token). It fails when there is none, or a token repeats.
func TokenLines(text string) (*Tokens, error) {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("it holds no token")
	}
	if len(lines) == 1 {
		return SingleToken(lines[0]), nil
	}
	ts := &Tokens{}
	seen := map[[sha256.Size]byte]bool{}
	for i, line := range lines {
		d := sha256.Sum256([]byte(line))
		if seen[d] {
			return nil, fmt.Errorf("line %d repeats an earlier token", i+1)
		}
		seen[d] = true
		ts.list = append(ts.list, Token{Name: fmt.Sprintf("api-token-%d", i+1), Grants: AllGrants, digest: d})
	}
	return ts.index(), nil
}

// Len returns the number of tokens.
func (ts *Tokens) Len() int { return len(ts.list) }

// Identify returns the token that the Authorization header value
// authorization presents, and whether it presented a bearer token at all.
// It compares the presented token's digest with every token's, never
// stopping early, so that its time tells nothing of which token is
// closest. An expired token is returned as found: the caller refuses it.
func (ts *Tokens) Identify(authorization string) (t *Token, presented bool) {
	scheme, token, found := strings.Cut(authorization, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return nil, false
	}
	match := ts.find(sha256.Sum256([]byte(token)))
	if match < 0 {
		return nil, true
	}
	return &ts.list[match], true
}

// find returns the index of the token whose digest is d, or -1. It looks
// at every digest, the same work for each (no branch on their bytes), so
// that its time is the same whichever token matches, or none.
func (ts *Tokens) find(d [sha256.Size]byte) int {
	a := words(d)
	match := -1
	for i, b := range ts.words {
		x := (a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])
		equal := int(((x | -x) >> 63) ^ 1) // 1 when x is 0, else 0
		match = subtle.ConstantTimeSelect(equal, i, match)
	}
	return match
}

// index lays the digests out as words, side by side, for find, gives
// each token its validity, and returns ts; the constructors call it last.
func (ts *Tokens) index() *Tokens {
	ts.words = make([][4]uint64, len(ts.list))
	for i := range ts.list {
		ts.words[i] = words(ts.list[i].digest)
		ts.list[i].validity = newValidity(ts.list[i].Grants, ts.list[i].Expires)
	}
	return ts
}

// words returns d as four 64-bit words.
func words(d [sha256.Size]byte) [4]uint64 {
	return [4]uint64{binary.LittleEndian.Uint64(d[0:]), binary.LittleEndian.Uint64(d[8:]),
		binary.LittleEndian.Uint64(d[16:]), binary.LittleEndian.Uint64(d[24:])}
}

// carry gives the tokens of ts that old holds too (the same token) old's
// validity, and returns those of old that ts does not hold: they are
// revoked. The caller puts ts's grants and expiry in force on the
// validities kept (validity.update) once ts is in force.
func (ts *Tokens) carry(old *Tokens) (removed []*Token) {
	kept := map[[sha256.Size]byte]*validity{}
	for i := range old.list {
		kept[old.list[i].digest] = old.list[i].validity
	}
	for i := range ts.list {
		if v, ok := kept[ts.list[i].digest]; ok {
			ts.list[i].validity = v
			delete(kept, ts.list[i].digest)
		}
	}
	for i := range old.list {
		if _, gone := kept[old.list[i].digest]; gone {
			removed = append(removed, &old.list[i])
		}
	}
	return removed
}

// Named returns the token named name, or nil.
func (ts *Tokens) Named(name string) *Token {
	for i := range ts.list {
		if ts.list[i].Name == name {
			return &ts.list[i]
		}
	}
	return nil
}
