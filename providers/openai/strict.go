package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxSchemaDepth bounds the nesting StrictSchema accepts.
const maxSchemaDepth = 256

// StrictSchema rewrites a JSON schema into the form OpenAI's strict
// structured outputs accept, keeping property order and every keyword it
// does not need to change:
//
//   - every object schema lists all of its properties in "required" and gets
//     "additionalProperties": false;
//   - a property that was optional becomes nullable instead ("type": [T,
//     "null"], a null member added to "anyOf" or "enum", or, for $ref and
//     other shapes, "anyOf": [schema, {"type": "null"}]), so the model can
//     still leave it out by sending null;
//   - "oneOf" becomes "anyOf", which is all strict mode supports.
//
// The pass recurses through properties, items, prefixItems, anyOf, oneOf,
// allOf, $defs and definitions. Objects used as maps (additionalProperties
// with a schema) cannot be expressed in strict mode and end up closed.
func StrictSchema(schema []byte) ([]byte, error) {
	return strictSchema(schema, maxSchemaDepth)
}

// strictSchema is StrictSchema with a nesting limit. The output can be
// nested up to twice as deep as the input (nullable wrappers), so a check
// that feeds an output back in needs a higher limit.
func strictSchema(schema []byte, maxDepth int) ([]byte, error) {
	n, err := parseNode(schema, maxDepth)
	if err != nil {
		return nil, err
	}
	if n.kind != kindObject {
		return nil, errors.New("the schema is not a JSON object")
	}
	strictify(n)
	var buf bytes.Buffer
	n.write(&buf)
	return buf.Bytes(), nil
}

type nodeKind int

const (
	kindScalar nodeKind = iota
	kindObject
	kindArray
)

// node is a JSON value that remembers the order of object keys.
type node struct {
	kind  nodeKind
	keys  []string // object
	vals  []*node  // object values, or array elements
	value []byte   // scalar, compacted
}

// parseNode parses raw in one pass, refusing containers nested deeper than
// maxDepth.
func parseNode(raw []byte, maxDepth int) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers as written
	n, err := parseValue(dec, maxDepth)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder, maxDepth int) (*node, error) {
	t, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("the JSON value ends too early")
	}
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case json.Delim:
		if maxDepth <= 0 {
			return nil, errors.New("the schema is nested too deeply")
		}
		n := &node{kind: kindArray}
		if v == '{' {
			n.kind = kindObject
		}
		for dec.More() {
			key := ""
			if n.kind == kindObject {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				key = k
			}
			child, err := parseValue(dec, maxDepth-1)
			if err != nil {
				return nil, err
			}
			if n.kind == kindObject {
				n.set(key, child) // a repeated key keeps its last value, like encoding/json
			} else {
				n.vals = append(n.vals, child)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		var buf bytes.Buffer
		writeString(&buf, v)
		return &node{kind: kindScalar, value: buf.Bytes()}, nil
	case json.Number:
		return &node{kind: kindScalar, value: []byte(v)}, nil
	case bool:
		return scalarNode(v), nil
	case nil:
		return scalarNode(nil), nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}

// scalarNode encodes a string, bool or nil the way parsed scalars are
// written (no HTML escaping), so that a second pass changes nothing.
func scalarNode(v any) *node {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return &node{kind: kindScalar, value: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}
}

func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

func (n *node) set(key string, v *node) {
	for i, k := range n.keys {
		if k == key {
			n.vals[i] = v
			return
		}
	}
	n.keys = append(n.keys, key)
	n.vals = append(n.vals, v)
}

func (n *node) rename(from, to string) {
	for i, k := range n.keys {
		if k == from {
			n.keys[i] = to
			return
		}
	}
}

// str returns the node's value if it is a JSON string.
func (n *node) str() (string, bool) {
	if n == nil || n.kind != kindScalar || len(n.value) == 0 || n.value[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(n.value, &s) != nil {
		return "", false
	}
	return s, true
}

func (n *node) isNull() bool { return n != nil && n.kind == kindScalar && string(n.value) == "null" }

func (n *node) write(buf *bytes.Buffer) {
	switch n.kind {
	case kindScalar:
		buf.Write(n.value)
	case kindArray:
		buf.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				buf.WriteByte(',')
			}
			v.write(buf)
		}
		buf.WriteByte(']')
	case kindObject:
		buf.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			n.vals[i].write(buf)
		}
		buf.WriteByte('}')
	}
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	buf.Truncate(buf.Len() - 1) // Encode's newline
}

// schemaMaps are keywords whose value maps names to subschemas.
var schemaMaps = []string{"properties", "$defs", "definitions"}

// schemaLists are keywords whose value is a list of subschemas.
var schemaLists = []string{"anyOf", "oneOf", "allOf", "prefixItems"}

// strictify rewrites the schema n in place (see StrictSchema).
func strictify(n *node) {
	if n == nil || n.kind != kindObject {
		return // boolean schemas and garbage are left alone
	}
	for _, k := range schemaMaps {
		if m := n.get(k); m != nil && m.kind == kindObject {
			for _, v := range m.vals {
				strictify(v)
			}
		}
	}
	for _, k := range schemaLists {
		if l := n.get(k); l != nil && l.kind == kindArray {
			for _, v := range l.vals {
				strictify(v)
			}
		}
	}
	if items := n.get("items"); items != nil {
		switch items.kind {
		case kindObject:
			strictify(items)
		case kindArray: // draft-04 tuple form
			for _, v := range items.vals {
				strictify(v)
			}
		}
	}
	if n.get("oneOf") != nil && n.get("anyOf") == nil {
		n.rename("oneOf", "anyOf")
	}
	if !isObjectSchema(n) {
		return
	}

	required := map[string]bool{}
	if r := n.get("required"); r != nil && r.kind == kindArray {
		for _, v := range r.vals {
			if s, ok := v.str(); ok {
				required[s] = true
			}
		}
	}
	all := &node{kind: kindArray}
	if props := n.get("properties"); props != nil && props.kind == kindObject {
		for i, k := range props.keys {
			if !required[k] {
				props.vals[i] = nullable(props.vals[i])
			}
			all.vals = append(all.vals, scalarNode(k))
		}
	}
	n.set("required", all)
	n.set("additionalProperties", scalarNode(false))
}

// isObjectSchema reports whether n describes objects.
func isObjectSchema(n *node) bool {
	t := n.get("type")
	if t == nil {
		return n.get("properties") != nil
	}
	if s, ok := t.str(); ok {
		return s == "object"
	}
	if t.kind == kindArray {
		for _, v := range t.vals {
			if s, ok := v.str(); ok && s == "object" {
				return true
			}
		}
	}
	return false
}

// nullable returns a schema that also accepts null.
func nullable(n *node) *node {
	if n == nil || n.kind != kindObject || allowsNull(n) {
		return n
	}
	if n.get("$ref") != nil || n.get("const") != nil {
		return wrapNullable(n)
	}
	t := n.get("type")
	if t == nil {
		if l := n.get("anyOf"); l != nil && l.kind == kindArray {
			l.vals = append(l.vals, nullSchema())
			return n
		}
		if e := n.get("enum"); e != nil && e.kind == kindArray {
			e.vals = append(e.vals, scalarNode(nil))
			return n
		}
		return wrapNullable(n)
	}
	if s, ok := t.str(); ok {
		n.set("type", &node{kind: kindArray, vals: []*node{scalarNode(s), scalarNode("null")}})
	} else if t.kind == kindArray {
		t.vals = append(t.vals, scalarNode("null"))
	} else {
		return wrapNullable(n)
	}
	if e := n.get("enum"); e != nil && e.kind == kindArray {
		e.vals = append(e.vals, scalarNode(nil))
	}
	return n
}

// allowsNull reports whether n visibly accepts null already, or constrains
// nothing at all.
func allowsNull(n *node) bool {
	if t := n.get("type"); t != nil {
		if s, ok := t.str(); ok {
			return s == "null"
		}
		if t.kind == kindArray {
			for _, v := range t.vals {
				if s, ok := v.str(); ok && s == "null" {
					return true
				}
			}
		}
		return false
	}
	if l := n.get("anyOf"); l != nil && l.kind == kindArray {
		for _, v := range l.vals {
			if v.kind == kindObject && allowsNull(v) {
				return true
			}
		}
		return false
	}
	if e := n.get("enum"); e != nil && e.kind == kindArray {
		for _, v := range e.vals {
			if v.isNull() {
				return true
			}
		}
		return false
	}
	if c := n.get("const"); c != nil {
		return c.isNull()
	}
	for _, k := range []string{"$ref", "allOf", "oneOf", "not", "properties", "items"} {
		if n.get(k) != nil {
			return false
		}
	}
	return true // {} or only annotations: anything goes
}

func nullSchema() *node {
	return &node{kind: kindObject, keys: []string{"type"}, vals: []*node{scalarNode("null")}}
}

func wrapNullable(n *node) *node {
	return &node{kind: kindObject, keys: []string{"anyOf"},
		vals: []*node{{kind: kindArray, vals: []*node{n, nullSchema()}}}}
}
