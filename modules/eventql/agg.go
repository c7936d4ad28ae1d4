package eventql

import (
	"math"
	"slices"
)

// accumulator folds the argument values of one aggregate call over the
// rows of one group.
type accumulator interface {
	// add takes the argument's value of one row (ignored by COUNT()) and
	// returns the bytes of memory it now keeps beyond what it kept before.
	add(v Value, pos Pos) (int, error)
	result() aggResult
}

func needsNumber(name string, v Value, pos Pos) error {
	if !v.kind.isNumber() {
		return runtimeErr(pos, "%s needs numbers, got %s", name, v.kind)
	}
	return nil
}

type countAcc struct {
	all bool
	n   int64
}

func (a *countAcc) add(v Value, pos Pos) (int, error) {
	switch {
	case a.all:
		a.n++
	case v.isNull():
	case v.kind != KindBool:
		return 0, runtimeErr(pos, "COUNT needs a BOOLEAN, got %s", v.kind)
	case v.bool():
		a.n++
	}
	return 0, nil
}

func (a *countAcc) result() aggResult { return aggResult{v: Int(a.n)} }

type sumAcc struct {
	i     int64
	f     float64
	float bool
}

func (a *sumAcc) add(v Value, pos Pos) (int, error) {
	if v.isNull() {
		return 0, nil
	}
	if err := needsNumber("SUM", v, pos); err != nil {
		return 0, err
	}
	if v.kind == KindFloat && !a.float {
		a.float, a.f = true, float64(a.i)
	}
	if a.float {
		a.f += v.num()
		if math.IsInf(a.f, 0) {
			return 0, runtimeErr(pos, "not a finite number")
		}
		return 0, nil
	}
	s, err := arithmetic("+", Int(a.i), v, pos)
	if err != nil {
		return 0, err
	}
	a.i = s.i
	return 0, nil
}

func (a *sumAcc) result() aggResult {
	if a.float {
		return aggResult{v: Float(a.f)}
	}
	return aggResult{v: Int(a.i)}
}

type avgAcc struct {
	sum float64
	n   int64
}

func (a *avgAcc) add(v Value, pos Pos) (int, error) {
	if v.isNull() {
		return 0, nil
	}
	if err := needsNumber("AVG", v, pos); err != nil {
		return 0, err
	}
	a.sum += v.num()
	a.n++
	return 0, nil
}

func (a *avgAcc) result() aggResult {
	if a.n == 0 {
		return aggResult{v: Null}
	}
	return aggResult{v: Float(a.sum / float64(a.n))}
}

type extremeAcc struct {
	want int // -1 for MIN, 1 for MAX
	name string
	best Value
	kept int
}

func (a *extremeAcc) add(v Value, pos Pos) (int, error) {
	if v.isNull() {
		return 0, nil
	}
	if !orderable(v.kind) {
		return 0, runtimeErr(pos, "%s needs orderable values, got %s", a.name, v.kind)
	}
	if a.best.kind != KindNull && !sameKind(a.best.kind, v.kind) {
		return 0, runtimeErr(pos, "%s over values of different kinds: %s and %s", a.name, a.best.kind, v.kind)
	}
	if a.best.kind == KindNull || compare(v, a.best) == a.want {
		a.best = retain(v)
		size := keptSize(v)
		grown := size - a.kept
		a.kept = size
		return grown, nil
	}
	return 0, nil
}

func (a *extremeAcc) result() aggResult { return aggResult{v: a.best} }

type medianAcc struct {
	values []float64
}

func (a *medianAcc) add(v Value, pos Pos) (int, error) {
	if v.isNull() {
		return 0, nil
	}
	if err := needsNumber("MEDIAN", v, pos); err != nil {
		return 0, err
	}
	a.values = append(a.values, v.num())
	return 16, nil // a float64 in a slice that grows by doubling: up to 16 bytes a value
}

func (a *medianAcc) result() aggResult {
	n := len(a.values)
	if n == 0 {
		return aggResult{v: Null}
	}
	sorted := slices.Clone(a.values)
	slices.Sort(sorted)
	if n%2 == 1 {
		return aggResult{v: Float(sorted[n/2])}
	}
	return aggResult{v: Float((sorted[n/2-1] + sorted[n/2]) / 2)}
}

// varianceAcc computes the sample variance with Welford's method.
type varianceAcc struct {
	stddev bool
	n      int64
	mean   float64
	m2     float64
}

func (a *varianceAcc) add(v Value, pos Pos) (int, error) {
	if v.isNull() {
		return 0, nil
	}
	name := "VARIANCE"
	if a.stddev {
		name = "STDDEV"
	}
	if err := needsNumber(name, v, pos); err != nil {
		return 0, err
	}
	x := v.num()
	a.n++
	delta := x - a.mean
	a.mean += delta / float64(a.n)
	a.m2 += delta * (x - a.mean)
	return 0, nil
}

func (a *varianceAcc) result() aggResult {
	if a.n < 2 {
		return aggResult{v: Null}
	}
	variance := a.m2 / float64(a.n-1)
	if a.stddev {
		return aggResult{v: Float(math.Sqrt(variance))}
	}
	return aggResult{v: Float(variance)}
}

// uniqueAcc keeps the value every row shares; differing values make the
// result an error, raised only when the result is read.
type uniqueAcc struct {
	seen      bool
	value     Value
	key       []byte
	differ    bool
	pos       Pos
	scratchOK []byte
}

func (a *uniqueAcc) add(v Value, pos Pos) (int, error) {
	if a.differ {
		return 0, nil
	}
	if !a.seen {
		a.seen, a.value, a.pos = true, retain(v), pos
		a.key = v.appendKey(nil)
		return len(a.key) + keptSize(v), nil
	}
	a.scratchOK = v.appendKey(a.scratchOK[:0])
	if string(a.scratchOK) != string(a.key) {
		a.differ = true
	}
	return 0, nil
}

func (a *uniqueAcc) result() aggResult {
	if a.differ {
		return aggResult{v: Null, err: runtimeErr(a.pos, "UNIQUE over differing values")}
	}
	return aggResult{v: a.value}
}
