package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// backgroundServer: the parent starts a subagent in the background, says it
// waits, and relays the report once the notification is in its messages;
// the child writes /bg.md and reports.
func backgroundServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.HasTool("task") {
			if last := r.Last(); last.Role == "user" && strings.HasPrefix(last.Text(), "[Background task ") {
				return ot.Text("Relayed: " + last.Text())
			}
			if r.Round() == 0 {
				return ot.Tools(ot.Call{ID: "call_bg", Name: "task", Args: `{"description":"Count the stones; write /bg.md.","subagent_type":"general-purpose","run_in_background":true}`})
			}
			return ot.Text("Waiting for the report.")
		}
		if r.Round() == 0 {
			return ot.Tools(ot.Call{ID: "call_w", Name: "write_file", Args: `{"file_path":"/bg.md","content":"7 stones\n"}`})
		}
		return ot.Text("There are 7 stones.")
	})
}

// run --output stream-json shows a background subagent's start, end and
// notification; the answer relays its report; threads show marks the
// subagent as run in the background and the notification as such.
func TestRunBackgroundSubagent(t *testing.T) {
	srv := backgroundServer(t)
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "count the stones", "--model", "openai:gpt-test", "--output", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var thread string
	var last map[string]any
	seen := map[string]bool{}
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line is not JSON: %q", sc.Text())
		}
		if id, ok := ev["thread_id"].(string); ok && thread == "" {
			thread = id
		}
		if sa, ok := ev["subagent"].(map[string]any); ok && sa["background"] == true {
			seen[ev["type"].(string)] = true
			if ev["type"] == "subagent.notification" && !strings.HasSuffix(sa["notification"].(string), "There are 7 stones.") {
				t.Errorf("notification %v", sa)
			}
		}
		last = ev
	}
	for _, typ := range []string{"subagent.start", "subagent.end", "subagent.notification"} {
		if !seen[typ] {
			t.Errorf("no background %s event in:\n%s", typ, out)
		}
	}
	if res, _ := last["result"].(string); !strings.HasPrefix(res, "Relayed: [Background task call_bg (subagent general-purpose) has ended: ok.") {
		t.Errorf("last line %v", last)
	}
	code, shown, errs := runCLI(t, "threads", "show", thread)
	if code != 0 {
		t.Fatalf("threads show: %d %s", code, errs)
	}
	for _, want := range []string{"┃ subagent general-purpose (call_bg) · in the background · ok", "notification: [Background task call_bg", "files changed: /bg.md"} {
		if !strings.Contains(shown, want) {
			t.Errorf("threads show lacks %q:\n%s", want, shown)
		}
	}
}

// The progress lines of a background subagent: started in the background,
// done or cancelled, and its report reaching the model.
func TestProgressBackgroundLines(t *testing.T) {
	var b strings.Builder
	p := &progressPrinter{w: &b}
	parent := agent.RootPath("parent")
	p.event(agent.Event{Type: agent.SubagentStart, Agent: parent, Subagent: &agent.SubagentInfo{Name: "general-purpose", CallID: "c1", Task: "look", Background: true}})
	p.event(agent.Event{Type: agent.SubagentEnd, Agent: parent, Subagent: &agent.SubagentInfo{Name: "general-purpose", CallID: "c1", Status: agent.StatusOK, Rounds: 2, Background: true,
		Usage: llm.Usage{InputTokens: 900, OutputTokens: 100}}})
	p.event(agent.Event{Type: agent.SubagentEnd, Agent: parent, Subagent: &agent.SubagentInfo{Name: "general-purpose", CallID: "c2", Status: agent.StatusCancelled, Rounds: 1, Background: true}})
	p.event(agent.Event{Type: agent.SubagentNotify, Agent: parent, Subagent: &agent.SubagentInfo{Name: "general-purpose", CallID: "c1", Status: agent.StatusOK, Background: true}})
	out := b.String()
	for _, want := range []string{"⇢ subagent general-purpose (c1) started in the background: look", "⇠ background subagent general-purpose (c1) done after 2 rounds, 1.0k tokens",
		"⇠ background subagent general-purpose (c2) cancelled after 1 round", "⇠ background task c1 (general-purpose) reported to the model"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

// The [background] table of the user's config file reaches the agent: with
// max_running = 1, the second of two background starts is refused.
func TestConfigBackgroundTable(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.HasTool("task") {
			if r.Round() == 0 {
				return ot.Tools(
					ot.Call{ID: "call_a", Name: "task", Args: `{"description":"job a","subagent_type":"general-purpose","run_in_background":true}`},
					ot.Call{ID: "call_b", Name: "task", Args: `{"description":"job b","subagent_type":"general-purpose","run_in_background":true}`})
			}
			return ot.Text("Done.")
		}
		time.Sleep(300 * time.Millisecond) // still running when the second start comes
		return ot.Text("Report.")
	})
	_, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), "[background]\nmax_running = 1\n")
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--output", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	refused := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev agent.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == agent.ToolEnd && ev.Tool.Name == "task" &&
			ev.Tool.IsError && strings.Contains(ev.Tool.Result, "1 background task is running already") {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d starts refused, want 1:\n%s", refused, out)
	}
}
