package eventql

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/eventstore-service/eventstore/modules/event"
	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Program is a checked query, ready to run any number of times.
type Program struct {
	q    *Query
	text string
}

// Compile parses and checks a query. Every error is a static *Error.
func Compile(query string) (*Program, error) {
	q, err := Parse(query)
	if err != nil {
		return nil, err
	}
	var c checker
	if err := c.query(q); err != nil {
		return nil, err
	}
	prepare(q)
	return &Program{q: q, text: query}, nil
}

// Text returns the query the program was compiled from.
func (p *Program) Text() string { return p.text }

// DataPaths returns the JSON pointers, in order of appearance, of the
// conjuncts of any level that a data index on them could serve
// (docs/eventql.md §14.1), whether one does or not.
func (p *Program) DataPaths() []string {
	var paths []string
	var collect func(q *Query)
	collect = func(q *Query) {
		for _, form := range q.plan.data {
			if form != nil && !slices.Contains(paths, form.path) {
				paths = append(paths, form.path)
			}
		}
		for _, f := range q.Froms {
			if f.Sub != nil {
				collect(f.Sub)
			}
		}
	}
	collect(p.q)
	return paths
}

// readsData reports whether a level of q has a conjunct that a data index
// could serve.
func readsData(q *Query) bool {
	if q.plan.hasData {
		return true
	}
	for _, f := range q.Froms {
		if f.Sub != nil && readsData(f.Sub) {
			return true
		}
	}
	return false
}

// prepare computes the plan of every query level once.
func prepare(q *Query) {
	p := makePlan(q)
	q.plan = &p
	for _, f := range q.Froms {
		if f.Sub != nil {
			prepare(f.Sub)
		}
	}
}

// Options bound one execution.
type Options struct {
	// MemoryLimit is the budget of the blocking steps in bytes.
	MemoryLimit int64
	// Pool, unless nil, is the memory shared by all running queries: the
	// blocking steps take their memory from it too.
	Pool *MemoryPool
	// Now is the value of NOW(); the current time when zero.
	Now time.Time
	// TimeLimit bounds the run when positive; exceeding it is the runtime
	// error "time limit of <d> exceeded".
	TimeLimit time.Duration
	// Since, unless zero, is when TimeLimit began to count: a run that
	// continues a decision begun earlier (a precondition evaluated again)
	// has only what is left of it.
	Since time.Time
	// Pace, unless nil, is called as a run starts; the function it returns
	// is called every 1,000 rows of that run and may wait, to leave the
	// processors to others (a pacer that counts from the run's start, not
	// from when its caller began; it is started again after Turn).
	Pace func() func()
	// Turn, unless nil, is called once, when a run has processed its first
	// 1,000 tuples: a run that reads that much may wait there for its turn
	// among the heavy ones, while a run that reads little never waits. Its
	// error ends the run.
	Turn func() error
	// Ran, unless nil, learns the stats of every run as it ends.
	Ran func(Stats)
	// Affecter, unless nil, receives as the run ends the Affecter of its
	// plan: Program.Affecter with the data indexes the run planned with,
	// without planning again.
	Affecter func(*Affecter)
}

// Stats describe an execution.
type Stats struct {
	// EventsLoaded counts the event records read from the database.
	EventsLoaded int64
	// MemoryPeak is the most memory the blocking steps held at once, in
	// bytes, as charged against Options.MemoryLimit.
	MemoryPeak int64
}

// Run executes the program against db and calls emit for every output row
// in order. A runtime failure is an *Error; ctx's end stops the run with
// ctx's error.
func (p *Program) Run(ctx context.Context, db Database, opts Options, emit func(Value) error) (Stats, error) {
	return p.run(ctx, db, opts, emit, false)
}

// run is Run; with scanAll it reads every event of each events source and
// evaluates every conjunct, as the plan orders them (the tests compare).
func (p *Program) run(ctx context.Context, db Database, opts Options, emit func(Value) error, scanAll bool) (Stats, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	if opts.TimeLimit > 0 {
		left := opts.TimeLimit
		if !opts.Since.IsZero() {
			left -= time.Since(opts.Since)
		}
		if left <= 0 {
			return Stats{}, timeLimitError(opts)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, left, errTimeLimit)
		defer cancel()
	}
	ex := &execution{ctx: ctx, db: db, now: now.UTC(), limit: opts.MemoryLimit, pool: opts.Pool}
	if opts.Pace != nil {
		ex.pace = opts.Pace()
	}
	ex.turn, ex.newPace = opts.Turn, opts.Pace
	ex.scanAll = scanAll
	if indexed, ok := db.(DataIndexed); ok && readsData(p.q) {
		ex.indexes = indexed.DataIndexes()
	}
	ex.planning = opts.Affecter != nil && len(ex.indexes) > 0
	err := ex.level(p.q, emit)
	if opts.Affecter != nil {
		opts.Affecter(newAffecter(p.q, db.Emit, ex.planned))
	}
	if ex.pool != nil {
		ex.pool.give(ex.used) // all of it goes with the run
	}
	if err != nil && errors.Is(context.Cause(ctx), errTimeLimit) {
		err = timeLimitError(opts)
	}
	stats := Stats{EventsLoaded: ex.loaded, MemoryPeak: ex.peak}
	if opts.Ran != nil {
		opts.Ran(stats)
	}
	return stats, err
}

func timeLimitError(opts Options) error {
	return &Error{Msg: "time limit of " + opts.TimeLimit.String() + " exceeded"}
}

// errTimeLimit is the cause of a run's end at Options.TimeLimit.
var errTimeLimit = errors.New("time limit exceeded")

// errSecondRow ends a precondition's run once a second row exists.
var errSecondRow = errors.New("second row")

// Holds evaluates the program as an isEventQlQueryTrue precondition
// (docs/eventql.md §13): it holds when the query yields exactly one row, true.
// False, null, no row and several rows do not hold. A single row of
// another type and runtime errors make the precondition invalid: the error
// then reads as the text that follows "invalid precondition: ". An end of
// ctx is returned as ctx's error.
func (p *Program) Holds(ctx context.Context, db Database, opts Options) (bool, error) {
	rows := 0
	var first Value
	_, err := p.Run(ctx, db, opts, func(v Value) error {
		rows++
		if rows > 1 {
			return errSecondRow
		}
		first = v
		return nil
	})
	var qe *Error
	switch {
	case err == errSecondRow:
		return false, nil
	case errors.As(err, &qe):
		return false, &InvalidError{Msg: "query failed: " + qe.Error(), Err: qe}
	case err != nil:
		return false, err
	case rows == 1 && first.kind != KindBool && first.kind != KindNull:
		return false, &InvalidError{Msg: "query must yield a BOOLEAN, got " + first.kind.String()}
	}
	return rows == 1 && first.IsTrue(), nil
}

// InvalidError tells that a precondition query failed or yielded a value
// that is not a BOOLEAN.
type InvalidError struct {
	Msg string
	// Err is the *Error of a query that failed, nil otherwise.
	Err error
}

func (e *InvalidError) Error() string { return e.Msg }

// Unwrap returns the *Error of a query that failed.
func (e *InvalidError) Unwrap() error { return e.Err }

// execution is the state of one run.
type execution struct {
	ctx   context.Context
	db    Database
	now   time.Time
	rand  *rand.Rand // made by the first RAND() (random)
	limit int64
	used  int64
	peak  int64
	pool  *MemoryPool
	pace  func()
	turn  func() error // Options.Turn, until called
	// newPace is Options.Pace, which starts pace again after the turn.
	newPace func() func()
	// indexes are the ready data indexes of the database as the run began.
	indexes []DataIndex
	scanAll bool // read every event, serve no conjunct (tests)
	// planned, when Options.Affecter asks for it (planning), holds each
	// level's selections as the run planned them with indexes.
	planned  []levelPlan
	planning bool
	loaded   int64
	ticks    int
	// scanner parses the events of the run, one at a time.
	scanner jsonscan.Scanner
}

// errStop ends reading a level's sources once TOP is satisfied.
var errStop = errors.New("stop")

// release gives back n bytes accounted by charge.
func (ex *execution) release(n int) {
	ex.used -= int64(n)
	if ex.pool != nil {
		ex.pool.give(int64(n))
	}
}

// charge accounts n bytes of memory kept by a blocking step.
func (ex *execution) charge(n int) error {
	if ex.limit > 0 && ex.used+int64(n) > ex.limit {
		return &Error{Msg: "memory limit of " + itoa(ex.limit) + " bytes exceeded"}
	}
	if ex.pool != nil {
		if err := ex.pool.take(int64(n)); err != nil {
			return err
		}
	}
	ex.used += int64(n)
	ex.peak = max(ex.peak, ex.used)
	return nil
}

func itoa(n int64) string {
	return string(Int(n).AppendJSON(nil))
}

// tick checks for cancellation every 1,000 tuples.
func (ex *execution) tick() error {
	ex.ticks++
	if ex.ticks%1000 == 0 {
		if ex.turn != nil {
			turn := ex.turn
			ex.turn = nil // once
			if err := turn(); err != nil {
				return err
			}
			if ex.newPace != nil {
				ex.pace = ex.newPace() // the wait for the turn was no work
			}
		}
		if ex.pace != nil {
			ex.pace()
		}
		return ex.ctx.Err()
	}
	return nil
}

// levelState is the state of one execution of one query level.
type levelState struct {
	q *Query
	// selections and conditions are the plan of the level for this run:
	// with the data indexes of the database (plan.forRun).
	selections []Selection
	conditions []Expr
	emit       func(Value) error
	sorter     *sorter // of an ORDER BY the source order does not serve
	groups     []*group
	index      map[string]*group
	skipped    int64
	passed     int64 // rows that passed SKIP and TOP
	distinct   map[string]bool
	key        []byte
	env        env // of the current row, reused
}

type group struct {
	accs []accumulator
}

func (ex *execution) level(q *Query, emit func(Value) error) error {
	sources := make([][]Value, len(q.Froms))
	for i, f := range q.Froms {
		var err error
		if sources[i], err = ex.materialize(f); err != nil {
			return err
		}
	}
	st := &levelState{q: q, emit: emit}
	if ex.scanAll {
		st.selections, st.conditions = q.plan.build(ex.indexes, false)
	} else {
		st.selections, st.conditions = q.plan.forRun(ex.indexes)
	}
	if ex.planning && plannedOf(ex.planned, q) == nil {
		ex.planned = append(ex.planned, levelPlan{q: q, selections: st.selections})
	}
	if q.Order != nil && !q.plan.presorted {
		st.sorter = newSorter(q)
	}
	if q.Distinct {
		st.distinct = map[string]bool{}
	}
	if q.grouped {
		st.index = map[string]*group{}
		if q.Group == nil {
			st.groups = []*group{ex.newGroup(q)} // one group, even without rows
		}
	}
	if st.sorter == nil && !q.grouped && q.top == 0 {
		return nil
	}
	tuple := make([]Value, len(q.Froms))
	err := ex.loop(st, sources, tuple, 0)
	if err != nil && err != errStop {
		return err
	}
	if st.sorter != nil {
		for _, e := range st.sorter.sorted() {
			if q.grouped {
				err = ex.accumulate(st, e.tuple)
			} else {
				err = ex.output(st, &env{tuple: e.tuple})
			}
			if err == errStop {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	if q.grouped {
		return ex.finishGroups(st)
	}
	return nil
}

// materialize reads a source that is not events into memory.
func (ex *execution) materialize(f *From) ([]Value, error) {
	var out []Value
	add := func(v Value) error {
		out = append(out, v)
		return ex.charge(keptSize(v))
	}
	switch f.Kind {
	case SourceSubjects:
		err := ex.db.Subjects(ex.ctx, func(s string) error { return add(subjectValue(s)) })
		if err != nil {
			return nil, storageErr(err)
		}
	case SourceEventTypes:
		err := ex.db.EventTypes(ex.ctx, func(t EventType) error { return add(eventTypeValue(t)) })
		if err != nil {
			return nil, storageErr(err)
		}
	case SourceQuery:
		err := ex.level(f.Sub, func(v Value) error { return add(retain(v)) })
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// storageErr turns a failure of the Database into the *Error that ends the
// run: its message says that reading failed and keeps the failure's own
// text, which may name files, hosts or internals, out of it (Err keeps
// the failure).
func storageErr(err error) error {
	var qe *Error
	if errors.As(err, &qe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &Error{Msg: "internal error: storage read failed", Err: err}
}

// loop binds the aliases from slot i on as nested loops.
func (ex *execution) loop(st *levelState, sources [][]Value, tuple []Value, i int) error {
	q := st.q
	if i == len(q.Froms) {
		return ex.row(st, tuple)
	}
	if q.Froms[i].Kind != SourceEvents {
		for _, v := range sources[i] {
			tuple[i] = v
			if err := ex.loop(st, sources, tuple, i+1); err != nil {
				return err
			}
		}
		return nil
	}
	var inner error
	ev := &eventData{}
	err := ex.db.Events(ex.ctx, st.selections[i], func(r event.Record) bool {
		ex.loaded++
		*ev = eventData{rec: r, db: ex.db, sc: &ex.scanner}
		tuple[i] = Value{kind: KindRecord, ev: ev}
		inner = ex.loop(st, sources, tuple, i+1)
		return inner == nil
	})
	if inner != nil {
		return inner
	}
	if err != nil {
		return storageErr(err)
	}
	return nil
}

// row takes one tuple through WHERE and on to sorting, grouping or output.
func (ex *execution) row(st *levelState, tuple []Value) error {
	if err := ex.tick(); err != nil {
		return err
	}
	q := st.q
	en := &st.env
	*en = env{tuple: tuple}
	for _, c := range st.conditions {
		v, err := ex.eval(c, en)
		if err != nil {
			return err
		}
		switch {
		case v.kind == KindBool && v.bool():
			continue
		case v.kind == KindBool || v.isNull():
			return nil
		}
		return runtimeErr(q.WherePos, "WHERE condition must be BOOLEAN, got %s", v.kind)
	}
	if st.sorter != nil {
		key, err := ex.eval(q.Order.Key, en)
		if err != nil {
			return err
		}
		return st.sorter.add(ex, key, tuple)
	}
	if q.grouped {
		return ex.accumulate(st, tuple)
	}
	return ex.output(st, en)
}

// output applies SKIP, TOP, PROJECT INTO and DISTINCT to one row (group)
// and emits it; errStop tells that TOP is satisfied.
func (ex *execution) output(st *levelState, en *env) error {
	q := st.q
	if st.skipped < max(q.skip, 0) {
		st.skipped++
		return nil
	}
	if q.top >= 0 && st.passed >= q.top {
		return errStop
	}
	st.passed++
	v, err := ex.eval(q.Project, en)
	if err != nil {
		return err
	}
	if st.distinct != nil {
		st.key = v.appendKey(st.key[:0])
		if st.distinct[string(st.key)] {
			return ex.topReached(st)
		}
		st.distinct[string(st.key)] = true
		if err := ex.charge(len(st.key) + mapEntrySize); err != nil {
			return err
		}
	}
	if err := st.emit(v); err != nil {
		return err
	}
	return ex.topReached(st)
}

func (ex *execution) topReached(st *levelState) error {
	if st.q.top >= 0 && st.passed >= st.q.top && st.sorter == nil && !st.q.grouped {
		return errStop
	}
	return nil
}

func (ex *execution) newGroup(q *Query) *group {
	g := &group{accs: make([]accumulator, len(q.aggs))}
	for i, call := range q.aggs {
		g.accs[i] = call.fn.accumulator(len(call.Args))
	}
	return g
}

// accumulate adds one row to its group's aggregates.
func (ex *execution) accumulate(st *levelState, tuple []Value) error {
	q := st.q
	en := &st.env
	*en = env{tuple: tuple}
	var g *group
	if q.Group == nil {
		g = st.groups[0]
	} else {
		key, err := ex.eval(q.Group.Key, en)
		if err != nil {
			return err
		}
		st.key = key.appendKey(st.key[:0])
		if g = st.index[string(st.key)]; g == nil {
			g = ex.newGroup(q)
			st.index[string(st.key)] = g
			st.groups = append(st.groups, g)
			if err := ex.charge(len(st.key) + mapEntrySize + accumulatorSize*(1+len(q.aggs))); err != nil {
				return err
			}
		}
	}
	for i, call := range q.aggs {
		var v Value
		if len(call.Args) > 0 {
			var err error
			if v, err = ex.eval(call.Args[0], en); err != nil {
				return err
			}
		}
		grown, err := g.accs[i].add(v, call.Pos)
		if err != nil {
			return err
		}
		if err := ex.charge(grown); err != nil {
			return err
		}
	}
	return nil
}

// finishGroups evaluates HAVING and the projection of every group.
func (ex *execution) finishGroups(st *levelState) error {
	q := st.q
	for _, g := range st.groups {
		results := make([]aggResult, len(g.accs))
		for i, a := range g.accs {
			results[i] = a.result()
		}
		en := &env{aggs: results}
		if q.Group != nil && q.Group.Having != nil {
			v, err := ex.eval(q.Group.Having, en)
			if err != nil {
				return err
			}
			if v.kind != KindBool && !v.isNull() {
				return runtimeErr(q.Group.HavingPos, "HAVING condition must be BOOLEAN, got %s", v.kind)
			}
			if !v.bool() {
				continue
			}
		}
		switch err := ex.output(st, en); {
		case err == errStop:
			return nil
		case err != nil:
			return err
		}
	}
	return nil
}
