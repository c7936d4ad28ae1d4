package bench

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// writeAccessFile writes an access file of n named tokens to a new
// temporary file and returns its path: n − 1 random ones, each allowed to
// read and write a subject tree of its own, then token, allowed to read
// and write everything, query, register schemas, consume every
// subscription and operate, but not admin.
func writeAccessFile(token string, n int) (string, error) {
	var b strings.Builder
	b.WriteString("tokens:\n")
	entry := func(name, secret, grants string) {
		d := sha256.Sum256([]byte(secret))
		fmt.Fprintf(&b, "  - name: %s\n    sha256: %s\n    grants: %s\n", name, hex.EncodeToString(d[:]), grants)
	}
	for i := range n - 1 {
		secret := make([]byte, 24)
		if _, err := rand.Read(secret); err != nil {
			return "", err
		}
		entry(fmt.Sprintf("service-%d", i), hex.EncodeToString(secret), fmt.Sprintf(`{read: ["/service-%d"], write: ["/service-%d"]}`, i, i))
	}
	entry("bench", token, `{read: ["/"], write: ["/"], query: true, schemas: true, consume: ["*"], operate: true}`)
	f, err := os.CreateTemp("", "eventstore-bench-access-*.yaml")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}
