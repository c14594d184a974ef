package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepagents-go/deepagents/tool"
)

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return b.String()
}

func TestStrictSchemaCases(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"optional becomes nullable, order kept",
			`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer","description":"<n> & m"}},"required":["z"]}`,
			`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":["integer","null"],"description":"<n> & m"}},"required":["z","a"],"additionalProperties":false}`},
		{"names are not HTML-escaped",
			`{"type":"object","properties":{"a<&>b":{"type":"string"}}}`,
			`{"type":"object","properties":{"a<&>b":{"type":["string","null"]}},"required":["a<&>b"],"additionalProperties":false}`},
		{"nested objects and arrays",
			`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"n":{"type":"number"}},"required":["id"]}},"meta":{"type":"object","properties":{"k":{"type":"string"}}}},"required":["items","meta"]}`,
			`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"n":{"type":["number","null"]}},"required":["id","n"],"additionalProperties":false}},"meta":{"type":"object","properties":{"k":{"type":["string","null"]}},"required":["k"],"additionalProperties":false}},"required":["items","meta"],"additionalProperties":false}`},
		{"optional object is nullable and strict",
			`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]}}}`,
			`{"type":"object","properties":{"o":{"type":["object","null"],"properties":{"x":{"type":"boolean"}},"required":["x"],"additionalProperties":false}},"required":["o"],"additionalProperties":false}`},
		{"enum gains null",
			`{"type":"object","properties":{"c":{"type":"string","enum":["red","blue"]},"d":{"enum":[1,2]}}}`,
			`{"type":"object","properties":{"c":{"type":["string","null"],"enum":["red","blue",null]},"d":{"enum":[1,2,null]}},"required":["c","d"],"additionalProperties":false}`},
		{"const and ref are wrapped",
			`{"type":"object","properties":{"k":{"const":"x"},"r":{"$ref":"#/$defs/Item"}},"$defs":{"Item":{"type":"object","properties":{"v":{"type":"string"}}}}}`,
			`{"type":"object","properties":{"k":{"anyOf":[{"const":"x"},{"type":"null"}]},"r":{"anyOf":[{"$ref":"#/$defs/Item"},{"type":"null"}]}},"$defs":{"Item":{"type":"object","properties":{"v":{"type":["string","null"]}},"required":["v"],"additionalProperties":false}},"required":["k","r"],"additionalProperties":false}`},
		{"anyOf gains a null member; oneOf becomes anyOf",
			`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}]},"w":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["w"]}`,
			`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"null"}]},"w":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"required":["u","w"],"additionalProperties":false}`},
		{"already nullable and unconstrained schemas are left alone",
			`{"type":"object","properties":{"n":{"type":["string","null"]},"any":{},"t":true,"an":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
			`{"type":"object","properties":{"n":{"type":["string","null"]},"any":{},"t":true,"an":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["n","any","t","an"],"additionalProperties":false}`},
		{"maps are closed, empty objects get empty required",
			`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}},"required":["m"]}`,
			`{"type":"object","properties":{"m":{"type":"object","additionalProperties":false,"required":[]}},"required":["m"],"additionalProperties":false}`},
		{"properties without type count as an object; stale required entries go",
			`{"properties":{"a":{"type":"string"}},"required":["a","gone"],"additionalProperties":true}`,
			`{"properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`},
		{"tuple items, prefixItems, allOf and definitions are visited",
			`{"type":"object","properties":{"t":{"type":"array","items":[{"type":"object","properties":{"a":{"type":"string"}}}]},"p":{"type":"array","prefixItems":[{"type":"object","properties":{"b":{"type":"string"}}}]},"all":{"allOf":[{"type":"object","properties":{"c":{"type":"string"}}}]}},"definitions":{"D":{"type":"object","properties":{"d":{"type":"string"}}}},"required":["t","p","all"]}`,
			`{"type":"object","properties":{"t":{"type":"array","items":[{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"],"additionalProperties":false}]},"p":{"type":"array","prefixItems":[{"type":"object","properties":{"b":{"type":["string","null"]}},"required":["b"],"additionalProperties":false}]},"all":{"allOf":[{"type":"object","properties":{"c":{"type":["string","null"]}},"required":["c"],"additionalProperties":false}]}},"definitions":{"D":{"type":"object","properties":{"d":{"type":["string","null"]}},"required":["d"],"additionalProperties":false}},"required":["t","p","all"],"additionalProperties":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StrictSchema([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != compact(t, tc.want) {
				t.Fatalf("\n got %s\nwant %s", got, compact(t, tc.want))
			}
			again, err := StrictSchema(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent:\n%s\n%s", got, again)
			}
			checkStrict(t, got)
			var s jsonschema.Schema
			if err := json.Unmarshal(got, &s); err != nil {
				t.Fatalf("not a JSON schema: %v", err)
			}
			if _, err := s.Resolve(nil); err != nil {
				t.Fatalf("does not resolve: %v", err)
			}
		})
	}
}

func TestStrictSchemaErrors(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{`, `{"a":1} {}`, `{"a":}`, strings.Repeat(`{"a":`, 300) + `1` + strings.Repeat(`}`, 300)} {
		if out, err := StrictSchema([]byte(in)); err == nil {
			t.Errorf("StrictSchema(%.40q) = %s, want an error", in, out)
		}
	}
}

// checkStrict asserts the strict-mode rules on every object schema in raw.
func checkStrict(t *testing.T, raw []byte) {
	t.Helper()
	n, err := parseNode(raw, 4*maxSchemaDepth)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		if n.kind != kindObject {
			return
		}
		if isObjectSchema(n) {
			if ap := n.get("additionalProperties"); ap == nil || string(ap.value) != "false" {
				t.Errorf("%s: additionalProperties is not false", path)
			}
			req := n.get("required")
			props := n.get("properties")
			var names []string
			if props != nil {
				names = props.keys
			}
			if req == nil || len(req.vals) != len(names) {
				t.Errorf("%s: required does not list every property", path)
			} else {
				for i, v := range req.vals {
					if s, _ := v.str(); s != names[i] {
						t.Errorf("%s: required[%d] = %s, want %q", path, i, v.value, names[i])
					}
				}
			}
		}
		for _, k := range schemaMaps {
			if m := n.get(k); m != nil && m.kind == kindObject {
				for i, v := range m.vals {
					walk(v, path+"/"+k+"/"+m.keys[i])
				}
			}
		}
		for _, k := range append(schemaLists, "items") {
			if l := n.get(k); l != nil {
				if l.kind == kindArray {
					for _, v := range l.vals {
						walk(v, path+"/"+k)
					}
				} else {
					walk(l, path+"/"+k)
				}
			}
		}
	}
	walk(n, "#")
}

// The strict schema still accepts what the original accepted (with
// omitted optionals sent as null), and now rejects omissions and extras.
func TestStrictSchemaSemantics(t *testing.T) {
	type Address struct {
		Street string `json:"street"`
		City   string `json:"city,omitempty"`
	}
	type Person struct {
		Name    string    `json:"name"`
		Age     int       `json:"age,omitempty"`
		Tags    []string  `json:"tags,omitempty"`
		Home    *Address  `json:"home,omitempty"`
		Friends []Address `json:"friends"`
	}
	s, err := tool.SchemaFor[Person]()
	if err != nil {
		t.Fatal(err)
	}
	strict, err := StrictSchema(s.Raw())
	if err != nil {
		t.Fatal(err)
	}
	checkStrict(t, strict)
	var js jsonschema.Schema
	if err := json.Unmarshal(strict, &js); err != nil {
		t.Fatal(err)
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	valid := func(doc string) error {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		return rs.Validate(v)
	}
	for _, ok := range []string{
		`{"name":"a","age":3,"tags":["x"],"home":{"street":"s","city":"c"},"friends":[]}`,
		`{"name":"a","age":null,"tags":null,"home":null,"friends":[{"street":"s","city":null}]}`,
	} {
		if err := valid(ok); err != nil {
			t.Errorf("%s rejected: %v\nschema %s", ok, err, strict)
		}
	}
	for _, bad := range []string{
		`{"name":"a","friends":[]}`, // optionals must be sent, as null
		`{"name":"a","age":null,"tags":null,"home":null,"friends":[],"extra":1}`,
		`{"name":"a","age":null,"tags":null,"home":{"street":"s","city":null,"zip":"1"},"friends":[]}`,
		`{"name":null,"age":null,"tags":null,"home":null,"friends":[]}`, // required stays non-null
	} {
		if err := valid(bad); err == nil {
			t.Errorf("%s accepted\nschema %s", bad, strict)
		}
	}
}

// Nullable wrappers can make the output deeper than the input; feeding it
// back in (with room for that) must still be a no-op. Found by fuzzing.
func TestStrictSchemaDeepOutput(t *testing.T) {
	in := strings.Repeat(`{"const":1,"properties":{"a":`, 100) + `{}` + strings.Repeat(`}}`, 100)
	out, err := StrictSchema([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	again, err := strictSchema(out, 4*maxSchemaDepth)
	if err != nil || string(again) != string(out) {
		t.Fatalf("not idempotent: %v", err)
	}
	checkStrict(t, out)
}
