package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/deepagents-go/deepagents/llm"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/; run a target with e.g.
// go test -fuzz=FuzzStrictSchema ./providers/openai/

func FuzzParseErrorBody(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"m","type":"t","code":"c"}}`))
	f.Add([]byte(`{"error":"text"}`))
	f.Add([]byte(`{"detail":[{"msg":"x"}]}`))
	f.Add([]byte(`<html>502</html>`))
	f.Add([]byte(`{"error":{"code":500}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, _, _ := parseErrorBody(body)
		if !json.Valid(bytes.TrimSpace(body)) && len(msg) > maxBodyMessage+len("…") {
			t.Fatalf("a non-JSON body became a %d-byte message", len(msg))
		}
	})
}

func FuzzStrictSchema(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/$defs/B"}},"required":["a"],"$defs":{"B":{"type":"object","properties":{"c":{"enum":[1,null]}}}}}`))
	f.Add([]byte(`{"properties":{"x":{"oneOf":[{"type":"string"},{"const":3}]}}}`))
	f.Add([]byte(`{"type":["object","null"],"properties":{"t":{"type":"array","items":[true,{"properties":{}}]}}}`))
	f.Add([]byte(`{"a":{"b":[1,2,{"c":"\u00e9<>"}]},"a":null}`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		out, err := StrictSchema(schema)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %s", schema, out)
		}
		var before, after any
		if json.Unmarshal(schema, &before) != nil {
			t.Fatalf("accepted invalid JSON %q", schema)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatal(err)
		}
		again, err := strictSchema(out, 4*maxSchemaDepth)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%s\n%s (%v)", out, again, err)
		}
		checkStrict(t, out)
	})
}

// FuzzStreamChunks feeds arbitrary chunk sequences (one JSON chunk a line)
// to the stream assembler: it must not panic, every tool call must get
// exactly one start event, and the final arguments must be the
// concatenation of the argument deltas.
func FuzzStreamChunks(f *testing.F) {
	f.Add(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"b","function":{"name":"g"}}]}}]}
{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`)
	f.Add(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f"}},{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`)
	f.Add(`{"choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"refusal":"no"}}]}`)
	f.Fuzz(func(t *testing.T, lines string) {
		var st streamState
		starts := 0
		args := map[int]*strings.Builder{}
		for line := range strings.SplitSeq(lines, "\n") {
			var c sdk.ChatCompletionChunk
			if json.Unmarshal([]byte(line), &c) != nil {
				continue
			}
			for _, ev := range st.add(&c) {
				switch ev.Type {
				case llm.EventToolCallStart:
					if ev.Index != starts {
						t.Fatalf("start index %d, want %d", ev.Index, starts)
					}
					starts++
					args[ev.Index] = &strings.Builder{}
				case llm.EventToolCallDelta:
					b := args[ev.Index]
					if b == nil {
						t.Fatalf("delta for unstarted call %d", ev.Index)
					}
					b.WriteString(ev.ArgsDelta)
				}
			}
		}
		resp := st.response()
		if len(resp.Message.ToolCalls) != starts {
			t.Fatalf("%d calls, %d starts", len(resp.Message.ToolCalls), starts)
		}
		for i, c := range resp.Message.ToolCalls {
			want := args[i].String()
			if want == "" {
				want = "{}"
			}
			if string(c.Args) != want {
				t.Fatalf("call %d args %q, deltas %q", i, c.Args, want)
			}
		}
	})
}
