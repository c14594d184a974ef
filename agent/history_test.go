package agent_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

func tcall(id, name, args string) llm.ToolCall {
	c := llm.ToolCall{ID: id, Name: name}
	if args != "" { // no arguments are nil, as llm.Clone makes them
		c.Args = json.RawMessage(args)
	}
	return c
}

// runWithHistory runs an agent that answers at once on history, and
// returns the messages its first request carried and the notice events.
func runWithHistory(t *testing.T, history []llm.Message) ([]llm.Message, []agent.NoticeInfo, *agent.Result) {
	t.Helper()
	m := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "ok"})}, scripted.Options{})
	var notices []agent.NoticeInfo
	res, err := agent.Drain(newAgent(t, agent.Config{Model: m}).Run(t.Context(), agent.Input{Messages: history}), func(ev agent.Event) {
		if ev.Type == agent.Notice {
			notices = append(notices, *ev.Notice)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	if len(recs) != 1 {
		t.Fatalf("%d model calls", len(recs))
	}
	return recs[0].Request.Messages, notices, res
}

// Two calls and one result: the model's first request has a result for the
// other call right after the existing one, saying it never ran; one notice.
func TestDanglingCallGetsResultAfterTheExistingOnes(t *testing.T) {
	c1, c2 := tcall("c1", "read_file", `{"path":"/a"}`), tcall("c2", "write_file", `{"path":"/b","content":"x"}`)
	history := []llm.Message{
		llm.User("do it"),
		llm.Assistant("", c1, c2),
		llm.ToolResult(c1, "contents of a", false),
		llm.User("go on"),
	}
	orig := llm.Clone(history)
	sent, notices, res := runWithHistory(t, history)
	if len(sent) != 5 {
		t.Fatalf("%d messages sent, want 5: %+v", len(sent), sent)
	}
	if !reflect.DeepEqual(sent[:3], orig[:3]) || !reflect.DeepEqual(sent[4], orig[3]) {
		t.Errorf("the messages around the added result changed: %+v", sent)
	}
	added := sent[3]
	if added.Role != llm.RoleTool || added.ToolCallID != "c2" || added.Name != "write_file" || !added.IsError {
		t.Errorf("added message %+v, want an error result for c2 (write_file)", added)
	}
	if !strings.Contains(added.Content, "never ran") || strings.Contains(added.Content, "malformed") {
		t.Errorf("added result says %q, want that the call never ran", added.Content)
	}
	if len(notices) != 1 || notices[0].Count != 1 || notices[0].Source != "history" {
		t.Errorf("notices %+v, want one from history counting 1", notices)
	}
	if !reflect.DeepEqual(history, orig) {
		t.Error("the caller's history was changed")
	}
	if got := res.State.Messages[3]; got.ToolCallID != "c2" {
		t.Errorf("the run's state lacks the added result: %+v", got)
	}
}

// A call whose arguments are not valid JSON is answered with the
// malformed-arguments text.
func TestDanglingCallWithMalformedArguments(t *testing.T) {
	cut := tcall("c1", "write_file", `{"path":"/b","content":"half a`)
	sent, notices, _ := runWithHistory(t, []llm.Message{llm.User("go"), llm.Assistant("", cut)})
	if len(sent) != 3 || sent[2].ToolCallID != "c1" {
		t.Fatalf("sent %+v", sent)
	}
	if got := sent[2].Content; !strings.Contains(got, "could not run because its arguments were malformed or cut off") || strings.Contains(got, "never ran") {
		t.Errorf("result %q, want the malformed-arguments text", got)
	}
	if len(notices) != 1 || notices[0].Count != 1 {
		t.Errorf("notices %+v", notices)
	}
}

// A balanced history reaches the model unchanged and no notice is emitted.
func TestBalancedHistoryIsUntouched(t *testing.T) {
	c1, c2 := tcall("c1", "ls", `{}`), tcall("c2", "ls", `{"path":"/x"}`)
	history := []llm.Message{
		llm.User("list"),
		llm.Assistant("", c1, c2),
		llm.ToolResult(c2, "b", false), // results in any order
		llm.ToolResult(c1, "a", false),
		llm.Assistant("listed"),
		llm.User("thanks"),
	}
	sent, notices, _ := runWithHistory(t, history)
	if !reflect.DeepEqual(sent, history) {
		t.Errorf("sent %+v, want the history unchanged", sent)
	}
	if len(notices) != 0 {
		t.Errorf("notices %+v, want none", notices)
	}
}
