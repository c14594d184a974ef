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
	"github.com/deepagents-go/deepagents/subagent"
)

// The seed's delegation experiment over each provider's real wire format: the
// fake server plays the scripted replies (the parent is the request that
// offers task; the child is the one whose first message is the brief), and
// the whole loop — task tool, child run, file merge, receipt — runs over HTTP.
const (
	e2eQuestion = "What is the answer? Delegate the research."
	e2eBrief    = "Find the answer and write notes to /child.md, then report."
	e2eNotes    = "# Notes\n42\n"
	e2eReport   = "The conclusion is 42."
	e2eFinal    = "The subagent concluded: 42."
)

func checkDelegation(t *testing.T, model llm.Model, stream bool) {
	t.Helper()
	a, err := deepagents.New(deepagents.Config{Model: model, Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt(e2eQuestion))
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	msgs := res.State.Messages
	if len(msgs) != 4 || res.FinalText() != e2eFinal {
		t.Fatalf("parent ended with %d messages, final %q", len(msgs), res.FinalText())
	}
	if msgs[1].ToolCalls[0].Name != "task" || msgs[2].Role != llm.RoleTool || msgs[2].Content != e2eReport || msgs[2].ToolCallID != msgs[1].ToolCalls[0].ID {
		t.Errorf("delegation step: %+v / %+v", msgs[1], msgs[2])
	}
	if res.State.Files["/child.md"].Content != e2eNotes {
		t.Errorf("child's file did not reach the parent: %v", res.State.Files)
	}
	child, ok := res.Child(msgs[1].ToolCalls[0].ID)
	if !ok || len(child.State.Messages) != 4 || child.State.Messages[0].Content != e2eBrief {
		t.Fatalf("child transcript: %+v", child)
	}
	if res.Usage.InputTokens == 0 || len(res.UsageByAgent) != 2 {
		t.Errorf("usage not accounted: %+v %v", res.Usage, res.UsageByAgent)
	}
}

func TestDelegationOverAnthropicWire(t *testing.T) {
	for _, stream := range []bool{false, true} {
		router := at.NewRouter().
			On(at.OffersTool("task"), at.Conversation(
				at.Calls(at.Call("task", map[string]string{"description": e2eBrief, "subagent_type": "general-purpose"})),
				at.Text(e2eFinal),
			)).
			On(at.FirstUserContains(e2eBrief), at.Conversation(
				at.Calls(at.Call("write_file", map[string]string{"file_path": "/child.md", "content": e2eNotes})),
				at.Text(e2eReport),
			))
		srv := at.New(t, router)
		m, err := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		checkDelegation(t, m, stream)
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d requests", len(reqs))
		}
		// The child's first request: its own system prompt, the brief only,
		// seven tools without task.
		var childFirst *at.Request
		for _, r := range reqs {
			if !r.OffersTool("task") && childFirst == nil {
				childFirst = r
			}
		}
		if childFirst == nil || childFirst.FirstUserText() != e2eBrief || len(childFirst.Messages) != 1 {
			t.Errorf("child's first request: %+v", childFirst)
		}
	}
}

func TestDelegationOverGeminiWire(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := gt.NewServer(t, gt.Routes(
			gt.Route{Match: gt.DeclaresFunction("task"), Handler: gt.Turns(
				gt.Calls(gt.Call{Name: "task", Args: map[string]any{"description": e2eBrief, "subagent_type": "general-purpose"}}),
				gt.Text(e2eFinal),
			)},
			gt.Route{Match: gt.FirstUserContains(e2eBrief), Handler: gt.Turns(
				gt.Calls(gt.Call{Name: "write_file", Args: map[string]any{"file_path": "/child.md", "content": e2eNotes}}),
				gt.Text(e2eReport),
			)},
		))
		m, err := gemini.New(t.Context(), gemini.Config{Model: "gemini-test", APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		checkDelegation(t, m, stream)
		var sawChild bool
		for _, r := range srv.Requests() {
			if strings.Contains(r.FirstUserText(), e2eBrief) && !r.Declares("task") {
				sawChild = true
			}
		}
		if !sawChild {
			t.Error("no child request without task")
		}
	}
}

func TestDelegationOverOpenAIWire(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := ot.NewServer(t, ot.Script(
			ot.Conversation{Match: ot.HasTool("task"), Replies: []ot.Reply{
				ot.Tools(ot.Call{Name: "task", Args: `{"description":"` + e2eBrief + `","subagent_type":"general-purpose"}`}),
				ot.Text(e2eFinal),
			}},
			ot.Conversation{Match: ot.FirstUserContains(e2eBrief), Replies: []ot.Reply{
				ot.Tools(ot.Call{Name: "write_file", Args: `{"file_path":"/child.md","content":"# Notes\n42\n"}`}),
				ot.Text(e2eReport),
			}},
		))
		m, err := openai.New(openai.Config{Model: "gpt-test", APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		checkDelegation(t, m, stream)
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d requests", len(reqs))
		}
		for _, r := range reqs {
			if r.HasTool("task") == (r.FirstUser() == e2eBrief) {
				t.Errorf("request %q: only the parent may be offered task", r.FirstUser())
			}
			if r.FirstUser() == e2eBrief && (r.System() != subagent.GeneralPurposePrompt || len(r.Tools) != 7) {
				t.Errorf("child request: system %q, %d tools", r.System(), len(r.Tools))
			}
		}
	}
}
