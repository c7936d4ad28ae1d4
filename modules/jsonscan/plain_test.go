package jsonscan

import (
	"math/rand/v2"
	"testing"
)

// TestPlainEnd holds plainEnd to a byte-at-a-time loop, at every start, on
// runs of plain bytes with each kind of special byte at every position.
func TestPlainEnd(t *testing.T) {
	naive := func(in []byte, i int) int {
		for i < len(in) && plain(in[i]) {
			i++
		}
		return i
	}
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []byte{'"', '\\', 0, 0x1f, 0x80, 0xff, 0xc3}
	for n := 0; n < 40; n++ {
		for pos := 0; pos <= n; pos++ {
			for _, s := range specials {
				in := make([]byte, n)
				for i := range in {
					in[i] = byte(0x20 + rng.IntN(0x60)) // printable ASCII, may hold '"' or '\\'
				}
				if pos < n {
					in[pos] = s
				}
				for start := 0; start <= n; start++ {
					if got, want := plainEnd(in, start), naive(in, start); got != want {
						t.Fatalf("plainEnd(%q, %d) = %d, want %d", in, start, got, want)
					}
				}
			}
		}
	}
	for b := range 256 {
		in := []byte("abcdefghijklmnop")
		in[9] = byte(b)
		if got, want := plainEnd(in, 0), naive(in, 0); got != want {
			t.Fatalf("byte %#x: plainEnd = %d, want %d", b, got, want)
		}
	}
}
