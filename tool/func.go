package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// Option configures a tool built by Func.
type Option func(*funcConfig)

type funcConfig struct {
	schema json.RawMessage
	inline bool
}

// WithSchema sends and validates against this hand-written schema instead of
// the one inferred from the argument type. The arguments are still decoded
// into the argument type after validation.
func WithSchema(raw json.RawMessage) Option {
	return func(c *funcConfig) { c.schema = raw }
}

// WithInline marks the tool as Inline: whatever in its function can block
// watches the call's context.
func WithInline() Option {
	return func(c *funcConfig) { c.inline = true }
}

// Func builds a tool from a typed Go function. The argument schema is
// inferred from In (use `json` tags for names and `jsonschema:"..."` tags for
// descriptions) unless WithSchema gives one. Every call is validated against
// the schema and decoded into In before fn runs; a bad call is answered to
// the model as an error result in plain words.
//
// The function's output becomes the result text: a string is used as is, a
// Result is passed through, anything else is encoded as compact JSON.
func Func[In, Out any](name, description string, fn func(ctx context.Context, env *Env, in In) (Out, error), opts ...Option) (Tool, error) {
	if name == "" {
		return nil, errors.New("tool: a tool needs a name")
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %q: nil function", name)
	}
	var cfg funcConfig
	for _, o := range opts {
		o(&cfg)
	}
	var s *Schema
	var err error
	if cfg.schema != nil {
		s, err = CompileSchema(cfg.schema)
	} else {
		s, err = SchemaFor[In]()
	}
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	return &funcTool[In, Out]{
		spec:   llm.ToolSpec{Name: name, Description: description, Parameters: s.Raw()},
		schema: s,
		fn:     fn,
		inline: cfg.inline,
	}, nil
}

// MustFunc is Func that panics on a construction error; for package-level
// tool definitions whose schema is fixed at compile time.
func MustFunc[In, Out any](name, description string, fn func(ctx context.Context, env *Env, in In) (Out, error), opts ...Option) Tool {
	t, err := Func(name, description, fn, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

type funcTool[In, Out any] struct {
	spec   llm.ToolSpec
	schema *Schema
	fn     func(context.Context, *Env, In) (Out, error)
	inline bool
}

func (t *funcTool[In, Out]) Spec() llm.ToolSpec { return t.spec }

func (t *funcTool[In, Out]) Inline() bool { return t.inline }

func (t *funcTool[In, Out]) Run(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
	var in In
	if err := DecodeArgs(t.schema, args, &in); err != nil {
		return ArgumentError(t.spec.Name, err), nil
	}
	out, err := t.fn(ctx, env, in)
	if err != nil {
		return Result{}, err
	}
	switch v := any(out).(type) {
	case string:
		return Result{Content: v}, nil
	case Result:
		return v, nil
	case *Result:
		if v == nil {
			return Result{}, nil
		}
		return *v, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Result{}, fmt.Errorf("encoding the result: %w", err)
	}
	return Result{Content: string(b), Structured: b}, nil
}

// ArgumentError is the result answered for a call whose arguments failed to
// decode or validate.
func ArgumentError(tool string, err error) Result {
	return Errorf("Invalid arguments for %s: %v. Fix the arguments and call %s again.", tool, err, tool)
}

// DecodeArgs validates raw tool arguments against s and decodes them into
// dst. Empty input counts as an empty object. The error explains the problem
// in plain words.
func DecodeArgs(s *Schema, raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 1 && se.Offset <= int64(len(raw)) && json.Valid(raw[:se.Offset-1]) {
			return errors.New("the arguments hold more than one JSON value; send exactly one JSON object")
		}
		return fmt.Errorf("the arguments are not valid JSON (%s)", jsonProblem(err))
	}
	if s != nil {
		coerced, err := s.validate(v)
		if err != nil {
			return err
		}
		if len(coerced) > 0 {
			raw = withNumbers(raw, coerced)
		}
	}
	if m, ok := dst.(*map[string]any); ok {
		obj, _ := v.(map[string]any)
		*m = obj
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("argument %q must be %s", te.Field, goTypeWord(te.Type.Kind().String()))
		}
		return fmt.Errorf("the arguments do not fit: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// withNumbers rewrites the arguments with each coerced value as the bare
// number its string held, leaving every other value byte for byte as sent
// (objects on the way to a coerced value have their keys sorted). Each
// object or array on the way is decoded once, however many values in it
// changed.
func withNumbers(raw json.RawMessage, coerced []coercion) json.RawMessage {
	if out, ok := rewrite(raw, coerced, 0); ok {
		return out
	}
	return raw
}

// rewrite returns raw with the values at cs's paths (from element at on)
// replaced by their numbers.
func rewrite(raw json.RawMessage, cs []coercion, at int) (json.RawMessage, bool) {
	for _, c := range cs {
		if len(c.path) == at {
			return json.RawMessage(c.text), true
		}
	}
	if _, isKey := cs[0].path[at].(string); isKey {
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			return nil, false
		}
		groups := map[string][]coercion{}
		for _, c := range cs {
			k, ok := c.path[at].(string)
			if !ok {
				return nil, false
			}
			groups[k] = append(groups[k], c)
		}
		for k, g := range groups {
			inner, ok := fields[k]
			if !ok {
				return nil, false
			}
			if fields[k], ok = rewrite(inner, g, at+1); !ok {
				return nil, false
			}
		}
		out, err := json.Marshal(fields)
		return out, err == nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	groups := map[int][]coercion{}
	for _, c := range cs {
		i, ok := c.path[at].(int)
		if !ok || i >= len(items) {
			return nil, false
		}
		groups[i] = append(groups[i], c)
	}
	for i, g := range groups {
		var ok bool
		if items[i], ok = rewrite(items[i], g, at+1); !ok {
			return nil, false
		}
	}
	out, err := json.Marshal(items)
	return out, err == nil
}

func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if errors.Is(err, errors.New("EOF")) || err.Error() == "unexpected EOF" || err.Error() == "EOF" {
		return "the JSON ends too early"
	}
	return err.Error()
}

func goTypeWord(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "of another type"
}
