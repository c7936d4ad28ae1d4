package eventql

import (
	"fmt"
	"strings"
	"testing"
)

// show renders an expression fully parenthesised, chains as the nested
// operations they stand for.
func show(e Expr) string {
	switch x := e.(type) {
	case *Literal:
		return string(x.Value.AppendJSON(nil))
	case *AliasRef:
		return x.Name
	case *Field:
		s := show(x.X)
		for _, name := range x.Path {
			s += "." + name.Name
		}
		return s
	case *Call:
		args := make([]string, len(x.Args))
		for i, a := range x.Args {
			args[i] = show(a)
		}
		return x.Name + "(" + strings.Join(args, ", ") + ")"
	case *Unary:
		return "(" + x.Op + show(x.X) + ")"
	case *Not:
		return "(NOT " + show(x.X) + ")"
	case *Binary:
		s := show(x.X)
		for _, step := range x.Steps {
			s = "(" + s + " " + step.Op + " " + show(step.Y) + ")"
		}
		return s
	case *Cast:
		s := show(x.X)
		for _, conv := range x.Steps {
			s = "(" + s + " AS " + conv.Type.String() + ")"
		}
		return s
	case *ArrayLit:
		elems := make([]string, len(x.Elems))
		for i, a := range x.Elems {
			elems[i] = show(a)
		}
		return "[" + strings.Join(elems, ", ") + "]"
	case *RecordLit:
		fields := make([]string, len(x.Keys))
		for i, k := range x.Keys {
			fields[i] = k + ": " + show(x.Values[i])
		}
		return "{" + strings.Join(fields, ", ") + "}"
	}
	return fmt.Sprintf("?%T", e)
}

func TestParsePrecedence(t *testing.T) {
	for expr, want := range map[string]string{
		`e.id AS INT + 1`:             `((e.id AS INT) + 1)`,
		`s AS DATETIME AS date`:       `((s AS DATETIME) AS DATE)`,
		`-x AS INT`:                   `(-(x AS INT))`,
		`- - +x`:                      `(-(-(+x)))`,
		`2 * 3 / 4`:                   `((2 * 3) / 4)`,
		`10 - 4 - 3`:                  `((10 - 4) - 3)`,
		`1 + 2 * 3`:                   `(1 + (2 * 3))`,
		`7 / 2 AS INT`:                `(7 / (2 AS INT))`,
		`NOT tags CONTAINS "x"`:       `(NOT (tags CONTAINS "x"))`,
		`NOT a == b AND c`:            `((NOT (a == b)) AND c)`,
		`NOT NOT a`:                   `(NOT (NOT a))`,
		`a XOR b AND c`:               `(a XOR (b AND c))`,
		`a OR b XOR c`:                `(a OR (b XOR c))`,
		`a OR b AND c`:                `(a OR (b AND c))`,
		`a AND b AND c`:               `((a AND b) AND c)`,
		`a OR b OR c`:                 `((a OR b) OR c)`,
		`a + 1 >= b * 2`:              `((a + 1) >= (b * 2))`,
		`x.data.a.from.order`:         `x.data.a.from.order`,
		`(a)`:                         `a`,
		`count(a, b)`:                 `COUNT(a, b)`,
		`[1, [2], {k: 3, from: "x"}]`: `[1, [2], {k: 3, from: "x"}]`,
		`{}.a`:                        `{}.a`,
		`TRUE == null`:                `(true == null)`,
		`-2.5e1`:                      `(-25)`,
		`"a" CONTAINS 'b'`:            `("a" CONTAINS "b")`,
	} {
		q, err := Parse("FROM x IN events PROJECT INTO " + expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := show(q.Project); got != want {
			t.Errorf("%s\n got %s\nwant %s", expr, got, want)
		}
	}
}

func TestParseClauses(t *testing.T) {
	q, err := Parse(`FROM a IN events FROM b IN subjects FROM c IN eventtypes FROM d IN (FROM x IN events PROJECT INTO x)
		WHERE a.id == "1" ORDER BY a.id DESC GROUP BY a.type HAVING COUNT() > 1 SKIP 1 TOP 2 PROJECT INTO DISTINCT COUNT()`)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []SourceKind{SourceEvents, SourceSubjects, SourceEventTypes, SourceQuery}
	for i, f := range q.Froms {
		if f.Kind != kinds[i] || f.Alias != string(rune('a'+i)) {
			t.Errorf("from %d: %+v", i, f)
		}
	}
	if q.Froms[3].Sub == nil || show(q.Froms[3].Sub.Project) != "x" {
		t.Error("subquery not parsed")
	}
	if show(q.Where) != `(a.id == "1")` || !q.Order.Desc || show(q.Order.Key) != "a.id" ||
		show(q.Group.Key) != "a.type" || show(q.Group.Having) != "(COUNT() > 1)" ||
		show(q.Skip) != "1" || show(q.Top) != "2" || !q.Distinct || show(q.Project) != "COUNT()" {
		t.Errorf("clauses: %+v", q)
	}
	if q.WherePos != (Pos{2, 3}) || q.Order.Pos != (Pos{2, 21}) || q.Group.HavingPos != (Pos{2, 56}) {
		t.Errorf("positions: where %v order %v having %v", q.WherePos, q.Order.Pos, q.Group.HavingPos)
	}
	asc, err := Parse(`FROM a IN events ORDER BY a.id ASC PROJECT INTO a`)
	if err != nil || asc.Order.Desc {
		t.Errorf("ASC: %v %+v", err, asc)
	}
}

func TestParseErrors(t *testing.T) {
	for query, want := range map[string]string{
		`FROM e IN events WHERE e.id == "1"`:                                      `1:35: expected PROJECT INTO, found end of query`,
		`FROM e IN events GROUP BY e.type ORDER BY e.id PROJECT INTO 1`:           `1:34: unexpected 'ORDER' after GROUP BY`,
		`FROM e IN events PROJECT e`:                                              `1:26: expected INTO`,
		`FROM e IN events PROJECT INTO`:                                           `1:30: expected an expression, found end of query`,
		`FROM e IN events PROJECT INTO (1`:                                        `1:33: expected ')'`,
		`FROM e IN events PROJECT INTO a.`:                                        `1:33: expected a field name`,
		`FROM e IN events PROJECT INTO a.1`:                                       `1:33: expected a field name`,
		`FROM e IN events PROJECT INTO 1 AS`:                                      `1:35: expected a type name`,
		`FROM e IN events PROJECT INTO {1: 2}`:                                    `1:32: expected a record key`,
		`FROM e IN events PROJECT INTO {"a": 2}`:                                  `1:32: expected a record key`,
		`FROM e IN (events) PROJECT INTO e`:                                       `1:12`,
		`FROM e IN () PROJECT INTO e`:                                             `1:12`,
		`FROM WHERE IN events PROJECT INTO 1`:                                     `1:6`,
		`FROM e IN events PROJECT INTO where`:                                     `1:31`,
		`FROM e IN events PROJECT INTO e.id == e.id == e.id`:                      `1:44`,
		`FROM e IN events PROJECT INTO e.id CONTAINS 1 < 2`:                       `1:47`,
		`FROM e IN events PROJECT INTO NOT`:                                       `1:34`,
		`FROM e IN events PROJECT INTO 1 +`:                                       `1:34`,
		`FROM e IN events PROJECT INTO DISTINCT DISTINCT 1`:                       `1:40`,
		`FROM e IN events SKIP 1 SKIP 1 PROJECT INTO 1`:                           `1:25`,
		`FROM e IN events ORDER BY e.id, e.type PROJECT INTO 1`:                   `1:31`,
		`FROM e IN events GROUP BY e.type HAVING true HAVING true PROJECT INTO 1`: `1:46`,
		`FROM e IN (FROM x IN events PROJECT INTO x PROJECT INTO e`:               `1:44`,
	} {
		_, err := Parse(query)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s\n error %v\n  want %q", query, err, want)
		}
	}
}
