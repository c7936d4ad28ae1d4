package eventql

// SourceKind names what a FROM clause reads.
type SourceKind int

// Source kinds.
const (
	SourceEvents SourceKind = iota + 1
	SourceSubjects
	SourceEventTypes
	SourceQuery
)

// Query is one query level.
type Query struct {
	Froms    []*From
	Where    Expr
	WherePos Pos
	Order    *OrderBy
	Group    *GroupBy
	Skip     Expr
	Top      Expr
	Distinct bool
	Project  Expr
	// Filled by the checker:
	skip, top int64 // -1 when absent
	grouped   bool
	aggs      []*Call // aggregate calls of HAVING and PROJECT INTO
	plan      *plan
}

// From binds an alias to a source.
type From struct {
	Alias string
	Pos   Pos
	Kind  SourceKind
	Sub   *Query
}

// OrderBy sorts by one key.
type OrderBy struct {
	Key  Expr
	Desc bool
	Pos  Pos
}

// GroupBy partitions by one key, optionally filtering groups.
type GroupBy struct {
	Key       Expr
	Having    Expr
	Pos       Pos
	HavingPos Pos
}

// Expr is an expression node.
type Expr interface {
	position() Pos
}

// Literal is a constant.
type Literal struct {
	Pos   Pos
	Value Value
}

// AliasRef refers to the value an alias is bound to.
type AliasRef struct {
	Pos  Pos
	Name string
	slot int // index of the alias in its level, set by the checker
}

// Field is x.name.
type Field struct {
	Pos  Pos // of the name
	X    Expr
	Name string
}

// Call is a function or aggregate call.
type Call struct {
	Pos  Pos
	Name string // upper case
	Args []Expr
	agg  int       // index among the level's aggregates; -1 for scalar functions
	fn   *function // set by the checker
}

// Unary is -x or +x.
type Unary struct {
	Pos Pos
	Op  string
	X   Expr
}

// Not is NOT x.
type Not struct {
	Pos Pos
	X   Expr
}

// Binary is a binary operator: arithmetic, comparison, CONTAINS, AND, OR, XOR.
type Binary struct {
	Pos  Pos
	Op   string // "+", "==", "AND", "CONTAINS", …
	L, R Expr
}

// Cast is x AS type.
type Cast struct {
	Pos  Pos // of AS
	X    Expr
	Type Kind
}

// ArrayLit is [a, b, …].
type ArrayLit struct {
	Pos   Pos
	Elems []Expr
}

// RecordLit is {k: v, …}.
type RecordLit struct {
	Pos    Pos
	Keys   []string
	Values []Expr
}

func (e *Literal) position() Pos   { return e.Pos }
func (e *AliasRef) position() Pos  { return e.Pos }
func (e *Field) position() Pos     { return e.Pos }
func (e *Call) position() Pos      { return e.Pos }
func (e *Unary) position() Pos     { return e.Pos }
func (e *Not) position() Pos       { return e.Pos }
func (e *Binary) position() Pos    { return e.Pos }
func (e *Cast) position() Pos      { return e.Pos }
func (e *ArrayLit) position() Pos  { return e.Pos }
func (e *RecordLit) position() Pos { return e.Pos }
