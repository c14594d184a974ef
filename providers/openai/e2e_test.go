package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/tool"
)

type noteArgs struct {
	Path string `json:"path" jsonschema:"absolute path of the note"`
	Text string `json:"text" jsonschema:"the note"`
}

func noteTool() tool.Tool {
	return tool.MustFunc("write_note", "Write a note to a file.", func(ctx context.Context, env *tool.Env, in noteArgs) (string, error) {
		if err := env.Files.Write(ctx, in.Path, in.Text); err != nil {
			return "", err
		}
		return "wrote " + in.Path, nil
	})
}

// The agent loop drives the model through a fake server: a tool call, then
// (with the tool result in the request) the final answer.
func TestAgentEndToEnd(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Script(openaitest.Conversation{
				Match: openaitest.FirstUserContains("Save a note"),
				Replies: []openaitest.Reply{
					openaitest.Tools(openaitest.Call{ID: "call_note", Name: "write_note", Args: `{"path":"/notes/todo.md","text":"buy milk"}`}),
					openaitest.Text("Saved /notes/todo.md."),
				},
				Check: func(round int, r *openaitest.Request) error {
					if r.System() != "You keep notes." || !r.HasTool("write_note") {
						return fmt.Errorf("system %q, tools %v", r.System(), r.ToolNames())
					}
					if r.Stream != stream {
						return fmt.Errorf("stream = %v", r.Stream)
					}
					if round == 1 {
						res, ok := r.ToolResult("call_note")
						if !ok || res.Text() != "wrote /notes/todo.md" {
							return fmt.Errorf("round 1 lacks the tool result: %s", r.Body)
						}
					}
					return nil
				},
			}))
			m, _ := newModel(t, srv, Config{})
			a, err := agent.New(agent.Config{Model: m, System: "You keep notes.", Tools: []tool.Tool{noteTool()}, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			deltas := 0
			res, err := agent.Drain(a.Run(testCtx(t), agent.Prompt("Save a note: buy milk")), func(ev agent.Event) {
				if ev.Type == agent.ModelDelta {
					deltas++
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusOK || res.FinalText() != "Saved /notes/todo.md." || res.Rounds != 2 {
				t.Fatalf("status %s, text %q, rounds %d", res.Status, res.FinalText(), res.Rounds)
			}
			msgs := res.State.Messages
			if len(msgs) != 4 || msgs[1].Role != llm.RoleAssistant || len(msgs[1].ToolCalls) != 1 ||
				msgs[2].Role != llm.RoleTool || msgs[2].ToolCallID != "call_note" || msgs[2].Content != "wrote /notes/todo.md" {
				t.Fatalf("messages %+v", msgs)
			}
			if f, ok := res.State.Files["/notes/todo.md"]; !ok || f.Content != "buy milk" {
				t.Fatalf("files %+v", res.State.Files)
			}
			if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
				t.Errorf("usage %+v", res.Usage)
			}
			if stream && deltas == 0 {
				t.Error("no model.delta events while streaming")
			}
			if srv.Count() != 2 {
				t.Fatalf("%d requests", srv.Count())
			}
		})
	}
}

// delegateTool is a stand-in for the task tool: it runs a child agent on the
// same model with the brief as its prompt.
type delegateTool struct{ child *agent.Agent }

type delegateArgs struct {
	Brief string `json:"brief"`
}

func (d *delegateTool) Spec() llm.ToolSpec {
	s, _ := tool.SchemaFor[delegateArgs]()
	return llm.ToolSpec{Name: "task", Description: "Delegate a task.", Parameters: s.Raw()}
}

func (d *delegateTool) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	var in delegateArgs
	s, _ := tool.SchemaFor[delegateArgs]()
	if err := tool.DecodeArgs(s, args, &in); err != nil {
		return tool.Errorf("%v", err), nil
	}
	res, err := d.child.Invoke(ctx, agent.Prompt(in.Brief), agent.AsChild(agent.Child{Path: agent.RootPath("parent").Child(d.child.Name(), env.CallID)}))
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Text(res.FinalText()), nil
}

// One server plays a parent and two parallel children: requests are routed
// by the task tool's presence and by each child's brief, and replies by
// round, so concurrency cannot mix them up.
func TestScriptRoutesParentAndChildren(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Script(
		openaitest.Conversation{
			Match: openaitest.HasTool("task"),
			Replies: []openaitest.Reply{
				openaitest.Tools(
					openaitest.Call{ID: "call_a", Name: "task", Args: `{"brief":"research alpha"}`},
					openaitest.Call{ID: "call_b", Name: "task", Args: `{"brief":"research beta"}`},
				),
				openaitest.Text("alpha and beta are done"),
			},
			Check: func(round int, r *openaitest.Request) error {
				if round == 1 {
					a, okA := r.ToolResult("call_a")
					b, okB := r.ToolResult("call_b")
					if !okA || !okB || a.Text() != "alpha: 1 note" || b.Text() != "beta: 1 note" {
						return fmt.Errorf("children's results missing: %s", r.Body)
					}
				}
				return nil
			},
		},
		openaitest.Conversation{
			Match: openaitest.All(openaitest.Not(openaitest.HasTool("task")), openaitest.FirstUserContains("alpha")),
			Replies: []openaitest.Reply{
				openaitest.Tools(openaitest.Call{Name: "write_note", Args: `{"path":"/alpha.md","text":"A"}`}),
				openaitest.Text("alpha: 1 note"),
			},
		},
		openaitest.Conversation{
			Match: openaitest.All(openaitest.Not(openaitest.HasTool("task")), openaitest.FirstUserContains("beta")),
			Replies: []openaitest.Reply{
				{Delay: 20 * time.Millisecond, ToolCalls: []openaitest.Call{{Name: "write_note", Args: `{"path":"/beta.md","text":"B"}`}}},
				openaitest.Text("beta: 1 note"),
			},
		},
	))
	m, _ := newModel(t, srv, Config{})
	child, err := agent.New(agent.Config{Name: "researcher", Model: m, Tools: []tool.Tool{noteTool()}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := agent.New(agent.Config{Model: m, Tools: []tool.Tool{&delegateTool{child: child}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := parent.Invoke(testCtx(t), agent.Prompt("Research alpha and beta."))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalText() != "alpha and beta are done" {
		t.Fatalf("final %q", res.FinalText())
	}
	if srv.Count() != 6 {
		t.Fatalf("%d requests", srv.Count())
	}
	children := 0
	for _, r := range srv.Requests() {
		if !r.HasTool("task") {
			children++
			if !strings.HasPrefix(r.FirstUser(), "research ") {
				t.Errorf("child request with first user message %q", r.FirstUser())
			}
		}
	}
	if children != 4 {
		t.Fatalf("%d child requests", children)
	}
}

// A deep agent on the Responses API with a reasoning model: the agent loop
// keeps each reply's reasoning items in its history, so the fake — which
// refuses a function call sent without the reasoning it came with — accepts
// every round.
func TestAgentEndToEndResponsesReasoning(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Script(openaitest.Conversation{
				Match: openaitest.FirstUserContains("Save two notes"),
				Replies: []openaitest.Reply{
					{Reasoning: "First note first.", ToolCalls: []openaitest.Call{{ID: "call_a", Name: "write_note", Args: `{"path":"/a.md","text":"A"}`}}},
					{Reasoning: "Now the second.", ToolCalls: []openaitest.Call{{ID: "call_b", Name: "write_note", Args: `{"path":"/b.md","text":"B"}`}}},
					{Reasoning: "Done.", Content: "Saved both."},
				},
				Check: func(round int, r *openaitest.Request) error {
					if r.API != "responses" || r.Stream != stream {
						return fmt.Errorf("api %s stream %v", r.API, r.Stream)
					}
					reasoning := 0
					for _, it := range r.Responses.Items {
						if it.Type == "reasoning" {
							reasoning++
						}
					}
					if reasoning != round {
						return fmt.Errorf("round %d sends %d reasoning items", round, reasoning)
					}
					return nil
				},
			}))
			m, _ := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
			a, err := agent.New(agent.Config{Model: m, System: "You keep notes.", Tools: []tool.Tool{noteTool()}, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			res, err := agent.Drain(a.Run(testCtx(t), agent.Prompt("Save two notes: A and B")), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agent.StatusOK || res.FinalText() != "Saved both." || res.Rounds != 3 {
				t.Fatalf("status %s, text %q, rounds %d", res.Status, res.FinalText(), res.Rounds)
			}
			// No summary was asked for (the agent sets no reasoning effort
			// here), so the reasoning is opaque: encrypted, without text.
			if got := res.State.Messages[1].ReasoningFor("openai"); len(got) != 1 || got[0].Reasoning.Encrypted == "" || got[0].Text != "" {
				t.Errorf("the first reply's reasoning in the history: %+v", got)
			}
			if srv.Count() != 3 {
				t.Fatalf("%d requests", srv.Count())
			}
		})
	}
}
