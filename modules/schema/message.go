package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// Message follows the first cause of err down to a leaf and writes it in
// the API's wording, prefixed with the JSON pointer of the instance unless
// that is the root: "at '/a/0': value must be one of 1, 2".
func Message(err *jsonschema.ValidationError) string {
	for len(err.Causes) > 0 {
		err = err.Causes[0]
	}
	text := leafText(err.ErrorKind)
	if len(err.InstanceLocation) == 0 {
		return text
	}
	return "at '" + pointer(err.InstanceLocation) + "': " + text
}

// pointer writes a JSON pointer (RFC 6901) of the path.
func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func leafText(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.AdditionalProperties:
		// The library collects them from a map; sorted, the message is
		// stable and in the order of the (canonical, key-sorted) data.
		return "additionalProperties " + quoted(slices.Sorted(slices.Values(k.Properties))) + " not allowed"
	case *kind.Required:
		return "missing properties: " + quoted(k.Missing)
	case *kind.Type:
		return "expected " + strings.Join(k.Want, " or ") + ", but got " + k.Got
	case *kind.Const:
		return "value must be " + literal(k.Want)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = literal(w)
		}
		return "value must be one of " + strings.Join(want, ", ")
	case *kind.MinLength:
		return fmt.Sprintf("length must be >= %d, but got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("length must be <= %d, but got %d", k.Want, k.Got)
	case *kind.Pattern:
		return "does not match pattern '" + k.Want + "'"
	case *kind.Minimum:
		return "must be >= " + number(k.Want) + " but found " + number(k.Got)
	case *kind.Maximum:
		return "must be <= " + number(k.Want) + " but found " + number(k.Got)
	case *kind.ExclusiveMinimum:
		return "must be > " + number(k.Want) + " but found " + number(k.Got)
	case *kind.ExclusiveMaximum:
		return "must be < " + number(k.Want) + " but found " + number(k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("minimum %d items required, but found %d items", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("maximum %d items required, but found %d items", k.Want, k.Got)
	case *kind.FalseSchema:
		return "not allowed"
	}
	return strings.ReplaceAll(k.LocalizedString(message.NewPrinter(message.MatchLanguage("en"))), "\n", " ")
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// literal writes a JSON value as a JSON literal.
func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// number writes an exact rational as a decimal without needless digits.
func number(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}
