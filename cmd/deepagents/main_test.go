package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDemoShowsTheSeedTable(t *testing.T) {
	code, out, errs := runCLI(t, "demo")
	if code != 0 {
		t.Fatalf("demo exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"1      parent                   1         0             8, with task",
		"2      child (general-purpose)  1         ",
		"7, no task",
		"4      parent                   3         0             8, with task",
		"3. tool      [task] The conclusion is 42.",
		"Final state keys: files, messages",
		"/child.md",
		"| Deep Thought computed the answer: 42.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestReplayExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.json", `{"name":"ok","input":"hi","script":{"parent":[{"content":"hello"}]},"expect":{"no_error":true,"parent_message_count":2}}`)
	code, out, _ := runCLI(t, "replay", "--stable", ok)
	var tr map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &tr) != nil || tr["error"] != nil {
		t.Fatalf("exit %d, out %s", code, out)
	}
	for _, key := range []string{"scenario", "rounds", "task_tool", "parent_messages", "final_state_keys", "files", "events", "timing", "error"} {
		if _, present := tr[key]; !present {
			t.Errorf("transcript lacks %q", key)
		}
	}
	failing := write("fail.json", `{"input":"hi","script":{"parent":[{"content":"hello"}]},"expect":{"parent_message_count":9}}`)
	if code, _, _ := runCLI(t, "replay", failing); code != 1 {
		t.Errorf("failed check: exit %d, want 1", code)
	}
	exhausted := write("ex.json", `{"input":"hi","script":{"parent":[{"tool_calls":[{"name":"ls"}]}]}}`)
	code, out, _ = runCLI(t, "replay", exhausted)
	if code != 1 || !strings.Contains(out, `has no step for round 1`) {
		t.Errorf("exhausted script: exit %d, %s", code, out)
	}
	invalid := write("bad.json", `{"input": 3}`)
	code, out, errs := runCLI(t, "replay", invalid)
	if code != 2 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, `"input" must be a string`) {
		t.Errorf("invalid scenario: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, _ := runCLI(t, "replay"); code != 2 {
		t.Errorf("no file: exit %d", code)
	}
	if code, _, errs := runCLI(t, "replay", filepath.Join(dir, "missing.json")); code != 2 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: exit %d %s", code, errs)
	}
	outFile := filepath.Join(dir, "t.json")
	if code, _, _ := runCLI(t, "replay", "--out", outFile, ok); code != 0 {
		t.Fatal("replay --out failed")
	}
	if data, err := os.ReadFile(outFile); err != nil || !json.Valid(data) {
		t.Errorf("--out file: %v", err)
	}
}

func TestInspect(t *testing.T) {
	code, out, _ := runCLI(t, "inspect", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var tab toolTable
	if err := json.Unmarshal([]byte(out), &tab); err != nil {
		t.Fatal(err)
	}
	if len(tab.Tools) != 8 || tab.Tools[7].Name != "task" || tab.Total.O200k == 0 || tab.Total.Cl100k == 0 {
		t.Errorf("parent table: %+v", tab)
	}
	if len(tab.Subagents) != 1 || tab.Subagents[0].Agent != "general-purpose" || len(tab.Subagents[0].Tools) != 7 {
		t.Errorf("subagent tables: %+v", tab.Subagents)
	}
	sum := 0
	for _, r := range tab.Tools {
		sum += r.O200k
	}
	if sum != tab.Total.O200k {
		t.Errorf("total %d != sum %d", tab.Total.O200k, sum)
	}
	code, out, _ = runCLI(t, "inspect", "--scenario", filepath.Join("..", "..", "testdata", "scenarios", "listing-researcher.json"))
	if code != 0 || !strings.Contains(out, "web_search") || !strings.Contains(out, "agent researcher — 8 tools") {
		t.Errorf("scenario inspect: %d\n%s", code, out)
	}
}

func TestUsage(t *testing.T) {
	if code, _, errs := runCLI(t); code != 2 || !strings.Contains(errs, "Usage:") {
		t.Errorf("no args: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("unknown: %d %s", code, errs)
	}
}

func TestInterruptRouting(t *testing.T) {
	r := &interruptRouter{}
	var whole, turn int
	r.route(func() { whole++ })
	restore := r.route(func() { turn++ })
	r.fire()
	restore()
	r.fire()
	if whole != 1 || turn != 1 {
		t.Errorf("Ctrl-C during a turn must stop only the turn: whole %d, turn %d", whole, turn)
	}
}
