package gemini

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	"github.com/deepagents-go/deepagents/providers/retry"
	"github.com/deepagents-go/deepagents/tool"
)

type writeArgs struct {
	Path    string `json:"path" jsonschema:"absolute path of the file"`
	Content string `json:"content" jsonschema:"the whole new content"`
}

var writeTool = tool.MustFunc("write_file", "Write a file, replacing it if it exists.",
	func(ctx context.Context, env *tool.Env, in writeArgs) (string, error) {
		if err := env.Files.Write(ctx, in.Path, in.Content); err != nil {
			return "", err
		}
		return fmt.Sprintf("Wrote %d bytes to %s.", len(in.Content), in.Path), nil
	})

// TestAgentEndToEnd runs the real agent loop against the fake API: a
// three-round conversation with parallel calls, a signed call with an id,
// and a final answer; the files land in the run's state.
func TestAgentEndToEnd(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			var checks []error
			check := func(err error) {
				if err != nil {
					checks = append(checks, err)
				}
			}
			srv := geminitest.NewServer(t, geminitest.Routes(geminitest.Route{
				Match: geminitest.FirstUserContains("notes"),
				Handler: func(r *geminitest.Request) geminitest.Reply {
					switch r.Turn() {
					case 0:
						if !r.Declares("write_file") || r.SystemText() != "You keep notes." {
							check(fmt.Errorf("turn 0: tools %v system %q", r.Functions(), r.SystemText()))
						}
						return geminitest.Reply{Thought: "Two notes, then an index.", ThoughtSignature: []byte("t0"), Text: "I'll write two notes.", Calls: []geminitest.Call{
							{Name: "write_file", Args: map[string]any{"path": "/notes/a.md", "content": "alpha"}, Signature: []byte("c0")},
							{Name: "write_file", Args: map[string]any{"path": "/notes/b.md", "content": "beta"}},
						}}
					case 1:
						rs := r.FunctionResponses()
						if len(rs) != 2 || rs[0].Response["output"] != "Wrote 5 bytes to /notes/a.md." || rs[1].Response["output"] != "Wrote 4 bytes to /notes/b.md." {
							check(fmt.Errorf("turn 1: responses %+v", rs))
						}
						// The agent's history kept the thought and the signed
						// call as they came.
						want := "[[thought:dDA= text:- call write_file:YzA= call write_file:-]]"
						if stream { // the thought streamed in two pieces
							want = "[[thought:- thought:dDA= text:- call write_file:YzA= call write_file:-]]"
						}
						if got := fmt.Sprint(stepSignatures(r)); got != want {
							check(fmt.Errorf("turn 1: model step sent back %s", got))
						}
						return geminitest.Calls(geminitest.Call{ID: "fc-7", Name: "write_file", Signature: []byte("sig"),
							Args: map[string]any{"path": "/notes/index.md", "content": "a.md\nb.md\n"}})
					case 2:
						rs := r.FunctionResponses()
						if len(rs) != 1 || rs[0].ID != "fc-7" || rs[0].Name != "write_file" {
							check(fmt.Errorf("turn 2: responses %+v", rs))
						}
						return geminitest.Text("Three notes are written: a.md, b.md and an index.")
					}
					return geminitest.Fail(400, "unexpected turn")
				},
			}))
			m, _ := newTestModel(t, srv, func(c *Config) { c.Model = "gemini-3-flash-preview"; c.IncludeThoughts = true })
			a, err := agent.New(agent.Config{Model: m, System: "You keep notes.", Tools: []tool.Tool{writeTool}, Stream: stream})
			if err != nil {
				t.Fatal(err)
			}
			var deltas int
			res, err := agent.Drain(a.Run(context.Background(), agent.Prompt("Write my notes please.")), func(ev agent.Event) {
				if ev.Type == agent.ModelDelta {
					deltas++
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range checks {
				t.Error(e)
			}
			assertValid(t, srv)
			if res.Status != agent.StatusOK || res.FinalText() != "Three notes are written: a.md, b.md and an index." || res.Rounds != 3 {
				t.Errorf("status=%s rounds=%d final=%q", res.Status, res.Rounds, res.FinalText())
			}
			if stream != (deltas > 0) {
				t.Errorf("stream=%v but %d delta events", stream, deltas)
			}
			files := map[string]string{}
			for p, f := range res.State.Files {
				files[p] = f.Content
			}
			want := map[string]string{"/notes/a.md": "alpha", "/notes/b.md": "beta", "/notes/index.md": "a.md\nb.md\n"}
			if !reflect.DeepEqual(files, want) {
				t.Errorf("files = %v", files)
			}
			var roles []llm.Role
			for _, msg := range res.State.Messages {
				roles = append(roles, msg.Role)
			}
			wantRoles := []llm.Role{llm.RoleUser, llm.RoleAssistant, llm.RoleTool, llm.RoleTool, llm.RoleAssistant, llm.RoleTool, llm.RoleAssistant}
			if !reflect.DeepEqual(roles, wantRoles) {
				t.Fatalf("roles = %v", roles)
			}
			msgs := res.State.Messages
			if ids := []string{msgs[1].ToolCalls[0].ID, msgs[1].ToolCalls[1].ID, msgs[4].ToolCalls[0].ID}; !reflect.DeepEqual(ids, []string{"call_1", "call_2", "fc-7"}) {
				t.Errorf("tool call ids = %v", ids)
			}
			if msgs[4].Extra[Provider] == nil || len(msgs[4].ReasoningFor(Provider)) != 1 || msgs[1].ReasoningText() != "Two notes, then an index." {
				t.Errorf("the model's reasoning and call ids were lost: %+v / %+v", msgs[1], msgs[4])
			}
			if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
				t.Errorf("usage = %+v", res.Usage)
			}
			if n := len(srv.Requests()); n != 3 {
				t.Errorf("requests = %d", n)
			}
		})
	}
}

// TestAgentSeesProviderErrors: a non-retryable API error ends the run with
// an error that still matches the llm sentinels.
func TestAgentSeesProviderErrors(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Fail(400, "The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).")))
	m, _ := newTestModel(t, srv)
	a, err := agent.New(agent.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(context.Background(), agent.Prompt("hi"))
	if !errors.Is(err, llm.ErrContextLength) || res == nil || res.Status != agent.StatusError {
		t.Fatalf("res=%+v err=%v", res, err)
	}
}

// TestSDKDoesNotRetryOnItsOwn: with our retries off, every failure costs
// exactly one request, so the SDK's HTTP retries and stream continuation are
// really disabled.
func TestSDKDoesNotRetryOnItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply geminitest.Reply
	}{
		{"500", geminitest.Fail(500, "internal")},
		{"429", geminitest.Fail(429, "quota")},
		{"hangup", geminitest.Reply{Hangup: true}},
		{"cut", geminitest.Reply{Text: "a b c d e f", CutAfter: 1}},
	} {
		for _, stream := range []bool{false, true} {
			srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply { return tc.reply })
			m, _ := newTestModel(t, srv, func(c *Config) { c.Retry = retry.Policy{MaxRetries: -1} })
			req := &llm.Request{Messages: []llm.Message{llm.User("hi")}}
			var err error
			if stream {
				_, err = llm.Collect(m.Stream(context.Background(), req))
			} else {
				_, err = m.Generate(context.Background(), req)
			}
			if err == nil && !(tc.name == "cut" && !stream) {
				t.Errorf("%s stream=%v: no error", tc.name, stream)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%s stream=%v: %d requests, want 1", tc.name, stream, n)
			}
		}
	}
}
