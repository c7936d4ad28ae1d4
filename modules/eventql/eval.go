package eventql

import (
	"math"
)

// env is what an expression is evaluated in: the values the aliases of
// its level are bound to, and in grouped levels the aggregate results of
// the current group.
type env struct {
	tuple []Value
	aggs  []aggResult
}

// aggResult is an aggregate's value for one group, or the error reading it
// raises (UNIQUE over differing values).
type aggResult struct {
	v   Value
	err error
}

func (ex *execution) eval(e Expr, en *env) (Value, error) {
	switch x := e.(type) {
	case *Literal:
		return x.Value, nil
	case *AliasRef:
		return en.tuple[x.slot], nil
	case *Field:
		v, err := ex.eval(x.X, en)
		if err != nil {
			return Null, err
		}
		for _, name := range x.Path {
			v = v.field(name.Name)
		}
		return v, nil
	case *ArrayLit:
		elems := make([]Value, len(x.Elems))
		for i, el := range x.Elems {
			v, err := ex.eval(el, en)
			if err != nil {
				return Null, err
			}
			elems[i] = v
		}
		return array(elems), nil
	case *RecordLit:
		vals := make([]Value, len(x.Values))
		for i, el := range x.Values {
			v, err := ex.eval(el, en)
			if err != nil {
				return Null, err
			}
			vals[i] = v
		}
		return Record(x.Keys, vals), nil
	case *Unary:
		v, err := ex.eval(x.X, en)
		switch {
		case err != nil || v.isNull():
			return v, err
		case !v.kind.isNumber():
			return Null, runtimeErr(x.Pos, "unary %s needs a number, got %s", x.Op, v.kind)
		case x.Op == "+":
			return v, nil
		case v.kind == KindFloat:
			return Float(-v.f), nil
		case v.i == math.MinInt64:
			return Null, runtimeErr(x.Pos, "integer overflow")
		}
		return Int(-v.i), nil
	case *Not:
		v, err := ex.eval(x.X, en)
		switch {
		case err != nil || v.isNull():
			return v, err
		case v.kind != KindBool:
			return Null, runtimeErr(x.Pos, "NOT needs a BOOLEAN, got %s", v.kind)
		}
		return Bool(!v.bool()), nil
	case *Cast:
		v, err := ex.eval(x.X, en)
		for _, conv := range x.Steps {
			if err != nil {
				break
			}
			v, err = convert(v, conv.Type, conv.Pos)
		}
		return v, err
	case *Binary:
		return ex.binary(x, en)
	case *Call:
		if x.agg >= 0 {
			r := en.aggs[x.agg]
			return r.v, r.err
		}
		return ex.call(x, en)
	}
	return Null, runtimeErr(e.position(), "unexpected expression")
}

// logical checks an operand of AND, OR, XOR.
func logical(v Value, x Operation) error {
	if v.kind != KindBool && v.kind != KindNull {
		return runtimeErr(x.Pos, "%s needs BOOLEAN operands, got %s", x.Op, v.kind)
	}
	return nil
}

// binary evaluates a chain step by step, from the left.
func (ex *execution) binary(x *Binary, en *env) (Value, error) {
	l, err := ex.eval(x.X, en)
	for _, step := range x.Steps {
		if err != nil {
			break
		}
		l, err = ex.operation(step, l, en)
	}
	return l, err
}

// operation is l op y, evaluating y unless l decides AND or OR alone.
func (ex *execution) operation(x Operation, l Value, en *env) (Value, error) {
	switch x.Op {
	case "AND", "OR":
		if err := logical(l, x); err != nil {
			return Null, err
		}
		decided := x.Op == "OR" // the operand value that decides alone
		if l.kind == KindBool && l.bool() == decided {
			return l, nil
		}
		r, err := ex.eval(x.Y, en)
		if err != nil {
			return Null, err
		}
		if err := logical(r, x); err != nil {
			return Null, err
		}
		switch {
		case r.kind == KindBool && r.bool() == decided:
			return r, nil
		case l.isNull() || r.isNull():
			return Null, nil
		}
		return Bool(!decided), nil
	}
	r, err := ex.eval(x.Y, en)
	if err != nil {
		return Null, err
	}
	switch x.Op {
	case "XOR":
		if err := logical(l, x); err != nil {
			return Null, err
		}
		if err := logical(r, x); err != nil {
			return Null, err
		}
		if l.isNull() || r.isNull() {
			return Null, nil
		}
		return Bool(l.bool() != r.bool()), nil
	case "==", "!=":
		if !l.isNull() && !r.isNull() && !sameKind(l.kind, r.kind) {
			return Null, runtimeErr(x.Pos, "cannot compare %s with %s", l.kind, r.kind)
		}
		return Bool(equal(l, r) == (x.Op == "==")), nil
	case "<", "<=", ">", ">=":
		if l.isNull() || r.isNull() {
			return Null, nil
		}
		if !orderable(l.kind) || !orderable(r.kind) || !sameKind(l.kind, r.kind) {
			return Null, runtimeErr(x.Pos, "cannot compare %s with %s", l.kind, r.kind)
		}
		return Bool(ordered(x.Op, compare(l, r))), nil
	case "CONTAINS":
		switch {
		case l.isNull():
			return Null, nil
		case l.kind != KindArray:
			return Null, runtimeErr(x.Pos, "CONTAINS needs an ARRAY, got %s", l.kind)
		}
		for _, el := range l.elems() {
			if equal(el, r) {
				return Bool(true), nil
			}
		}
		return Bool(false), nil
	}
	return arithmetic(x.Op, l, r, x.Pos)
}

// ordered reports whether a comparison c of compare satisfies op.
func ordered(op string, c int) bool {
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// arithmetic applies + - * / to two values.
func arithmetic(op string, l, r Value, pos Pos) (Value, error) {
	if l.isNull() || r.isNull() {
		for _, v := range []Value{l, r} {
			if !v.isNull() && !v.kind.isNumber() {
				return Null, runtimeErr(pos, "arithmetic needs numbers, got %s", v.kind)
			}
		}
		return Null, nil
	}
	for _, v := range []Value{l, r} {
		if !v.kind.isNumber() {
			return Null, runtimeErr(pos, "arithmetic needs numbers, got %s", v.kind)
		}
	}
	if op == "/" {
		if r.num() == 0 {
			return Null, runtimeErr(pos, "division by zero")
		}
		return finite(l.num()/r.num(), pos)
	}
	if l.kind == KindInt && r.kind == KindInt {
		a, b := l.i, r.i
		var s int64
		overflow := false
		switch op {
		case "+":
			s = a + b
			overflow = (b > 0 && s < a) || (b < 0 && s > a)
		case "-":
			s = a - b
			overflow = (b < 0 && s < a) || (b > 0 && s > a)
		case "*":
			s = a * b
			overflow = a != 0 && (s/a != b || (a == -1 && b == math.MinInt64))
		}
		if overflow {
			return Null, runtimeErr(pos, "integer overflow")
		}
		return Int(s), nil
	}
	a, b := l.num(), r.num()
	switch op {
	case "+":
		return finite(a+b, pos)
	case "-":
		return finite(a-b, pos)
	}
	return finite(a*b, pos)
}

// finite returns f, or the error of a NaN or infinite result.
func finite(f float64, pos Pos) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Null, runtimeErr(pos, "not a finite number")
	}
	return Float(f), nil
}
