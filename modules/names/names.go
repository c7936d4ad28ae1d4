// Package names holds the rule for the names a client gives the objects
// it creates in the service: subscriptions, their consumers, data indexes.
package names

// MaxLength bounds a name.
const MaxLength = 128

// Valid reports whether s is a name: 1–128 characters of
// A–Z a–z 0–9 . _ -.
func Valid(s string) bool {
	if len(s) == 0 || len(s) > MaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
