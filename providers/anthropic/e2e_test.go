package anthropic_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/providers/retry"
	"github.com/deepagents-go/deepagents/tool"
)

type writeIn struct {
	Path    string `json:"path" jsonschema:"absolute path of the file"`
	Content string `json:"content" jsonschema:"the whole new content"`
}

var writeFile = tool.MustFunc("write_file", "Create or replace a file.",
	func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
		if err := env.Files.Write(ctx, in.Path, in.Content); err != nil {
			return "", err
		}
		return fmt.Sprintf("Wrote %d bytes to %s.", len(in.Content), in.Path), nil
	})

// TestAgentEndToEnd runs the agent loop on the adapter against a fake server
// playing a three-round conversation: two parallel writes, a rewrite, a
// final answer.
func TestAgentEndToEnd(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			srv := at.New(t, at.Conversation(
				at.Reply{Text: "I'll write both files.", ToolCalls: []at.ToolCall{
					at.Call("write_file", writeIn{Path: "/a.txt", Content: "alpha"}),
					at.Call("write_file", writeIn{Path: "/b.txt", Content: "beta"}),
				}},
				at.Calls(at.Call("write_file", writeIn{Path: "/a.txt", Content: "alpha, second draft"})),
				at.Text("Wrote /a.txt and /b.txt."),
			), at.WithAPIKey("sk-test"))
			model, err := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: "sk-test", BaseURL: srv.URL,
				Retry: retry.Policy{MaxRetries: -1}})
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(agent.Config{Model: model, System: "You write files.", Tools: []tool.Tool{writeFile}, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Invoke(context.Background(), agent.Prompt("Write /a.txt and /b.txt."))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusOK || res.Rounds != 3 || res.FinalText() != "Wrote /a.txt and /b.txt." {
				t.Fatalf("status %s rounds %d final %q (%s)", res.Status, res.Rounds, res.FinalText(), res.Error)
			}
			files := map[string]string{}
			for p, f := range res.State.Files {
				files[p] = f.Content
			}
			if want := map[string]string{"/a.txt": "alpha, second draft", "/b.txt": "beta"}; !reflect.DeepEqual(files, want) {
				t.Fatalf("files %v, want %v", files, want)
			}
			var roles []llm.Role
			for _, m := range res.State.Messages {
				roles = append(roles, m.Role)
			}
			want := []llm.Role{"user", "assistant", "tool", "tool", "assistant", "tool", "assistant"}
			if !reflect.DeepEqual(roles, want) {
				t.Fatalf("roles %v, want %v", roles, want)
			}
			if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
				t.Fatalf("usage %+v", res.Usage)
			}

			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("server saw %d requests", len(reqs))
			}
			for _, r := range reqs {
				if r.Invalid != nil || r.Stream != stream || r.SystemText() != "You write files." || !r.OffersTool("write_file") {
					t.Fatalf("request %d: invalid=%v stream=%v system=%q tools=%v", r.N, r.Invalid, r.Stream, r.SystemText(), r.ToolNames())
				}
			}
			results := reqs[1].LastToolResults()
			if len(results) != 2 || results[0].Content.Text() != "Wrote 5 bytes to /a.txt." || results[1].Content.Text() != "Wrote 4 bytes to /b.txt." {
				t.Fatalf("round 2 saw results %+v", results)
			}
			if len(reqs[2].Messages) != 5 {
				t.Fatalf("round 3 sent %d turns, want 5", len(reqs[2].Messages))
			}
		})
	}
}

// TestAgentThinkingEndToEnd runs the agent loop with extended thinking on:
// the fake fails any round whose request lacks the signed thinking of the
// loop's earlier replies, so the run only finishes if the agent's stored
// messages carry the reasoning parts back unaltered.
func TestAgentThinkingEndToEnd(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[stream], func(t *testing.T) {
			srv := at.New(t, at.Conversation(
				at.Reply{Thinking: []at.Thinking{{Text: "Two files; write both."}}, ToolCalls: []at.ToolCall{
					at.Call("write_file", writeIn{Path: "/a.txt", Content: "alpha"}),
					at.Call("write_file", writeIn{Path: "/b.txt", Content: "beta"}),
				}},
				at.Reply{Thinking: []at.Thinking{{Text: "Now revise /a.txt."}, {Redacted: "b3BhcXVl"}},
					ToolCalls: []at.ToolCall{at.Call("write_file", writeIn{Path: "/a.txt", Content: "alpha 2"})}},
				at.Reply{Thinking: []at.Thinking{{Text: "Done."}}, Text: "Wrote both."},
			))
			model, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: srv.URL,
				ThinkingBudget: 2048, Retry: retry.Policy{MaxRetries: -1}})
			if err != nil {
				t.Fatal(err)
			}
			a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{writeFile}, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Invoke(context.Background(), agent.Prompt("Write /a.txt and /b.txt."))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusOK || res.Rounds != 3 || res.FinalText() != "Wrote both." {
				t.Fatalf("status %s rounds %d final %q (%s)", res.Status, res.Rounds, res.FinalText(), res.Error)
			}
			for _, r := range srv.Requests() {
				if r.Invalid != nil || r.ThinkingType() != "enabled" {
					t.Fatalf("request %d: invalid=%v thinking=%s", r.N, r.Invalid, r.Thinking)
				}
			}
			var reasoning []string
			for _, m := range res.State.Messages {
				for _, p := range m.ReasoningFor("anthropic") {
					reasoning = append(reasoning, p.Text)
				}
			}
			if want := []string{"Two files; write both.", "Now revise /a.txt.", "", "Done."}; !reflect.DeepEqual(reasoning, want) {
				t.Fatalf("reasoning parts %q, want %q", reasoning, want)
			}
			if res.Usage.ReasoningTokens == 0 || res.Usage.ReasoningTokens >= res.Usage.OutputTokens || res.Usage.Unknown {
				t.Fatalf("usage %+v", res.Usage)
			}
		})
	}
}
