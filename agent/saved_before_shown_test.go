package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// peekSaver counts the puts its saver took.
type peekSaver struct {
	checkpoint.Saver
	mu   sync.Mutex
	puts int
}

func (s *peekSaver) Put(ctx context.Context, st checkpoint.Step) error {
	err := s.Saver.Put(ctx, st)
	if err == nil {
		s.mu.Lock()
		s.puts++
		s.mu.Unlock()
	}
	return err
}

func (s *peekSaver) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts
}

// A response is saved before anyone sees its model.response event, final
// answers included (the run's end is saved with it): a process that dies
// after showing a response never asks the model for it again.
func TestResponsesAreSavedBeforeTheyAreShown(t *testing.T) {
	mem := checkpoint.NewMemory(0)
	store := &peekSaver{Saver: mem}
	a := newAgent(t, agent.Config{Model: threeSteps(), Tools: []tool.Tool{writeTool}})
	var shown []int             // puts taken when each response was shown
	var statuses []agent.Status // the thread's, when each response was shown
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go"), runner.Checkpoints(store, "T")), func(ev agent.Event) {
		if ev.Type != agent.ModelResponse {
			return
		}
		shown = append(shown, store.count())
		rs, err := runner.LoadRunState(t.Context(), mem, "T", agent.RootPath("parent"), false)
		if err != nil {
			t.Fatalf("reading the thread at round %d: %v", ev.Response.Round, err)
		}
		n := len(rs.Messages)
		if n == 0 || rs.Messages[n-1].Content != ev.Response.Message.Content || len(rs.Messages[n-1].ToolCalls) != len(ev.Response.Message.ToolCalls) {
			t.Errorf("round %d was shown before it was saved: the thread holds %d messages", ev.Response.Round, n)
		}
		statuses = append(statuses, rs.Status)
	})
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("run: %v %v", err, res.Status)
	}
	// The input, then one put per response: the last is the run's end,
	// saved once.
	if want := []int{2, 3, 4}; !slices.Equal(shown, want) {
		t.Fatalf("puts when each response was shown: %v, want %v", shown, want)
	}
	if store.count() != 4 {
		t.Errorf("%d puts in all; want 4 (the end is not saved twice)", store.count())
	}
	if statuses[2] != agent.StatusOK {
		t.Errorf("the thread's status when the answer was shown: %q, want the run's end", statuses[2])
	}
}

// A run given no input on a thread whose run has ended is refused, unless
// it asks for the ended run's result (runner.WithEndedResult), which it then gets
// without calling the model.
func TestEndedRunGivesItsResult(t *testing.T) {
	mem := checkpoint.NewMemory(0)
	m := threeSteps()
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{writeTool}})
	first, err := a.Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(mem, "T"))
	if err != nil {
		t.Fatal(err)
	}
	calls := len(m.Records())
	if _, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(mem, "T")); err == nil {
		t.Fatal("a resume of an ended run was not refused")
	}
	again, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(mem, "T", runner.WithEndedResult()))
	if err != nil || again.Status != agent.StatusOK {
		t.Fatalf("ended result: %v %v", err, again.Status)
	}
	if len(m.Records()) != calls {
		t.Errorf("the model was called again")
	}
	if again.FinalText() != first.FinalText() || len(again.State.Messages) != len(first.State.Messages) ||
		!slices.Equal(again.State.Keys(), first.State.Keys()) || again.Usage != first.Usage || again.Rounds != first.Rounds {
		t.Errorf("ended result differs: %q %d %v %+v %d; want %q %d %v %+v %d", again.FinalText(), len(again.State.Messages), again.State.Keys(), again.Usage, again.Rounds,
			first.FinalText(), len(first.State.Messages), first.State.Keys(), first.Usage, first.Rounds)
	}
	if _, ok := again.State.Files["/b.md"]; !ok {
		t.Errorf("files: %v", again.State.Files)
	}
}

// threeSteps is a parent that writes two files, one step each, then answers.
func threeSteps() *scripted.Model {
	return scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/a.md","content":"a"}`)}},
		scripted.Step{ToolCalls: []scripted.StepCall{call("write", `{"path":"/b.md","content":"b"}`)}},
		scripted.Step{Content: "both written"},
	)}, scripted.Options{})
}
