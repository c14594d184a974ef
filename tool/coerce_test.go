package tool

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// nestedArgs has numbers inside objects and arrays.
type nestedArgs struct {
	Name  string   `json:"name"`
	Sizes []int    `json:"sizes,omitempty"`
	Box   *box     `json:"box,omitempty"`
	Boxes []box    `json:"boxes,omitempty"`
	Pair  []any    `json:"pair,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

type box struct {
	W     int     `json:"w"`
	Ratio float64 `json:"ratio,omitempty"`
	Label string  `json:"label,omitempty"`
}

const coerceSchema = `{"type":"object","properties":{
	"name":{"type":"string"},
	"sizes":{"type":"array","items":{"type":"integer"}},
	"box":{"type":"object","properties":{"w":{"type":"integer"},"ratio":{"type":"number"},"label":{"type":"string"}},"required":["w"]},
	"boxes":{"type":"array","items":{"type":"object","properties":{"w":{"type":"integer"},"ratio":{"type":"number"},"label":{"type":"string"}},"required":["w"]}},
	"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]},
	"tags":{"type":"array","items":{"type":"string"}}
},"required":["name"]}`

// Numbers sent as strings are taken as numbers inside objects and arrays
// too, where the schema wants one; strings the schema wants stay strings,
// and the other values are passed on as sent.
func TestDecodeArgsCoercesNestedNumberStrings(t *testing.T) {
	s, err := CompileSchema([]byte(coerceSchema))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, in  string
		want      nestedArgs
		wantError string
	}{
		{name: "array items", in: `{"name":"a","sizes":["1"," 2 ",3,"4e1"]}`, want: nestedArgs{Name: "a", Sizes: []int{1, 2, 3, 40}}},
		{name: "object property", in: `{"name":"a","box":{"w":"7","ratio":"0.5","label":"12"}}`, want: nestedArgs{Name: "a", Box: &box{W: 7, Ratio: 0.5, Label: "12"}}},
		{name: "objects in an array", in: `{"name":"a","boxes":[{"w":"1"},{"w":2,"ratio":"1.5"}]}`, want: nestedArgs{Name: "a", Boxes: []box{{W: 1}, {W: 2, Ratio: 1.5}}}},
		{name: "prefix items", in: `{"name":"5","pair":["5","6"]}`, want: nestedArgs{Name: "5", Pair: []any{"5", 6.0}}},
		{name: "strings stay strings", in: `{"name":"a","tags":["1","2"]}`, want: nestedArgs{Name: "a", Tags: []string{"1", "2"}}},
		{name: "not a number", in: `{"name":"a","sizes":["x"]}`, wantError: `has type "string", want "integer"`},
		{name: "fraction for an integer", in: `{"name":"a","box":{"w":"1.5"}}`, wantError: `has type "string", want "integer"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got nestedArgs
			err := DecodeArgs(s, json.RawMessage(c.in), &got)
			if c.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantError) {
					t.Fatalf("error %v, want one containing %q", err, c.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decoded %+v, want %+v", got, c.want)
			}
		})
	}
	// Values beside a coerced one keep their exact text (an integer too
	// large for a float64 is not rounded).
	big, err := CompileSchema([]byte(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}},"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var dst struct {
		A []int64 `json:"a"`
		N int64   `json:"n"`
	}
	if err := DecodeArgs(big, json.RawMessage(`{"a":["3",9007199254740993],"n":9007199254740995}`), &dst); err != nil {
		t.Fatal(err)
	}
	if dst.A[0] != 3 || dst.A[1] != 9007199254740993 || dst.N != 9007199254740995 {
		t.Errorf("decoded %+v", dst)
	}
}

// Many coerced values in one array cost one pass over it.
func TestCoercionOfManyValues(t *testing.T) {
	s, err := CompileSchema([]byte(coerceSchema))
	if err != nil {
		t.Fatal(err)
	}
	in := `{"name":"a","sizes":[` + strings.TrimSuffix(strings.Repeat(`"1",`, 20000), ",") + `]}`
	var got nestedArgs
	allocs := testing.AllocsPerRun(1, func() {
		if err := DecodeArgs(s, json.RawMessage(in), &got); err != nil {
			t.Fatal(err)
		}
	})
	if len(got.Sizes) != 20000 || got.Sizes[19999] != 1 {
		t.Fatalf("decoded %d sizes", len(got.Sizes))
	}
	// A pass per value would decode the array 20,000 times.
	if allocs > 400_000 {
		t.Errorf("%v allocations", allocs)
	}
}

// FuzzNestedCoercion: whatever the arguments, decoding into a struct and
// into a map agree, and a success means every number string the schema
// wanted as a number was taken as one.
func FuzzNestedCoercion(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","sizes":["1",2]}`,
		`{"name":"a","box":{"w":"7","ratio":"0.5"}}`,
		`{"name":"a","boxes":[{"w":"1"},{"w":2}]}`,
		`{"name":"a","pair":["x","3"]}`,
		`{"name":"a","sizes":["1","1"],"sizes":["2"]}`,
		`{"name":"a","box":{"w":"1","w":"2"}}`,
	} {
		f.Add(seed)
	}
	s, err := CompileSchema([]byte(coerceSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var v any
		if json.Unmarshal([]byte(in), &v) == nil && foldedKey(v, 0) {
			// Go's decoder matches "siZes" to the field sizes; the schema
			// (and so coercion) does not. Such inputs are not compared.
			return
		}
		var st nestedArgs
		errStruct := DecodeArgs(s, json.RawMessage(in), &st)
		var m map[string]any
		errMap := DecodeArgs(s, json.RawMessage(in), &m)
		if (errStruct == nil) != (errMap == nil) {
			if errStruct != nil && strings.Contains(errStruct.Error(), "do not fit") {
				return // the Go struct cannot hold a value the schema allows
			}
			t.Fatalf("%s: struct %v, map %v", in, errStruct, errMap)
		}
		if errStruct != nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var again nestedArgs
		if err := json.Unmarshal(b, &again); err != nil {
			return // a value the struct cannot hold
		}
		if !reflect.DeepEqual(st, again) {
			t.Fatalf("%s: struct %+v, map %+v", in, st, again)
		}
	})
}

// foldedKey says whether v holds an object key that differs from one of
// nestedArgs' JSON names only in case.
func foldedKey(v any, depth int) bool {
	if depth > 64 {
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		for k, el := range v {
			for _, n := range []string{"name", "sizes", "box", "boxes", "pair", "tags", "w", "ratio", "label"} {
				if k != n && strings.EqualFold(k, n) {
					return true
				}
			}
			if foldedKey(el, depth+1) {
				return true
			}
		}
	case []any:
		for _, el := range v {
			if foldedKey(el, depth+1) {
				return true
			}
		}
	}
	return false
}
