package deepagents_test

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/providers/gemini"
	gt "github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	"github.com/deepagents-go/deepagents/providers/openai"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/vfs"
)

// A conversation that Claude started with extended thinking, cut in the
// middle of its tool loop, is continued by Gemini 3 and by OpenAI's
// Responses API: each fake accepts it (as the real services must), and
// neither receives Anthropic's signed thinking.
func TestHistoryMovesBetweenProviders(t *testing.T) {
	const planned = "I should read the notes first."
	srv := at.New(t, at.Conversation(
		at.Reply{Thinking: []at.Thinking{{Text: planned}}, ToolCalls: []at.ToolCall{at.Call("read_file", map[string]string{"file_path": "/notes.md"})}},
		at.Text("The notes say 42."),
	))
	claude, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	a, err := deepagents.New(deepagents.Config{Model: claude, Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}})
	if err != nil {
		t.Fatal(err)
	}
	in := agent.Prompt("What do the notes say?")
	in.Files = map[string]vfs.File{"/notes.md": {Content: "42\n"}}
	res, err := a.Invoke(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	signed := res.State.Messages[1].ReasoningFor(anthropic.ProviderName)
	if len(signed) != 1 || signed[0].Text != planned || signed[0].Reasoning.Signature == "" {
		t.Fatalf("Claude's turn kept no signed thinking: %+v", res.State.Messages[1])
	}
	signature := signed[0].Reasoning.Signature
	// The history up to the tool result: the next model continues the loop.
	history := llm.Clone(res.State.Messages[:3])

	t.Run("gemini-3", func(t *testing.T) {
		// The scripts answer by round; round 0 was played by Claude.
		gsrv := gt.NewServer(t, gt.Turns(gt.Text("(Claude's turn)"), gt.Text("The notes say 42.")))
		m, err := gemini.New(t.Context(), gemini.Config{Model: "gemini-3-pro-preview", APIKey: "k", BaseURL: gsrv.URL})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Generate(t.Context(), &llm.Request{Messages: history, Settings: llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}})
		if err != nil || resp.Message.Content != "The notes say 42." {
			t.Fatalf("Gemini refused the moved history: %v", err)
		}
		raw := string(gsrv.Requests()[0].Raw)
		if strings.Contains(raw, signature) || strings.Contains(raw, planned) {
			t.Error("Anthropic's thinking reached Gemini")
		}
		// Gemini 3 wants a thought signature on every call of the current
		// turn; a call it did not make carries the placeholder the API
		// documents for such histories.
		if !strings.Contains(raw, `"name":"read_file"},"thoughtSignature":"skip_thought_signature_validator"`) {
			t.Error("the moved function call carries no placeholder signature: " + raw)
		}
	})

	t.Run("openai-responses", func(t *testing.T) {
		osrv := ot.NewServer(t, ot.Script(ot.Conversation{Replies: []ot.Reply{ot.Text("(Claude's turn)"), ot.Text("The notes say 42.")}}))
		m, err := openai.New(openai.Config{Model: "gpt-5", APIKey: "k", BaseURL: osrv.URL, API: openai.APIResponses})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Generate(t.Context(), &llm.Request{Messages: history, Settings: llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortLow}}})
		if err != nil || resp.Message.Content != "The notes say 42." {
			t.Fatalf("OpenAI refused the moved history: %v", err)
		}
		body := string(osrv.Requests()[0].Body)
		if strings.Contains(body, signature) || strings.Contains(body, planned) {
			t.Error("Anthropic's thinking reached OpenAI")
		}
	})
}
