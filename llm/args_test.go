package llm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestToolCallJSONKeepsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		wire       string // the encoded call
	}{
		{"valid", `{"path":"/a"}`, `{"id":"c1","name":"ls","args":{"path":"/a"}}`},
		{"valid spaced", `{ "n" : 1 }`, `{"id":"c1","name":"ls","args":{"n":1}}`},
		{"cut off", `{"path":"/a`, `{"id":"c1","name":"ls","args":"{\"path\":\"/a","args_invalid":true}`},
		{"two objects", `{}{}`, `{"id":"c1","name":"ls","args":"{}{}","args_invalid":true}`},
		{"blank", ` `, `{"id":"c1","name":"ls","args":" ","args_invalid":true}`},
		{"empty", ``, `{"id":"c1","name":"ls","args":null}`},
		{"a string", `"{"`, `{"id":"c1","name":"ls","args":"{"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := ToolCall{ID: "c1", Name: "ls", Args: json.RawMessage(tc.args)}
			b, err := json.Marshal(call)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(b) != tc.wire {
				t.Errorf("Marshal = %s, want %s", b, tc.wire)
			}
			var back ToolCall
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", b, err)
			}
			want := tc.args
			switch tc.name {
			case "valid spaced":
				want = `{"n":1}`
			case "empty":
				want = "null"
			}
			if string(back.Args) != want || back.ID != "c1" || back.Name != "ls" {
				t.Errorf("round trip gave %+v (args %q), want args %q", back, back.Args, want)
			}
		})
	}
}

// A transcript that holds a call cut off mid-arguments saves and loads:
// the whole conversation, not just the call.
func TestTranscriptWithCutOffCallSaves(t *testing.T) {
	msgs := []Message{
		User("go"),
		Assistant("", ToolCall{ID: "a", Name: "write_file", Args: json.RawMessage(`{"path":"/x","content":"hal`)},
			ToolCall{ID: "b", Name: "ls", Args: json.RawMessage(`{}`)}),
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatalf("saving the transcript: %v", err)
	}
	var back []Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := string(back[1].ToolCalls[0].Args); got != `{"path":"/x","content":"hal` {
		t.Errorf("cut-off args came back as %q", got)
	}
	if got := string(back[1].ToolCalls[1].Args); got != `{}` {
		t.Errorf("valid args came back as %q", got)
	}
	ev := StreamEvent{Type: EventToolCallStart, ToolCall: &msgs[1].ToolCalls[0]}
	if _, err := json.Marshal(ev); err != nil {
		t.Errorf("a stream event with bad args: %v", err)
	}
}

func TestArgsValid(t *testing.T) {
	for in, want := range map[string]bool{`{}`: true, `[1]`: true, ``: false, `{`: false, "\"\xff\"": false} {
		if got := ArgsValid(json.RawMessage(in)); got != want {
			t.Errorf("ArgsValid(%q) = %v", in, got)
		}
	}
}

// FuzzToolCallRoundTrip: any arguments marshal without error, the output is
// valid JSON, it unmarshals, a second marshal gives the same bytes, and
// arguments that are valid UTF-8 come back unchanged (valid JSON up to
// insignificant spaces).
func FuzzToolCallRoundTrip(f *testing.F) {
	f.Add("c1", "ls", []byte(`{"path":"/"}`))
	f.Add("c2", "write_file", []byte(`{"content":"cut`))
	f.Add("", "", []byte(``))
	f.Add("x", "y", []byte(`"a string"`))
	f.Add("x", "y", []byte("\xff{}"))
	f.Add("x", "<&>", []byte(`{"html":"<b>&</b>"}`))
	f.Fuzz(func(t *testing.T, id, name string, args []byte) {
		call := ToolCall{ID: id, Name: name, Args: args}
		b, err := json.Marshal(call)
		if err != nil {
			t.Fatalf("Marshal(%q): %v", args, err)
		}
		if !json.Valid(b) {
			t.Fatalf("invalid JSON out: %s", b)
		}
		var back ToolCall
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		again, err := json.Marshal(back)
		if err != nil || !sameJSON(again, b) {
			t.Fatalf("not stable:\n%s\n%s (%v)", b, again, err)
		}
		if !utf8.Valid(args) || !utf8.ValidString(id) || !utf8.ValidString(name) {
			return
		}
		if back.ID != id || back.Name != name {
			t.Fatalf("id/name %q %q came back as %q %q", id, name, back.ID, back.Name)
		}
		switch {
		case len(args) == 0:
			if string(back.Args) != "null" {
				t.Fatalf("empty args came back as %q", back.Args)
			}
		case json.Valid(args):
			if !sameJSON(args, back.Args) {
				t.Fatalf("args %q came back as %q", args, back.Args)
			}
		default:
			if !bytes.Equal(back.Args, args) {
				t.Fatalf("bad args %q came back as %q", args, back.Args)
			}
		}
	})
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	decode := func(x []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// The encoder that writes a transcript decides about HTML escaping, for
// tool calls as for everything else.
func TestToolCallFollowsTheEncodersEscaping(t *testing.T) {
	call := ToolCall{ID: "c<1>", Name: "w", Args: json.RawMessage(`{"html":"<b>&</b>"}`)}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(call); err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"c<1>","name":"w","args":{"html":"<b>&</b>"}}` + "\n"; plain.String() != want {
		t.Errorf("without escaping: %s, want %s", plain.String(), want)
	}
	escaped, _ := json.Marshal(call)
	if want := `{"id":"c\u003c1\u003e","name":"w","args":{"html":"\u003cb\u003e\u0026\u003c/b\u003e"}}`; string(escaped) != want {
		t.Errorf("with escaping: %s, want %s", escaped, want)
	}
}
