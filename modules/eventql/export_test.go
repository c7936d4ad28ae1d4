package eventql

import "context"

// RunScanning is Run reading every event of each events source and
// evaluating every conjunct in the plan's order: a full scan, which a run
// through the indexes must answer alike.
func (p *Program) RunScanning(ctx context.Context, db Database, opts Options, emit func(Value) error) (Stats, error) {
	return p.run(ctx, db, opts, emit, true)
}
