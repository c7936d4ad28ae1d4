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

// Field is field access x.a.b…: the fields of Path, read one after the
// other. A chain of accesses is one node, so it does not deepen the tree.
type Field struct {
	X    Expr
	Path []FieldName
}

// FieldName is one step of a Field.
type FieldName struct {
	Pos  Pos
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

// Binary is a chain of binary operators of one precedence level, applied
// from left to right: X op₁ Y₁ op₂ Y₂ is (X op₁ Y₁) op₂ Y₂. A chain is one
// node, so a long one does not deepen the tree. Arithmetic chains mix + and
// - or * and /; AND, OR and XOR chains repeat one operator; comparisons and
// CONTAINS, which do not chain, have one step.
type Binary struct {
	X     Expr
	Steps []Operation
}

// Operation is one step of a Binary: the operator and its right operand.
type Operation struct {
	Pos Pos
	Op  string // "+", "==", "AND", "CONTAINS", …
	Y   Expr
}

// Cast is x AS type, repeated: the conversions of Steps, one after the
// other.
type Cast struct {
	X     Expr
	Steps []Conversion
}

// Conversion is one step of a Cast.
type Conversion struct {
	Pos  Pos // of AS
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

// A chain stands where its last step does: the operator applied last,
// at the root of the nested operations it stands for.

func (e *Literal) position() Pos   { return e.Pos }
func (e *AliasRef) position() Pos  { return e.Pos }
func (e *Field) position() Pos     { return e.Path[len(e.Path)-1].Pos }
func (e *Call) position() Pos      { return e.Pos }
func (e *Unary) position() Pos     { return e.Pos }
func (e *Not) position() Pos       { return e.Pos }
func (e *Binary) position() Pos    { return e.Steps[len(e.Steps)-1].Pos }
func (e *Cast) position() Pos      { return e.Steps[len(e.Steps)-1].Pos }
func (e *ArrayLit) position() Pos  { return e.Pos }
func (e *RecordLit) position() Pos { return e.Pos }
