package eventql

import "testing"

// BenchmarkCompileDecision compiles the precondition of a decision as the
// DCB libraries write it (bench's dcb scenario): its cost is paid by every
// decision write.
func BenchmarkCompileDecision(b *testing.B) {
	const q = `FROM e IN events WHERE e.type == "io.eventstore.bench.enrolled" AND e.data.tags CONTAINS "course:17" AND (e.id AS INT + 1) > 180042 PROJECT INTO COUNT() == 0`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(q); err != nil {
			b.Fatal(err)
		}
	}
}
