package event

import "unicode/utf8"

// quoteLimit is how many bytes of a client's value an error message quotes.
const quoteLimit = 100

// Quote returns a client's value in single quotes for an error message, cut
// after 100 bytes (at a character boundary) with "…", so that a huge
// invalid value does not come back as a huge error.
func Quote(s string) string {
	if len(s) <= quoteLimit {
		return "'" + s + "'"
	}
	cut := quoteLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return "'" + s[:cut] + "…'"
}
