package eventql

import (
	"math"
	"math/rand/v2"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// function is a scalar function or an aggregate (docs/eventql.md §8, §9.2): the signature
// the checker checks a call against and what evaluates the call. The
// checker resolves every call to its function once (Call.fn).
type function struct {
	params   []param
	optional int // trailing parameters that may be left out
	result   func(args []stype) stype
	// Exactly one of apply, lazy and accumulator is set.

	// apply computes a scalar function from the values of its arguments,
	// each of its parameter's kinds and none null.
	apply func(ex *execution, args []Value, pos Pos) (Value, error)
	// lazy evaluates a scalar function that evaluates only some of its
	// arguments (IF).
	lazy func(ex *execution, x *Call, en *env) (Value, error)
	// accumulator starts a group's fold of an aggregate call with n
	// arguments.
	accumulator func(n int) accumulator
}

// param is a parameter of a function: the kinds it takes.
type param []Kind

var (
	pNumber    = param{KindInt, KindFloat}
	pInt       = param{KindInt}
	pString    = param{KindString}
	pBool      = param{KindBool}
	pDate      = param{KindDate, KindDateTime}
	pTime      = param{KindTime, KindDateTime}
	pOrderable = param{KindInt, KindFloat, KindString, KindDateTime, KindDate, KindTime}
	pAny       = param(nil)
)

// accepts reports whether a value of static type t may be passed.
func (p param) accepts(t stype) bool {
	if p == nil || !t.known() {
		return true
	}
	for _, k := range p {
		if k == t.kind || (t.kind == kindNumber && (k == KindInt || k == KindFloat)) {
			return true
		}
	}
	return false
}

func (p param) String() string {
	names := make([]string, len(p))
	for i, k := range p {
		names[i] = k.String()
	}
	return strings.Join(names, " or ")
}

// functions are the scalar functions and aggregates by upper-case name.
var functions = map[string]*function{
	"ABS":        {params: []param{pNumber}, result: sameAsFirst, apply: abs},
	"CEIL":       {params: []param{pNumber}, result: fixed(tInt), apply: rounding(math.Ceil)},
	"FLOOR":      {params: []param{pNumber}, result: fixed(tInt), apply: rounding(math.Floor)},
	"ROUND":      {params: []param{pNumber}, result: fixed(tInt), apply: rounding(math.Round)},
	"POW":        {params: []param{pNumber, pNumber}, result: fixed(tFloat), apply: pow},
	"SQRT":       {params: []param{pNumber}, result: fixed(tFloat), apply: sqrt},
	"EXP":        {params: []param{pNumber}, result: fixed(tFloat), apply: floatOf(math.Exp)},
	"COS":        {params: []param{pNumber}, result: fixed(tFloat), apply: floatOf(math.Cos)},
	"PI":         {result: fixed(tFloat), apply: pi},
	"RAND":       {result: fixed(tFloat), apply: random},
	"LEN":        {params: []param{pString}, result: fixed(tInt), apply: length},
	"UPPER":      {params: []param{pString}, result: fixed(tString), apply: stringOf(strings.ToUpper)},
	"LOWER":      {params: []param{pString}, result: fixed(tString), apply: stringOf(strings.ToLower)},
	"TRIM":       {params: []param{pString}, result: fixed(tString), apply: stringOf(trimSpace)},
	"LTRIM":      {params: []param{pString}, result: fixed(tString), apply: stringOf(trimLeftSpace)},
	"RTRIM":      {params: []param{pString}, result: fixed(tString), apply: stringOf(trimRightSpace)},
	"SUBSTRING":  {params: []param{pString, pInt, pInt}, optional: 1, result: fixed(tString), apply: substring},
	"INSTR":      {params: []param{pString, pString}, result: fixed(tInt), apply: instr},
	"REPLACE":    {params: []param{pString, pString, pString}, result: fixed(tString), apply: replace},
	"STARTSWITH": {params: []param{pString, pString}, result: fixed(tBool), apply: predicate(strings.HasPrefix)},
	"ENDSWITH":   {params: []param{pString, pString}, result: fixed(tBool), apply: predicate(strings.HasSuffix)},
	"NOW":        {result: fixed(tDT), apply: now},
	"YEAR":       {params: []param{pDate}, result: fixed(tInt), apply: datePart(time.Time.Year)},
	"MONTH":      {params: []param{pDate}, result: fixed(tInt), apply: datePart(func(t time.Time) int { return int(t.Month()) })},
	"DAY":        {params: []param{pDate}, result: fixed(tInt), apply: datePart(time.Time.Day)},
	"WEEKDAY":    {params: []param{pDate}, result: fixed(tInt), apply: datePart(func(t time.Time) int { return int(t.Weekday()) })},
	"HOUR":       {params: []param{pTime}, result: fixed(tInt), apply: timePart(time.Hour, 24)},
	"MINUTE":     {params: []param{pTime}, result: fixed(tInt), apply: timePart(time.Minute, 60)},
	"SECOND":     {params: []param{pTime}, result: fixed(tInt), apply: timePart(time.Second, 60)},
	"IF":         {params: []param{pBool, pAny, pAny}, result: ifResult, lazy: ifCall},

	"COUNT":    {params: []param{pBool}, optional: 1, result: fixed(tInt), accumulator: func(n int) accumulator { return &countAcc{all: n == 0} }},
	"SUM":      {params: []param{pNumber}, result: sumResult, accumulator: func(int) accumulator { return &sumAcc{} }},
	"AVG":      {params: []param{pNumber}, result: fixed(tFloat), accumulator: func(int) accumulator { return &avgAcc{} }},
	"MEDIAN":   {params: []param{pNumber}, result: fixed(tFloat), accumulator: func(int) accumulator { return &medianAcc{} }},
	"VARIANCE": {params: []param{pNumber}, result: fixed(tFloat), accumulator: func(int) accumulator { return &varianceAcc{} }},
	"STDDEV":   {params: []param{pNumber}, result: fixed(tFloat), accumulator: func(int) accumulator { return &varianceAcc{stddev: true} }},
	"MIN":      {params: []param{pOrderable}, result: sameAsFirst, accumulator: func(int) accumulator { return &extremeAcc{want: -1, name: "MIN"} }},
	"MAX":      {params: []param{pOrderable}, result: sameAsFirst, accumulator: func(int) accumulator { return &extremeAcc{want: 1, name: "MAX"} }},
	"UNIQUE":   {params: []param{pAny}, result: sameAsFirst, accumulator: func(int) accumulator { return &uniqueAcc{} }},
}

// isAggregate reports whether name is an aggregate.
func isAggregate(name string) bool {
	fn := functions[name]
	return fn != nil && fn.accumulator != nil
}

func fixed(t stype) func([]stype) stype { return func([]stype) stype { return t } }

func sameAsFirst(args []stype) stype {
	if len(args) == 0 {
		return tAny
	}
	return args[0]
}

func ifResult(args []stype) stype {
	a, b := args[1], args[2]
	switch {
	case a == b:
		return a
	case a.kind == KindNull:
		return b
	case b.kind == KindNull:
		return a
	case a.kind.isNumber() && b.kind.isNumber():
		return tNumber
	}
	return tAny
}

func sumResult(args []stype) stype {
	if args[0].kind == KindInt || args[0].kind == KindFloat {
		return args[0]
	}
	return tNumber
}

// checkArg checks a runtime argument against a parameter.
func checkArg(fn string, i int, p param, v Value, pos Pos) error {
	if p == nil || v.isNull() {
		return nil
	}
	for _, k := range p {
		if k == v.kind {
			return nil
		}
	}
	return runtimeErr(pos, "%s expects %s as argument %d, got %s", fn, p, i+1, v.kind)
}

// call evaluates a scalar function call: its arguments in order, each
// checked, and the function on them; a null argument makes the result
// null.
func (ex *execution) call(x *Call, en *env) (Value, error) {
	fn := x.fn
	if fn.lazy != nil {
		return fn.lazy(ex, x, en)
	}
	args := make([]Value, len(x.Args))
	for i, a := range x.Args {
		v, err := ex.eval(a, en)
		if err != nil {
			return Null, err
		}
		if err := checkArg(x.Name, i, fn.params[i], v, x.Pos); err != nil {
			return Null, err
		}
		args[i] = v
	}
	for _, a := range args {
		if a.isNull() {
			return Null, nil
		}
	}
	return fn.apply(ex, args, x.Pos)
}

func ifCall(ex *execution, x *Call, en *env) (Value, error) {
	c, err := ex.eval(x.Args[0], en)
	if err != nil {
		return Null, err
	}
	if err := checkArg(x.Name, 0, x.fn.params[0], c, x.Pos); err != nil {
		return Null, err
	}
	if c.kind == KindBool && c.bool() {
		return ex.eval(x.Args[1], en)
	}
	return ex.eval(x.Args[2], en)
}

func toInt(f float64, pos Pos) (Value, error) {
	if f >= -9223372036854775808.0 && f < 9223372036854775808.0 {
		return Int(int64(f)), nil
	}
	return Null, runtimeErr(pos, "number %s is out of the INT range", jsonscan.AppendFloat(nil, f))
}

func abs(_ *execution, a []Value, pos Pos) (Value, error) {
	if a[0].kind == KindFloat {
		return Float(math.Abs(a[0].f)), nil
	}
	if a[0].i == math.MinInt64 {
		return Null, runtimeErr(pos, "integer overflow")
	}
	if a[0].i < 0 {
		return Int(-a[0].i), nil
	}
	return a[0], nil
}

// rounding is CEIL, FLOOR or ROUND by round.
func rounding(round func(float64) float64) func(*execution, []Value, Pos) (Value, error) {
	return func(_ *execution, a []Value, pos Pos) (Value, error) {
		if a[0].kind == KindInt {
			return a[0], nil
		}
		return toInt(round(a[0].f), pos)
	}
}

func pow(_ *execution, a []Value, pos Pos) (Value, error) {
	return finite(math.Pow(a[0].num(), a[1].num()), pos)
}

func sqrt(_ *execution, a []Value, pos Pos) (Value, error) {
	if a[0].num() < 0 {
		return Null, runtimeErr(pos, "square root of a negative number")
	}
	return finite(math.Sqrt(a[0].num()), pos)
}

// floatOf is a function of one number with a finite FLOAT64 result.
func floatOf(f func(float64) float64) func(*execution, []Value, Pos) (Value, error) {
	return func(_ *execution, a []Value, pos Pos) (Value, error) { return finite(f(a[0].num()), pos) }
}

func pi(*execution, []Value, Pos) (Value, error) { return Float(math.Pi), nil }

func random(ex *execution, _ []Value, _ Pos) (Value, error) {
	if ex.rand == nil { // made by the first RAND() of a run
		ex.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return Float(ex.rand.Float64()), nil
}

func length(_ *execution, a []Value, _ Pos) (Value, error) {
	return Int(int64(utf8.RuneCountInString(a[0].s))), nil
}

// stringOf is a function of one string to a string.
func stringOf(f func(string) string) func(*execution, []Value, Pos) (Value, error) {
	return func(_ *execution, a []Value, _ Pos) (Value, error) { return String(f(a[0].s)), nil }
}

func trimSpace(s string) string      { return strings.TrimFunc(s, unicode.IsSpace) }
func trimLeftSpace(s string) string  { return strings.TrimLeftFunc(s, unicode.IsSpace) }
func trimRightSpace(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }

// predicate is a test of two strings.
func predicate(f func(s, t string) bool) func(*execution, []Value, Pos) (Value, error) {
	return func(_ *execution, a []Value, _ Pos) (Value, error) { return Bool(f(a[0].s, a[1].s)), nil }
}

func substring(_ *execution, a []Value, _ Pos) (Value, error) {
	runes := []rune(a[0].s)
	start := min(max(a[1].i, 0), int64(len(runes)))
	end := int64(len(runes))
	if len(a) == 3 {
		end = min(start+max(a[2].i, 0), end)
	}
	return String(string(runes[start:end])), nil
}

func instr(_ *execution, a []Value, _ Pos) (Value, error) {
	i := strings.Index(a[0].s, a[1].s)
	if i < 0 {
		return Int(-1), nil
	}
	return Int(int64(utf8.RuneCountInString(a[0].s[:i]))), nil
}

func replace(_ *execution, a []Value, _ Pos) (Value, error) {
	if a[1].s == "" {
		return a[0], nil
	}
	return String(strings.ReplaceAll(a[0].s, a[1].s, a[2].s)), nil
}

func now(ex *execution, _ []Value, _ Pos) (Value, error) {
	if ex.now.IsZero() { // an Affects check reads the clock only when asked
		ex.now = time.Now().UTC()
	}
	return dateTime(ex.now), nil
}

// datePart is a part of a DATE or DATETIME.
func datePart(part func(time.Time) int) func(*execution, []Value, Pos) (Value, error) {
	return func(_ *execution, a []Value, _ Pos) (Value, error) { return Int(int64(part(a[0].t))), nil }
}

// timePart is the count of unit in the time of day of a TIME or DATETIME,
// modulo of.
func timePart(unit time.Duration, of int64) func(*execution, []Value, Pos) (Value, error) {
	return func(_ *execution, a []Value, _ Pos) (Value, error) {
		ns := a[0].i
		if a[0].kind == KindDateTime {
			t := a[0].t
			ns = int64(t.Hour())*int64(time.Hour) + int64(t.Minute())*int64(time.Minute) + int64(t.Second())*int64(time.Second)
		}
		return Int(int64(time.Duration(ns)/unit) % of), nil
	}
}
