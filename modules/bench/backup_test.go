package bench

import (
	"bytes"
	"context"
	"testing"
)

// TestCommandPeakIsTheChilds runs a small command while this process holds
// 128 MiB: the command's peak memory is its own, not this process's.
func TestCommandPeakIsTheChilds(t *testing.T) {
	held := bytes.Repeat([]byte{1}, 128<<20)
	r := &runner{ctx: context.Background(), opts: Options{Binary: "/bin/sleep"}}
	took, peak, err := r.command("0.3")
	if err != nil {
		t.Fatal(err)
	}
	if peak <= 0 || peak >= 32<<20 {
		t.Errorf("peak of sleep 0.3 beside 128 MiB of the caller: %d bytes, want a few MiB", peak)
	}
	if took < 300e6 {
		t.Errorf("sleep 0.3 took %s", took)
	}
	_ = held[len(held)-1]
}
