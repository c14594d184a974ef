package tool

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const flatSchema = `{"type":"object","properties":{` +
	`"path":{"type":"string","description":"Where."},` +
	`"limit":{"type":"integer","minimum":1,"maximum":500},` +
	`"ratio":{"type":["number","null"],"exclusiveMinimum":0},` +
	`"mode":{"type":"string","enum":["a","b"]},` +
	`"name":{"type":"string","minLength":2,"maxLength":4},` +
	`"all":{"type":"boolean","default":false}},` +
	`"required":["path"],"additionalProperties":false}`

type flatArgs struct {
	Path  string   `json:"path"`
	Limit *int     `json:"limit"`
	Ratio *float64 `json:"ratio"`
	Mode  string   `json:"mode"`
	Name  string   `json:"name"`
	All   bool     `json:"all"`
}

func TestDecodeArgsPlainWords(t *testing.T) {
	s, err := CompileSchema([]byte(flatSchema))
	if err != nil {
		t.Fatal(err)
	}
	if !s.flat {
		t.Fatal("the schema should take the fast path")
	}
	cases := []struct {
		in, want string
	}{
		{`{"path":"/a"}`, ""},
		{``, `missing required argument "path" (a string: Where.)`},
		{`{"path":"/a","limit":10,"ratio":null,"mode":"b","name":"abc","all":true}`, ""},
		{`{"path":`, "the arguments are not valid JSON"},
		{`{"path":"/a"} {}`, "more than one JSON value"},
		{`[]`, "arguments must be a JSON object, got an array"},
		{`"x"`, `arguments must be a JSON object, got the string "x"`},
		{`{"path":7}`, `argument "path" must be a string, got the number 7`},
		{`{"path":"/a","limit":1.5}`, `argument "limit" must be an integer, got the number 1.5`},
		{`{"path":"/a","limit":0}`, `argument "limit" must be at least 1, got 0`},
		{`{"path":"/a","limit":501}`, `argument "limit" must be at most 500, got 501`},
		{`{"path":"/a","ratio":0}`, `argument "ratio" must be greater than 0, got 0`},
		{`{"path":"/a","ratio":"x"}`, `argument "ratio" must be a number or null, got the string "x"`},
		{`{"path":"/a","mode":"c"}`, `argument "mode" must be one of "a", "b", got the string "c"`},
		{`{"path":"/a","name":"x"}`, `argument "name" must be at least 2 characters long`},
		{`{"path":"/a","name":"xxxxx"}`, `argument "name" must be at most 4 characters long`},
		{`{"path":"/a","all":"yes"}`, `argument "all" must be a boolean, got the string "yes"`},
		{`{"path":"/a","bogus":1}`, `unknown argument "bogus"; this tool takes: path, limit, ratio, mode, name, all`},
	}
	for _, c := range cases {
		var dst flatArgs
		err := DecodeArgs(s, json.RawMessage(c.in), &dst)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

// Numbers sent as strings are accepted for integer and number arguments;
// every other type error is still refused in plain words. The fast path and
// the general validator give the same answers.
func TestDecodeArgsCoercesNumberStrings(t *testing.T) {
	flat, err := CompileSchema([]byte(flatSchema))
	if err != nil {
		t.Fatal(err)
	}
	general := *flat
	general.flat = false
	intp := func(n int) *int { return &n }
	fp := func(f float64) *float64 { return &f }
	cases := []struct {
		name, in  string
		limit     *int
		ratio     *float64
		wantError string
	}{
		{name: "integer string", in: `{"path":"/a","limit":"5"}`, limit: intp(5)},
		{name: "spaces around", in: `{"path":"/a","limit":" 12 "}`, limit: intp(12)},
		{name: "exponent", in: `{"path":"/a","limit":"1e2"}`, limit: intp(100)},
		{name: "integral decimal", in: `{"path":"/a","limit":"7.0"}`, limit: intp(7)},
		{name: "number string", in: `{"path":"/a","ratio":"0.25"}`, ratio: fp(0.25)},
		{name: "nullable number", in: `{"path":"/a","ratio":"3"}`, ratio: fp(3)},
		{name: "plain number still fine", in: `{"path":"/a","limit":9}`, limit: intp(9)},
		{name: "fraction for an integer", in: `{"path":"/a","limit":"5.5"}`, wantError: `argument "limit" must be an integer, got the string "5.5"`},
		{name: "not a number", in: `{"path":"/a","limit":"five"}`, wantError: `argument "limit" must be an integer, got the string "five"`},
		{name: "hex", in: `{"path":"/a","limit":"0x10"}`, wantError: `argument "limit" must be an integer, got the string "0x10"`},
		{name: "empty string", in: `{"path":"/a","limit":""}`, wantError: `argument "limit" must be an integer, got the string ""`},
		{name: "leading plus", in: `{"path":"/a","limit":"+5"}`, wantError: `argument "limit" must be an integer, got the string "+5"`},
		{name: "overflow", in: `{"path":"/a","limit":"1e400"}`, wantError: `argument "limit" must be an integer, got the string "1e400"`},
		{name: "bounds still apply", in: `{"path":"/a","limit":"0"}`, wantError: `argument "limit" must be at least 1, got 0`},
		{name: "upper bound", in: `{"path":"/a","limit":"501"}`, wantError: `argument "limit" must be at most 500, got 501`},
		{name: "exclusive bound", in: `{"path":"/a","ratio":"0"}`, wantError: `argument "ratio" must be greater than 0, got 0`},
		{name: "string argument not touched", in: `{"path":5}`, wantError: `argument "path" must be a string, got the number 5`},
		{name: "boolean not coerced", in: `{"path":"/a","all":"true"}`, wantError: `argument "all" must be a boolean, got the string "true"`},
		{name: "array not coerced", in: `{"path":"/a","limit":["5"]}`, wantError: `argument "limit" must be an integer, got an array`},
	}
	for _, c := range cases {
		for _, s := range []*Schema{flat, &general} {
			t.Run(c.name+"/flat="+map[bool]string{true: "yes", false: "no"}[s.flat], func(t *testing.T) {
				var dst flatArgs
				err := DecodeArgs(s, json.RawMessage(c.in), &dst)
				if c.wantError != "" {
					want := c.wantError
					if !s.flat { // the general validator words bounds its own way
						want = want[:strings.Index(want, `" `)+1]
					}
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("error %v, want %q", err, c.wantError)
					}
					return
				}
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if dst.Path != "/a" || !reflect.DeepEqual(dst.Limit, c.limit) || !reflect.DeepEqual(dst.Ratio, c.ratio) {
					t.Errorf("decoded %+v (limit %v, ratio %v)", dst, dst.Limit, dst.Ratio)
				}
			})
		}
	}
	// The general validator sees the coerced value too.
	v := map[string]any{"path": "/a", "limit": "42"}
	if err := flat.Validate(v); err != nil || v["limit"] != 42.0 {
		t.Errorf("Validate left %v (%v)", v["limit"], err)
	}
	// Other values of the call are passed on byte for byte.
	var big struct {
		Path  string `json:"path"`
		Limit int64  `json:"limit"`
	}
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"},"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var anyDst map[string]any
	if err := DecodeArgs(s, json.RawMessage(`{"path":"/a","limit":"3","n":"4"}`), &anyDst); err != nil || anyDst["limit"] != 3.0 || anyDst["n"] != 4.0 {
		t.Errorf("map decode = %v, %v", anyDst, err)
	}
	if err := DecodeArgs(s, json.RawMessage(`{"path":"/a","limit":"9007199254740993"}`), &big); err != nil || big.Limit != 9007199254740993 {
		t.Errorf("big integer string decoded as %d, %v", big.Limit, err)
	}
}

const nestedSchema = `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}},` +
	`"opt":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},"required":["items"]}`

func TestDecodeArgsNestedFallsBackToFullValidation(t *testing.T) {
	s, err := CompileSchema([]byte(nestedSchema))
	if err != nil {
		t.Fatal(err)
	}
	if s.flat {
		t.Fatal("nested schema must use the general validator")
	}
	var v any
	if err := DecodeArgs(s, json.RawMessage(`{"items":["a",2]}`), &v); err == nil || !strings.Contains(err.Error(), `argument "items[]" is invalid`) {
		t.Errorf("nested item error = %v", err)
	}
	if err := DecodeArgs(s, json.RawMessage(`{"items":[],"opt":{}}`), &v); err == nil || !strings.Contains(err.Error(), "n") {
		t.Errorf("nested required error = %v", err)
	}
	if err := DecodeArgs(s, json.RawMessage(`{"items":["a"],"opt":{"n":1},"extra":true}`), &v); err != nil {
		t.Errorf("additional properties are allowed when the schema allows them: %v", err)
	}
}

type greetIn struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times int    `json:"times,omitempty" jsonschema:"how often"`
}

func TestFuncInfersSchemaAndConvertsOutput(t *testing.T) {
	tl, err := Func("greet", "Greets.", func(_ context.Context, _ *Env, in greetIn) (map[string]any, error) {
		if in.Name == "boom" {
			return nil, errors.New("no")
		}
		return map[string]any{"hello": in.Name, "times": in.Times}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := tl.Spec()
	if !strings.Contains(string(spec.Parameters), `"name":{"type":"string","description":"who to greet"}`) ||
		!strings.Contains(string(spec.Parameters), `"required":["name"]`) {
		t.Errorf("inferred schema = %s", spec.Parameters)
	}
	res, err := tl.Run(t.Context(), &Env{}, json.RawMessage(`{"name":"ada","times":2}`))
	if err != nil || res.Content != `{"hello":"ada","times":2}` || string(res.Structured) != res.Content {
		t.Errorf("result %+v, %v", res, err)
	}
	res, err = tl.Run(t.Context(), &Env{}, json.RawMessage(`{"times":2}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "Invalid arguments for greet: missing required argument \"name\"") {
		t.Errorf("bad call = %+v, %v", res, err)
	}
	if _, err := tl.Run(t.Context(), &Env{}, json.RawMessage(`{"name":"boom"}`)); err == nil {
		t.Error("the function's error must come back as a Go error for the loop to answer")
	}
	if _, err := Func[greetIn, string]("", "x", nil); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := Func("x", "x", func(context.Context, *Env, greetIn) (string, error) { return "", nil }, WithSchema(json.RawMessage(`{"type":`))); err == nil {
		t.Error("broken schema accepted")
	}
}

func TestFatal(t *testing.T) {
	err := Fatal(errors.New("gone"))
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "gone") {
		t.Errorf("Fatal = %v", err)
	}
}

// FuzzDecodeArgs: no input panics, and the fast path for flat schemas
// accepts exactly what the general JSON-schema validator accepts.
func FuzzDecodeArgs(f *testing.F) {
	for _, seed := range []string{`{"path":"/a"}`, `{"path":"/a","limit":3,"mode":"a"}`, `{"limit":0}`, `[]`, `null`,
		`{"path":"/a","ratio":-1}`, `{"path":"/a","name":"héé"}`, `{"path":"/a","mode":null}`, `{"path":"\u0000"}`, ``, `{`,
		`{"path":"/a","limit":"5"}`, `{"path":"/a","limit":" 7 "}`, `{"path":"/a","limit":"5.5"}`, `{"path":"/a","limit":"1e2"}`,
		`{"path":"/a","limit":"0x10"}`, `{"path":"/a","limit":"501"}`, `{"path":"/a","ratio":"0.5"}`, `{"path":"/a","limit":"1e400"}`,
		`{"path":"5","limit":"-0"}`, `{"path":"/a","all":"1"}`, `{"path":"/a","mode":"1"}`} {
		f.Add(seed)
	}
	s, err := CompileSchema([]byte(flatSchema))
	if err != nil {
		f.Fatal(err)
	}
	general := *s
	general.flat = false
	f.Fuzz(func(t *testing.T, in string) {
		var dst flatArgs
		fastErr := DecodeArgs(s, json.RawMessage(in), &dst)
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		obj, isObj := v.(map[string]any)
		if !isObj {
			return
		}
		for k, val := range obj { // optional nulls mean "not given"
			if val == nil && k != "path" {
				delete(obj, k)
			}
		}
		// Both paths coerce number strings first; then the fast path must
		// agree with the general validator, and so must DecodeArgs through
		// the general path.
		s.coerce(obj)
		var viaGeneral flatArgs
		generalErr := DecodeArgs(&general, json.RawMessage(in), &viaGeneral)
		if (generalErr == nil) != (fastErr == nil) {
			t.Fatalf("%s: fast path %v, general path %v", in, fastErr, generalErr)
		}
		if fastErr == nil && !reflect.DeepEqual(dst, viaGeneral) {
			t.Fatalf("%s: fast path decoded %+v, general path %+v", in, dst, viaGeneral)
		}
		fullErr := s.resolved.Validate(v)
		// Null for an optional property is accepted by both only when its
		// type allows null; the fast path must agree with the validator.
		if (fullErr == nil) != (fastErr == nil) {
			if fastErr != nil && strings.Contains(fastErr.Error(), "do not fit") {
				return // the Go struct cannot hold a value the schema allows
			}
			t.Fatalf("%s: fast path %v, validator %v", in, fastErr, fullErr)
		}
	})
}
