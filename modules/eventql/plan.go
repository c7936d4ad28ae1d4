package eventql

import (
	"math"
	"slices"

	"github.com/eventstore-service/eventstore/modules/dataindex"
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
			op = flipped(op)
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

// flipped returns the comparison that holds with its sides swapped.
func flipped(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

// plan is how one query level reads its events sources and evaluates its
// WHERE: the selection of each events alias, and the conjuncts left to
// evaluate, index conjuncts first (docs/eventql.md §11.3). Compile makes it
// without data indexes; a run whose database offers ready ones makes it
// again with them (forRun).
type plan struct {
	selections []Selection // by alias slot (events sources only)
	conditions []Expr
	// presorted tells that reading the first source in id order (or in
	// reverse) yields the tuples in ORDER BY order: the key is x.time or
	// x.id AS INT of that events source, which increase with the id, and
	// inner sources keep their order within an outer tuple, as the stable
	// sort would.
	presorted bool

	base      []Selection // before the WHERE narrows them
	conjuncts []Expr      // of the WHERE, in written order
	// forms and data are, by place in conjuncts, the index conjunct form
	// and the data conjunct form of each conjunct, or nil.
	forms   []*indexForm
	data    []*dataForm
	hasData bool   // some conjunct has a data form
	events  []bool // by slot: an events source
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
	p := plan{base: make([]Selection, len(q.Froms)), events: make([]bool, len(q.Froms))}
	for i := range p.base {
		p.base[i] = Selection{From: 0, To: math.MaxUint64}
		p.events[i] = q.Froms[i].Kind == SourceEvents
	}
	if q.Order != nil && q.Froms[0].Kind == SourceEvents && isIDOrder(q.Order.Key) {
		p.presorted = true
		p.base[0].Descending = q.Order.Desc
	}
	if q.Where != nil {
		isEvents := func(slot int) bool { return slot < len(q.Froms) && q.Froms[slot].Kind == SourceEvents }
		p.conjuncts = appendConjuncts(nil, q.Where)
		p.forms, p.data = make([]*indexForm, len(p.conjuncts)), make([]*dataForm, len(p.conjuncts))
		for i, c := range p.conjuncts {
			if form, ok := indexFormOf(c, isEvents); ok {
				p.forms[i] = &form
			} else if form, ok := dataFormOf(c, isEvents); ok {
				p.data[i], p.hasData = &form, true
			}
		}
	}
	p.selections, p.conditions = p.build(nil, true)
	return p
}

// forRun returns the selections and conditions of a run on a database
// that offers the ready data indexes (DataIndexes); without any that
// serve a conjunct of the level, those of the plan.
func (p *plan) forRun(indexes []DataIndex) ([]Selection, []Expr) {
	if len(indexes) == 0 || !p.hasData {
		return p.selections, p.conditions
	}
	return p.build(indexes, true)
}

// build chooses how each events source is read, with the data indexes
// indexes (none: as Compile plans), and returns the selections and the
// conditions left to evaluate: the index conjuncts not served by a
// selection in written order, then the others in written order. Without
// access it reads every event and serves no conjunct, which a full scan
// does (the tests compare runs with it).
//
// A source reads the combined lookup of an exact subject and an exact
// type, or else a data index (below), or else its most selective lookup;
// every id range narrows it. A data conjunct (dataFormOf) is an index
// conjunct where a ready index on its path covers the source
// (docs/eventql.md §14.3); the first such conjunct in written order reads
// its index, unless an exact subject is looked up. Its conjunct is
// evaluated still (its lookup loads every event on which it is not false,
// the values it fails on included, dataindex.Equal), and no conjunct
// before it can fail, so an event it leaves out is one that a full scan
// drops at it.
func (p *plan) build(indexes []DataIndex, access bool) ([]Selection, []Expr) {
	selections := slices.Clone(p.base)
	flags := make([]bool, 2*len(p.conjuncts)) // one allocation for both
	served, isIndex := flags[:len(p.conjuncts):len(p.conjuncts)], flags[len(p.conjuncts):]
	for i, form := range p.forms {
		isIndex[i] = form != nil
	}
	for slot, events := range p.events {
		if !events {
			continue
		}
		sel := &selections[slot]
		data, index, failing, keyed := p.dataIndexOf(slot, indexes, isIndex)
		best, subjectEq, typeEq := -1, -1, -1 // places in conjuncts
		var keyRanges []int                   // narrowing the data keys alone
		keyFrom, keyTo := uint64(0), uint64(math.MaxUint64)
		for i, form := range p.forms {
			if form == nil || form.slot != slot {
				continue
			}
			if form.isRange && i > failing && i < keyed {
				keyFrom, keyTo = max(keyFrom, form.from), min(keyTo, form.to)
				keyRanges = append(keyRanges, i)
				continue
			}
			if i > failing {
				continue // an event it would leave out may fail a data conjunct before it
			}
			if form.isRange {
				sel.From, sel.To = max(sel.From, form.from), min(sel.To, form.to)
				served[i] = true
				continue
			}
			if len(form.lookups) == 1 && subjectEq < 0 && form.lookups[0].Subject != "" {
				subjectEq = i
			}
			if len(form.lookups) == 1 && typeEq < 0 && form.lookups[0].Type != "" {
				typeEq = i
			}
			if best < 0 || lookupRank(form.lookups) < lookupRank(p.forms[best].lookups) {
				best = i
			}
		}
		switch {
		case subjectEq >= 0 && typeEq >= 0:
			sel.Lookups = []Lookup{{Subject: p.forms[subjectEq].lookups[0].Subject, Type: p.forms[typeEq].lookups[0].Type}}
			served[subjectEq], served[typeEq] = true, true
		case best >= 0 && len(p.forms[best].lookups) == 0: // [] CONTAINS x.type, x.type == "": nothing
			sel.From, sel.To = 1, 0
			served[best] = true
		case data >= 0 && (best < 0 || lookupRank(p.forms[best].lookups) > 1):
			form := p.data[data]
			sel.DataIndex = index.ID
			sel.DataKeys = make([]dataindex.Lookup, 0, len(form.keys)+len(form.failures))
			for _, k := range form.keys {
				sel.DataKeys = append(sel.DataKeys, dataindex.Lookup{Key: k, From: keyFrom, To: keyTo})
			}
			for _, k := range form.failures {
				sel.DataKeys = append(sel.DataKeys, dataindex.Lookup{Key: k, From: 0, To: math.MaxUint64})
			}
			for _, c := range keyRanges {
				served[c] = true
			}
		case best >= 0:
			sel.Lookups = p.forms[best].lookups
			served[best] = true
		}
	}
	if !access {
		selections = slices.Clone(p.base)
		clear(served)
	}
	conditions := make([]Expr, 0, len(p.conjuncts))
	for _, index := range []bool{true, false} {
		for i, c := range p.conjuncts {
			if isIndex[i] == index && !served[i] {
				conditions = append(conditions, c)
			}
		}
	}
	return selections, conditions
}

// dataIndexOf returns the first data conjunct of the source in slot, in
// written order, that one of indexes serves, that index, the place in the
// conjuncts of the first such conjunct that can fail (len(conjuncts) when
// none can), and the place of the next one that can fail when the first
// is the one returned (else the first's place again): an id range between
// the two may narrow the keys of the values on which the returned one may
// hold, its failures being read over every id. It marks every data
// conjunct of the source that an index serves as an index conjunct in
// isIndex. An index of some event types serves a conjunct only where a
// type conjunct written before it allows no type outside them: the events
// of other types, which the index does not list, are dropped before the
// conjunct could fail on them.
func (p *plan) dataIndexOf(slot int, indexes []DataIndex, isIndex []bool) (int, DataIndex, int, int) {
	if !p.hasData || len(indexes) == 0 {
		return -1, DataIndex{}, len(p.conjuncts), len(p.conjuncts)
	}
	var types [][]string // of each type conjunct of the source before the conjunct at hand
	first := -1
	var chosen DataIndex
	failing, keyed := len(p.conjuncts), len(p.conjuncts)
	for i := range p.conjuncts {
		if form := p.forms[i]; form != nil && form.slot == slot && !form.isRange {
			if ts, ok := typesOf(form.lookups); ok {
				types = append(types, ts)
			}
		}
		form := p.data[i]
		if form == nil || form.slot != slot {
			continue
		}
		for _, x := range indexes {
			if x.Path != form.path || !x.covers(types) {
				continue
			}
			isIndex[i] = true
			if first < 0 {
				first, chosen = i, x
			}
			switch {
			case form.safe():
			case failing == len(p.conjuncts):
				failing = i
			case keyed == len(p.conjuncts):
				keyed = i
			}
			break
		}
	}
	if first >= 0 && p.data[first].safe() {
		keyed = failing // the first that can fail is another one
	}
	return first, chosen, failing, keyed
}

// typesOf returns the types of lookups of exact types alone.
func typesOf(lookups []Lookup) ([]string, bool) {
	types := make([]string, len(lookups))
	for i, l := range lookups {
		if l.Type == "" || l.Subject != "" || l.SubjectPrefix != "" {
			return nil, false
		}
		types[i] = l.Type
	}
	return types, true
}

// covers reports whether x indexes every event that one of the type
// conjuncts admits (each of types lists one conjunct's types).
func (x DataIndex) covers(types [][]string) bool {
	if x.EventTypes == nil {
		return true
	}
	for _, ts := range types {
		if !slices.ContainsFunc(ts, func(t string) bool { return !slices.Contains(x.EventTypes, t) }) {
			return true
		}
	}
	return false
}
