package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// call runs one model call, streamed or not; a stream's reasoning deltas are
// returned too.
func call(ctx context.Context, m *Model, req *llm.Request, stream bool) (*llm.Response, string, error) {
	if !stream {
		resp, err := m.Generate(ctx, req)
		return resp, "", err
	}
	var deltas strings.Builder
	var final *llm.Response
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return nil, deltas.String(), err
		}
		switch ev.Type {
		case llm.EventReasoningDelta:
			deltas.WriteString(ev.Text)
		case llm.EventDone:
			final = ev.Response
		}
	}
	if final == nil {
		return nil, deltas.String(), errors.New("the stream had no done event")
	}
	return final, deltas.String(), nil
}

// checkpoint round-trips msgs through JSON, as a checkpointed run would.
func checkpoint(t *testing.T, msgs []llm.Message) []llm.Message {
	t.Helper()
	var out []llm.Message
	if err := json.Unmarshal([]byte(mustJSON(t, msgs)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// thinkingScript is a three-round tool loop in which the model thinks before
// each tool call.
func thinkingScript() openaitest.Handler {
	return openaitest.Script(openaitest.Conversation{Replies: []openaitest.Reply{
		{Reasoning: "The user wants the file; read it first.", ToolCalls: []openaitest.Call{{Name: "read_file", Args: `{"path":"a.txt"}`}}},
		{Reasoning: "It says 42. Check the second file too.", Content: "Reading the second file.", ToolCalls: []openaitest.Call{{Name: "read_file", Args: `{"path":"b.txt"}`}}},
		{Reasoning: "Both read.", Content: "The answer is 42."},
	}})
}

var readFileTool = llm.ToolSpec{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}

// runLoop drives the tool loop of thinkingScript, answering every call with
// "42", and returns the responses.
func runLoop(t *testing.T, m *Model, stream bool, alter func(history []llm.Message)) ([]*llm.Response, error) {
	t.Helper()
	ctx := testCtx(t)
	history := []llm.Message{llm.User("What is in a.txt?")}
	var out []*llm.Response
	for range 3 {
		req := &llm.Request{Messages: history, Tools: []llm.ToolSpec{readFileTool},
			Settings: llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}}}
		resp, deltas, err := call(ctx, m, req, stream)
		if err != nil {
			return out, err
		}
		if stream && deltas != resp.Message.ReasoningText() {
			t.Errorf("reasoning deltas %q, final reasoning %q", deltas, resp.Message.ReasoningText())
		}
		out = append(out, resp)
		history = append(history, resp.Message)
		for _, c := range resp.Message.ToolCalls {
			history = append(history, llm.ToolResult(c, "42", false))
		}
		history = checkpoint(t, history)
		if alter != nil && len(resp.Message.ToolCalls) > 0 {
			alter(history)
		}
		if len(resp.Message.ToolCalls) == 0 {
			break
		}
	}
	return out, nil
}

func TestResponsesToolLoopSendsReasoningBack(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			srv := openaitest.NewServer(t, thinkingScript())
			m, _ := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
			resps, err := runLoop(t, m, stream, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(resps) != 3 || resps[2].Message.Content != "The answer is 42." || resps[2].StopReason != llm.StopEnd {
				t.Fatalf("got %d responses, last %+v", len(resps), resps[len(resps)-1])
			}
			for i, want := range []string{"The user wants the file; read it first.", "It says 42. Check the second file too.", "Both read."} {
				msg := resps[i].Message
				parts := msg.ReasoningFor("openai")
				if len(parts) != 1 || parts[0].Text != want || parts[0].Reasoning.Encrypted == "" || !strings.HasPrefix(parts[0].Reasoning.ID, "rs_") {
					t.Fatalf("response %d reasoning parts %+v", i, msg.Parts)
				}
				if msg.Parts[0].Type != llm.PartReasoning {
					t.Errorf("response %d: reasoning is not first: %+v", i, msg.Parts)
				}
			}
			if resps[1].Message.Content != "Reading the second file." || resps[1].StopReason != llm.StopToolCalls {
				t.Errorf("round 1: %+v", resps[1])
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				rb := r.Responses
				if rb == nil || rb.Store == nil || *rb.Store || rb.Reasoning == nil || rb.Reasoning.Effort != "high" ||
					len(rb.Include) != 1 || rb.Include[0] != "reasoning.encrypted_content" || r.Stream != stream {
					t.Fatalf("request %d: %s", i, r.Body)
				}
			}
			// The last request carries both earlier reasoning items, each
			// before its function call.
			var kinds []string
			for _, it := range reqs[2].Responses.Items {
				kinds = append(kinds, it.Type+"/"+it.Role)
			}
			want := "/user reasoning/ function_call/ function_call_output/ reasoning/ /assistant function_call/ function_call_output/"
			if got := strings.Join(kinds, " "); got != want {
				t.Errorf("input items\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestResponsesRefusesAlteredOrMissingReasoning(t *testing.T) {
	cases := []struct {
		name  string
		alter func(h []llm.Message)
		want  string
	}{
		{"altered", func(h []llm.Message) {
			for i := range h {
				for j := range h[i].Parts {
					if r := h[i].Parts[j].Reasoning; r != nil {
						r.Encrypted = r.Encrypted[:len(r.Encrypted)-2] + "xx"
					}
				}
			}
		}, "could not be verified"},
		{"missing", func(h []llm.Message) {
			for i := range h {
				h[i] = h[i].WithoutReasoning()
			}
		}, "without its required 'reasoning' item"},
		{"marked as another provider's", func(h []llm.Message) {
			for i := range h {
				for j := range h[i].Parts {
					if r := h[i].Parts[j].Reasoning; r != nil {
						r.Provider = "anthropic"
					}
				}
			}
		}, "without its required 'reasoning' item"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/generate", true: "/stream"}[stream], func(t *testing.T) {
				srv := openaitest.NewServer(t, thinkingScript())
				m, _ := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
				_, err := runLoop(t, m, stream, tc.alter)
				var ae *llm.APIError
				if !errors.As(err, &ae) || ae.Kind != llm.ErrKindBadRequest || !strings.Contains(ae.Message, tc.want) {
					t.Fatalf("error %v, want a bad request saying %q", err, tc.want)
				}
				if srv.Count() != 2 {
					t.Fatalf("%d requests; the second must be the refused one", srv.Count())
				}
			})
		}
	}
}

func TestResponsesWithoutEncryptedContentIsNotSentBack(t *testing.T) {
	// A reasoning item of this provider that came without encrypted content
	// (or from Chat Completions) cannot be sent back: it is left out.
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok")))
	m, _ := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
	asst := llm.NewMessage(llm.RoleAssistant,
		llm.ReasoningPart("shown only", &llm.Reasoning{Provider: "openai", ID: "rs_x"}),
		llm.ReasoningPart("no data", nil),
		llm.TextPart("Hello."))
	req := &llm.Request{Messages: []llm.Message{llm.User("hi"), asst, llm.User("again")}}
	if _, err := m.Generate(testCtx(t), req); err != nil {
		t.Fatal(err)
	}
	body := string(srv.Requests()[0].Body)
	if strings.Contains(body, "reasoning\"") && strings.Contains(body, "rs_x") || strings.Contains(body, "shown only") || strings.Contains(body, "no data") {
		t.Fatalf("reasoning without encrypted content was sent: %s", body)
	}
}

func TestForeignReasoningIsDropped(t *testing.T) {
	// A history that started on Anthropic: its signed thinking, readable
	// text included, never reaches OpenAI, and the request is accepted.
	foreign := llm.NewMessage(llm.RoleAssistant,
		llm.ReasoningPart("Claude's private thoughts", &llm.Reasoning{Provider: "anthropic", Signature: "c2lnbmF0dXJl"}),
		llm.ReasoningPart("", &llm.Reasoning{Provider: "anthropic", Encrypted: "cmVkYWN0ZWQ="}),
		llm.TextPart("Let me look."))
	foreign.ToolCalls = []llm.ToolCall{{ID: "toolu_01", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}}
	history := []llm.Message{llm.User("What is in a.txt?"), foreign,
		llm.ToolResult(foreign.ToolCalls[0], "42", false)}
	for _, api := range []string{APIChat, APIResponses} {
		for _, stream := range []bool{false, true} {
			t.Run(api+map[bool]string{false: "/generate", true: "/stream"}[stream], func(t *testing.T) {
				srv := openaitest.NewServer(t, openaitest.Script(openaitest.Conversation{
					Replies: []openaitest.Reply{{}, {Reasoning: "Continue from the file.", Content: "It holds 42."}},
				}))
				m, _ := newModel(t, srv, Config{Model: "gpt-5", API: api})
				req := &llm.Request{Messages: history, Tools: []llm.ToolSpec{readFileTool},
					Settings: llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}}
				resp, _, err := call(testCtx(t), m, req, stream)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Message.Content != "It holds 42." {
					t.Fatalf("%+v", resp.Message)
				}
				body := string(srv.Requests()[0].Body)
				for _, s := range []string{"Claude's private thoughts", "c2lnbmF0dXJl", "cmVkYWN0ZWQ=", "anthropic"} {
					if strings.Contains(body, s) {
						t.Errorf("the request carries %q: %s", s, body)
					}
				}
				if !strings.Contains(body, "Let me look.") || !strings.Contains(body, "toolu_01") {
					t.Errorf("the foreign turn's text or call is missing: %s", body)
				}
			})
		}
	}
}

func TestReasoningSettingOnTheWire(t *testing.T) {
	cases := []struct {
		rc   *llm.ReasoningConfig
		want string
	}{
		{nil, ""},
		{&llm.ReasoningConfig{}, ""},
		{&llm.ReasoningConfig{Effort: llm.EffortLow}, "low"},
		{&llm.ReasoningConfig{Effort: llm.EffortMedium}, "medium"},
		{&llm.ReasoningConfig{Effort: llm.EffortHigh}, "high"},
		{&llm.ReasoningConfig{BudgetTokens: 1024}, "low"},
		{&llm.ReasoningConfig{BudgetTokens: 4095}, "low"},
		{&llm.ReasoningConfig{BudgetTokens: 4096}, "medium"},
		{&llm.ReasoningConfig{BudgetTokens: 16383}, "medium"},
		{&llm.ReasoningConfig{BudgetTokens: 16384}, "high"},
		{&llm.ReasoningConfig{BudgetTokens: 64000}, "high"},
		{&llm.ReasoningConfig{Effort: llm.EffortLow, BudgetTokens: 64000}, "low"},
	}
	for _, api := range []string{APIChat, APIResponses} {
		srv := openaitest.NewServer(t, func(*openaitest.Request) openaitest.Reply { return openaitest.Text("ok") })
		m, _ := newModel(t, srv, Config{Model: "o4-mini", API: api})
		for i, tc := range cases {
			req := userReq("hi")
			req.Settings.Reasoning = tc.rc
			if _, err := m.Generate(testCtx(t), req); err != nil {
				t.Fatalf("%s case %d: %v", api, i, err)
			}
			r := srv.Requests()[i]
			if r.ReasoningEffort != tc.want {
				t.Errorf("%s case %d (%+v): effort %q, want %q (%s)", api, i, tc.rc, r.ReasoningEffort, tc.want, r.Body)
			}
			if api == APIResponses {
				hasSummary := r.Responses.Reasoning != nil && r.Responses.Reasoning.Summary == "auto"
				if hasSummary != (tc.want != "") {
					t.Errorf("case %d: summary asked %v with effort %q", i, hasSummary, tc.want)
				}
			}
		}
	}
}

func TestCheckSettings(t *testing.T) {
	temp, topP := 0.2, 0.9
	cases := []struct {
		name, model, api string
		s                llm.Settings
		dropped          []string
		err              string
	}{
		{"plain settings on gpt-4.1", "gpt-4.1", APIChat, llm.Settings{Temperature: &temp, TopP: &topP, Stop: []string{"x"}}, nil, ""},
		{"reasoning model drops sampling", "o3", APIChat, llm.Settings{Temperature: &temp, TopP: &topP}, []string{"temperature", "top_p"}, ""},
		{"gpt-5 drops temperature", "gpt-5-mini", APIChat, llm.Settings{Temperature: &temp}, []string{"temperature"}, ""},
		{"gpt-5 chat keeps temperature", "gpt-5-chat-latest", APIChat, llm.Settings{Temperature: &temp}, nil, ""},
		{"responses drops stop", "gpt-4.1", APIResponses, llm.Settings{Stop: []string{"x"}}, []string{"stop"}, ""},
		{"effort on a reasoning model", "gpt-5", APIResponses, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortHigh}}, nil, ""},
		{"effort on a local model", "qwen3:8b", APIChat, llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: 2000}}, nil, ""},
		{"effort on a model that does not reason", "gpt-4o", APIChat, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}, nil, "does not reason"},
		{"unknown effort", "gpt-5", APIChat, llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: "extreme"}}, nil, `unknown reasoning effort "extreme"`},
		{"negative budget", "gpt-5", APIChat, llm.Settings{Reasoning: &llm.ReasoningConfig{BudgetTokens: -5}}, nil, "must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{Model: tc.model, API: tc.api, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			dropped, err := m.CheckSettings(tc.s)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(dropped, ",") != strings.Join(tc.dropped, ",") {
				t.Fatalf("dropped %v (%v), want %v", dropped, err, tc.dropped)
			}
		})
	}
}

func TestDroppedSettingsAreNotSent(t *testing.T) {
	temp := 0.3
	for _, api := range []string{APIChat, APIResponses} {
		srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok"), openaitest.Text("ok")))
		req := userReq("hi")
		req.Settings = llm.Settings{Temperature: &temp, Stop: []string{"END"}}
		o3, _ := newModel(t, srv, Config{Model: "o3", API: api})
		if _, err := o3.Generate(testCtx(t), req); err != nil {
			t.Fatal(err)
		}
		r := srv.Requests()[0]
		if r.Temperature != nil {
			t.Errorf("%s: temperature sent to o3: %s", api, r.Body)
		}
		if hasStop := strings.Contains(string(r.Body), `"stop"`); hasStop != (api == APIChat) {
			t.Errorf("%s: stop sent %v: %s", api, hasStop, r.Body)
		}
		gpt41, _ := newModel(t, srv, Config{Model: "gpt-4.1", API: api})
		if _, err := gpt41.Generate(testCtx(t), req); err != nil {
			t.Fatal(err)
		}
		if r := srv.Requests()[1]; r.Temperature == nil || *r.Temperature != 0.3 {
			t.Errorf("%s: temperature not sent to gpt-4.1: %s", api, r.Body)
		}
	}
	// A setting CheckSettings refuses fails the call before any request.
	srv := openaitest.NewServer(t, openaitest.Sequence())
	m, _ := newModel(t, srv, Config{Model: "gpt-4o"})
	req := userReq("hi")
	req.Settings.Reasoning = &llm.ReasoningConfig{Effort: llm.EffortHigh}
	if _, err := m.Generate(testCtx(t), req); !errors.Is(err, llm.ErrBadRequest) || srv.Count() != 0 {
		t.Fatalf("%v, %d requests", err, srv.Count())
	}
}

func TestCapabilities(t *testing.T) {
	cases := []struct {
		model             string
		noImages          bool
		images, reasoning bool
	}{
		{"gpt-5", false, true, true},
		{"gpt-5-mini", false, true, true},
		{"o3", false, true, true},
		{"o4-mini", false, true, true},
		{"o3-mini", false, false, true},
		{"o1-mini", false, false, true},
		{"gpt-4o", false, true, false},
		{"gpt-4.1-nano", false, true, false},
		{"gpt-4-turbo", false, true, false},
		{"gpt-4", false, false, false},
		{"gpt-3.5-turbo", false, false, false},
		{"openai/gpt-4o-mini", false, true, false},
		{"qwen3:8b", false, true, true},
		{"llama3.1:8b", true, false, true},
	}
	for _, tc := range cases {
		m, err := New(Config{Model: tc.model, NoImages: tc.noImages, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		got := llm.CapabilitiesOf(m)
		if got.Images != tc.images || got.Reasoning != tc.reasoning {
			t.Errorf("%s (NoImages %v): %+v, want images %v reasoning %v", tc.model, tc.noImages, got, tc.images, tc.reasoning)
		}
	}
	if _, err := New(Config{Model: "gpt-5", API: "assistants"}); err == nil || !strings.Contains(err.Error(), `unknown Config.API "assistants"`) {
		t.Fatalf("bad API accepted: %v", err)
	}
}

func TestChatReasoningIsShownNotSent(t *testing.T) {
	// Readable reasoning of a compatible server becomes a reasoning part
	// marked with the provider's name; Chat Completions has no place for it
	// in a request, so the next request carries only the answer.
	for _, stream := range []bool{false, true} {
		srv := openaitest.NewServer(t, openaitest.Script(openaitest.Conversation{Replies: []openaitest.Reply{
			{Reasoning: "hmm, a greeting", Content: "Hello!"}, openaitest.Text("Bye."),
		}}))
		m, _ := newModel(t, srv, Config{Provider: "ollama", Model: "qwen3:8b"})
		resp, deltas, err := call(testCtx(t), m, userReq("hi"), stream)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Message.Parts
		if len(p) != 2 || p[0].Type != llm.PartReasoning || p[0].Text != "hmm, a greeting" || p[0].Reasoning == nil ||
			p[0].Reasoning.Provider != "ollama" || p[0].Reasoning.Encrypted != "" || p[1].Text != "Hello!" || resp.Message.Content != "Hello!" {
			t.Fatalf("parts %+v", p)
		}
		if stream && deltas != "hmm, a greeting" {
			t.Errorf("deltas %q", deltas)
		}
		req := &llm.Request{Messages: []llm.Message{llm.User("hi"), resp.Message, llm.User("bye")}}
		if _, _, err := call(testCtx(t), m, req, stream); err != nil {
			t.Fatal(err)
		}
		if body := string(srv.Requests()[1].Body); strings.Contains(body, "hmm") || !strings.Contains(body, "Hello!") {
			t.Errorf("second request %s", body)
		}
	}
}

// A compatible server that thinks between tool calls (DeepSeek's thinking
// mode) gets each tool-calling message's reasoning back in the field it
// came in, after a checkpoint round-trip too; a message without tool calls
// goes back without it, and NoReasoningBack leaves it out everywhere.
func TestChatToolLoopSendsReasoningBackInItsField(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, off := range []bool{false, true} {
			srv := openaitest.NewServer(t, thinkingScript())
			m, _ := newModel(t, srv, Config{Provider: "deepseek", Model: "deepseek-reasoner", NoReasoningBack: off})
			if _, err := runLoop(t, m, stream, nil); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			var last struct {
				Messages []map[string]any `json:"messages"`
			}
			if err := json.Unmarshal(reqs[2].Body, &last); err != nil {
				t.Fatal(err)
			}
			var got []any
			for _, msg := range last.Messages {
				if msg["role"] == "assistant" {
					got = append(got, msg["reasoning_content"])
				}
			}
			want := []any{"The user wants the file; read it first.", "It says 42. Check the second file too."}
			if off {
				want = []any{nil, nil}
			}
			if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
				t.Errorf("stream %v, off %v: the assistant messages' reasoning_content %q, want %q", stream, off, got, want)
			}
		}
	}
	// An answer without tool calls goes back without its reasoning.
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("ok")))
	m, _ := newModel(t, srv, Config{Provider: "deepseek", Model: "deepseek-reasoner"})
	answer := llm.NewMessage(llm.RoleAssistant, reasoningThenText("deepseek", "reasoning_content", "a greeting", "Hello!")...)
	if _, err := m.Generate(testCtx(t), &llm.Request{Messages: []llm.Message{llm.User("hi"), answer, llm.User("bye")}}); err != nil {
		t.Fatal(err)
	}
	if body := string(srv.Requests()[0].Body); strings.Contains(body, "a greeting") {
		t.Errorf("an answer's reasoning was sent back: %s", body)
	}
}
