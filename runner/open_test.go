package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// putRun saves a one-step run at ns in thread "T" whose loop value is ls.
func putRun(t *testing.T, store checkpoint.Reader, ns string, ls agent.LoopState) {
	t.Helper()
	saver := store.(checkpoint.Recorder)
	lv, err := json.Marshal(ls)
	if err != nil {
		t.Fatal(err)
	}
	err = saver.Put(context.Background(), checkpoint.Step{ThreadID: "T", NS: ns, ID: "00000000", Step: 0,
		Metadata: map[string]string{"source": sourceInput}, Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}},
		Values: map[string]json.RawMessage{loopValue: lv}, Status: ckStatus(ls.Status), Time: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
}

// Open is the resume matrix: how a run starts on its thread, by what the
// thread holds at its path and what the run brings.
func TestOpenDecidesHowARunStarts(t *testing.T) {
	ctx := context.Background()
	root := agent.RootPath("parent")
	kid := root.Child("helper", "c1")
	refuse := func([]agent.Decision, []agent.Interrupt) error { return &agent.DecisionError{Msg: "refused"} }
	approve := []agent.Decision{{Type: agent.Approve, CallID: "w1"}}
	var de *agent.DecisionError

	empty := thread{saver: checkpoint.NewMemory(0), id: "T"}
	if _, _, err := empty.Open(ctx, root, agent.Opening{}); err == nil || !errors.Is(err, checkpoint.ErrNotFound) ||
		!strings.Contains(err.Error(), "has no run to resume") {
		t.Errorf("no run, no input: %v", err)
	}
	if _, _, err := empty.Open(ctx, root, agent.Opening{Input: true, Decisions: approve}); !errors.As(err, &de) {
		t.Errorf("no run, decisions: %v", err)
	}
	if how, rs, err := empty.Open(ctx, root, agent.Opening{Input: true}); err != nil || how != agent.StartFresh || rs != nil {
		t.Errorf("no run, input: %d %+v %v", how, rs, err)
	}
	if how, _, err := empty.Open(ctx, kid, agent.Opening{Input: true, Decisions: approve, Nested: true}); err != nil || how != agent.StartFresh {
		t.Errorf("no subagent run, input and its parent's decisions: %d %v", how, err)
	}

	ended := thread{saver: checkpoint.NewMemory(0), id: "T"}
	putRun(t, ended.saver, "", agent.LoopState{Status: agent.StatusOK})
	putRun(t, ended.saver, kid.String(), agent.LoopState{Status: agent.StatusOK, ParentStep: "@00000001"})
	endedTaken := ended
	endedTaken.acceptEnded = true
	unfinished := thread{saver: checkpoint.NewMemory(0), id: "T"}
	putRun(t, unfinished.saver, "", agent.LoopState{})
	limited := thread{saver: checkpoint.NewMemory(0), id: "T"}
	putRun(t, limited.saver, "", agent.LoopState{Status: agent.StatusLimit})
	limitedTaken := limited
	limitedTaken.acceptEnded = true

	for _, c := range []struct {
		name string
		th   thread
		path agent.Path
		o    agent.Opening
		want agent.StartHow
		err  bool // a *DecisionError when decisions are given, else any
	}{
		{"ended, input", ended, root, agent.Opening{Input: true}, agent.StartNewTurn, false},
		{"ended, no input", ended, root, agent.Opening{}, 0, true},
		{"ended, no input, ended result taken", endedTaken, root, agent.Opening{}, agent.StartEnded, false},
		{"ended, decisions", ended, root, agent.Opening{Decisions: approve}, 0, true},
		{"stopped at a limit, no input", limited, root, agent.Opening{}, agent.StartResume, false},
		{"stopped at a limit, input", limited, root, agent.Opening{Input: true}, agent.StartNewTurn, false},
		{"stopped at a limit, decisions", limited, root, agent.Opening{Decisions: approve}, 0, true},
		{"stopped at a limit, ended result taken", limitedTaken, root, agent.Opening{}, agent.StartEnded, false},
		{"unfinished, input", unfinished, root, agent.Opening{Input: true}, agent.StartCloseStep, false},
		{"unfinished, input and decisions", unfinished, root, agent.Opening{Input: true, Decisions: approve}, 0, true},
		{"unfinished, no input", unfinished, root, agent.Opening{}, agent.StartResume, false},
		{"unfinished, decisions refused", unfinished, root, agent.Opening{Decisions: approve, Check: refuse}, agent.StartRefused, false},
		{"subagent started by this step, ended", ended, kid, agent.Opening{Input: true, Nested: true, ParentStep: "@00000001"}, agent.StartEnded, false},
		{"subagent under a call id used again", ended, kid, agent.Opening{Input: true, Nested: true, ParentStep: "@00000007"}, agent.StartFresh, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			how, rs, err := c.th.Open(ctx, c.path, c.o)
			if c.err {
				if err == nil || len(c.o.Decisions) > 0 && !errors.As(err, &de) {
					t.Fatalf("got %d %+v, %v; want an error", how, rs, err)
				}
				return
			}
			if c.want == agent.StartRefused {
				if how != c.want || rs == nil || err == nil {
					t.Fatalf("got %d %+v, %v; want refused with the run's state and why", how, rs, err)
				}
				return
			}
			if err != nil || how != c.want || rs == nil {
				t.Fatalf("got %d %+v, %v; want %d with the run's state", how, rs, err, c.want)
			}
		})
	}
}
