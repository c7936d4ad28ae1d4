package eventql

import (
	"strings"
	"time"
)

// stype is a static type: a kind (with kindNumber and kindAny), and for
// records bound to an alias of a source, which record it is.
type stype struct {
	kind   Kind
	source SourceKind // SourceEvents, SourceSubjects or SourceEventTypes for their records
}

var (
	tAny    = stype{kind: kindAny}
	tNull   = stype{kind: KindNull}
	tBool   = stype{kind: KindBool}
	tInt    = stype{kind: KindInt}
	tFloat  = stype{kind: KindFloat}
	tNumber = stype{kind: kindNumber}
	tString = stype{kind: KindString}
	tDT     = stype{kind: KindDateTime}
	tArray  = stype{kind: KindArray}
	tRecord = stype{kind: KindRecord}
)

// known reports whether the type is a definite kind (not NULL, not ANY).
func (t stype) known() bool { return t.kind != KindNull && t.kind != kindAny }

// eventFields are the fields of event records and their static types.
var eventFields = map[string]stype{
	"specversion": tString, "id": tString, "time": tDT, "source": tString, "subject": tString, "type": tString,
	"datacontenttype": tString, "data": tRecord, "predecessorhash": tString, "hash": tString,
	"traceparent": tString, "tracestate": tString, "signature": tString,
}

// eventTypeFields are the fields of event-type records, by lower-case name.
var eventTypeFields = map[string]stype{"eventtype": tString, "isphantom": tBool, "schema": tRecord}

// scope is the aliases of one query level.
type scope struct {
	names   []string
	sources []SourceKind
}

func (s *scope) lookup(name string) (int, bool) {
	for i, n := range s.names {
		if n == name {
			return i, true
		}
	}
	return 0, false
}

// checker checks one query and its subqueries.
type checker struct {
	ex *execution // for evaluating SKIP and TOP, made for the first
}

// limits returns the execution that evaluates SKIP and TOP.
func (c *checker) limits() *execution {
	if c.ex == nil {
		c.ex = &execution{now: time.Now().UTC()}
	}
	return c.ex
}

// clause is where an expression stands, for the aggregate rules.
type clause struct {
	name     string // "WHERE", "ORDER BY", "GROUP BY", "HAVING", "PROJECT INTO", "SKIP", "TOP"
	aggs     bool   // aggregates allowed
	inAgg    bool   // inside an aggregate's argument
	grouped  bool   // aliases only inside aggregates
	noAlias  bool   // SKIP and TOP
	q        *Query // collecting aggregate calls
	sawAgg   bool
	aliasPos Pos // first alias reference outside an aggregate (grouped rule)
	alias    string
}

func (c *checker) query(q *Query) error {
	sc := &scope{}
	for _, f := range q.Froms {
		if _, dup := sc.lookup(f.Alias); dup {
			return staticErr(f.Pos, "duplicate alias '%s'", f.Alias)
		}
		if f.Sub != nil {
			if err := c.query(f.Sub); err != nil {
				return err
			}
		}
		sc.names = append(sc.names, f.Alias)
		sc.sources = append(sc.sources, f.Kind)
	}
	if q.Where != nil {
		t, err := c.expr(q.Where, sc, &clause{name: "WHERE"})
		if err != nil {
			return err
		}
		if t.known() && t.kind != KindBool {
			return staticErr(q.WherePos, "WHERE condition must be BOOLEAN, got %s", t.kind)
		}
	}
	if q.Order != nil {
		t, err := c.expr(q.Order.Key, sc, &clause{name: "ORDER BY"})
		if err != nil {
			return err
		}
		if t.known() && !orderable(t.kind) {
			return staticErr(q.Order.Pos, "cannot order by %s", t.kind)
		}
	}
	// Grouped: GROUP BY, or an aggregate in the projection.
	project := &clause{name: "PROJECT INTO", aggs: true, q: q}
	if q.Group != nil {
		if _, err := c.expr(q.Group.Key, sc, &clause{name: "GROUP BY"}); err != nil {
			return err
		}
	}
	q.grouped = q.Group != nil || containsAggregate(q.Project)
	project.grouped = q.grouped
	if q.Group != nil && q.Group.Having != nil {
		having := &clause{name: "HAVING", aggs: true, grouped: true, q: q}
		t, err := c.expr(q.Group.Having, sc, having)
		if err != nil {
			return err
		}
		if having.alias != "" {
			return staticErr(having.aliasPos, "%s must be inside an aggregate in a grouped query", having.alias)
		}
		if t.known() && t.kind != KindBool {
			return staticErr(q.Group.HavingPos, "HAVING condition must be BOOLEAN, got %s", t.kind)
		}
	}
	for _, limit := range []struct {
		name string
		x    Expr
		into *int64
	}{{"SKIP", q.Skip, &q.skip}, {"TOP", q.Top, &q.top}} {
		if limit.x == nil {
			continue
		}
		if _, err := c.expr(limit.x, &scope{}, &clause{name: limit.name, noAlias: true}); err != nil {
			return err
		}
		v, err := c.limits().eval(limit.x, &env{})
		if err != nil {
			return staticErr(limit.x.position(), "%s failed: %s", limit.name, err.(*Error).Msg)
		}
		if v.kind != KindInt || v.i < 0 {
			got := v.kind.String()
			if v.kind == KindInt {
				got = "a negative INT"
			}
			return staticErr(limit.x.position(), "%s must be a non-negative INT, got %s", limit.name, got)
		}
		*limit.into = v.i
	}
	if _, err := c.expr(q.Project, sc, project); err != nil {
		return err
	}
	if project.alias != "" {
		return staticErr(project.aliasPos, "%s must be inside an aggregate in a grouped query", project.alias)
	}
	if q.Group != nil && !project.sawAgg {
		return staticErr(q.Group.Pos, "GROUP BY needs an aggregate in PROJECT INTO")
	}
	return nil
}

// containsAggregate reports whether e has an aggregate call outside subqueries.
func containsAggregate(e Expr) bool {
	found := false
	walk(e, func(x Expr) {
		if call, ok := x.(*Call); ok && isAggregate(call.Name) {
			found = true
		}
	})
	return found
}

func walk(e Expr, fn func(Expr)) {
	fn(e)
	switch x := e.(type) {
	case *Field:
		walk(x.X, fn)
	case *Call:
		for _, a := range x.Args {
			walk(a, fn)
		}
	case *Unary:
		walk(x.X, fn)
	case *Not:
		walk(x.X, fn)
	case *Binary:
		walk(x.X, fn)
		for _, step := range x.Steps {
			walk(step.Y, fn)
		}
	case *Cast:
		walk(x.X, fn)
	case *ArrayLit:
		for _, a := range x.Elems {
			walk(a, fn)
		}
	case *RecordLit:
		for _, a := range x.Values {
			walk(a, fn)
		}
	}
}

func (c *checker) expr(e Expr, sc *scope, cl *clause) (stype, error) {
	switch x := e.(type) {
	case *Literal:
		return stype{kind: x.Value.kind}, nil
	case *AliasRef:
		slot, ok := sc.lookup(x.Name)
		if !ok || cl.noAlias {
			return tAny, staticErr(x.Pos, "unknown alias '%s'", x.Name)
		}
		x.slot = slot
		if cl.grouped && !cl.inAgg && cl.alias == "" {
			cl.alias, cl.aliasPos = x.Name, x.Pos
		}
		switch src := sc.sources[slot]; src {
		case SourceQuery:
			return tAny, nil
		default:
			return stype{kind: KindRecord, source: src}, nil
		}
	case *Field:
		t, err := c.expr(x.X, sc, cl)
		if err != nil {
			return tAny, err
		}
		if cl.grouped && !cl.inAgg && cl.alias != "" && cl.aliasPos == x.X.position() {
			cl.alias += "." + x.Path[0].Name // "e.id" for e.id
		}
		for _, name := range x.Path {
			if t, err = fieldType(t, name); err != nil {
				return tAny, err
			}
		}
		return t, nil
	case *ArrayLit:
		for _, el := range x.Elems {
			if _, err := c.expr(el, sc, cl); err != nil {
				return tAny, err
			}
		}
		return tArray, nil
	case *RecordLit:
		for _, v := range x.Values {
			if _, err := c.expr(v, sc, cl); err != nil {
				return tAny, err
			}
		}
		return tRecord, nil
	case *Unary:
		t, err := c.expr(x.X, sc, cl)
		if err != nil {
			return tAny, err
		}
		if t.known() && !t.kind.isNumber() {
			return tAny, staticErr(x.Pos, "unary %s needs a number, got %s", x.Op, t.kind)
		}
		return t, nil
	case *Not:
		t, err := c.expr(x.X, sc, cl)
		if err != nil {
			return tAny, err
		}
		if t.known() && t.kind != KindBool {
			return tAny, staticErr(x.Pos, "NOT needs a BOOLEAN, got %s", t.kind)
		}
		return tBool, nil
	case *Cast:
		t, err := c.expr(x.X, sc, cl)
		if err != nil {
			return tAny, err
		}
		for _, conv := range x.Steps {
			if t.known() && !canConvert(t.kind, conv.Type) {
				return tAny, staticErr(conv.Pos, "cannot convert %s to %s", t.kind, conv.Type)
			}
			t = stype{kind: conv.Type}
		}
		return t, nil
	case *Binary:
		return c.binary(x, sc, cl)
	case *Call:
		return c.call(x, sc, cl)
	}
	return tAny, staticErr(e.position(), "unexpected expression")
}

// fieldType is the type of field name of a value of type t.
func fieldType(t stype, name FieldName) (stype, error) {
	switch t.source {
	case SourceEvents:
		ft, ok := eventFields[name.Name]
		if !ok {
			return tAny, staticErr(name.Pos, "unknown event field '%s'", name.Name)
		}
		return ft, nil
	case SourceSubjects:
		if name.Name != "subject" {
			return tAny, staticErr(name.Pos, "unknown subject field '%s'", name.Name)
		}
		return tString, nil
	case SourceEventTypes:
		ft, ok := eventTypeFields[strings.ToLower(name.Name)]
		if !ok {
			return tAny, staticErr(name.Pos, "unknown event type field '%s'", name.Name)
		}
		return ft, nil
	}
	return tAny, nil
}

// canConvert reports whether values of kind from can ever convert to to
// (docs/eventql.md §6: the error cells that do not depend on the value).
func canConvert(from, to Kind) bool {
	switch {
	case from == KindArray || from == KindRecord:
		return false
	case from == KindString || from == to || to == KindString:
		return true
	}
	switch from {
	case KindInt, KindFloat, kindNumber:
		return to == KindInt || to == KindFloat
	case KindDateTime:
		return to == KindDate || to == KindTime
	case KindDate:
		return to == KindDateTime
	}
	return false
}

// binary checks a chain step by step, from the left.
func (c *checker) binary(x *Binary, sc *scope, cl *clause) (stype, error) {
	l, err := c.expr(x.X, sc, cl)
	if err != nil {
		return tAny, err
	}
	for _, step := range x.Steps {
		r, err := c.expr(step.Y, sc, cl)
		if err != nil {
			return tAny, err
		}
		if l, err = operationType(step, l, r); err != nil {
			return tAny, err
		}
	}
	return l, nil
}

// operationType is the type of l op r.
func operationType(x Operation, l, r stype) (stype, error) {
	switch x.Op {
	case "AND", "OR", "XOR":
		for _, t := range []stype{l, r} {
			if t.known() && t.kind != KindBool {
				return tAny, staticErr(x.Pos, "%s needs BOOLEAN operands, got %s", x.Op, t.kind)
			}
		}
		return tBool, nil
	case "==", "!=":
		if l.known() && r.known() && !sameKind(l.kind, r.kind) {
			return tAny, staticErr(x.Pos, "cannot compare %s with %s", l.kind, r.kind)
		}
		return tBool, nil
	case "<", "<=", ">", ">=":
		for _, t := range []stype{l, r} {
			if t.known() && !orderable(t.kind) {
				return tAny, staticErr(x.Pos, "cannot order %s values", t.kind)
			}
		}
		if l.known() && r.known() && !sameKind(l.kind, r.kind) {
			return tAny, staticErr(x.Pos, "cannot compare %s with %s", l.kind, r.kind)
		}
		return tBool, nil
	case "CONTAINS":
		if l.known() && l.kind != KindArray {
			return tAny, staticErr(x.Pos, "CONTAINS needs an ARRAY, got %s", l.kind)
		}
		return tBool, nil
	}
	// Arithmetic.
	for _, t := range []stype{l, r} {
		if t.known() && !t.kind.isNumber() {
			return tAny, staticErr(x.Pos, "arithmetic needs numbers, got %s", t.kind)
		}
	}
	switch {
	case l.kind == KindNull || r.kind == KindNull:
		return tNull, nil
	case x.Op == "/":
		return tFloat, nil
	case l.kind == KindInt && r.kind == KindInt:
		return tInt, nil
	case l.kind == KindFloat || r.kind == KindFloat:
		return tFloat, nil
	}
	return tNumber, nil
}

func (c *checker) call(x *Call, sc *scope, cl *clause) (stype, error) {
	fn, ok := functions[x.Name]
	if !ok {
		return tAny, staticErr(x.Pos, "unknown function '%s'", x.Name)
	}
	x.fn = fn
	isAgg := fn.accumulator != nil
	if isAgg {
		switch {
		case !cl.aggs:
			return tAny, staticErr(x.Pos, "aggregate %s is not allowed in %s", x.Name, cl.name)
		case cl.inAgg:
			return tAny, staticErr(x.Pos, "aggregate %s must not be nested in another aggregate", x.Name)
		}
		cl.sawAgg = true
		x.agg = len(cl.q.aggs)
		cl.q.aggs = append(cl.q.aggs, x)
	}
	min, max := len(fn.params)-fn.optional, len(fn.params)
	if len(x.Args) < min || len(x.Args) > max {
		want := "arguments"
		if max == 1 {
			want = "argument"
		}
		if min == max {
			return tAny, staticErr(x.Pos, "%s expects %d %s, got %d", x.Name, max, want, len(x.Args))
		}
		return tAny, staticErr(x.Pos, "%s expects %d to %d arguments, got %d", x.Name, min, max, len(x.Args))
	}
	inner := *cl
	inner.inAgg = cl.inAgg || isAgg
	args := make([]stype, len(x.Args))
	for i, a := range x.Args {
		t, err := c.expr(a, sc, &inner)
		if err != nil {
			return tAny, err
		}
		if !fn.params[i].accepts(t) {
			return tAny, staticErr(x.Pos, "%s expects %s as argument %d, got %s", x.Name, fn.params[i], i+1, t.kind)
		}
		args[i] = t
	}
	cl.sawAgg = cl.sawAgg || inner.sawAgg
	if cl.alias == "" && inner.alias != "" {
		cl.alias, cl.aliasPos = inner.alias, inner.aliasPos
	}
	return fn.result(args), nil
}
