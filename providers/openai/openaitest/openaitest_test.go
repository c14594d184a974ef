package openaitest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

func client(s *Server) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(s.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
}

func params(msgs ...sdk.ChatCompletionMessageParamUnion) sdk.ChatCompletionNewParams {
	return sdk.ChatCompletionNewParams{Model: "m", Messages: msgs}
}

// The fake's wire format is checked with the SDK's own decoders and
// accumulator, not with the adapter under test.
func TestWireFormatMatchesTheSDK(t *testing.T) {
	rep := Reply{Content: "héllo wörld", ChunkSize: 2, ToolCalls: []Call{{ID: "c1", Name: "f", Args: `{"a":[1,2,3]}`}, {Name: "g", Args: `{}`}},
		Usage: &Usage{Prompt: 9, Completion: 4, Cached: 1}}
	s := NewServer(t, Sequence(rep, rep))
	c := client(s)
	ctx := context.Background()

	got, err := c.Chat.Completions.New(ctx, params(sdk.UserMessage("hi")))
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	if msg.Content != "héllo wörld" || len(msg.ToolCalls) != 2 || msg.ToolCalls[0].ID != "c1" || msg.ToolCalls[0].Function.Arguments != `{"a":[1,2,3]}` ||
		!strings.HasPrefix(msg.ToolCalls[1].ID, "call_") || got.Choices[0].FinishReason != "tool_calls" ||
		got.Usage.PromptTokens != 9 || got.Usage.PromptTokensDetails.CachedTokens != 1 {
		t.Fatalf("completion %s", got.RawJSON())
	}

	p := params(sdk.UserMessage("hi"))
	p.StreamOptions.IncludeUsage = sdk.Bool(true)
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	var acc sdk.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		chunks++
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 10 {
		t.Errorf("only %d chunks", chunks)
	}
	am := acc.Choices[0].Message
	if am.Content != "héllo wörld" || len(am.ToolCalls) != 2 || am.ToolCalls[0].Function.Arguments != `{"a":[1,2,3]}` ||
		am.ToolCalls[1].Function.Name != "g" || acc.Usage.CompletionTokens != 4 {
		t.Fatalf("accumulated %+v usage %+v", am, acc.Usage)
	}
}

func TestValidate(t *testing.T) {
	call := `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, true},
		{`{"model":"m","messages":[]}`, false},
		{`{"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"tool","tool_call_id":"c2","content":""}]}`, true},
		{`{"model":"m","messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"a"}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"user","content":"x"}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"a"}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"zz","content":"a"}]}`, false},
		{`{"model":"m","messages":[{"role":"assistant"}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"auto"}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":false}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"array"}}}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","parallel_tool_calls":false}`, true},
	} {
		r, err := decodeRequest([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(r); (err == nil) != tc.ok {
			t.Errorf("Validate(%s) = %v, want ok=%v", tc.body, err, tc.ok)
		}
	}
}

func TestScriptRouting(t *testing.T) {
	h := Script(
		Conversation{Match: HasTool("task"), Replies: []Reply{Text("parent 0"), Text("parent 1")}},
		Conversation{Match: FirstUserContains("alpha"), Replies: []Reply{Text("alpha 0")}},
		Conversation{Match: All(SystemContains("reviewer"), Not(FirstUserContains("alpha"))), Replies: []Reply{Text("review 0")}},
	)
	req := func(body string) *Request {
		r, err := decodeRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"task"}}]}`:                                                                     "parent 0",
		`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"x"},{"role":"user","content":"more"}],"tools":[{"type":"function","function":{"name":"task"}}]}`: "parent 1",
		`{"messages":[{"role":"user","content":[{"type":"text","text":"research alpha"}]}]}`:                                                                                         "alpha 0",
		`{"messages":[{"role":"system","content":"You are a reviewer."},{"role":"user","content":"check"}]}`:                                                                         "review 0",
	} {
		if got := h(req(body)); got.Content != want {
			t.Errorf("%s -> %+v, want %q", body, got, want)
		}
	}
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"nobody"}]}`,
		`{"messages":[{"role":"user","content":"alpha"},{"role":"assistant","content":"x"}]}`,
	} {
		if got := h(req(body)); got.Status != 400 || !strings.Contains(got.Error.Message, "openaitest:") {
			t.Errorf("%s -> %+v, want a 400 from the script", body, got)
		}
	}
}

func TestSequenceAndSplit(t *testing.T) {
	h := Sequence(Text("a"), Text("b"))
	var wg sync.WaitGroup
	results := make(chan string, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h(&Request{})
			results <- r.Content + "|" + func() string {
				if r.Error != nil {
					return "err"
				}
				return ""
			}()
		}()
	}
	wg.Wait()
	close(results)
	seen := map[string]int{}
	for r := range results {
		seen[r]++
	}
	if seen["a|"] != 1 || seen["b|"] != 1 || seen["|err"] != 1 {
		t.Fatalf("%v", seen)
	}
	for _, tc := range []struct {
		s    string
		size int
		want []string
	}{
		{"", 3, nil},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"éé", 1, []string{"é", "é"}},
	} {
		got := split(tc.s, tc.size)
		b1, _ := json.Marshal(got)
		b2, _ := json.Marshal(tc.want)
		if string(b1) != string(b2) {
			t.Errorf("split(%q, %d) = %s", tc.s, tc.size, b1)
		}
	}
}

// The Responses endpoint's wire format is checked with the SDK's own types:
// a response object, and a stream whose deltas add up to the completed
// response's output.
func TestResponsesWireFormatMatchesTheSDK(t *testing.T) {
	rep := Reply{Reasoning: "think first", Content: "héllo", ChunkSize: 2, ToolCalls: []Call{{ID: "c1", Name: "f", Args: `{"a":1}`}},
		Usage: &Usage{Prompt: 9, Completion: 4, Cached: 2, Reasoning: 3}}
	s := NewServer(t, Sequence(rep, rep))
	c := client(s)
	ctx := context.Background()
	p := responses.ResponseNewParams{
		Model:     "gpt-5",
		Input:     responses.ResponseNewParamsInputUnion{OfString: sdk.String("hi")},
		Include:   []responses.ResponseIncludable{"reasoning.encrypted_content"},
		Reasoning: shared.ReasoningParam{Effort: "high", Summary: "auto"},
		Store:     sdk.Bool(false),
	}
	got, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	check := func(r *responses.Response) {
		t.Helper()
		if len(r.Output) != 3 || r.Output[0].Type != "reasoning" || r.Output[1].Type != "message" || r.Output[2].Type != "function_call" {
			t.Fatalf("output %s", r.RawJSON())
		}
		rs := r.Output[0].AsReasoning()
		if rs.EncryptedContent == "" || len(rs.Summary) != 1 || rs.Summary[0].Text != "think first" {
			t.Errorf("reasoning %s", r.Output[0].RawJSON())
		}
		if r.OutputText() != "héllo" {
			t.Errorf("text %q", r.OutputText())
		}
		fc := r.Output[2].AsFunctionCall()
		if fc.CallID != "c1" || fc.Name != "f" || fc.Arguments != `{"a":1}` {
			t.Errorf("call %s", r.Output[2].RawJSON())
		}
		if r.Usage.InputTokens != 9 || r.Usage.InputTokensDetails.CachedTokens != 2 || r.Usage.OutputTokensDetails.ReasoningTokens != 3 {
			t.Errorf("usage %s", r.Usage.RawJSON())
		}
	}
	check(got)

	stream := c.Responses.NewStreaming(ctx, p)
	var text, reasoning, args strings.Builder
	var final *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.reasoning_summary_text.delta":
			reasoning.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			final = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if final == nil {
		t.Fatal("no response.completed event")
	}
	check(final)
	if text.String() != "héllo" || reasoning.String() != "think first" || args.String() != `{"a":1}` {
		t.Errorf("deltas %q %q %q", text.String(), reasoning.String(), args.String())
	}
}

// The Responses endpoint refuses what the API refuses, in its words.
func TestResponsesValidation(t *testing.T) {
	srv := NewServer(t, Sequence())
	cases := []struct {
		name, body, want string
	}{
		{"unknown parameter", `{"model":"m","input":"hi","stop":["x"]}`, "Unknown parameter: 'stop'."},
		{"no model", `{"input":"hi"}`, "Missing required parameter: 'model'."},
		{"unanswered call", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`, "No tool output found for function call c."},
		{"output without call", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c","output":"x"}]}`, "No tool call found for function call output with call_id c."},
		{"reasoning without content", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[]}]}`, "Item with id 'rs_1' not found."},
		{"reasoning not ours", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAforged"}]}`, "could not be verified"},
		{"bad image", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/tiff;base64,AAAA"}]}]}`, "unsupported MIME type 'image/tiff'"},
		{"image in a system message", `{"model":"m","input":[{"role":"system","content":[{"type":"input_image","image_url":"https://x/a.png"}]},{"role":"user","content":"hi"}]}`, "Invalid value: 'input_image'"},
		{"bad effort", `{"model":"m","input":"hi","reasoning":{"effort":"max"}}`, "Invalid value: 'max'."},
		{"effort on gpt-4.1", `{"model":"gpt-4.1","input":"hi","reasoning":{"effort":"low"}}`, "Unsupported parameter: 'reasoning.effort'"},
		{"temperature on o3", `{"model":"o3","input":"hi","temperature":0.2}`, "'temperature' does not support 0.2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/responses", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error Error `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 400 || !strings.Contains(e.Error.Message, tc.want) || e.Error.Type != "invalid_request_error" {
				t.Fatalf("%d %+v, want a 400 saying %q", resp.StatusCode, e.Error, tc.want)
			}
		})
	}
}

// The Chat Completions endpoint checks image parts and keeps images out of
// tool messages.
func TestChatImageValidation(t *testing.T) {
	srv := NewServer(t, Sequence(Text("ok")))
	cases := []struct {
		name, msgs, want string
	}{
		{"good image", `[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]`, ""},
		{"effort on gpt-4o", `[{"role":"user","content":"hi"}],"reasoning_effort":"low","model":"gpt-4o"`, "Unsupported parameter: 'reasoning_effort'"},
		{"top_p on gpt-5", `[{"role":"user","content":"hi"}],"top_p":0.5,"model":"gpt-5"`, "'top_p' does not support 0.5"},
		{"bad base64", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,***"}}]}]`, "does not decode"},
		{"image in a tool message", `[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]`, "Supported values for 'messages[2].content[0].type' of a tool message are: 'text'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":`+tc.msgs+`}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error *Error `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if tc.want == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("%d %+v", resp.StatusCode, e.Error)
				}
				return
			}
			if resp.StatusCode != 400 || e.Error == nil || !strings.Contains(e.Error.Message, tc.want) {
				t.Fatalf("%d %+v, want a 400 saying %q", resp.StatusCode, e.Error, tc.want)
			}
		})
	}
}
