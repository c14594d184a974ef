package agent

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// TestRestoredLoopIsSavedAgain: the loop a resume sets is the loop the
// next save hands out, field for field, so nothing the loop keeps is lost
// between a save and a resume.
func TestRestoredLoopIsSavedAgain(t *testing.T) {
	a, err := New(Config{Name: "main", Model: scripted.New(nil, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	r := a.newRun(Input{}, runConfig{})
	worker := RootPath("main").Child("worker", "call-1")
	kid := &Result{Agent: worker, UsageByAgent: map[string]llm.Usage{worker.String(): {InputTokens: 7}}}
	saved := &RunState{V: RunStateVersion, Path: RootPath("main"), Step: 4, StepID: stepID(4),
		Messages: []llm.Message{llm.User("hi")},
		Finished: map[string]*Result{"call-1": kid},
		Loop: LoopState{Rounds: 9, TurnStart: 3, Usage: llm.Usage{InputTokens: 11, OutputTokens: 2},
			Output: json.RawMessage(`{"ok":true}`), RespFailures: 1, RespRepaired: true, LastRespError: "bad",
			Rejected: map[string]string{"k": "no"}}}
	r.restore(saved)
	got := r.loopState("", nil)
	want := saved.Loop
	if !reflect.DeepEqual(got, want) {
		t.Errorf("saved again:\n%+v\nwant\n%+v", got, want)
	}
	if !reflect.DeepEqual(r.rs.Finished, saved.Finished) {
		t.Errorf("finished children %v, want %v", r.rs.Finished, saved.Finished)
	}
	if u := r.rs.Loop.Tree[worker.String()]; u.InputTokens != 7 {
		t.Errorf("usage of the finished child %+v, want 7 input tokens rebuilt from it", u)
	}
}
