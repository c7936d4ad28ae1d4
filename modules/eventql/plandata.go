package eventql

import (
	"slices"

	"github.com/eventstore-service/eventstore/modules/dataindex"
)

// dataForm is a conjunct that a data index on path can serve for the
// alias in slot (docs/eventql.md §14.1): x.data.<a>.<b>… == <lit> (either
// way round), x.data.… CONTAINS <lit>, or [<lit>, …] CONTAINS x.data.…,
// with literals of strings, booleans and INTs within dataindex.MaxExactInt,
// or an OR of those on one path.
// keys are the keys of the values on which it may hold, failures those of
// the values on which it fails (dataindex.EqualFailures,
// dataindex.ContainsFailures; none for the last form, which never fails).
type dataForm struct {
	slot     int
	path     string
	keys     []dataindex.Key
	failures []dataindex.Key
}

// safe reports whether the conjunct never fails.
func (f dataForm) safe() bool { return len(f.failures) == 0 }

// dataFormOf recognises the data conjunct forms on aliases of events
// sources (isEvents tells which slots those are).
func dataFormOf(e Expr, isEvents func(int) bool) (dataForm, bool) {
	b, ok := e.(*Binary)
	if ok && b.Steps[0].Op == "OR" {
		return dataUnionOf(b, isEvents)
	}
	if !ok || len(b.Steps) != 1 {
		return dataForm{}, false
	}
	left, op, right := b.X, b.Steps[0].Op, b.Steps[0].Y
	switch op {
	case "==":
		for _, sides := range [][2]Expr{{left, right}, {right, left}} {
			slot, path, isData := dataFieldOf(sides[0], isEvents)
			key, isKey := keyOf(sides[1])
			if isData && isKey {
				return dataForm{slot: slot, path: path, keys: []dataindex.Key{key}, failures: dataindex.EqualFailures(key)}, true
			}
		}
	case "CONTAINS":
		if slot, path, isData := dataFieldOf(left, isEvents); isData {
			if key, isKey := keyOf(right); isKey {
				return dataForm{slot: slot, path: path, keys: []dataindex.Key{key}, failures: dataindex.ContainsFailures()}, true
			}
			return dataForm{}, false
		}
		arr, isArr := left.(*ArrayLit)
		slot, path, isData := dataFieldOf(right, isEvents)
		if !isArr || !isData {
			return dataForm{}, false
		}
		form := dataForm{slot: slot, path: path, keys: []dataindex.Key{}}
		for _, el := range arr.Elems {
			key, isKey := keyOf(el)
			if !isKey {
				return dataForm{}, false
			}
			if !slices.Contains(form.keys, key) {
				form.keys = append(form.keys, key)
			}
		}
		return form, true
	}
	return dataForm{}, false
}

// dataUnionOf recognises an OR chain of data forms on one alias and path:
// the union of their keys and of their failures (an OR fails where any of
// its terms may).
func dataUnionOf(b *Binary, isEvents func(int) bool) (dataForm, bool) {
	union, ok := dataFormOf(b.X, isEvents)
	if !ok {
		return dataForm{}, false
	}
	union.keys, union.failures = slices.Clone(union.keys), slices.Clone(union.failures)
	for _, step := range b.Steps {
		form, ok := dataFormOf(step.Y, isEvents)
		if !ok || form.slot != union.slot || form.path != union.path {
			return dataForm{}, false
		}
		for _, lists := range [][2]*[]dataindex.Key{{&union.keys, &form.keys}, {&union.failures, &form.failures}} {
			for _, k := range *lists[1] {
				if !slices.Contains(*lists[0], k) {
					*lists[0] = append(*lists[0], k)
				}
			}
		}
	}
	return union, true
}

// dataFieldOf returns the slot of x.data.<a>.<b>… on an events alias and
// the JSON pointer /<a>/<b>… of its fields.
func dataFieldOf(e Expr, isEvents func(int) bool) (int, string, bool) {
	f, ok := e.(*Field)
	if !ok || len(f.Path) < 2 || f.Path[0].Name != "data" {
		return 0, "", false
	}
	ref, ok := f.X.(*AliasRef)
	if !ok || !isEvents(ref.slot) {
		return 0, "", false
	}
	fields := make([]string, len(f.Path)-1)
	for i, name := range f.Path[1:] {
		fields[i] = name.Name
	}
	return ref.slot, dataindex.Path(fields), true
}

// keyOf returns the index key of a literal string, boolean, or INT within
// dataindex.MaxExactInt (beyond it a FLOAT64 of data may equal the INT
// without being the same number).
func keyOf(e Expr) (dataindex.Key, bool) {
	if s, ok := stringLiteral(e); ok {
		return dataindex.String(s), true
	}
	if n, ok := intLiteral(e); ok {
		if n < -dataindex.MaxExactInt || n > dataindex.MaxExactInt {
			return "", false
		}
		return dataindex.Int(n), true
	}
	if lit, ok := e.(*Literal); ok && lit.Value.kind == KindBool {
		return dataindex.Bool(lit.Value.bool()), true
	}
	return "", false
}
