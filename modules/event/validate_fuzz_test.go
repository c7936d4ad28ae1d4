package event

import (
	"net/url"
	"regexp"
	"testing"
)

// The patterns of docs/api.md §3, the reference of the hand-written validators.
var (
	subjectPattern     = regexp.MustCompile(`^/([0-9A-Za-z_-]+(/[0-9A-Za-z_-]+)*)?$`)
	typePattern        = regexp.MustCompile(`^[0-9A-Za-z_-]{2,}(\.[0-9A-Za-z_-]+){2,}$`)
	sourcePattern      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$`)
	traceParentPattern = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)
	idPattern          = regexp.MustCompile(`^(0|[1-9][0-9]{0,18})$`)
)

func FuzzValidators(f *testing.F) {
	for _, seed := range []string{
		"/", "/books/42", "//a", "/a/", "a", "io.eventsourcingdb.test", "ab.c.d", "a.b.c", "io..x.y", "io.test.",
		"https://x", "tag:a,b:c", "https:", "h:t p", "1a:b", "a+b.c-d:e", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01", "0", "01", "9999999999999999999", "18446744073709551615",
		"a:\xff", "a:b\x0bc",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if want := len(s) <= MaxFieldLength && subjectPattern.MatchString(s); ValidSubject(s) != want {
			t.Fatalf("ValidSubject(%q) = %v, pattern says %v", s, !want, want)
		}
		if want := len(s) <= MaxFieldLength && typePattern.MatchString(s); ValidType(s) != want {
			t.Fatalf("ValidType(%q) = %v, pattern says %v", s, !want, want)
		}
		_, parseErr := url.Parse(s)
		if want := len(s) <= MaxFieldLength && sourcePattern.MatchString(s) && parseErr == nil; ValidSource(s) != want {
			t.Fatalf("ValidSource(%q) = %v, pattern says %v", s, !want, want)
		}
		if want := traceParentPattern.MatchString(s) && s[3:35] != "00000000000000000000000000000000" && s[36:52] != "0000000000000000"; ValidTraceParent(s) != want {
			t.Fatalf("ValidTraceParent(%q) = %v, pattern says %v", s, !want, want)
		}
		if _, ok := ParseID(s); ok && !idPattern.MatchString(s) {
			t.Fatalf("ParseID(%q) accepted what the pattern rejects", s)
		}
		if _, ok := ParseID(s); !ok && idPattern.MatchString(s) && len(s) < 19 {
			t.Fatalf("ParseID(%q) rejected what the pattern accepts", s)
		}
	})
}
