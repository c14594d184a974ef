package server

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// logExecutor is an Executor that runs a run in this process, in the
// background, publishing its agent events to a log (positions 1…n) as a
// fleet's workers do: a server follows the run by reading the log from
// where it starts, telling Mark as it goes, and stops when its context
// ends; the run goes on, for another server to adopt.
type logExecutor struct {
	saver checkpoint.Saver
	mu    sync.Mutex
	log   []agent.Event
	done  bool
}

func (e *logExecutor) Execute(ctx context.Context, run ExecRun) iter.Seq2[agent.Event, error] {
	e.mu.Lock()
	pos := int64(len(e.log))
	e.mu.Unlock()
	if run.Resumed {
		pos = run.Start
	} else if !run.Adopted {
		opts := []agent.RunOption{runner.Checkpoints(struct{ checkpoint.RunStore }{e.saver}, run.Thread)}
		go func() {
			for ev := range run.Agent.Run(context.Background(), agent.Input{Messages: run.Input}, opts...) {
				if ev.Type != "" {
					e.mu.Lock()
					e.log = append(e.log, ev)
					e.mu.Unlock()
				}
			}
			e.mu.Lock()
			e.done = true
			e.mu.Unlock()
		}()
	}
	return func(yield func(agent.Event, error) bool) {
		run.Mark(pos)
		for {
			e.mu.Lock()
			n, done := int64(len(e.log)), e.done
			var ev agent.Event
			if pos < n {
				ev = e.log[pos]
			}
			e.mu.Unlock()
			if pos == n {
				if done {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
				continue
			}
			if ctx.Err() != nil {
				return
			}
			if !yield(ev, nil) {
				return
			}
			pos++
			run.Mark(pos)
		}
	}
}

func (e *logExecutor) Cancel(context.Context, string, string) error { return nil }

// lateReads is a Store that drops every reading position stored after the
// first few, as if each server stopped between storing a run's events and
// storing how far it had read: the positions stored lag behind the events.
type lateReads struct {
	Store
	keep int64 // the positions stored under a number up to keep are kept
}

func (s lateReads) AppendEvents(ctx context.Context, runID string, evs []StoredEvent) error {
	if strings.HasPrefix(runID, runInfoLog("")) && len(evs) == 1 && evs[0].Event == readEvent && evs[0].Seq > s.keep {
		return nil
	}
	return s.Store.AppendEvents(ctx, runID, evs)
}

// A run adopted from a server that stopped streams every event of it once:
// the adopting server reads the run again from where its reading began,
// sends nothing the first server stored, and numbers the rest on from the
// stored events, even when the position stored lags behind them (the
// events made again after it keep their numbers).
func TestAdoptedRunStreamsEveryEventOnce(t *testing.T) {
	modes := []string{"values", "updates", "messages-tuple", "custom"}
	body := map[string]any{"assistant_id": "researcher", "if_not_exists": "create", "stream_mode": modes,
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}}
	fleet := func(t *testing.T, keep int64) (*harness, *harness, Store) {
		st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "fleet.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		a, err := DemoAgent("researcher", 40)
		if err != nil {
			t.Fatal(err)
		}
		saver := checkpoint.NewMemory(0)
		cfg := Config{Agents: []AgentSpec{{Name: "researcher", Agent: a}}, Saver: saver, Store: lateReads{st, keep},
			Executor: &logExecutor{saver: saver}}
		return newHarness(t, cfg), newHarness(t, cfg), st
	}
	// What a stream shows that does not depend on when the thread's state
	// was read, or on which of two parallel subagents ends first: each
	// event's name and its number (less its place: 1 when they follow on
	// from 1), the messages' types and ids in order, their texts in any
	// order, and how many custom events there are.
	shape := func(evs []sseEvent, runID string) []string {
		var out, texts []string
		custom := 0
		for i, e := range evs {
			line := strconv.FormatInt(e.ID-int64(i), 10) + " " + e.Event
			if e.Event == "custom" {
				// Where among the others depends on the subagents' order.
				if line == "1 custom" {
					custom++
				} else {
					out = append(out, line)
				}
				continue
			}
			if e.Event == "messages" {
				var tuple []struct {
					Type    string `json:"type"`
					ID      string `json:"id"`
					Content any    `json:"content"`
					Calls   any    `json:"tool_calls"`
				}
				if err := json.Unmarshal(e.Data, &tuple); err != nil || len(tuple) == 0 {
					t.Fatalf("a messages event %s", e.Data)
				}
				line += " " + tuple[0].Type + " " + tuple[0].ID
				b, _ := json.Marshal([]any{tuple[0].Content, tuple[0].Calls})
				texts = append(texts, string(bytes.ReplaceAll(b, []byte(runID), []byte("RUN"))))
			}
			out = append(out, line)
		}
		slices.Sort(texts)
		return append(append(out, strconv.Itoa(custom)+" custom"), texts...)
	}
	// The same run followed by one server to its end.
	h0, _, _ := fleet(t, 1<<40)
	var run Run
	h0.json("POST", "/threads/T/runs", body, 200, &run)
	_, all := h0.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil)
	want := shape(all, run.RunID)
	if len(all) < 20 {
		t.Fatalf("the whole run streams %d events", len(all))
	}
	for _, keep := range []int64{1 << 40, 6} {
		h1, h2, st := fleet(t, keep)
		h1.json("POST", "/threads/T/runs", body, 200, &run)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			stored, err := st.Events(t.Context(), run.RunID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) >= len(all)/3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run stored %d events in 10 s", len(stored))
			}
		}
		if err := h1.srv.Close(); err != nil {
			t.Fatal(err)
		}
		_, evs := h2.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil)
		if got := shape(evs, run.RunID); !slices.Equal(got, want) {
			t.Fatalf("positions kept up to %d: the adopted run streamed\n%s\nthe run followed by one server\n%s", keep, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		stored, err := st.Events(t.Context(), run.RunID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != len(all) || stored[len(stored)-1].Seq != int64(len(all)) {
			t.Fatalf("positions kept up to %d: %d events stored, the last numbered %d; want %d", keep, len(stored), stored[len(stored)-1].Seq, len(all))
		}
	}
}
