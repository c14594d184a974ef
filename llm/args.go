package llm

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// EncodeArgs returns tool-call arguments as a value to embed in a JSON
// document. Valid JSON is returned as is. Anything else (a stream cut off
// mid-call, a model that wrote broken JSON) is returned as a JSON string
// holding the text, with invalid set, so that saving a transcript or an
// event never fails and never loses the call; DecodeArgs reverses it.
// Bytes that are not UTF-8 become U+FFFD. Empty arguments encode as null.
func EncodeArgs(args json.RawMessage) (value json.RawMessage, invalid bool) {
	if len(args) == 0 {
		return json.RawMessage("null"), false
	}
	if !utf8.Valid(args) {
		// Documents stay valid UTF-8: broken bytes become U+FFFD first.
		args = json.RawMessage(strings.ToValidUTF8(string(args), "\uFFFD"))
	}
	if json.Valid(args) {
		return args, false
	}
	b, _ := json.Marshal(string(args)) // a string always marshals
	return b, true
}

// DecodeArgs reverses EncodeArgs: with invalid set, value is the JSON
// string that holds the original text.
func DecodeArgs(value json.RawMessage, invalid bool) (json.RawMessage, error) {
	if !invalid {
		return value, nil
	}
	var s string
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, err
	}
	return json.RawMessage(s), nil
}

// ArgsValid reports whether tool-call arguments are a usable JSON text.
func ArgsValid(args json.RawMessage) bool {
	return len(args) > 0 && utf8.Valid(args) && json.Valid(args)
}

// toolCallJSON is the wire form of a ToolCall.
type toolCallJSON struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	ArgsInvalid bool            `json:"args_invalid,omitempty"`
}

// MarshalJSON writes the call with its arguments as JSON when they are
// valid, else as a string with "args_invalid": true. It never fails on bad
// arguments.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	v, invalid := EncodeArgs(c.Args)
	return MarshalPlain(toolCallJSON{ID: c.ID, Name: c.Name, Args: v, ArgsInvalid: invalid})
}

// MarshalPlain is json.Marshal without HTML escaping, for MarshalJSON
// methods: the encoder that calls them applies its own escaping setting to
// what they return, which it could not undo.
func MarshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w toolCallJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	args, err := DecodeArgs(w.Args, w.ArgsInvalid)
	if err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Name: w.Name, Args: args}
	return nil
}
