package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
)

var testTools = []llm.ToolSpec{
	{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"path":{"type":"string","description":"the path"},"limit":{"type":["null","integer"]}},"required":["path"],"additionalProperties":false}`)},
	{Name: "ls", Description: "List files.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "write_file", Description: "Write a file.", Parameters: json.RawMessage(
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

func TestRequestMapping(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
	m, _ := newTestModel(t, srv)
	c1, c2, c3 := call("toolu_1", "read_file", `{"path":"/a.txt"}`), call("toolu_2", "ls", `{}`), call("toolu_3", "read_file", `{"path":"/b.txt","limit":5}`)
	req := &llm.Request{
		System: "You are careful.",
		Tools:  testTools,
		Messages: []llm.Message{
			llm.User("Read both files."),
			llm.Assistant("I'll read them.", c1, c2, c3),
			// Results arrive out of order; one failed.
			llm.ToolResult(c3, "contents of b", false),
			llm.ToolResult(c1, "Error: no such file", true),
			llm.ToolResult(c2, "a.txt b.txt", false),
			llm.User("Thanks. Summarise."),
			llm.System("Be brief."),
			llm.Assistant("Done."),
			llm.User("One more thing."),
		},
	}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertValid(t, srv)
	r := lastRequest(t, srv)
	b := r.Body

	if got := r.SystemText(); got != "You are careful.\n\nBe brief." {
		t.Errorf("systemInstruction = %q", got)
	}
	roles := make([]string, len(b.Contents))
	for i, c := range b.Contents {
		roles[i] = c.Role
	}
	if want := []string{"user", "model", "user", "model", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	model := b.Contents[1]
	if len(model.Parts) != 4 || model.Parts[0].TextOf() != "I'll read them." {
		t.Fatalf("model turn = %s", mustJSON(t, model))
	}
	for i, c := range []llm.ToolCall{c1, c2, c3} {
		fc := model.Parts[i+1].FunctionCall
		if fc == nil || fc.Name != c.Name || !jsonEqual(mustArgs(t, fc.Args), c.Args) {
			t.Errorf("function call %d = %s, want %s %s", i, mustJSON(t, fc), c.Name, c.Args)
		}
		if fc != nil && fc.ID != "" {
			t.Errorf("call %d: an id the model never gave must not be sent, got %q", i, fc.ID)
		}
	}
	results := b.Contents[2]
	if len(results.Parts) != 4 {
		t.Fatalf("results turn = %s", mustJSON(t, results))
	}
	wantResp := []map[string]any{{"error": "Error: no such file"}, {"output": "a.txt b.txt"}, {"output": "contents of b"}}
	for i, c := range []llm.ToolCall{c1, c2, c3} {
		fr := results.Parts[i].FunctionResponse
		if fr == nil || fr.Name != c.Name || !reflect.DeepEqual(fr.Response, wantResp[i]) {
			t.Errorf("function response %d = %s", i, mustJSON(t, fr))
		}
	}
	if results.Parts[3].TextOf() != "Thanks. Summarise." {
		t.Errorf("the user text after the results = %s", mustJSON(t, results.Parts[3]))
	}
	if b.Contents[3].Parts[0].TextOf() != "Done." || b.Contents[4].Parts[0].TextOf() != "One more thing." {
		t.Errorf("tail = %s", mustJSON(t, b.Contents[3:]))
	}

	if len(b.Tools) != 1 || len(b.Tools[0].FunctionDeclarations) != len(testTools) {
		t.Fatalf("tools = %s", mustJSON(t, b.Tools))
	}
	for i, d := range b.Tools[0].FunctionDeclarations {
		spec := testTools[i]
		if d.Name != spec.Name || d.Description != spec.Description || len(d.Parameters) != 0 || !jsonEqual(d.ParametersJSONSchema, spec.Parameters) {
			t.Errorf("declaration %d = %s", i, mustJSON(t, d))
		}
	}
	if tc := b.ToolConfig; tc == nil || tc.FunctionCallingConfig == nil || tc.FunctionCallingConfig.Mode != "AUTO" {
		t.Errorf("toolConfig = %s", mustJSON(t, b.ToolConfig))
	}
}

func mustArgs(t *testing.T, args map[string]any) []byte {
	t.Helper()
	if args == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolChoiceModes(t *testing.T) {
	for _, tc := range []struct {
		choice  llm.ToolChoice
		mode    string
		allowed []string
	}{
		{llm.ToolChoice{}, "AUTO", nil},
		{llm.ToolChoice{Mode: llm.ToolChoiceNone}, "NONE", nil},
		{llm.ToolChoice{Mode: llm.ToolChoiceRequired}, "ANY", nil},
		{llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "ls"}, "ANY", []string{"ls"}},
	} {
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
		m, _ := newTestModel(t, srv)
		if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}, Tools: testTools, ToolChoice: tc.choice}); err != nil {
			t.Fatal(err)
		}
		fc := lastRequest(t, srv).Body.ToolConfig.FunctionCallingConfig
		if fc.Mode != tc.mode || !reflect.DeepEqual(fc.AllowedFunctionNames, tc.allowed) {
			t.Errorf("%+v: got %s", tc.choice, mustJSON(t, fc))
		}
		assertValid(t, srv)
	}
}

func TestMissingAndOrphanResults(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
	m, _ := newTestModel(t, srv)
	c1, c2 := call("a", "ls", `{}`), call("b", "read_file", `{"path":"/x"}`)
	_, err := m.Generate(context.Background(), &llm.Request{Tools: testTools, Messages: []llm.Message{
		llm.User("start"),
		// A result whose call was trimmed from the history.
		{Role: llm.RoleTool, ToolCallID: "gone", Name: "ls", Content: "old listing"},
		llm.Assistant("", c1, c2),
		// Only c2 was answered, and a stray result follows.
		llm.ToolResult(c2, "x's content", false),
		{Role: llm.RoleTool, ToolCallID: "zzz", Name: "ls", Content: "stray"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	assertValid(t, srv)
	b := lastRequest(t, srv).Body
	if len(b.Contents) != 3 {
		t.Fatalf("contents = %s", mustJSON(t, b.Contents))
	}
	if got := b.Contents[0].Parts; len(got) != 2 || !strings.Contains(got[1].TextOf(), "old listing") {
		t.Errorf("the orphan result should be user text: %s", mustJSON(t, got))
	}
	rs := b.Contents[2].Parts
	if len(rs) != 3 || rs[0].FunctionResponse.Name != "ls" || rs[0].FunctionResponse.Response["error"] == nil ||
		rs[1].FunctionResponse.Response["output"] != "x's content" || !strings.Contains(rs[2].TextOf(), "stray") {
		t.Errorf("results = %s", mustJSON(t, rs))
	}
}

// TestThoughtSignatureRoundTrip: what Gemini returns with its calls
// (signatures, thought parts, call ids) goes back unchanged on the next turn,
// even after the message went through JSON (a checkpoint).
func TestThoughtSignatureRoundTrip(t *testing.T) {
	sigA, sigB := []byte("signature-A\x00\xff"), []byte("signature-B")
	for _, stream := range []bool{false, true} {
		srv := geminitest.NewServer(t, geminitest.Turns(
			geminitest.Reply{Thought: "I should read the file and list the folder.", Text: "Reading now.", Calls: []geminitest.Call{
				{ID: "fc-1", Name: "read_file", Args: map[string]any{"path": "/a.txt"}, Signature: sigA},
				{ID: "fc-2", Name: "ls"},
			}},
			geminitest.Reply{Text: "All done.", TextSignature: sigB},
			geminitest.Text("bye"),
		))
		m, _ := newTestModel(t, srv, func(c *Config) { c.IncludeThoughts = true })
		gen := func(req *llm.Request) *llm.Response {
			t.Helper()
			var resp *llm.Response
			var err error
			if stream {
				resp, err = llm.Collect(m.Stream(context.Background(), req))
			} else {
				resp, err = m.Generate(context.Background(), req)
			}
			if err != nil {
				t.Fatalf("stream=%v: %v", stream, err)
			}
			return resp
		}
		msgs := []llm.Message{llm.User("Look at /a.txt")}
		r1 := gen(&llm.Request{Messages: msgs, Tools: testTools})
		a1 := checkpoint(t, r1.Message)
		if a1.Extra[Provider] == nil {
			t.Fatalf("stream=%v: no Extra saved", stream)
		}
		if ids := []string{a1.ToolCalls[0].ID, a1.ToolCalls[1].ID}; !reflect.DeepEqual(ids, []string{"fc-1", "fc-2"}) {
			t.Errorf("stream=%v: the model's ids must be kept, got %v", stream, ids)
		}
		if a1.ReasoningText() != "I should read the file and list the folder." {
			t.Errorf("stream=%v: reasoning = %q", stream, a1.ReasoningText())
		}
		msgs = append(msgs, a1, llm.ToolResult(a1.ToolCalls[0], "hello", false), llm.ToolResult(a1.ToolCalls[1], "a.txt", false))
		r2 := gen(&llm.Request{Messages: msgs, Tools: testTools})
		a2 := checkpoint(t, r2.Message)
		msgs = append(msgs, a2, llm.User("thanks"))
		gen(&llm.Request{Messages: msgs, Tools: testTools})
		assertValid(t, srv)

		reqs := srv.Requests()
		second, third := reqs[1].Body, reqs[2].Body
		model := second.Contents[1].Parts
		if len(model) != 4 {
			t.Fatalf("stream=%v: model turn sent back = %s", stream, mustJSON(t, model))
		}
		if !model[0].Thought || model[0].TextOf() != "I should read the file and list the folder." {
			t.Errorf("stream=%v: thought part = %s", stream, mustJSON(t, model[0]))
		}
		if model[1].TextOf() != "Reading now." || model[1].ThoughtSignature != "" {
			t.Errorf("stream=%v: text part = %s", stream, mustJSON(t, model[1]))
		}
		if fc := model[2]; fc.FunctionCall == nil || fc.FunctionCall.ID != "fc-1" || fc.ThoughtSignature != base64.StdEncoding.EncodeToString(sigA) {
			t.Errorf("stream=%v: first call = %s", stream, mustJSON(t, fc))
		}
		if fc := model[3]; fc.FunctionCall == nil || fc.FunctionCall.ID != "fc-2" || fc.ThoughtSignature != "" {
			t.Errorf("stream=%v: second call = %s", stream, mustJSON(t, fc))
		}
		if rs := reqs[1].FunctionResponses(); len(rs) != 2 || rs[0].ID != "fc-1" || rs[1].ID != "fc-2" {
			t.Errorf("stream=%v: responses = %s", stream, mustJSON(t, rs))
		}
		done := third.Contents[3].Parts
		if len(done) != 1 || done[0].TextOf() != "All done." || done[0].ThoughtSignature != base64.StdEncoding.EncodeToString(sigB) {
			t.Errorf("stream=%v: signed text sent back = %s", stream, mustJSON(t, done))
		}
	}
}

// checkpoint sends a message through JSON, as a saved conversation would.
func checkpoint(t *testing.T, m llm.Message) llm.Message {
	t.Helper()
	var out llm.Message
	if err := json.Unmarshal([]byte(mustJSON(t, m)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSignatureOnEmptyTextPart: Gemini may stream a signature alone on a
// final empty text part; it must come back as that very part, text "" included.
func TestSignatureOnEmptyTextPart(t *testing.T) {
	sig := base64.StdEncoding.EncodeToString([]byte("trailing-signature"))
	empty := ""
	srv := geminitest.NewServer(t, geminitest.Turns(
		geminitest.Reply{Text: "Here is a longer answer in pieces.", Parts: []geminitest.Part{{Text: &empty, ThoughtSignature: sig}}},
		geminitest.Text("ok"),
	))
	m, _ := newTestModel(t, srv)
	r1, err := llm.Collect(m.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Message.Content != "Here is a longer answer in pieces." || len(r1.Message.ReasoningFor(Provider)) != 1 || r1.Message.Extra != nil {
		t.Fatalf("message = %+v", r1.Message)
	}
	if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi"), r1.Message, llm.User("more")}}); err != nil {
		t.Fatal(err)
	}
	assertValid(t, srv)
	parts := lastRequest(t, srv).Body.Contents[1].Parts
	if len(parts) != 2 || parts[0].TextOf() != "Here is a longer answer in pieces." || parts[0].ThoughtSignature != "" ||
		parts[1].Text == nil || *parts[1].Text != "" || parts[1].ThoughtSignature != sig {
		t.Errorf("parts sent back = %s", mustJSON(t, parts))
	}
}

// TestEditedMessageKeepsCallSignatures: when a message's text no longer
// matches its text parts (a middleware rewrote Content), the new text goes
// without a signature, and the thoughts and the signatures and ids of the
// calls are kept.
func TestEditedMessageKeepsCallSignatures(t *testing.T) {
	sig := []byte("sig-1")
	srv := geminitest.NewServer(t, geminitest.Turns(
		geminitest.Reply{Thought: "hmm", Text: "Original text.", Calls: []geminitest.Call{{ID: "id-1", Name: "ls", Signature: sig}}},
		geminitest.Text("ok"),
	))
	m, _ := newTestModel(t, srv, func(c *Config) { c.IncludeThoughts = true })
	r1, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	edited := llm.Clone([]llm.Message{r1.Message})[0]
	edited.Content = "Shortened."
	if _, err := m.Generate(context.Background(), &llm.Request{Tools: testTools, Messages: []llm.Message{
		llm.User("hi"), edited, llm.ToolResult(edited.ToolCalls[0], "a.txt", false)}}); err != nil {
		t.Fatal(err)
	}
	assertValid(t, srv)
	parts := lastRequest(t, srv).Body.Contents[1].Parts
	if len(parts) != 3 || !parts[0].Thought || parts[0].TextOf() != "hmm" || parts[1].TextOf() != "Shortened." || parts[1].ThoughtSignature != "" ||
		parts[2].FunctionCall == nil || parts[2].FunctionCall.ID != "id-1" || parts[2].ThoughtSignature != base64.StdEncoding.EncodeToString(sig) {
		t.Errorf("rebuilt parts = %s", mustJSON(t, parts))
	}
}

// TestSignedCallsWithoutIDs is the Gemini 2.5 shape: calls without ids but
// with a signature. The generated ids stay on our side; the wire gets none.
func TestSignedCallsWithoutIDs(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Turns(
		geminitest.Calls(geminitest.Call{Name: "ls", Signature: []byte("s")}, geminitest.Call{Name: "read_file", Args: map[string]any{"path": "/a"}}),
		geminitest.Text("ok"),
	))
	m, _ := newTestModel(t, srv)
	r1, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	a := r1.Message
	if a.ToolCalls[0].ID != "call_1" || a.ToolCalls[1].ID != "call_2" {
		t.Fatalf("ids = %q %q", a.ToolCalls[0].ID, a.ToolCalls[1].ID)
	}
	// Results in reverse order still go back under the right names.
	if _, err := m.Generate(context.Background(), &llm.Request{Tools: testTools, Messages: []llm.Message{
		llm.User("hi"), a, llm.ToolResult(a.ToolCalls[1], "A", false), llm.ToolResult(a.ToolCalls[0], "listing", false)}}); err != nil {
		t.Fatal(err)
	}
	assertValid(t, srv)
	r := lastRequest(t, srv)
	calls := r.Body.Contents[1].Parts
	rs := r.FunctionResponses()
	if calls[0].FunctionCall.ID != "" || calls[0].ThoughtSignature == "" || len(rs) != 2 ||
		rs[0].Name != "ls" || rs[0].Response["output"] != "listing" || rs[0].ID != "" ||
		rs[1].Name != "read_file" || rs[1].Response["output"] != "A" {
		t.Errorf("calls = %s responses = %s", mustJSON(t, calls), mustJSON(t, rs))
	}
}

func TestEmptyMessagesAreSkipped(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("ok")))
	m, _ := newTestModel(t, srv)
	if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{
		llm.User("a"), llm.Assistant(""), llm.User(""), llm.User("b"), llm.Assistant("x"), llm.Assistant("y"), llm.User("c"),
	}}); err != nil {
		t.Fatal(err)
	}
	assertValid(t, srv)
	b := lastRequest(t, srv).Body
	if len(b.Contents) != 3 || len(b.Contents[0].Parts) != 2 || len(b.Contents[1].Parts) != 2 {
		t.Errorf("contents = %s", mustJSON(t, b.Contents))
	}
}

// TestLegacyCheckpointKeepsSignatures: a message saved before reasoning
// parts existed (Gemini's parts kept whole in Extra) still goes back with
// its thought and signatures.
func TestLegacyCheckpointKeepsSignatures(t *testing.T) {
	var old llm.Message
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":"Reading.","tool_calls":[{"id":"fc-1","name":"read_file","args":{"path":"/a"}}],
		"parts":[{"type":"reasoning","text":"plan"},{"type":"text","text":"Reading."}],
		"extra":{"gemini":{"parts":[{"text":"plan","thought":true},{"text":"Reading."},{"functionCall":{"id":"fc-1","name":"read_file","args":{"path":"/a"}},"thoughtSignature":"c2lnLTE="}]}}}`), &old); err != nil {
		t.Fatal(err)
	}
	parts, ids := modelParts(old)
	got := mustJSON(t, parts)
	want := `[{"text":"plan","thought":true},{"text":"Reading."},{"functionCall":{"id":"fc-1","args":{"path":"/a"},"name":"read_file"},"thoughtSignature":"c2lnLTE="}]`
	if got != want || len(ids) != 1 || ids[0] != "fc-1" {
		t.Errorf("parts = %s ids %v\nwant %s", got, ids, want)
	}
}
