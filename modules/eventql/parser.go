package eventql

import (
	"strings"
)

// Limits of a query (docs/eventql.md §15.3). Within them, compiling and running
// any query fits a goroutine stack far below Go's 1 GB maximum and a
// request's memory, so that no query can crash the process:
//
//   - Depth. Every recursion of the parser, the checker, the planner and
//     the executor follows a construct MaxNesting counts; operator chains,
//     field paths, AS chains and lists are lists in the syntax tree, walked
//     by loops. A level of nesting costs each stage a bounded number of
//     frames (the parser's descent through the precedence levels, at most
//     eight tree levels of chains, AS and fields between two counted ones),
//     a few kB in all. So the deepest expressions allowed, the most nested
//     loops of FROM clauses and the deepest values (nested through
//     subqueries that each wrap the one inside in brackets, a level per
//     bracket) all parse, check and run within the 64 MB of stack that the
//     limit tests hold every stage to.
//   - Size. MaxTokens bounds the length of chains and lists, and with it
//     the memory and time of compiling.
const (
	// MaxNesting is the deepest nesting of parentheses, brackets, braces,
	// calls, unary operators, NOT and subqueries, where every FROM clause
	// after a query's first counts as one level more (a nested loop).
	MaxNesting = 256
	// MaxTokens is the most tokens a query may have: 0.2 to 1 MB of text,
	// far more than a query written by hand or generated for a list of
	// subjects needs.
	MaxTokens = 100_000
)

// smallQuery is the number of tokens that Parse keeps on its stack: those
// of a decision's precondition and more (a longer query's go to the heap).
const smallQuery = 48

// Parse parses a query without checking it.
func Parse(query string) (*Query, error) {
	var buf [smallQuery]token // on the stack: a short query's tokens allocate nothing
	tokens, err := lex(buf[:0], query)
	if err != nil {
		return nil, err
	}
	if tokens[0].kind == tokEOF {
		return nil, &Error{Msg: "empty query", Static: true}
	}
	p := &parser{tokens: tokens}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, staticErr(t.pos, "unexpected %s after the projection", t.describe())
	}
	return q, nil
}

type parser struct {
	tokens []token
	i      int
	depth  int
}

func (p *parser) peek() *token { return &p.tokens[p.i] }
func (p *parser) next() *token {
	t := &p.tokens[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isSymbol(s string) bool {
	t := p.peek()
	return t.kind == tokSymbol && t.text == s
}

func (p *parser) expectSymbol(s string) (*token, error) {
	t := p.next()
	if t.kind != tokSymbol || t.text != s {
		return t, staticErr(t.pos, "expected '%s', found %s", s, t.describe())
	}
	return t, nil
}

func (p *parser) expectKeyword(kw, what string) (*token, error) {
	t := p.next()
	if !t.isKeyword(kw) {
		return t, staticErr(t.pos, "expected %s, found %s", what, t.describe())
	}
	return t, nil
}

// enter counts one level of nesting at t.
func (p *parser) enter(t *token) error {
	p.depth++
	if p.depth > MaxNesting {
		return staticErr(t.pos, "nesting deeper than %d levels", MaxNesting)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// clauses in their order; a clause keyword out of order is an error.
var clauseOrder = map[string]int{"WHERE": 1, "ORDER": 2, "GROUP": 3, "SKIP": 4, "TOP": 5, "PROJECT": 6, "HAVING": 3}

func (p *parser) query() (*Query, error) {
	q := &Query{skip: -1, top: -1}
	if _, err := p.expectKeyword("FROM", "FROM"); err != nil {
		return nil, err
	}
	for {
		f, err := p.from()
		if err != nil {
			return nil, err
		}
		q.Froms = append(q.Froms, f)
		if !p.peek().isKeyword("FROM") {
			break
		}
		// Each further FROM nests a loop in the loops before it (docs/eventql.md §10.5),
		// up to the end of the query.
		if err := p.enter(p.next()); err != nil {
			return nil, err
		}
	}
	defer func() { p.depth -= len(q.Froms) - 1 }()
	last := 0
	for {
		t := p.peek()
		kw := t.keyword()
		order, isClause := clauseOrder[kw]
		if !isClause {
			if kw == "FROM" {
				return nil, staticErr(t.pos, "unexpected FROM after other clauses")
			}
			return nil, staticErr(t.pos, "expected PROJECT INTO, found %s", t.describe())
		}
		if kw == "HAVING" {
			return nil, staticErr(t.pos, "HAVING without GROUP BY")
		}
		if order <= last {
			return nil, staticErr(t.pos, "unexpected '%s' after %s", t.text, clauseName(last))
		}
		last = order
		p.next()
		var err error
		switch kw {
		case "WHERE":
			q.WherePos = t.pos
			q.Where, err = p.expr()
		case "ORDER":
			if _, err = p.expectKeyword("BY", "BY"); err != nil {
				return nil, err
			}
			o := &OrderBy{Pos: t.pos}
			if o.Key, err = p.expr(); err == nil {
				switch {
				case p.peek().isKeyword("ASC"):
					p.next()
				case p.peek().isKeyword("DESC"):
					p.next()
					o.Desc = true
				}
			}
			q.Order = o
		case "GROUP":
			if _, err = p.expectKeyword("BY", "BY"); err != nil {
				return nil, err
			}
			g := &GroupBy{Pos: t.pos}
			if g.Key, err = p.expr(); err == nil && p.peek().isKeyword("HAVING") {
				g.HavingPos = p.next().pos
				g.Having, err = p.expr()
			}
			q.Group = g
		case "SKIP":
			q.Skip, err = p.expr()
		case "TOP":
			q.Top, err = p.expr()
		case "PROJECT":
			if _, err = p.expectKeyword("INTO", "INTO"); err != nil {
				return nil, err
			}
			if p.peek().isKeyword("DISTINCT") {
				p.next()
				q.Distinct = true
			}
			q.Project, err = p.expr()
			return q, err
		}
		if err != nil {
			return nil, err
		}
	}
}

func clauseName(order int) string {
	return map[int]string{1: "WHERE", 2: "ORDER BY", 3: "GROUP BY", 4: "SKIP", 5: "TOP"}[order]
}

func (p *parser) from() (*From, error) {
	t := p.next()
	if t.kind != tokWord || t.keyword() != "" {
		return nil, staticErr(t.pos, "expected an alias, found %s", t.describe())
	}
	f := &From{Alias: t.text, Pos: t.pos}
	if _, err := p.expectKeyword("IN", "IN"); err != nil {
		return nil, err
	}
	s := p.next()
	switch {
	case s.isKeyword("EVENTS"):
		f.Kind = SourceEvents
	case s.isKeyword("SUBJECTS"):
		f.Kind = SourceSubjects
	case s.isKeyword("EVENTTYPES"):
		f.Kind = SourceEventTypes
	case s.kind == tokSymbol && s.text == "(":
		if err := p.enter(s); err != nil {
			return nil, err
		}
		sub, err := p.query()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectSymbol(")"); err != nil {
			return nil, err
		}
		p.leave()
		f.Kind, f.Sub = SourceQuery, sub
	default:
		return nil, staticErr(s.pos, "expected EVENTS, SUBJECTS, EVENTTYPES or a subquery, found %s", s.describe())
	}
	return f, nil
}

func (p *parser) expr() (Expr, error) { return p.chain(levelOr) }

// chainLevels are the operators of the left-associative levels of docs/eventql.md §3,
// loosest first. The operands of a level are chains of the next level,
// but those of AND are NOT expressions and those of * and / unary ones.
var chainLevels = [][]string{{"OR"}, {"XOR"}, {"AND"}, {"+", "-"}, {"*", "/"}}

// Levels of chainLevels.
const (
	levelOr             = 0
	levelAnd            = 2
	levelAdditive       = 3
	levelMultiplicative = 4
)

// chain parses operand { op operand } of a level into one Binary, or
// returns the lone operand. A chain is parsed by a loop, whatever its
// length.
func (p *parser) chain(level int) (Expr, error) {
	x, err := p.chainOperand(level)
	if err != nil {
		return nil, err
	}
	var b *Binary
	for {
		t := p.peek()
		op, ok := chainOp(level, t)
		if !ok {
			break
		}
		p.next()
		y, err := p.chainOperand(level)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = &Binary{X: x}
		}
		b.Steps = append(b.Steps, Operation{Pos: t.pos, Op: op, Y: y})
	}
	if b == nil {
		return x, nil
	}
	return b, nil
}

func (p *parser) chainOperand(level int) (Expr, error) {
	switch level {
	case levelAnd:
		return p.not()
	case levelMultiplicative:
		return p.unary()
	}
	return p.chain(level + 1)
}

// chainOp tells whether t is an operator of level, and which.
func chainOp(level int, t *token) (string, bool) {
	var op string
	switch t.kind {
	case tokSymbol:
		op = t.text
	case tokWord:
		op = t.keyword()
	default:
		return "", false
	}
	for _, o := range chainLevels[level] {
		if o == op {
			return o, true
		}
	}
	return "", false
}

func (p *parser) not() (Expr, error) {
	if t := p.peek(); t.isKeyword("NOT") {
		p.next()
		if err := p.enter(t); err != nil {
			return nil, err
		}
		x, err := p.not()
		p.leave()
		if err != nil {
			return nil, err
		}
		return &Not{Pos: t.pos, X: x}, nil
	}
	return p.comparison()
}

// comparisonOp tells whether a token is a comparison operator, and which.
func comparisonOp(t *token) (string, bool) {
	if t.kind == tokSymbol {
		switch t.text {
		case "==", "!=", "<", "<=", ">", ">=":
			return t.text, true
		}
	}
	return "CONTAINS", t.isKeyword("CONTAINS")
}

func (p *parser) comparison() (Expr, error) {
	left, err := p.chain(levelAdditive)
	if err != nil {
		return nil, err
	}
	op, ok := comparisonOp(p.peek())
	if !ok {
		return left, nil
	}
	t := p.next()
	right, err := p.chain(levelAdditive)
	if err != nil {
		return nil, err
	}
	again := p.peek()
	if _, chained := comparisonOp(again); chained {
		return nil, staticErr(again.pos, "comparisons do not chain: unexpected %s", again.describe())
	}
	return &Binary{X: left, Steps: []Operation{{Pos: t.pos, Op: op, Y: right}}}, nil
}

func (p *parser) unary() (Expr, error) {
	if p.isSymbol("-") || p.isSymbol("+") {
		t := p.next()
		if err := p.enter(t); err != nil {
			return nil, err
		}
		x, err := p.unary()
		p.leave()
		if err != nil {
			return nil, err
		}
		return &Unary{Pos: t.pos, Op: t.text, X: x}, nil
	}
	return p.cast()
}

var typeNames = map[string]Kind{
	"STRING": KindString, "INT": KindInt, "FLOAT64": KindFloat, "BOOLEAN": KindBool,
	"DATETIME": KindDateTime, "DATE": KindDate, "TIME": KindTime,
}

func (p *parser) cast() (Expr, error) {
	x, err := p.postfix()
	if err != nil || !p.peek().isKeyword("AS") {
		return x, err
	}
	c := &Cast{X: x}
	for p.peek().isKeyword("AS") {
		as := p.next()
		t := p.next()
		kind, ok := lookupFold(typeNames, t.text)
		if t.kind != tokWord || !ok {
			if t.kind == tokWord {
				return nil, staticErr(t.pos, "unknown type '%s'", t.text)
			}
			return nil, staticErr(t.pos, "expected a type name after AS, found %s", t.describe())
		}
		c.Steps = append(c.Steps, Conversion{Pos: as.pos, Type: kind})
	}
	return c, nil
}

func (p *parser) postfix() (Expr, error) {
	x, err := p.primary()
	if err != nil || !p.isSymbol(".") {
		return x, err
	}
	f := &Field{X: x}
	for p.isSymbol(".") {
		p.next()
		t := p.next()
		if t.kind != tokWord {
			return nil, staticErr(t.pos, "expected a field name after '.', found %s", t.describe())
		}
		f.Path = append(f.Path, FieldName{Pos: t.pos, Name: t.text})
	}
	return f, nil
}

func (p *parser) primary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tokInt:
		p.next()
		return &Literal{Pos: t.pos, Value: Int(t.i)}, nil
	case tokDecimal:
		p.next()
		return &Literal{Pos: t.pos, Value: Float(t.f)}, nil
	case tokString:
		p.next()
		return &Literal{Pos: t.pos, Value: String(t.text)}, nil
	case tokEOF:
		return nil, staticErr(t.pos, "expected an expression, found end of query")
	case tokSymbol:
		switch t.text {
		case "(":
			p.next()
			if err := p.enter(t); err != nil {
				return nil, err
			}
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectSymbol(")"); err != nil {
				return nil, err
			}
			p.leave()
			return x, nil
		case "[":
			return p.array()
		case "{":
			return p.record()
		}
		return nil, staticErr(t.pos, "expected an expression, found %s", t.describe())
	}
	// A word.
	switch t.keyword() {
	case "TRUE":
		p.next()
		return &Literal{Pos: t.pos, Value: Bool(true)}, nil
	case "FALSE":
		p.next()
		return &Literal{Pos: t.pos, Value: Bool(false)}, nil
	case "NULL":
		p.next()
		return &Literal{Pos: t.pos, Value: Null}, nil
	case "":
	default:
		return nil, staticErr(t.pos, "expected an expression, found %s", t.describe())
	}
	p.next()
	if n := p.peek(); n.kind == tokSymbol && n.text == "(" {
		return p.call(t)
	}
	return &AliasRef{Pos: t.pos, Name: t.text}, nil
}

func (p *parser) call(name *token) (Expr, error) {
	open := p.next()
	if err := p.enter(open); err != nil {
		return nil, err
	}
	c := &Call{Pos: name.pos, Name: strings.ToUpper(name.text), agg: -1}
	if !p.isSymbol(")") {
		for {
			arg, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.Args = append(c.Args, arg)
			if !p.isSymbol(",") {
				break
			}
			p.next()
		}
	}
	if _, err := p.expectSymbol(")"); err != nil {
		return nil, err
	}
	p.leave()
	return c, nil
}

func (p *parser) array() (Expr, error) {
	open := p.next()
	if err := p.enter(open); err != nil {
		return nil, err
	}
	a := &ArrayLit{Pos: open.pos}
	if !p.isSymbol("]") {
		for {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			a.Elems = append(a.Elems, x)
			if !p.isSymbol(",") {
				break
			}
			p.next()
		}
	}
	if _, err := p.expectSymbol("]"); err != nil {
		return nil, err
	}
	p.leave()
	return a, nil
}

func (p *parser) record() (Expr, error) {
	open := p.next()
	if err := p.enter(open); err != nil {
		return nil, err
	}
	r := &RecordLit{Pos: open.pos}
	seen := map[string]bool{}
	if !p.isSymbol("}") {
		for {
			k := p.next()
			if k.kind != tokWord {
				return nil, staticErr(k.pos, "expected a record key, found %s", k.describe())
			}
			if seen[k.text] {
				return nil, staticErr(k.pos, "duplicate key '%s' in record", k.text)
			}
			seen[k.text] = true
			if _, err := p.expectSymbol(":"); err != nil {
				return nil, err
			}
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			r.Keys = append(r.Keys, k.text)
			r.Values = append(r.Values, v)
			if !p.isSymbol(",") {
				break
			}
			p.next()
		}
	}
	if _, err := p.expectSymbol("}"); err != nil {
		return nil, err
	}
	p.leave()
	return r, nil
}
