package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// plain reports whether a string byte stands for itself: it ends no
// string, starts no escape, is no control character and no part of a
// multi-byte character.
func plain(b byte) bool { return b >= 0x20 && b != '"' && b != '\\' && b < 0x80 }

// Masks of the word-at-a-time test of plainEnd.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainEnd returns the index of the first byte of in from i on that is not
// plain, or len(in). It tests eight bytes at a time: strings are mostly
// plain, and most of a record is strings.
func plainEnd(in []byte, i int) int {
	for ; i+8 <= len(in); i += 8 {
		x := binary.LittleEndian.Uint64(in[i:])
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		// A byte below 0x20, a zero byte of quote or backslash, or a high
		// bit: the classic tests for a byte less than n (n ≤ 128). A borrow
		// may flag a byte after the first special one, never one before it,
		// so the lowest flag, the first byte in memory, is exact.
		special := ((x-ones*0x20)&^x | (quote-ones)&^quote | (backslash-ones)&^backslash | x) & highs
		if special != 0 {
			return i + bits.TrailingZeros64(special)/8
		}
	}
	for i < len(in) && plain(in[i]) {
		i++
	}
	return i
}
