package eventql

import (
	"math"
)

// appendConjuncts appends the parts of a condition split at its
// top-level ANDs, parenthesised ones included.
func appendConjuncts(dst []Expr, e Expr) []Expr {
	b, ok := e.(*Binary)
	if !ok || b.Steps[0].Op != "AND" {
		return append(dst, e)
	}
	dst = appendConjuncts(dst, b.X)
	for _, step := range b.Steps {
		dst = appendConjuncts(dst, step.Y)
	}
	return dst
}

// indexForm is what an index conjunct selects for one events alias.
type indexForm struct {
	slot     int
	lookups  []Lookup // union; nil for an id range
	from, to uint64   // id range, inclusive
	isRange  bool
}

// fieldOf returns the alias slot and field name of x.name on an alias.
func fieldOf(e Expr) (slot int, name string, ok bool) {
	f, isField := e.(*Field)
	if !isField || len(f.Path) != 1 {
		return 0, "", false
	}
	ref, isRef := f.X.(*AliasRef)
	if !isRef {
		return 0, "", false
	}
	return ref.slot, f.Path[0].Name, true
}

// castOf returns x of x AS to, a single conversion.
func castOf(e Expr, to Kind) (Expr, bool) {
	c, ok := e.(*Cast)
	if !ok || len(c.Steps) != 1 || c.Steps[0].Type != to {
		return nil, false
	}
	return c.X, true
}

func stringLiteral(e Expr) (string, bool) {
	lit, ok := e.(*Literal)
	if !ok || lit.Value.kind != KindString {
		return "", false
	}
	return lit.Value.s, true
}

// indexFormOf recognises the index conjunct forms of docs/eventql.md §14.1 on aliases of
// events sources (isEvents tells which slots those are).
func indexFormOf(e Expr, isEvents func(int) bool) (indexForm, bool) {
	switch x := e.(type) {
	case *Binary:
		if x.Steps[0].Op == "OR" {
			return unionForm(x, isEvents)
		}
		if len(x.Steps) != 1 {
			return indexForm{}, false
		}
		left, op, right := x.X, x.Steps[0].Op, x.Steps[0].Y
		switch op {
		case "==":
			for _, sides := range [][2]Expr{{left, right}, {right, left}} {
				slot, name, ok := fieldOf(sides[0])
				value, isLit := stringLiteral(sides[1])
				if ok && isLit && isEvents(slot) && (name == "type" || name == "subject") {
					return indexForm{slot: slot, lookups: lookupOf(name, value)}, true
				}
			}
			return idRangeForm(left, op, right, isEvents)
		case "<", "<=", ">", ">=":
			return idRangeForm(left, op, right, isEvents)
		case "CONTAINS":
			arr, isArr := left.(*ArrayLit)
			slot, name, ok := fieldOf(right)
			if !isArr || !ok || !isEvents(slot) || (name != "type" && name != "subject") {
				return indexForm{}, false
			}
			form := indexForm{slot: slot, lookups: []Lookup{}}
			for _, el := range arr.Elems {
				value, isLit := stringLiteral(el)
				if !isLit {
					return indexForm{}, false
				}
				form.lookups = append(form.lookups, lookupOf(name, value)...)
			}
			return form, true
		}
	case *Call:
		if x.Name != "STARTSWITH" || len(x.Args) != 2 {
			return indexForm{}, false
		}
		slot, name, ok := fieldOf(x.Args[0])
		value, isLit := stringLiteral(x.Args[1])
		if ok && isLit && name == "subject" && isEvents(slot) {
			return indexForm{slot: slot, lookups: []Lookup{{SubjectPrefix: value}}}, true
		}
	}
	return indexForm{}, false
}

// unionForm recognises an OR chain of index conjunct forms on one alias
// that are not id ranges: the union of their lookups.
func unionForm(x *Binary, isEvents func(int) bool) (indexForm, bool) {
	union, ok := indexFormOf(x.X, isEvents)
	if !ok || union.isRange {
		return indexForm{}, false
	}
	union.lookups = append([]Lookup{}, union.lookups...)
	for _, step := range x.Steps {
		form, ok := indexFormOf(step.Y, isEvents)
		if !ok || form.slot != union.slot || form.isRange {
			return indexForm{}, false
		}
		union.lookups = append(union.lookups, form.lookups...)
	}
	return union, true
}

// isIDOrder reports whether an ORDER BY key is x.time or x.id AS INT of
// the first alias.
func isIDOrder(key Expr) bool {
	if id, ok := castOf(key, KindInt); ok {
		slot, name, ok := fieldOf(id)
		return ok && slot == 0 && name == "id"
	}
	slot, name, ok := fieldOf(key)
	return ok && slot == 0 && name == "time"
}

// lookupOf returns the lookup of events whose type or subject is value:
// none for "", which no event has.
func lookupOf(field, value string) []Lookup {
	switch {
	case value == "":
		return nil
	case field == "type":
		return []Lookup{{Type: value}}
	}
	return []Lookup{{Subject: value}}
}

// maxIDOffset bounds k in x.id AS INT + k: with |k| at most 2^62, and ids
// below 2^62 (a log that long cannot be written), the sum never
// overflows, so that a range read drops only rows on which the conjunct
// is false, never one on which it fails.
const maxIDOffset = 1 << 62

// intLiteral returns the INT of a literal, or of one negated or with a
// plus sign written before it.
func intLiteral(e Expr) (int64, bool) {
	if u, ok := e.(*Unary); ok {
		n, ok := intLiteral(u.X)
		if !ok || u.Op == "+" {
			return n, ok
		}
		return -n, true // a literal is at most MaxInt64
	}
	lit, ok := e.(*Literal)
	if !ok || lit.Value.kind != KindInt {
		return 0, false
	}
	return lit.Value.i, true
}

// idPlus recognises x.id AS INT, x.id AS INT + k and x.id AS INT - k on
// an alias of an events source: its slot and k (0 for the first).
func idPlus(e Expr, isEvents func(int) bool) (slot int, k int64, ok bool) {
	if b, isSum := e.(*Binary); isSum && len(b.Steps) == 1 && (b.Steps[0].Op == "+" || b.Steps[0].Op == "-") {
		slot, base, ok := idPlus(b.X, isEvents)
		n, isInt := intLiteral(b.Steps[0].Y)
		if !ok || base != 0 || !isInt || n > maxIDOffset || n < -maxIDOffset {
			return 0, 0, false
		}
		if b.Steps[0].Op == "-" {
			n = -n
		}
		return slot, n, true
	}
	id, isCast := castOf(e, KindInt)
	if !isCast {
		return 0, 0, false
	}
	slot, name, ok := fieldOf(id)
	if !ok || name != "id" || !isEvents(slot) {
		return 0, 0, false
	}
	return slot, 0, true
}

// idRangeForm recognises x.id AS INT <op> <int literal>, either way round,
// and x.id AS INT ± k in place of x.id AS INT: x.id AS INT + k > n is
// x.id AS INT > n - k.
func idRangeForm(left Expr, op string, right Expr, isEvents func(int) bool) (indexForm, bool) {
	flip := map[string]string{"==": "==", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
	for i, sides := range [][2]Expr{{left, right}, {right, left}} {
		slot, k, isID := idPlus(sides[0], isEvents)
		lit, isInt := intLiteral(sides[1])
		if !isID || !isInt {
			continue
		}
		n := lit - k
		if (k > 0 && n > lit) || (k < 0 && n < lit) {
			return indexForm{}, false // beyond INT: left to the evaluation
		}
		if i == 1 {
			op = flip[op]
		}
		form := indexForm{slot: slot, isRange: true, from: 0, to: math.MaxUint64}
		switch op {
		case "==":
			if n < 0 {
				form.from, form.to = 1, 0 // nothing
			} else {
				form.from, form.to = uint64(n), uint64(n)
			}
		case ">":
			if n >= 0 {
				form.from = uint64(n) + 1
			}
		case ">=":
			if n > 0 {
				form.from = uint64(n)
			}
		case "<":
			if n <= 0 {
				form.from, form.to = 1, 0
			} else {
				form.to = uint64(n) - 1
			}
		case "<=":
			if n < 0 {
				form.from, form.to = 1, 0
			} else {
				form.to = uint64(n)
			}
		}
		return form, true
	}
	return indexForm{}, false
}

// plan is how one query level reads its events sources and evaluates its
// WHERE: the selection of each events alias, and the conjuncts left to
// evaluate, index conjuncts first (docs/eventql.md §11.3).
type plan struct {
	selections []Selection // by alias slot (events sources only)
	conditions []Expr
	// presorted tells that reading the first source in id order (or in
	// reverse) yields the tuples in ORDER BY order: the key is x.time or
	// x.id AS INT of that events source, which increase with the id, and
	// inner sources keep their order within an outer tuple, as the stable
	// sort would.
	presorted bool
}

// lookupRank orders lookups by expected selectivity: none, subject and
// type, subject, a union, type, prefix.
func lookupRank(ls []Lookup) int {
	switch {
	case len(ls) == 0:
		return -1
	case len(ls) == 1 && ls[0].Subject != "" && ls[0].Type != "":
		return 0
	case len(ls) == 1 && ls[0].Subject != "":
		return 1
	case len(ls) > 1:
		return 2
	case len(ls) == 1 && ls[0].Type != "":
		return 3
	}
	return 4
}

func makePlan(q *Query) plan {
	p := plan{selections: make([]Selection, len(q.Froms))}
	for i := range p.selections {
		p.selections[i] = Selection{From: 0, To: math.MaxUint64}
	}
	if q.Order != nil && q.Froms[0].Kind == SourceEvents && isIDOrder(q.Order.Key) {
		p.presorted = true
		p.selections[0].Descending = q.Order.Desc
	}
	if q.Where == nil {
		return p
	}
	isEvents := func(slot int) bool { return slot < len(q.Froms) && q.Froms[slot].Kind == SourceEvents }
	var index, other []Expr
	forms := map[Expr]indexForm{}
	for _, c := range appendConjuncts(nil, q.Where) {
		if form, ok := indexFormOf(c, isEvents); ok {
			index = append(index, c)
			forms[c] = form
		} else {
			other = append(other, c)
		}
	}
	served := map[Expr]bool{}
	for slot := range q.Froms {
		if !isEvents(slot) {
			continue
		}
		sel := &p.selections[slot]
		var best Expr
		var subjectEq, typeEq Expr
		for _, c := range index {
			form := forms[c]
			if form.slot != slot {
				continue
			}
			if form.isRange {
				sel.From, sel.To = max(sel.From, form.from), min(sel.To, form.to)
				served[c] = true
				continue
			}
			if len(form.lookups) == 1 && subjectEq == nil && form.lookups[0].Subject != "" {
				subjectEq = c
			}
			if len(form.lookups) == 1 && typeEq == nil && form.lookups[0].Type != "" {
				typeEq = c
			}
			if best == nil || lookupRank(form.lookups) < lookupRank(forms[best].lookups) {
				best = c
			}
		}
		switch {
		case subjectEq != nil && typeEq != nil:
			sel.Lookups = []Lookup{{Subject: forms[subjectEq].lookups[0].Subject, Type: forms[typeEq].lookups[0].Type}}
			served[subjectEq], served[typeEq] = true, true
		case best != nil && len(forms[best].lookups) == 0: // [] CONTAINS x.type, x.type == "": nothing
			sel.From, sel.To = 1, 0
			served[best] = true
		case best != nil:
			sel.Lookups = forms[best].lookups
			served[best] = true
		}
	}
	for _, c := range index {
		if !served[c] {
			p.conditions = append(p.conditions, c)
		}
	}
	p.conditions = append(p.conditions, other...)
	return p
}
