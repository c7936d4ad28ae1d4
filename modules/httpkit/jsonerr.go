package httpkit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/eventstore-service/eventstore/modules/event"
)

// DescribeJSONError describes an error of encoding/json in the API's words,
// never with Go type names: a wrong type at the top is "<top> must be a
// JSON object", a wrong field "field 'a.b' must be a string"; other errors
// (syntax, truncation) keep the decoder's wording.
func DescribeJSONError(err error, top string) string {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	want := kindName(typeErr.Type)
	if typeErr.Field == "" {
		return top + " must be " + want
	}
	return "field " + event.Quote(typeErr.Field) + " must be " + want
}

// kindName names the JSON value a Go type decodes from.
func kindName(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	}
	return "a JSON value"
}
