package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is a compiled JSON schema for tool arguments: the exact bytes sent to
// the model, plus a validator that explains failures in plain words.
type Schema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
	props    map[string]*jsonschema.Schema
	names    []string // property names in declaration order
	required []string
	// flat is set when every constraint of the schema is one that Validate
	// checks itself (a flat object of scalar properties), so the general
	// validator can be skipped on the hot path.
	flat bool
}

// CompileSchema parses and resolves a JSON schema document.
func CompileSchema(raw []byte) (*Schema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("tool: schema is not valid JSON schema: %w", err)
	}
	return compile(&s, raw)
}

// SchemaFor infers the schema of T's JSON form (field descriptions come from
// `jsonschema:"..."` tags) and compiles it.
func SchemaFor[T any]() (*Schema, error) {
	return SchemaForType(reflect.TypeFor[T]())
}

// SchemaForType is SchemaFor for a reflect.Type.
func SchemaForType(t reflect.Type) (*Schema, error) {
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, fmt.Errorf("tool: cannot derive a schema from %s: %w", t, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return compile(s, raw)
}

func compile(s *jsonschema.Schema, raw []byte) (*Schema, error) {
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool: invalid schema: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("tool: schema is not valid JSON: %w", err)
	}
	out := &Schema{raw: compact.Bytes(), resolved: r, props: s.Properties, required: s.Required}
	out.names = propertyOrder(compact.Bytes(), s.Properties)
	out.flat = isFlat(s)
	return out, nil
}

// propertyOrder lists property names in the order the document declares them.
func propertyOrder(raw []byte, props map[string]*jsonschema.Schema) []string {
	var doc struct {
		Properties json.RawMessage `json:"properties"`
	}
	var names []string
	if json.Unmarshal(raw, &doc) == nil && len(doc.Properties) > 0 {
		dec := json.NewDecoder(bytes.NewReader(doc.Properties))
		if t, err := dec.Token(); err == nil && t == json.Delim('{') {
			for dec.More() {
				t, err := dec.Token()
				key, ok := t.(string)
				var skip json.RawMessage
				if err != nil || !ok || dec.Decode(&skip) != nil {
					break
				}
				names = append(names, key)
			}
		}
	}
	if len(names) != len(props) {
		names = names[:0]
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	return names
}

// Raw returns the schema document as sent to the model.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Validate checks a decoded JSON value against the schema; nulls for optional
// arguments are dropped from v first, as if the argument was not given. The
// error, if any, is a plain-words explanation meant for the model.
//
// A number sent as a string ("5") for an integer or number argument, or
// inside an object or array where the schema wants a number, is taken as
// that number, as both reference implementations do: v is changed in
// place.
func (s *Schema) Validate(v any) error {
	_, err := s.validate(v)
	return err
}

// validate is Validate that also returns the values it coerced from
// strings to numbers, with the number text each held.
func (s *Schema) validate(v any) ([]coercion, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", describeJSON(v))
	}
	// A null for an optional argument means "not given": many models send
	// null for the parameters they do not use.
	for k, val := range obj {
		if val == nil && !slices.Contains(s.required, k) {
			delete(obj, k)
		}
	}
	coerced := s.coerce(obj)
	return coerced, s.check(obj, v)
}

// coercion is one string that held a number, replaced by it: where it is
// in the arguments (object keys and array indexes, from the top) and the
// number's JSON text.
type coercion struct {
	path []any // string keys and int indexes
	text string
}

// maxCoerceDepth bounds how deep coerce looks into nested arguments.
const maxCoerceDepth = 32

// coerce replaces, in obj, each string that holds a JSON number given where
// the schema wants an integer or a number (and that fits its type) with that
// number: top-level arguments, and values inside objects and arrays whose
// schema says so (properties, items). It returns what it changed. Any other
// string is left for the type check to refuse in plain words.
func (s *Schema) coerce(obj map[string]any) []coercion {
	var out []coercion
	coerceObject(obj, s.props, nil, &out, 0)
	return out
}

func coerceObject(obj map[string]any, props map[string]*jsonschema.Schema, path []any, out *[]coercion, depth int) {
	for name, val := range obj {
		if ps := props[name]; ps != nil {
			if f, text, ok := coerceValue(val, ps, append(path, name), out, depth); ok {
				obj[name] = f
				*out = append(*out, coercion{path: append(slices.Clone(path), name), text: text})
			}
		}
	}
}

// coerceValue returns the number a string val holds when ps wants one;
// otherwise it looks inside val (an object or array) and returns false.
func coerceValue(val any, ps *jsonschema.Schema, path []any, out *[]coercion, depth int) (float64, string, bool) {
	switch v := val.(type) {
	case string:
		want := typesOf(ps)
		if slices.Contains(want, "string") || !slices.Contains(want, "integer") && !slices.Contains(want, "number") {
			return 0, "", false
		}
		text, f, ok := parseNumber(v)
		if !ok || !typeMatches(f, want) {
			return 0, "", false
		}
		if strings.ContainsAny(text, ".eE") && slices.Contains(want, "integer") && f == float64(int64(f)) {
			text = strconv.FormatFloat(f, 'f', -1, 64) // 1e2 → 100, which an int can hold
		}
		return f, text, true
	case map[string]any:
		if depth < maxCoerceDepth && len(ps.Properties) > 0 {
			coerceObject(v, ps.Properties, path, out, depth+1)
		}
	case []any:
		if depth >= maxCoerceDepth {
			break
		}
		for i, el := range v {
			is := ps.Items
			if i < len(ps.PrefixItems) {
				is = ps.PrefixItems[i]
			}
			if is == nil {
				continue
			}
			if f, text, ok := coerceValue(el, is, append(path, i), out, depth+1); ok {
				v[i] = f
				*out = append(*out, coercion{path: append(slices.Clone(path), i), text: text})
			}
		}
	}
	return 0, "", false
}

// numberRe is the JSON number grammar.
var numberRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// parseNumber reads a string that holds one JSON number, spaces around it
// allowed; a number too large for a float64 is refused.
func parseNumber(s string) (string, float64, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 100 || !numberRe.MatchString(s) {
		return "", 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", 0, false
	}
	return s, f, true
}

func (s *Schema) check(obj map[string]any, v any) error {
	var missing []string
	for _, name := range s.required {
		if v, ok := obj[name]; !ok || v == nil && !allowsNull(s.props[name]) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		parts := make([]string, len(missing))
		for i, m := range missing {
			parts[i] = fmt.Sprintf("%q%s", m, s.typeHint(m))
		}
		noun := "argument"
		if len(missing) > 1 {
			noun = "arguments"
		}
		return fmt.Errorf("missing required %s %s", noun, strings.Join(parts, ", "))
	}
	for _, name := range sortedKeys(obj) {
		ps, known := s.props[name]
		if !known {
			if s.allowsExtra() {
				continue
			}
			return fmt.Errorf("unknown argument %q; this tool takes: %s", name, strings.Join(s.names, ", "))
		}
		if want := typesOf(ps); len(want) > 0 && !typeMatches(obj[name], want) {
			return fmt.Errorf("argument %q must be %s, got %s", name, joinTypes(want), describeJSON(obj[name]))
		}
	}
	if s.flat {
		return s.validateFlat(obj)
	}
	if err := s.resolved.Validate(v); err != nil {
		return fmt.Errorf("%s", cleanValidationError(err.Error()))
	}
	return nil
}

// isFlat reports whether the schema is an object whose properties are scalars
// constrained only by type, enum, numeric bounds and string length.
func isFlat(s *jsonschema.Schema) bool {
	root := *s
	root.Type, root.Properties, root.Required, root.AdditionalProperties = "", nil, nil, nil
	root.Title, root.Description, root.Schema = "", "", ""
	if s.Type != "object" || !isEmptySchema(&root) {
		return false
	}
	if ap := s.AdditionalProperties; ap != nil && !isFalseSchema(ap) {
		return false
	}
	for _, p := range s.Properties {
		if p == nil {
			return false
		}
		for _, t := range typesOf(p) {
			if t == "object" || t == "array" {
				return false
			}
		}
		if len(typesOf(p)) == 0 {
			return false
		}
		for _, e := range p.Enum {
			switch e.(type) {
			case string, float64, bool, nil:
			default:
				return false
			}
		}
		rest := *p
		rest.Type, rest.Types, rest.Enum, rest.Description, rest.Title, rest.Default = "", nil, nil, "", "", nil
		rest.Minimum, rest.Maximum, rest.ExclusiveMinimum, rest.ExclusiveMaximum = nil, nil, nil, nil
		rest.MinLength, rest.MaxLength = nil, nil
		if !isEmptySchema(&rest) {
			return false
		}
	}
	return true
}

func isEmptySchema(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "{}" || string(b) == "true")
}

// validateFlat checks what isFlat allows beyond the types Validate already
// checked: enums, numeric bounds and string lengths.
func (s *Schema) validateFlat(obj map[string]any) error {
	for name, v := range obj {
		p := s.props[name]
		if p == nil || v == nil {
			continue
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
			opts := make([]string, len(p.Enum))
			for i, e := range p.Enum {
				b, _ := json.Marshal(e)
				opts[i] = string(b)
			}
			return fmt.Errorf("argument %q must be one of %s, got %s", name, strings.Join(opts, ", "), describeJSON(v))
		}
		switch x := v.(type) {
		case float64:
			switch {
			case p.Minimum != nil && x < *p.Minimum:
				return fmt.Errorf("argument %q must be at least %v, got %v", name, *p.Minimum, x)
			case p.Maximum != nil && x > *p.Maximum:
				return fmt.Errorf("argument %q must be at most %v, got %v", name, *p.Maximum, x)
			case p.ExclusiveMinimum != nil && x <= *p.ExclusiveMinimum:
				return fmt.Errorf("argument %q must be greater than %v, got %v", name, *p.ExclusiveMinimum, x)
			case p.ExclusiveMaximum != nil && x >= *p.ExclusiveMaximum:
				return fmt.Errorf("argument %q must be less than %v, got %v", name, *p.ExclusiveMaximum, x)
			}
		case string:
			n := utf8.RuneCountInString(x)
			switch {
			case p.MinLength != nil && n < *p.MinLength:
				return fmt.Errorf("argument %q must be at least %d characters long", name, *p.MinLength)
			case p.MaxLength != nil && n > *p.MaxLength:
				return fmt.Errorf("argument %q must be at most %d characters long", name, *p.MaxLength)
			}
		}
	}
	return nil
}

func (s *Schema) allowsExtra() bool {
	ap := s.resolved.Schema().AdditionalProperties
	return ap == nil || ap.Not == nil && !isFalseSchema(ap)
}

func isFalseSchema(s *jsonschema.Schema) bool {
	b, _ := json.Marshal(s)
	return string(b) == "false"
}

func (s *Schema) typeHint(name string) string {
	ps := s.props[name]
	if ps == nil {
		return ""
	}
	hint := joinTypes(typesOf(ps))
	if ps.Description != "" {
		d := ps.Description
		if len(d) > 80 {
			d = d[:77] + "..."
		}
		if hint != "" {
			hint += ": "
		}
		hint += d
	}
	if hint == "" {
		return ""
	}
	return " (" + hint + ")"
}

func allowsNull(p *jsonschema.Schema) bool {
	return p != nil && slices.Contains(typesOf(p), "null")
}

func typesOf(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func joinTypes(ts []string) string {
	words := make([]string, len(ts))
	for i, t := range ts {
		switch t {
		case "integer":
			words[i] = "an integer"
		case "object", "array":
			words[i] = "an " + t
		case "null":
			words[i] = "null"
		default:
			words[i] = "a " + t
		}
	}
	return strings.Join(words, " or ")
}

func typeMatches(v any, want []string) bool {
	for _, t := range want {
		switch t {
		case "string":
			if _, ok := v.(string); ok {
				return true
			}
		case "number":
			if _, ok := v.(float64); ok {
				return true
			}
		case "integer":
			if f, ok := v.(float64); ok && f == float64(int64(f)) {
				return true
			}
		case "boolean":
			if _, ok := v.(bool); ok {
				return true
			}
		case "object":
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := v.([]any); ok {
				return true
			}
		case "null":
			if v == nil {
				return true
			}
		}
	}
	return false
}

func describeJSON(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:37] + "..."
		}
		return fmt.Sprintf("the string %q", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var (
	validatingRe = regexp.MustCompile(`validating (root|/[^:]*): `)
	propsRe      = regexp.MustCompile(`/properties/`)
)

// cleanValidationError turns jsonschema-go's nested message into one line
// that names the offending argument.
func cleanValidationError(msg string) string {
	var where string
	for _, m := range validatingRe.FindAllStringSubmatch(msg, -1) {
		if m[1] != "root" {
			where = m[1]
		}
	}
	rest := validatingRe.ReplaceAllString(msg, "")
	rest = strings.ReplaceAll(rest, "\n", " ")
	if where != "" {
		arg := strings.TrimPrefix(propsRe.ReplaceAllString(where, "."), ".")
		arg = strings.ReplaceAll(arg, "/items", "[]")
		return fmt.Sprintf("argument %q is invalid: %s", arg, rest)
	}
	return rest
}
