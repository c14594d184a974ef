package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
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

// FuzzResponsesStream feeds arbitrary Responses API events (one JSON event a
// line) to the stream assembler: it must not panic, every function call must
// get exactly one start event with increasing indexes, and a terminal event
// must give a response with as many tool calls as starts when the output
// came from the finished items.
func FuzzResponsesStream(f *testing.F) {
	f.Add(`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1"}}
{"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"think"}
{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"gAAA"}}
{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"c1","name":"f"}}
{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"a\":1}"}
{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}}
{"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":4,"output_tokens_details":{"reasoning_tokens":2}}}}`)
	f.Add(`{"type":"response.output_text.delta","output_index":0,"delta":"hi"}
{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}}`)
	f.Add(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`)
	f.Add(`{"type":"error","code":"rate_limit_exceeded","message":"slow down"}`)
	f.Add(`{"type":"response.completed","response":{"output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]},{"type":"function_call","arguments":{"x":1}}]}}`)
	m := &Model{provider: "openai"}
	f.Fuzz(func(t *testing.T, lines string) {
		var st rStream
		starts := 0
		for line := range strings.SplitSeq(lines, "\n") {
			evs, err := st.add(m, []byte(line))
			if err != nil {
				var ae *llm.APIError
				if !errors.As(err, &ae) || ae.Message == "" {
					t.Fatalf("error without a message: %v", err)
				}
				continue
			}
			for _, ev := range evs {
				if ev.Type == llm.EventToolCallStart {
					if ev.Index != starts {
						t.Fatalf("start index %d, want %d", ev.Index, starts)
					}
					starts++
				}
			}
			if st.terminal {
				break
			}
		}
		if !st.terminal {
			return
		}
		fromItems := st.final == nil || len(st.final.Output) == 0
		resp, err := st.response(m)
		if err != nil {
			return
		}
		for _, p := range resp.Message.Parts {
			if p.Type == llm.PartReasoning && (p.Reasoning == nil || p.Reasoning.Provider != "openai") {
				t.Fatalf("reasoning part not marked as ours: %+v", p)
			}
		}
		if fromItems {
			calls := 0
			for _, it := range st.items {
				if it.Type == "function_call" {
					calls++
				}
			}
			if len(resp.Message.ToolCalls) != calls {
				t.Fatalf("%d calls from %d function call items", len(resp.Message.ToolCalls), calls)
			}
		}
		if !json.Valid([]byte(mustMarshal(t, resp))) {
			t.Fatal("the response does not encode")
		}
	})
}

// FuzzImageURL checks that every image the adapter accepts is one the fake
// server, which checks images the way the API does, accepts too.
func FuzzImageURL(f *testing.F) {
	f.Add("image/png", []byte("\x89PNG"), "")
	f.Add("image/jpeg", []byte{}, "https://example.com/a.jpg")
	f.Add("IMAGE/WEBP ", []byte("RIFF"), "")
	f.Add("image/bmp", []byte("BM"), "")
	f.Add("", []byte(nil), "data:image/png;base64,AAAA")
	f.Add("image/gif", []byte("GIF89a"), "javascript:alert(1)")
	m := &Model{provider: "openai", cfg: Config{Model: "gpt-5"}}
	f.Fuzz(func(t *testing.T, mediaType string, data []byte, url string) {
		u, err := m.imageURL(&llm.Image{MediaType: mediaType, Data: data, URL: url})
		if err != nil {
			return
		}
		if url == "" && !strings.HasPrefix(u, "data:image/") {
			t.Fatalf("image bytes became %q", u)
		}
		if err := openaitest.CheckImageURL(u); err != nil {
			t.Fatalf("the adapter sent %q, which the API refuses: %v", u, err)
		}
	})
}

func mustMarshal(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
