package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
)

var modes = []struct {
	name   string
	stream bool
}{{"generate", false}, {"stream", true}}

// checkpointed returns m after a JSON round trip, as a resumed run sees it.
func checkpointed(t *testing.T, m llm.Message) llm.Message {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back llm.Message
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// send sends req in the given mode and returns the response and, when
// streamed, the reasoning deltas.
func send(t *testing.T, m *Model, stream bool, req *llm.Request) (*llm.Response, string, error) {
	t.Helper()
	if !stream {
		resp, err := m.Generate(context.Background(), req)
		return resp, "", err
	}
	s := drain(m.Stream(context.Background(), req))
	if s.err != nil {
		return nil, "", s.err
	}
	var r strings.Builder
	for _, ev := range s.events {
		if ev.Type == llm.EventReasoningDelta {
			r.WriteString(ev.Text)
		}
	}
	return s.done(t), r.String(), nil
}

func loopReplies() []at.Reply {
	return []at.Reply{
		{Thinking: []at.Thinking{{Text: "List the files first."}}, Text: "Listing.",
			ToolCalls: []at.ToolCall{{ID: "toolu_ls", Name: "ls", Input: json.RawMessage(`{}`)}}, Chunk: 3},
		{Thinking: []at.Thinking{{Text: "Now read /a."}, {Redacted: "UkVEQUNURUQtMg=="}},
			ToolCalls: []at.ToolCall{{ID: "toolu_read", Name: "read_file", Input: json.RawMessage(`{"path":"/a"}`)}}, Chunk: 2},
		{Thinking: []at.Thinking{{Text: "It says hi."}}, Text: "/a says hi."},
	}
}

// A three-round tool loop with thinking on: the fake server fails any
// request whose thinking from the loop's earlier replies is missing or
// altered, so the loop only finishes if every signature goes back as it
// came, through a checkpoint of the messages.
func TestThinkingToolLoop(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := at.New(t, at.Conversation(loopReplies()...))
			m := newModel(t, srv, nil)
			settings := llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}
			msgs := []llm.Message{llm.User("What does /a say?")}
			var thoughts []string
			for round := 0; round < 3; round++ {
				resp, deltas, err := send(t, m, mode.stream, &llm.Request{Messages: msgs, Tools: specs, Settings: settings})
				if err != nil {
					t.Fatalf("round %d: %v", round+1, err)
				}
				if mode.stream && deltas != resp.Message.ReasoningText() {
					t.Fatalf("round %d: reasoning deltas %q, message reasoning %q", round+1, deltas, resp.Message.ReasoningText())
				}
				thoughts = append(thoughts, resp.Message.ReasoningText())
				msgs = append(msgs, checkpointed(t, resp.Message))
				for _, c := range resp.Message.ToolCalls {
					msgs = append(msgs, llm.ToolResult(c, "result of "+c.Name, false))
				}
				if round == 2 && (resp.Message.Content != "/a says hi." || resp.StopReason != llm.StopEnd) {
					t.Fatalf("final %+v", resp)
				}
			}
			if want := []string{"List the files first.", "Now read /a.", "It says hi."}; !reflect.DeepEqual(thoughts, want) {
				t.Fatalf("reasoning %q, want %q", thoughts, want)
			}
			for _, r := range srv.Requests() {
				if r.Invalid != nil {
					t.Fatalf("request %d rejected: %v", r.N, r.Invalid)
				}
				if compact(t, string(r.Thinking)) != `{"budget_tokens":2048,"type":"enabled"}` {
					t.Fatalf("request %d thinking %s", r.N, r.Thinking)
				}
				if got := r.Header.Get("Anthropic-Beta"); !strings.Contains(got, "interleaved-thinking-2025-05-14") {
					t.Fatalf("request %d anthropic-beta %q", r.N, got)
				}
			}
			last := srv.Last().Messages
			if len(last) != 5 {
				t.Fatalf("last request has %d turns", len(last))
			}
			second := last[3].Content
			if len(second) != 3 || second[0].Type != "thinking" || second[0].Thinking != "Now read /a." ||
				second[1].Type != "redacted_thinking" || second[1].Data != "UkVEQUNURUQtMg==" || second[2].Type != "tool_use" {
				t.Fatalf("second assistant turn sent back as %+v", second)
			}
		})
	}
}

// Changing, dropping or reordering what the previous reply thought makes
// the fake fail the request, as the API does.
func TestAlteredThinkingFails(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(parts []llm.Part) []llm.Part
		error string // "" when the request must succeed
	}{
		{"unchanged", func(p []llm.Part) []llm.Part { return p }, ""},
		{"signature altered", func(p []llm.Part) []llm.Part {
			p[0].Reasoning.Signature = "x" + p[0].Reasoning.Signature
			return p
		}, "Invalid `signature` in `thinking` block"},
		{"thinking text altered", func(p []llm.Part) []llm.Part { p[0].Text = "Something else."; return p }, "Invalid `signature` in `thinking` block"},
		{"redacted data altered", func(p []llm.Part) []llm.Part { p[1].Reasoning.Encrypted = "AAAA"; return p }, "Invalid `data` in `redacted_thinking` block"},
		{"redacted dropped", func(p []llm.Part) []llm.Part { return []llm.Part{p[0], p[2]} }, "must be passed back unmodified"},
		{"thinking dropped", func(p []llm.Part) []llm.Part { return []llm.Part{p[1], p[2]} }, "must be passed back unmodified"},
		{"reordered", func(p []llm.Part) []llm.Part { return []llm.Part{p[1], p[0], p[2]} }, "must be passed back unmodified"},
	}
	reply := at.Reply{Thinking: []at.Thinking{{Text: "Check /a."}, {Redacted: "c2VjcmV0"}}, Text: "Reading.",
		ToolCalls: []at.ToolCall{{ID: "toolu_x", Name: "read_file", Input: json.RawMessage(`{"path":"/a"}`)}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := at.New(t, at.Conversation(reply, at.Text("done")))
			m := newModel(t, srv, nil, func(c *Config) { c.ThinkingBudget = 4000 })
			first, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("Read /a")}, Tools: specs})
			if err != nil {
				t.Fatal(err)
			}
			a := checkpointed(t, first.Message)
			a.SetParts(tc.edit(a.Parts))
			msgs := []llm.Message{llm.User("Read /a"), a, llm.ToolResult(a.ToolCalls[0], "hi", false)}
			_, err = m.Generate(context.Background(), &llm.Request{Messages: msgs, Tools: specs})
			if tc.error == "" {
				if err != nil {
					t.Fatalf("unchanged thinking rejected: %v", err)
				}
				return
			}
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Kind != llm.ErrKindBadRequest || !strings.Contains(ae.Message, tc.error) {
				t.Fatalf("err %v, want a 400 saying %q", err, tc.error)
			}
		})
	}
}

func pngImage(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Images in a user message and in a tool result (as read_file returns one)
// reach the wire as image blocks: base64 data with the media type the bytes
// have, or a URL; an image the API cannot take becomes a note.
func TestImagesReachTheWire(t *testing.T) {
	pic := pngImage(t)
	b64 := base64.StdEncoding.EncodeToString(pic)
	readCall := llm.ToolCall{ID: "toolu_img", Name: "read_file", Args: json.RawMessage(`{"path":"/pic.png"}`)}
	result := llm.NewMessage(llm.RoleTool, llm.TextPart("Image /pic.png (PNG)."), llm.ImagePart("image/png", pic))
	result.ToolCallID, result.Name = readCall.ID, readCall.Name
	msgs := []llm.Message{
		llm.NewMessage(llm.RoleUser,
			llm.TextPart("Compare these."),
			llm.ImagePart("image/jpeg", pic), // declared wrongly: the bytes are a PNG
			llm.Part{Type: llm.PartImage, Image: &llm.Image{MediaType: "image/png", URL: "https://example.com/b.png"}},
			llm.ImagePart("image/bmp", []byte("BM not really an image")),
		),
		llm.Assistant("", readCall),
		result,
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := at.New(t, at.Sequence(at.Text("They match.")))
			if _, _, err := send(t, newModel(t, srv, nil), mode.stream, &llm.Request{Messages: msgs, Tools: specs}); err != nil {
				t.Fatal(err)
			}
			got := srv.Last()
			user := got.Messages[0].Content
			if len(user) != 4 || user[0].Text != "Compare these." {
				t.Fatalf("user turn %+v", user)
			}
			if s := user[1].Source; user[1].Type != "image" || s == nil || s.Type != "base64" || s.MediaType != "image/png" || s.Data != b64 {
				t.Fatalf("bytes image sent as %+v", user[1])
			}
			if s := user[2].Source; user[2].Type != "image" || s == nil || s.Type != "url" || s.URL != "https://example.com/b.png" {
				t.Fatalf("URL image sent as %+v", user[2])
			}
			if user[3].Type != "text" || !strings.Contains(user[3].Text, `"image/bmp"`) || !strings.Contains(user[3].Text, "not sent") {
				t.Fatalf("unsupported image sent as %+v", user[3])
			}
			res := got.LastToolResults()
			if len(res) != 1 || len(res[0].Content) != 2 || res[0].Content[0].Text != "Image /pic.png (PNG)." {
				t.Fatalf("tool result %+v", res)
			}
			if s := res[0].Content[1].Source; res[0].Content[1].Type != "image" || s == nil || s.MediaType != "image/png" || s.Data != b64 {
				t.Fatalf("tool-result image sent as %+v", res[0].Content[1])
			}
			if imgs := got.Images(); len(imgs) != 3 {
				t.Fatalf("%d images on the wire, want 3", len(imgs))
			}
		})
	}
}

// The fake refuses image blocks the real API refuses.
func TestFakeValidatesImages(t *testing.T) {
	pic := base64.StdEncoding.EncodeToString(pngImage(t))
	cases := []struct {
		name string
		src  string
		want string
	}{
		{"ok", `{"type":"base64","media_type":"image/png","data":"` + pic + `"}`, ""},
		{"bad media type", `{"type":"base64","media_type":"image/bmp","data":"` + pic + `"}`, "media_type"},
		{"not base64", `{"type":"base64","media_type":"image/png","data":"%%%"}`, "not valid base64"},
		{"type mismatch", `{"type":"base64","media_type":"image/gif","data":"` + pic + `"}`, "does not match the provided media type"},
		{"url ok", `{"type":"url","url":"https://example.com/a.png"}`, ""},
		{"bad url", `{"type":"url","url":"file:///etc/passwd"}`, "valid URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":` + tc.src + `}]}]}`
			var r at.MessagesRequest
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatal(err)
			}
			err := at.Validate(&r)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	cases := []struct {
		name  string
		reply at.Reply
		want  string
	}{
		{"explanation", at.Reply{Text: "I can't", Refusal: &at.Refusal{Category: "cyber", Explanation: "This request asks for malware."}}, "This request asks for malware."},
		{"text only", at.Reply{Text: "I won't help with that.", Refusal: &at.Refusal{}}, "I won't help with that."},
		{"category only", at.Reply{Refusal: &at.Refusal{Category: "bio"}}, `The model declined to answer (the provider's policy category "bio").`},
		{"nothing", at.Reply{StopReason: "refusal"}, "The model declined to answer."},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				srv := at.New(t, at.Sequence(tc.reply))
				resp, _, err := send(t, newModel(t, srv, nil), mode.stream, prompt("something bad"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.StopReason != llm.StopRefusal || resp.Refusal != tc.want {
					t.Fatalf("stop %s refusal %q, want %q", resp.StopReason, resp.Refusal, tc.want)
				}
			})
		}
	}
}

func TestUsageMapping(t *testing.T) {
	cases := []struct {
		name  string
		reply at.Reply
		want  llm.Usage
	}{
		{"cache and thinking", at.Reply{Thinking: []at.Thinking{{Text: "hm"}}, Text: "ok",
			Usage: &at.Usage{InputTokens: 100, OutputTokens: 50, CacheReadInputTokens: 1000, CacheCreationInputTokens: 200, ThinkingTokens: 30}},
			llm.Usage{InputTokens: 1300, OutputTokens: 50, CachedInputTokens: 1000, CacheWriteTokens: 200, ReasoningTokens: 30}},
		{"plain", at.Reply{Text: "ok", Usage: &at.Usage{InputTokens: 7, OutputTokens: 3}}, llm.Usage{InputTokens: 7, OutputTokens: 3}},
		{"no usage", at.Reply{Text: "ok", NoUsage: true}, llm.Usage{Unknown: true}},
	}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				srv := at.New(t, at.Sequence(tc.reply))
				resp, _, err := send(t, newModel(t, srv, nil), mode.stream, prompt("hi"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Usage != tc.want {
					t.Fatalf("usage %+v, want %+v", resp.Usage, tc.want)
				}
			})
		}
	}
}

// A history that started on other providers, their reasoning parts
// included, is accepted: the foreign reasoning (signatures, encrypted
// items, readable text) never reaches the wire, the tool loop begun without
// thinking goes on without it, and the next user turn thinks again.
func TestForeignHistoryAccepted(t *testing.T) {
	ls := llm.ToolCall{ID: "call_1", Name: "ls", Args: json.RawMessage(`{}`)}
	openai := llm.NewMessage(llm.RoleAssistant,
		llm.ReasoningPart("openai secret plan", &llm.Reasoning{Provider: "openai", Encrypted: "gAAAAenc", ID: "rs_1"}),
		llm.TextPart("Let me look."))
	openai.ToolCalls = []llm.ToolCall{ls}
	gemini := llm.NewMessage(llm.RoleAssistant,
		llm.ReasoningPart("gemini musing", &llm.Reasoning{Provider: "gemini", Signature: "Z2VtaW5p"}),
		llm.TextPart("There is one file."))
	local := llm.NewMessage(llm.RoleAssistant, llm.ReasoningPart("local thought", nil), llm.TextPart("Noted."))
	history := []llm.Message{
		llm.User("What is here?"), openai, llm.ToolResult(ls, "a.txt", false), gemini,
		llm.User("And now?"), local,
		llm.User("Look again."), openai, llm.ToolResult(ls, "a.txt", false),
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := at.New(t, at.Sequence(at.Reply{Thinking: []at.Thinking{{Text: "fresh"}}, Text: "Still a.txt."}, at.Text("Bye.")))
			m := newModel(t, srv, nil)
			settings := llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 3000}}
			resp, _, err := send(t, m, mode.stream, &llm.Request{Messages: history, Tools: specs, Settings: settings})
			if err != nil {
				t.Fatal(err)
			}
			got := srv.Last()
			for _, leak := range []string{"secret plan", "gAAAAenc", "gemini musing", "Z2VtaW5p", "local thought"} {
				if bytes.Contains(got.Raw, []byte(leak)) {
					t.Fatalf("foreign reasoning %q reached the wire: %s", leak, got.Raw)
				}
			}
			if got.Thinking != nil {
				t.Fatalf("thinking sent in a tool loop that began without it: %s", got.Thinking)
			}
			next := append(append([]llm.Message(nil), history...), resp.Message, llm.User("Thanks."))
			if _, _, err := send(t, m, mode.stream, &llm.Request{Messages: next, Tools: specs, Settings: settings}); err != nil {
				t.Fatal(err)
			}
			if got := srv.Last(); compact(t, string(got.Thinking)) != `{"budget_tokens":3000,"type":"enabled"}` {
				t.Fatalf("a new user turn did not think again: %s", got.Thinking)
			}
		})
	}
}

func TestCheckSettings(t *testing.T) {
	temp, topP := 0.3, 0.9
	cases := []struct {
		name    string
		model   string
		cfg     func(*Config)
		s       llm.Settings
		dropped []string
		err     string
	}{
		{"nothing", "claude-sonnet-4-5", nil, llm.Settings{}, nil, ""},
		{"temperature without thinking is dropped", "claude-sonnet-4-5", nil, llm.Settings{Temperature: &temp, TopP: &topP}, []string{"temperature", "top_p"}, ""},
		{"temperature with reasoning", "claude-sonnet-4-5", nil, llm.Settings{Temperature: &temp, Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}}, nil,
			"anthropic: temperature cannot be set while extended thinking is on (the API rejects sampling settings when the model thinks); remove it or turn reasoning off"},
		{"top_p with configured budget", "claude-sonnet-4-5", func(c *Config) { c.ThinkingBudget = 2000 }, llm.Settings{TopP: &topP}, nil, "top_p cannot be set"},
		{"both with adaptive", "claude-opus-4-6", func(c *Config) { c.AdaptiveThinking = true }, llm.Settings{Temperature: &temp, TopP: &topP}, nil, "temperature and top_p cannot be set while extended thinking is on (the API rejects sampling settings when the model thinks); remove them"},
		{"reasoning on a model that does not think", "claude-3-5-sonnet-20241022", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}, Temperature: &temp}, []string{"temperature", "reasoning"}, ""},
		{"unknown effort", "claude-sonnet-4-5", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: "extreme"}}, nil, `unknown reasoning effort "extreme"`},
		{"negative budget", "claude-sonnet-4-5", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: -1}}, nil, "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Model: tc.model, APIKey: "k"}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			dropped, err := m.CheckSettings(tc.s)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if !reflect.DeepEqual(dropped, tc.dropped) {
				t.Fatalf("dropped %q, want %q", dropped, tc.dropped)
			}
			if tc.err != "" {
				// The adapter refuses the same request rather than send it.
				if _, berr := m.build(&llm.Request{Messages: []llm.Message{llm.User("x")}, Settings: tc.s}); berr == nil {
					t.Fatal("build accepted settings CheckSettings refuses")
				}
			}
		})
	}
}

func TestReasoningSettingMapping(t *testing.T) {
	cases := []struct {
		name      string
		model     string
		cfg       func(*Config)
		s         llm.Settings
		tools     bool
		thinking  string // compact JSON, "" for none
		maxTokens int
		effort    string
		beta      bool
	}{
		{"low", "claude-sonnet-4-5", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}, true, `{"budget_tokens":2048,"type":"enabled"}`, 8192, "", true},
		{"medium without tools", "claude-sonnet-4-5", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortMedium}}, false, `{"budget_tokens":8192,"type":"enabled"}`, 16384, "", false},
		{"high", "claude-sonnet-4-5", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}}, true, `{"budget_tokens":24576,"type":"enabled"}`, 32768, "", true},
		{"budget", "claude-sonnet-4-5", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 5000}}, true, `{"budget_tokens":5000,"type":"enabled"}`, 8192, "", true},
		{"small budget raised to the minimum", "claude-sonnet-4-5", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 100}}, true, `{"budget_tokens":1024,"type":"enabled"}`, 8192, "", true},
		{"max_tokens below the budget", "claude-sonnet-4-5", nil, llm.Settings{MaxTokens: 1000, Reasoning: &llm.ReasoningConfig{BudgetTokens: 2048}}, true, `{"budget_tokens":2048,"type":"enabled"}`, 3048, "", true},
		{"setting overrides config", "claude-sonnet-4-5", func(c *Config) { c.ThinkingBudget = 9000 }, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}, true, `{"budget_tokens":2048,"type":"enabled"}`, 8192, "", true},
		{"config budget", "claude-sonnet-4-5", func(c *Config) { c.ThinkingBudget = 9000 }, llm.Settings{}, true, `{"budget_tokens":9000,"type":"enabled"}`, 17192, "", true},
		{"adaptive model effort", "claude-opus-4-6", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}}, true, `{"type":"adaptive"}`, 8192, "high", false},
		{"adaptive model budget", "claude-opus-4-6-20260101", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 3000}}, true, `{"type":"adaptive"}`, 8192, "low", false},
		{"adaptive config", "claude-sonnet-4-5", func(c *Config) { c.AdaptiveThinking = true }, llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 100000}}, true, `{"type":"adaptive"}`, 8192, "high", false},
		{"model without thinking", "claude-3-5-haiku-20241022", nil, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}}, true, "", 8192, "", false},
		{"off", "claude-sonnet-4-5", nil, llm.Settings{}, true, "", 8192, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := prompt("x")
			req.Settings = tc.s
			if tc.tools {
				req.Tools = specs
			}
			got := sendAndRecord(t, req, func(c *Config) {
				c.Model = tc.model
				if tc.cfg != nil {
					tc.cfg(c)
				}
			})
			th := ""
			if got.Thinking != nil {
				th = compact(t, string(got.Thinking))
			}
			effort := ""
			if got.OutputConfig != nil {
				effort = got.OutputConfig.Effort
			}
			beta := strings.Contains(got.Header.Get("Anthropic-Beta"), "interleaved-thinking-2025-05-14")
			if th != tc.thinking || *got.MaxTokens != tc.maxTokens || effort != tc.effort || beta != tc.beta {
				t.Fatalf("thinking %s max_tokens %d effort %q beta %v; want %s %d %q %v", th, *got.MaxTokens, effort, beta, tc.thinking, tc.maxTokens, tc.effort, tc.beta)
			}
		})
	}
}

// Forcing tool use while thinking with a budget is refused with a clear
// error instead of a 400 from the API.
func TestForcedToolWithThinkingIsRefused(t *testing.T) {
	m, err := New(Config{Model: "claude-sonnet-4-5", APIKey: "k", ThinkingBudget: 2048})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.build(&llm.Request{Messages: []llm.Message{llm.User("x")}, Tools: specs, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Kind != llm.ErrKindBadRequest || !strings.Contains(ae.Message, "forces tool use") {
		t.Fatalf("err %v", err)
	}
}

func TestCapabilities(t *testing.T) {
	cases := []struct {
		model             string
		images, reasoning bool
	}{
		{"claude-sonnet-4-5", true, true},
		{"claude-opus-4-6", true, true},
		{"claude-3-7-sonnet-20250219", true, true},
		{"claude-3-5-sonnet-20241022", true, false},
		{"claude-3-haiku-20240307", true, false},
		{"claude-2.1", false, false},
		{"claude-instant-1.2", false, false},
		{"some-future-model", true, true},
	}
	for _, tc := range cases {
		m, err := New(Config{Model: tc.model, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Capabilities(); got != (llm.Capabilities{Images: tc.images, Reasoning: tc.reasoning}) {
			t.Errorf("%s: %+v", tc.model, got)
		}
	}
}
