package main

import (
	"path/filepath"
	"strings"
	"testing"
)

const gated = `"input": "write", "agent": {"interrupt_on": {"write_file": ["approve", "reject"]}},
 "script": {"parent": [{"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}]}, {"content": "done"}]}`

// A run left waiting for a decision is a transcript like any other: exit 0,
// status "interrupted", the waiting call listed, no error. A decision the
// call does not allow is the transcript's error, still exit 0. A decision of
// the wrong shape is a bad scenario: exit 2 with its position. Crash points
// out of order are taken in order, with a warning. "interrupts" is always
// there, an empty list when the run never stopped.
func TestReplayInterruptsAndDecisions(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, doc  string
		code       int
		status     string
		errorHas   string // in the transcript's error; "" = null
		stderrHas  string
		interrupts int
	}{
		{"waiting", `{"name": "w", ` + gated + `}`, 0, "interrupted", "", "", 1},
		{"approved", `{` + gated + `, "decisions": [{"call_id": "c1", "type": "approve"}]}`, 0, "ok", "", "", 1},
		{"not allowed", `{` + gated + `, "decisions": [{"call_id": "c1", "type": "edit", "args": {"content": "b"}}]}`, 0, "interrupted",
			`allows approve, reject, not edit`, "", 1},
		{"bad shape", "{" + gated + `,
 "decisions": [{"call_id": "c1", "type": "yes"}]}`, 2, "", "", `:3:42: decisions[0]: decision type "yes" is not one of approve, edit, reject`, 0},
		{"crash points down", "{" + gated + `,
 "crash_after_events": [4, 2]}`, 0, "interrupted", "", `:3:28: crash_after_events[1] (2) comes after a larger one; crash points are taken in increasing order, each once`, 1},
		{"crash point zero", "{" + gated + `,
 "crash_after_events": [0]}`, 2, "", "", `:3:25: crash_after_events[0] is 0; a crash point counts events from 1`, 0},
		{"never stopped", `{"input": "hi", "script": {"parent": [{"content": "hello"}]}}`, 0, "ok", "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := writeFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".json", c.doc)
			code, out, errs := runCLI(t, "replay", file)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, errs)
			}
			if c.stderrHas != "" && !strings.HasPrefix(errs, file+c.stderrHas) {
				t.Errorf("stderr %q, want it to start with %q", errs, file+c.stderrHas)
			}
			if c.code != 0 {
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
				return
			}
			tr := transcriptOf(t, out)
			if tr["status"] != c.status {
				t.Errorf("status %v, want %s", tr["status"], c.status)
			}
			switch e := tr["error"]; {
			case c.errorHas == "" && e != nil:
				t.Errorf("error %v, want null", e)
			case c.errorHas != "" && (e == nil || !strings.Contains(e.(string), c.errorHas)):
				t.Errorf("error %v, want it to contain %q", e, c.errorHas)
			}
			ins, ok := tr["interrupts"].([]any)
			if !ok || len(ins) != c.interrupts {
				t.Errorf("interrupts %v, want %d", tr["interrupts"], c.interrupts)
			}
			if tr["thread_id"] == "" || tr["checkpoints"].(float64) < 1 {
				t.Errorf("thread_id %v, checkpoints %v", tr["thread_id"], tr["checkpoints"])
			}
		})
	}
}

// The checked-in crash scenario replays from the command line and meets its
// expectations, crashes included.
func TestReplayCrashScenarioChecks(t *testing.T) {
	code, out, errs := runCLI(t, "replay", "--check", "--stable", filepath.Join("..", "..", "testdata", "scenarios", "crash-delegation.json"))
	if code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errs)
	}
	tr := transcriptOf(t, out)
	if tr["crashes"].(float64) != 7 || tr["status"] != "ok" {
		t.Errorf("crashes %v, status %v", tr["crashes"], tr["status"])
	}
}
