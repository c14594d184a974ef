package offload

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// longText is a user message far over a limit of 100 tokens.
func longText(i int) string {
	return strings.Repeat(fmt.Sprintf("line %d of a long pasted document\n", i), 60)
}

// lookRound runs beforeModel on msgs as the loop does (a request sharing
// the history's array), returning the request's messages and the paths of
// the file.write events.
func lookRound(t *testing.T, o *offloader, state *agent.State, files vfs.Backend, msgs []llm.Message) ([]llm.Message, []string) {
	t.Helper()
	var writes []string
	req := &llm.Request{Messages: msgs[:len(msgs):len(msgs)]}
	step := agent.StepInfo{Path: agent.RootPath("parent"), State: state, Files: files, Emit: func(e agent.Event) {
		if e.Type == agent.FileWrite {
			writes = append(writes, e.File.Path)
		}
	}}
	if err := o.beforeModel(t.Context(), step, req); err != nil {
		t.Fatal(err)
	}
	return req.Messages, writes
}

// Round after round, offloading looks only at the messages added since its
// last look, and every request is what a look at the whole history gives:
// the long user messages, old and new, carry their notices.
func TestUserMessagesLookedAtOnce(t *testing.T) {
	cfg := Config{UserMessageTokens: 100}
	o := &offloader{cfg: cfg, memo: map[[32]byte]measure{}}
	whole := &offloader{cfg: cfg, memo: map[[32]byte]measure{}} // looks at everything, every time
	files, wholeFiles := vfs.NewMemory(nil), vfs.NewMemory(nil)
	state := &agent.State{Messages: make([]llm.Message, 0, 512)} // room to grow: the array stays
	rounds := 0
	add := func(ms ...llm.Message) {
		state.Messages = append(state.Messages, ms...)
		rounds++
		got, gotWrites := lookRound(t, o, state, files, state.Messages)
		want, wantWrites := lookRound(t, whole, nil, wholeFiles, state.Messages)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotWrites, wantWrites) {
			t.Fatalf("round %d: the request differs from a look at the whole history:\n got %d messages, writes %v\nwant %d messages, writes %v",
				rounds, len(got), gotWrites, len(want), wantWrites)
		}
	}
	add(llm.User("short question"), llm.User(longText(0)))
	for i := range 100 {
		ms := []llm.Message{llm.Assistant(fmt.Sprintf("step %d", i)), {Role: llm.RoleTool, Content: longText(i), ToolCallID: fmt.Sprint(i), Name: "fetch"}}
		if i%25 == 24 {
			ms = append([]llm.Message{llm.User(longText(1000 + i)), llm.User("and a short one")}, ms...)
		}
		add(ms...)
	}
	if n := o.looked.Load(); n != int64(len(state.Messages)) {
		t.Errorf("looked at %d messages over %d rounds, want %d: each once", n, rounds, len(state.Messages))
	}
	offloaded := 0
	for _, m := range lookRoundMessages(t, o, state, files) {
		if strings.HasPrefix(m.Content, "[This user message was too long") {
			offloaded++
		}
	}
	if offloaded != 5 {
		t.Errorf("%d user messages carry a notice, want 5", offloaded)
	}

	// A history rewritten in a new slice (as a compaction makes) is looked
	// at again in full, with the same result as a look at it from scratch.
	before := o.looked.Load()
	rewritten := append([]llm.Message{llm.User(longText(7))}, state.Messages[len(state.Messages)-10:]...)
	got, _ := lookRound(t, o, state, files, rewritten)
	want, _ := lookRound(t, whole, nil, wholeFiles, rewritten)
	if !reflect.DeepEqual(got, want) {
		t.Error("after a rewrite, the request differs from a look at the whole history")
	}
	if n := o.looked.Load() - before; n != int64(len(rewritten)) {
		t.Errorf("after a rewrite, looked at %d messages, want %d", n, len(rewritten))
	}
}

func lookRoundMessages(t *testing.T, o *offloader, state *agent.State, files vfs.Backend) []llm.Message {
	t.Helper()
	ms, _ := lookRound(t, o, state, files, state.Messages)
	return ms
}

// In a real run the loop's requests are looked at incrementally too: the
// messages looked at over a run of many rounds stay proportional to the
// history (not to rounds × history), and every request carries the notice
// of the long prompt.
func TestRunLooksAtEachMessageOnce(t *testing.T) {
	o := &offloader{cfg: Config{UserMessageTokens: 100}, memo: map[[32]byte]measure{}}
	const rounds = 60
	echo := tool.MustFunc("echo", "Echo.", func(_ context.Context, _ *tool.Env, in struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprint(in.N), nil
	})
	model := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, _ *llm.Request) (scripted.Step, error) {
		if ci.Round >= rounds {
			return scripted.Step{Content: "done"}, nil
		}
		args, _ := json.Marshal(map[string]int{"n": ci.Round})
		return scripted.Step{ToolCalls: []scripted.StepCall{{ID: fmt.Sprint("c", ci.Round), Name: "echo", Args: args}}}, nil
	}})
	a, err := agent.New(agent.Config{Model: model, Tools: []tool.Tool{echo}, MaxSteps: rounds + 1,
		Middleware: []agent.Middleware{{Name: Name, BeforeModel: o.beforeModel}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt(longText(0)))
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("%v %v", err, res.Status)
	}
	recs := model.Records()
	if len(recs) != rounds+1 {
		t.Fatalf("%d model calls, want %d", len(recs), rounds+1)
	}
	for _, r := range recs {
		if !strings.HasPrefix(r.Request.Messages[0].Content, "[This user message was too long") {
			t.Fatalf("round %d: the prompt went out whole", r.Round)
		}
	}
	// Each message once, plus a look at the whole history each time the
	// history's array grew (amortised: at most as many again).
	n, total := o.looked.Load(), len(res.State.Messages)
	if n > int64(3*total) {
		t.Errorf("looked at %d messages over %d rounds of a history of %d: old messages are looked at again", n, rounds+1, total)
	}
}
