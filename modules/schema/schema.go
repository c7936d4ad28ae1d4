package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/eventstore-service/eventstore/modules/jsonscan"
)

// Schema is a schema with its stored form, compiled by Compile, or by
// Stored on its first use. Its methods are safe for concurrent use: the
// first of them that needs the compiled form compiles it, once, and the
// others wait for it.
type Schema struct {
	// Raw is the schema as registered, compacted: key order and number
	// spellings kept, whitespace dropped. It is stored and returned as is.
	Raw []byte

	ready    atomic.Bool // compiled and fast are set; set once, after them
	once     sync.Once   // compiles a stored schema on its first use
	err      error       // why a stored schema does not compile; set in once
	compiled *jsonschema.Schema
	fast     *fastNode // nil when the schema uses keywords outside the fast subset
	scanners sync.Pool // of *jsonscan.Scanner for the fast path
}

// InvalidError reports a schema that cannot be registered; its message is
// the text after "invalid schema: ".
type InvalidError struct {
	Msg string
}

// Error returns the message.
func (e *InvalidError) Error() string { return "invalid schema: " + e.Msg }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// dialects maps the accepted $schema URIs (scheme and trailing # aside) to
// their drafts.
var dialects = map[string]*jsonschema.Draft{
	"json-schema.org/draft/2020-12/schema": jsonschema.Draft2020,
	"json-schema.org/draft/2019-09/schema": jsonschema.Draft2019,
	"json-schema.org/draft-07/schema":      jsonschema.Draft7,
}

// Compile checks raw against the registration rules, in the order of
// docs/api.md §4.9, and compiles it. Failures are *InvalidError.
func Compile(raw []byte) (*Schema, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, invalid("schema must be a JSON object")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(compact.Bytes()))
	if err != nil {
		return nil, invalid("schema must be a JSON object")
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, invalid("schema must be a JSON object")
	}
	var missing []string
	for _, name := range []string{"type", "properties"} {
		if _, ok := root[name]; !ok {
			missing = append(missing, "'"+name+"'")
		}
	}
	if len(missing) > 0 {
		return nil, invalid("missing properties: %s", strings.Join(missing, ", "))
	}
	if root["type"] != "object" {
		return nil, invalid(`at '/type': value must be "object"`)
	}
	draft := jsonschema.Draft2020
	if uri, present := root["$schema"]; present {
		s, _ := uri.(string)
		key := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#")
		if draft = dialects[key]; draft == nil || !strings.Contains(s, "://") {
			return nil, invalid("unsupported $schema '%v'", uri)
		}
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(draft)
	c.UseLoader(noLoader{})
	const location = "urn:eventstore:schema"
	if err := c.AddResource(location, doc); err != nil {
		return nil, invalid("%s", oneLine(err))
	}
	compiled, err := c.Compile(location)
	if err != nil {
		var metaErr *jsonschema.SchemaValidationError
		var validationErr *jsonschema.ValidationError
		if errors.As(err, &metaErr) && errors.As(metaErr.Err, &validationErr) {
			return nil, invalid("%s", Message(validationErr))
		}
		return nil, invalid("%s", oneLine(err))
	}
	fast, _ := compileFast(doc, true)
	s := &Schema{Raw: compact.Bytes(), compiled: compiled, fast: fast}
	s.ready.Store(true)
	return s, nil
}

// Stored returns the schema stored as raw, which Compile accepted at its
// registration, without compiling it: it is compiled on its first use by
// Validate or Check, so that a store holding many schemas starts at once
// and keeps compiled only those in use. Raw is compacted as Compile
// compacts it.
func Stored(raw []byte) *Schema {
	var compact bytes.Buffer
	compact.Grow(len(raw))
	if err := json.Compact(&compact, raw); err == nil {
		raw = compact.Bytes()
	}
	return &Schema{Raw: raw}
}

// Check compiles the schema unless it is compiled already, and returns
// why it does not compile (an *InvalidError: stored data that Compile no
// longer accepts); the outcome is kept, so it compiles at most once.
func (s *Schema) Check() error {
	if s.ready.Load() {
		return nil
	}
	s.once.Do(func() {
		c, err := Compile(s.Raw)
		if err != nil {
			s.err = err
			return
		}
		s.compiled, s.fast = c.compiled, c.fast
		s.ready.Store(true)
	})
	return s.err
}

// Compiled reports whether the schema is compiled: by Compile, or by the
// first use of a stored one.
func (s *Schema) Compiled() bool { return s.ready.Load() }

// noLoader refuses every reference outside the schema document.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("references outside the schema are not allowed: %s", url)
}

// Validate checks event data (canonical JSON) against the schema, compiling
// it first if it is a stored one not compiled yet. A violation is a
// *ViolationError with the API's message. Data the fast path accepts is
// valid; everything else is decided by the library.
func (s *Schema) Validate(data []byte) error {
	if err := s.Check(); err != nil {
		return fmt.Errorf("compile the stored schema: %w", err)
	}
	if s.fast != nil {
		sc, _ := s.scanners.Get().(*jsonscan.Scanner)
		if sc == nil {
			sc = jsonscan.New(nil)
		}
		accepted := s.fast.accepts(sc, data)
		s.scanners.Put(sc)
		if accepted {
			return nil
		}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decode data: %w", err)
	}
	err = s.compiled.Validate(v)
	var validationErr *jsonschema.ValidationError
	if errors.As(err, &validationErr) {
		return &ViolationError{Msg: Message(validationErr)}
	}
	return err
}

// ViolationError reports data that does not match a schema.
type ViolationError struct {
	// Msg follows the first cause down to a leaf, e.g.
	// "at '/reason': expected string, but got number".
	Msg string
}

// Error returns the message.
func (e *ViolationError) Error() string { return e.Msg }

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}
