package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits maps the accepted size suffixes to their factors.
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10},
	{"MiB", 1 << 20},
	{"GiB", 1 << 30},
}

// ParseSize parses a byte size: plain bytes ("1048576") or an integer with a
// binary unit ("512KiB", "16MiB", "1GiB"). The size must be positive.
func ParseSize(s string) (int64, error) {
	digits, factor := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			digits, factor = strings.TrimSuffix(s, u.suffix), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || strings.HasPrefix(digits, "+") {
		return 0, fmt.Errorf("invalid size %q (use a positive integer of bytes, optionally with KiB, MiB or GiB)", s)
	}
	if n > math.MaxInt64/factor {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return n * factor, nil
}

// FormatSize writes a byte size the way ParseSize reads it, with the largest
// unit that divides it exactly.
func FormatSize(n int64) string {
	for i := len(sizeUnits) - 1; i >= 0; i-- {
		if u := sizeUnits[i]; n >= u.factor && n%u.factor == 0 {
			return strconv.FormatInt(n/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
