package anthropic

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepagents-go/deepagents/llm"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
)

var specs = []llm.ToolSpec{
	{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"absolute path"}},"required":["path"]}`)},
	{Name: "write_file", Description: "Write a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`)},
	{Name: "ls", Description: "List files."}, // no parameters at all
}

// conversation is a two-round tool conversation whose tool results come
// back out of call order, followed by user text.
func conversation() []llm.Message {
	c1 := llm.ToolCall{ID: "toolu_1", Name: "read_file", Args: json.RawMessage(`{"path":"/a"}`)}
	c2 := llm.ToolCall{ID: "toolu_2", Name: "ls", Args: json.RawMessage(`{}`)}
	c3 := llm.ToolCall{ID: "toolu_3", Name: "write_file", Args: json.RawMessage(`{"path":"/b","content":"x"}`)}
	return []llm.Message{
		llm.User("Please tidy the files."),
		llm.Assistant("Looking first.", c1, c2),
		llm.ToolResult(c2, "a\nb", false),
		llm.ToolResult(c1, "no such file", true),
		llm.User("Also write /b."),
		llm.Assistant("", c3),
		llm.ToolResult(c3, "", false),
		llm.Assistant("All done."),
		llm.User("Thanks! One more thing."),
	}
}

// sendAndRecord sends req through a fake server and returns what it got.
func sendAndRecord(t *testing.T, req *llm.Request, edit ...func(*Config)) *at.Request {
	t.Helper()
	srv := at.New(t, at.Sequence(at.Text("ok")))
	if _, err := newModel(t, srv, nil, edit...).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return srv.Last()
}

func TestRequestStructure(t *testing.T) {
	got := sendAndRecord(t, &llm.Request{System: "You are a careful agent.", Messages: conversation(), Tools: specs})

	if err := at.Validate(&got.MessagesRequest); err != nil {
		t.Fatalf("the API would reject the request: %v", err)
	}
	if got.SystemText() != "You are a careful agent." {
		t.Fatalf("system = %q", got.SystemText())
	}
	var roles []string
	for _, m := range got.Messages {
		roles = append(roles, m.Role)
	}
	if want := []string{"user", "assistant", "user", "assistant", "user", "assistant", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	if strings.Contains(string(got.Raw), `"role":"system"`) {
		t.Fatal("a system message was sent inside messages")
	}

	// Both results of the first assistant turn are in the next user turn,
	// in call order, before the user's text.
	u := got.Messages[2].Content
	if len(u) != 3 || u[0].Type != "tool_result" || u[0].ToolUseID != "toolu_1" || !u[0].IsError ||
		u[1].Type != "tool_result" || u[1].ToolUseID != "toolu_2" || u[1].Content.Text() != "a\nb" ||
		u[2].Type != "text" || u[2].Text != "Also write /b." {
		t.Fatalf("first results turn = %+v", u)
	}
	// An empty result is sent without content; a text-less assistant turn
	// has only its tool_use.
	if a := got.Messages[3].Content; len(a) != 1 || a[0].Type != "tool_use" || a[0].ID != "toolu_3" {
		t.Fatalf("second assistant turn = %+v", a)
	}
	if r := got.Messages[4].Content; len(r) != 1 || r[0].ToolUseID != "toolu_3" || len(r[0].Content) != 0 {
		t.Fatalf("second results turn = %+v", r)
	}
	// Every tool_result answers a tool_use of the assistant turn just before.
	for i, m := range got.Messages {
		for _, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			found := false
			for _, p := range got.Messages[i-1].Content {
				found = found || (p.Type == "tool_use" && p.ID == b.ToolUseID)
			}
			if !found || got.Messages[i-1].Role != "assistant" {
				t.Fatalf("tool_result %s in message %d does not follow its tool_use", b.ToolUseID, i)
			}
		}
	}

	// Tool definitions: names, descriptions and schemas as given; every
	// input_schema is a JSON schema that resolves.
	if names := got.ToolNames(); !reflect.DeepEqual(names, []string{"read_file", "write_file", "ls"}) {
		t.Fatalf("tools %v", names)
	}
	for i, tl := range got.Tools {
		var s jsonschema.Schema
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil {
			t.Fatalf("tool %s: input_schema is not a JSON schema: %v", tl.Name, err)
		}
		if _, err := s.Resolve(nil); err != nil {
			t.Fatalf("tool %s: schema does not resolve: %v", tl.Name, err)
		}
		if s.Type != "object" {
			t.Fatalf("tool %s: type %q", tl.Name, s.Type)
		}
		if i < 2 && compact(t, string(tl.InputSchema)) != compact(t, string(specs[i].Parameters)) {
			t.Fatalf("tool %s schema changed: %s", tl.Name, tl.InputSchema)
		}
		if tl.Description != specs[i].Description {
			t.Fatalf("tool %s description %q", tl.Name, tl.Description)
		}
	}
	if got.ToolChoice != nil {
		t.Fatalf("tool_choice sent for the default: %+v", got.ToolChoice)
	}
}

func TestCacheBreakpoints(t *testing.T) {
	req := &llm.Request{System: "sys", Messages: conversation(), Tools: specs}
	got := sendAndRecord(t, req)
	// The system prompt (which caches the tools before it too), and the last
	// block of the last two user turns (the previous round's breakpoint and
	// the newest turn).
	want := []string{"system[0]", "messages[4].content[0]", "messages[6].content[0]"}
	if bp := got.CacheBreakpoints(); !reflect.DeepEqual(bp, want) {
		t.Fatalf("breakpoints %v, want %v", bp, want)
	}
	if !strings.Contains(string(got.Raw), `"cache_control":{"type":"ephemeral"}`) {
		t.Fatal("cache_control is not ephemeral")
	}

	// A first request: one user message.
	got = sendAndRecord(t, &llm.Request{System: "sys", Messages: []llm.Message{llm.User("hi")}, Tools: specs})
	if bp := got.CacheBreakpoints(); !reflect.DeepEqual(bp, []string{"system[0]", "messages[0].content[0]"}) {
		t.Fatalf("first-request breakpoints %v", bp)
	}

	// Tools without a system prompt: the last tool closes the prefix.
	got = sendAndRecord(t, &llm.Request{Messages: []llm.Message{llm.User("hi")}, Tools: specs})
	if bp := got.CacheBreakpoints(); !reflect.DeepEqual(bp, []string{"tools[2]", "messages[0].content[0]"}) {
		t.Fatalf("tools-only breakpoints %v", bp)
	}

	// No tools, no system: only the conversation.
	got = sendAndRecord(t, prompt("hi"))
	if bp := got.CacheBreakpoints(); !reflect.DeepEqual(bp, []string{"messages[0].content[0]"}) {
		t.Fatalf("bare breakpoints %v", bp)
	}

	got = sendAndRecord(t, req, func(c *Config) { c.NoPromptCache = true })
	if bp := got.CacheBreakpoints(); len(bp) != 0 {
		t.Fatalf("NoPromptCache still sent %v", bp)
	}
}

// The cached prefix (tools and system) must be byte-identical across the
// rounds of a run, and across a parent's forks that share them.
func TestCachedPrefixIsStable(t *testing.T) {
	m := newModel(t, at.New(t, at.Sequence()), nil)
	prefix := func(msgs []llm.Message) string {
		b, err := m.build(&llm.Request{System: "sys", Messages: msgs, Tools: specs})
		if err != nil {
			t.Fatal(err)
		}
		tools, _ := json.Marshal(b.params.Tools)
		sys, _ := json.Marshal(b.params.System)
		return string(tools) + string(sys)
	}
	msgs := conversation()
	first := prefix(msgs[:1])
	for n := 2; n <= len(msgs); n++ {
		if p := prefix(msgs[:n]); p != first {
			t.Fatalf("prefix changed at %d messages:\n%s\n%s", n, first, p)
		}
	}
	// The earlier turns render identically as the conversation grows (the
	// breakpoint markers aside, which are not part of the cached content),
	// so the previous round's breakpoint position holds the same prefix.
	plain := newModel(t, at.New(t, at.Sequence()), nil, func(c *Config) { c.NoPromptCache = true })
	b1, _ := plain.build(&llm.Request{Messages: msgs[:5]})
	b2, _ := plain.build(&llm.Request{Messages: msgs})
	m1, _ := json.Marshal(b1.params.Messages[:3])
	m2, _ := json.Marshal(b2.params.Messages[:3])
	if string(m1) != string(m2) {
		t.Fatalf("earlier turns changed:\n%s\n%s", m1, m2)
	}
}

func TestConversationRepairs(t *testing.T) {
	c1 := llm.ToolCall{ID: "call 1/x", Name: "ls"} // invalid id characters, no args
	c2 := llm.ToolCall{ID: "dup", Name: "read_file", Args: json.RawMessage(`not json`)}
	c3 := llm.ToolCall{ID: "dup", Name: "read_file", Args: json.RawMessage(`{"path":"/z"}`)}
	msgs := []llm.Message{
		llm.System("Leading system note."),
		{Role: llm.RoleAssistant, Content: "I speak first."},
		llm.User("   "), // whitespace only: dropped
		llm.User("Go on."),
		llm.Assistant("", c1, c2),
		llm.ToolResult(c1, "listed", false),
		// c2 has no result; an orphan result answers nothing.
		{Role: llm.RoleTool, ToolCallID: "elsewhere", Name: "ls", Content: "stale"},
		llm.System("Mid-conversation note."),
		llm.Assistant("Second call.", c3),
		{Role: llm.RoleTool, Name: "read_file", Content: "z contents"}, // no id: matched by name
		llm.Assistant("Done. \n"),
	}
	got := sendAndRecord(t, &llm.Request{System: "Main.", Messages: msgs, Tools: specs})
	if err := at.Validate(&got.MessagesRequest); err != nil {
		t.Fatal(err)
	}
	if got.SystemText() != "Main.\n\nLeading system note." {
		t.Fatalf("system %q", got.SystemText())
	}
	ms := got.Messages
	if ms[0].Role != "user" || ms[0].Content.Text() != openingText {
		t.Fatalf("first turn %+v", ms[0])
	}
	if ms[1].Content.Text() != "I speak first." || ms[2].Content.Text() != "Go on." {
		t.Fatalf("turns 1-2: %+v %+v", ms[1], ms[2])
	}
	use := ms[3].Content
	if use[0].ID != "call_1_x" || string(use[0].Input) != "{}" || use[1].ID != "dup" {
		t.Fatalf("tool uses %+v", use)
	}
	if compact(t, string(use[1].Input)) != compact(t, `{"invalid_arguments":"not json"}`) {
		t.Fatalf("broken args sent as %s", use[1].Input)
	}
	res := ms[4].Content
	if len(res) != 4 || res[0].ToolUseID != "call_1_x" || res[1].ToolUseID != "dup" || !res[1].IsError ||
		res[1].Content.Text() != missingResultText || res[2].Type != "text" || !strings.Contains(res[2].Text, "stale") ||
		res[3].Text != "Mid-conversation note." {
		t.Fatalf("results turn %+v", res)
	}
	if id := ms[5].Content[1].ID; id != "dup_2" {
		t.Fatalf("duplicate id sent as %q", id)
	}
	if r := ms[6].Content[0]; r.ToolUseID != "dup_2" || r.Content.Text() != "z contents" {
		t.Fatalf("id-less result %+v", r)
	}
	if last := ms[len(ms)-1]; last.Role != "assistant" || last.Content.Text() != "Done." {
		t.Fatalf("final prefill %+v", last)
	}
}

func TestNoMessagesIsBadRequest(t *testing.T) {
	m := newModel(t, at.New(t, at.Sequence()), nil)
	for _, msgs := range [][]llm.Message{nil, {llm.System("only a system message")}, {llm.User("  ")}} {
		_, err := m.Generate(context.Background(), &llm.Request{Messages: msgs})
		if err == nil || !strings.Contains(err.Error(), "no user or assistant messages") {
			t.Fatalf("%v: err = %v", msgs, err)
		}
	}
	_, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("x")},
		Tools: []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1,2]`)}}})
	if err == nil {
		t.Fatal("a non-object schema was accepted")
	}
}

func TestSettingsAndToolChoice(t *testing.T) {
	f, tr := false, true
	temp := 0.2
	cases := []struct {
		name     string
		choice   llm.ToolChoice
		parallel *bool
		want     string // tool_choice JSON, "" for none sent
	}{
		{"auto", llm.ToolChoice{}, nil, ""},
		{"auto parallel on", llm.ToolChoice{}, &tr, ""},
		{"auto no parallel", llm.ToolChoice{}, &f, `{"type":"auto","disable_parallel_tool_use":true}`},
		{"none", llm.ToolChoice{Mode: llm.ToolChoiceNone}, &f, `{"type":"none"}`},
		{"required", llm.ToolChoice{Mode: llm.ToolChoiceRequired}, nil, `{"type":"any"}`},
		{"required no parallel", llm.ToolChoice{Mode: llm.ToolChoiceRequired}, &f, `{"type":"any","disable_parallel_tool_use":true}`},
		{"tool", llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "ls"}, &f, `{"type":"tool","name":"ls","disable_parallel_tool_use":true}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sendAndRecord(t, &llm.Request{Messages: []llm.Message{llm.User("x")}, Tools: specs, ToolChoice: tc.choice,
				Settings: llm.Settings{ParallelToolCalls: tc.parallel, MaxTokens: 321, Stop: []string{"STOP"}, Temperature: &temp, TopP: &temp}})
			gotChoice := ""
			if got.ToolChoice != nil {
				gotChoice = mustJSON(t, got.ToolChoice)
			}
			if gotChoice != tc.want {
				t.Fatalf("tool_choice %s, want %s", gotChoice, tc.want)
			}
			if *got.MaxTokens != 321 || !reflect.DeepEqual(got.StopSequences, []string{"STOP"}) {
				t.Fatalf("max_tokens %d stop %v", *got.MaxTokens, got.StopSequences)
			}
			// API version 2026-10-21 rejects the sampling parameters.
			if got.Temperature != nil || got.TopP != nil {
				t.Fatal("temperature/top_p were sent")
			}
		})
	}
	got := sendAndRecord(t, prompt("x"), func(c *Config) { c.MaxTokens = 1000 })
	if *got.MaxTokens != 1000 {
		t.Fatalf("Config.MaxTokens ignored: %d", *got.MaxTokens)
	}
	got = sendAndRecord(t, &llm.Request{Messages: []llm.Message{llm.User("x")}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}})
	if got.ToolChoice != nil {
		t.Fatal("tool_choice sent without tools")
	}
}

func TestThinkingConfig(t *testing.T) {
	got := sendAndRecord(t, prompt("x"), func(c *Config) { c.ThinkingBudget = 2048 })
	if compact(t, string(got.Thinking)) != `{"budget_tokens":2048,"type":"enabled"}` {
		t.Fatalf("thinking %s", got.Thinking)
	}
	got = sendAndRecord(t, prompt("x"), func(c *Config) { c.AdaptiveThinking = true })
	if compact(t, string(got.Thinking)) != `{"type":"adaptive"}` {
		t.Fatalf("thinking %s", got.Thinking)
	}
	if got = sendAndRecord(t, prompt("x")); got.Thinking != nil {
		t.Fatalf("thinking sent by default: %s", got.Thinking)
	}
}

// Large outputs cannot be requested without streaming (the SDK refuses), so
// Generate streams them and collects the result.
func TestGenerateStreamsLargeOutputs(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Text("big")))
	resp, err := newModel(t, srv, nil, func(c *Config) { c.MaxTokens = 64000 }).Generate(context.Background(), prompt("x"))
	if err != nil || resp.Message.Content != "big" {
		t.Fatalf("%+v %v", resp, err)
	}
	if !srv.Last().Stream {
		t.Fatal("a 64k-token request was not streamed")
	}
}

func thinkingReply() at.Reply {
	return at.Reply{
		Thinking: []at.Thinking{
			{Text: "The user wants the file. ", Signature: "EqQBCkYIBxgCKkBsig+first=="},
			{Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
		},
		Text:      "Reading it now.",
		ToolCalls: []at.ToolCall{{ID: "toolu_th", Name: "read_file", Input: json.RawMessage(`{"path":"/a"}`)}},
		Chunk:     3,
	}
}

func TestThinkingRoundTrip(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			srv := at.New(t, at.Sequence(thinkingReply(), at.Text("The file says hi.")))
			m := newModel(t, srv, nil, func(c *Config) { c.ThinkingBudget = 1024 })
			msgs := []llm.Message{llm.User("Read /a")}
			var resp *llm.Response
			var err error
			if stream {
				s := drain(m.Stream(context.Background(), &llm.Request{Messages: msgs, Tools: specs}))
				resp = s.done(t)
				var reasoning strings.Builder
				for _, ev := range s.events {
					if ev.Type == llm.EventReasoningDelta {
						reasoning.WriteString(ev.Text)
					}
				}
				if reasoning.String() != "The user wants the file. " {
					t.Fatalf("reasoning deltas %q", reasoning.String())
				}
			} else {
				resp, err = m.Generate(context.Background(), &llm.Request{Messages: msgs, Tools: specs})
				if err != nil {
					t.Fatal(err)
				}
			}
			if resp.Message.ReasoningText() != "The user wants the file. " || resp.Message.Content != "Reading it now." {
				t.Fatalf("message %+v", resp.Message)
			}
			wantParts := []llm.Part{
				llm.ReasoningPart("The user wants the file. ", &llm.Reasoning{Provider: "anthropic", Signature: "EqQBCkYIBxgCKkBsig+first=="}),
				llm.ReasoningPart("", &llm.Reasoning{Provider: "anthropic", Encrypted: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}),
				llm.TextPart("Reading it now."),
			}
			if !reflect.DeepEqual(resp.Message.Parts, wantParts) || resp.Message.Extra != nil {
				t.Fatalf("parts %+v extra %s", resp.Message.Parts, resp.Message.Extra)
			}

			// The message survives a checkpoint (JSON) and goes back unchanged.
			raw, _ := json.Marshal(resp.Message)
			var back llm.Message
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, back, llm.ToolResult(back.ToolCalls[0], "hi", false))
			if _, err := m.Generate(context.Background(), &llm.Request{Messages: msgs, Tools: specs}); err != nil {
				t.Fatal(err)
			}
			a := srv.Last().Messages[1]
			if a.Role != "assistant" || len(a.Content) != 4 {
				t.Fatalf("assistant turn sent back as %+v", a)
			}
			want := thinkingReply()
			if b := a.Content[0]; b.Type != "thinking" || b.Thinking != want.Thinking[0].Text || b.Signature != want.Thinking[0].Signature {
				t.Fatalf("thinking block %+v", b)
			}
			if b := a.Content[1]; b.Type != "redacted_thinking" || b.Data != want.Thinking[1].Redacted {
				t.Fatalf("redacted block %+v", b)
			}
			if a.Content[2].Type != "text" || a.Content[3].Type != "tool_use" || a.Content[3].ID != "toolu_th" {
				t.Fatalf("block order %+v", a.Content)
			}
		})
	}
}

// Thinking blocks keep their original position relative to text and tool
// calls; a message saved before reasoning parts existed (its thinking in
// Extra["anthropic"]) goes back the same way, and garbage there is ignored.
func TestThinkingPositionsAndEdits(t *testing.T) {
	calls := []llm.ToolCall{{ID: "t1", Name: "ls"}, {ID: "t2", Name: "ls"}}
	withParts := llm.NewMessage(llm.RoleAssistant,
		llm.TextPart("Before."),
		llm.ReasoningPart("between", &llm.Reasoning{Provider: "anthropic", Signature: "sig-1", Extra: json.RawMessage(`{"calls_before":1}`)}),
		llm.ReasoningPart("unsigned", &llm.Reasoning{Provider: "anthropic"}), // cannot go back: dropped
		llm.ReasoningPart("foreign", &llm.Reasoning{Provider: "openai", Encrypted: "enc"}),
	)
	withParts.ToolCalls = calls
	legacy := llm.Message{Role: llm.RoleAssistant, Content: "Before.", ToolCalls: calls,
		Extra: map[string]json.RawMessage{"anthropic": json.RawMessage(`{"content":[{"type":"text"},{"type":"thinking","thinking":"between","signature":"sig-1"},{"type":"tool_use","id":"t1"},{"type":"redacted_thinking","data":"R"},{"type":"thinking","thinking":"","signature":""}]}`)}}
	garbage := llm.Message{Role: llm.RoleAssistant, Content: "Before.", ToolCalls: calls,
		Extra: map[string]json.RawMessage{"anthropic": json.RawMessage(`{"content": 7}`)}}
	edited := withParts
	edited.Content = "Edited by middleware."
	cases := []struct {
		name string
		msg  llm.Message
		want []string
	}{
		{"parts", withParts, []string{"text:Before.", "tool_use:t1", "thinking:sig-1", "tool_use:t2"}},
		{"legacy extra", legacy, []string{"text:Before.", "thinking:sig-1", "tool_use:t1", "redacted:R", "tool_use:t2"}},
		{"garbage extra", garbage, []string{"text:Before.", "tool_use:t1", "tool_use:t2"}},
		{"edited content", edited, []string{"text:Edited by middleware.", "tool_use:t1", "thinking:sig-1", "tool_use:t2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, out := convertMessages([]llm.Message{llm.User("x"), tc.msg})
			var types []string
			for _, b := range out[1].OfAssistant.Content {
				switch {
				case b.OfText != nil:
					types = append(types, "text:"+b.OfText.Text)
				case b.OfThinking != nil:
					types = append(types, "thinking:"+b.OfThinking.Signature)
				case b.OfRedactedThinking != nil:
					types = append(types, "redacted:"+b.OfRedactedThinking.Data)
				case b.OfToolUse != nil:
					types = append(types, "tool_use:"+b.OfToolUse.ID)
				}
			}
			if !reflect.DeepEqual(types, tc.want) {
				t.Fatalf("blocks %v, want %v", types, tc.want)
			}
		})
	}
}

const answerSchema = `{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number","minimum":-90}},"required":["city","temp_c"]}`

func TestStructuredOutputNative(t *testing.T) {
	srv := at.New(t, at.Sequence(at.Text(`{"city":"Oslo","temp_c":-3}`)))
	m := newModel(t, srv, nil)
	req := &llm.Request{Messages: []llm.Message{llm.User("weather?")}, Tools: specs,
		Response: &llm.ResponseSchema{Name: "Weather", Schema: json.RawMessage(answerSchema)}}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != `{"city":"Oslo","temp_c":-3}` || resp.StopReason != llm.StopEnd {
		t.Fatalf("%+v", resp)
	}
	got := srv.Last()
	oc := got.OutputConfig
	if oc == nil || oc.Format == nil || oc.Format.Type != "json_schema" {
		t.Fatalf("output_config %+v", oc)
	}
	var schema map[string]any
	if err := json.Unmarshal(oc.Format.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema["additionalProperties"] != false || !reflect.DeepEqual(schema["required"], []any{"city", "temp_c"}) {
		t.Fatalf("schema not adapted for structured outputs: %s", oc.Format.Schema)
	}
	if got.ToolChoice != nil || len(got.Tools) != len(specs) {
		t.Fatalf("native mode changed tools: %v %+v", got.ToolNames(), got.ToolChoice)
	}
}

func TestStructuredOutputForcedTool(t *testing.T) {
	answer := `{"city":"Oslo","temp_c":-3}`
	reply := at.Reply{ToolCalls: []at.ToolCall{{Name: "Weather_Report", Input: json.RawMessage(answer)}}, Chunk: 2}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			srv := at.New(t, at.Sequence(reply))
			m := newModel(t, srv, nil, func(c *Config) { c.StructuredOutput = StructuredTool })
			req := &llm.Request{Messages: []llm.Message{llm.User("weather?")}, Tools: specs,
				Response: &llm.ResponseSchema{Name: "Weather Report", Description: "The weather.", Schema: json.RawMessage(answerSchema)}}
			var resp *llm.Response
			if stream {
				s := drain(m.Stream(context.Background(), req))
				resp = s.done(t)
				if compact(t, s.text()) != answer || s.count(llm.EventToolCallStart) != 0 {
					t.Fatalf("streamed text %q, %d tool starts", s.text(), s.count(llm.EventToolCallStart))
				}
			} else {
				var err error
				if resp, err = m.Generate(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
			if compact(t, resp.Message.Content) != answer || len(resp.Message.ToolCalls) != 0 || resp.StopReason != llm.StopEnd {
				t.Fatalf("%+v", resp)
			}
			got := srv.Last()
			if names := got.ToolNames(); !reflect.DeepEqual(names, []string{"read_file", "write_file", "ls", "Weather_Report"}) {
				t.Fatalf("tools %v", names)
			}
			if tc := got.ToolChoice; tc == nil || tc.Type != "tool" || tc.Name != "Weather_Report" {
				t.Fatalf("tool_choice %+v", tc)
			}
			if compact(t, string(got.Tools[3].InputSchema)) != compact(t, answerSchema) || !strings.HasPrefix(got.Tools[3].Description, "The weather.") {
				t.Fatalf("answer tool %+v", got.Tools[3])
			}
			// The cached prefix ends at the caller's last tool.
			if bp := got.CacheBreakpoints(); bp[0] != "tools[2]" {
				t.Fatalf("breakpoints %v", bp)
			}
		})
	}
}
