package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/internal/bench"
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

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLIStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func transcriptOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var tr map[string]any
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("stdout is not a transcript: %v\n%s", err, out)
	}
	return tr
}

func TestReplayExitCodes(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, dir, "ok.json", `{"name":"ok","input":"hi","script":{"parent":[{"content":"hello"}]},"expect":{"no_error":true,"parent_message_count":2}}`)
	failing := writeFile(t, dir, "fail.json", `{"input":"hi","script":{"parent":[{"content":"hello"}]},"expect":{"parent_message_count":9}}`)
	exhausted := writeFile(t, dir, "ex.json", `{"input":"hi","script":{"parent":[{"tool_calls":[{"name":"ls"}]}]}}`)
	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a substring of stdout; "" for an empty stdout
		stderr     string // a substring of stderr; "" for an empty stderr
		transcript bool
	}{
		{"ok", []string{"replay", "--stable", ok}, 0, `"parent_messages"`, "", true},
		{"ok checked", []string{"replay", "--check", ok}, 0, `"pass": true`, "", true},
		{"failed expectation, unchecked", []string{"replay", failing}, 0, `"got": 2`, "", true},
		{"failed expectation, checked", []string{"replay", "--check", failing}, 1, `"got": 2`, "check failed: parent has 9 messages (got 2)", true},
		{"run error", []string{"replay", exhausted}, 0, `has no step for round 1`, "", true},
		{"run error, checked, nothing expected", []string{"replay", "--check", exhausted}, 0, `"status": "error"`, "", true},
		{"flags after the file", []string{"replay", failing, "--stable", "--check"}, 1, `"wall_ms": 0`, "check failed", true},
		{"flags on both sides", []string{"replay", "--stable", ok, "--check"}, 0, `"wall_ms": 0`, "", true},
		{"no file", []string{"replay"}, 2, "", "expected one scenario file, got 0 arguments", false},
		{"two files", []string{"replay", ok, ok}, 2, "", "expected one scenario file, got 2 arguments", false},
		{"unknown flag after the file", []string{"replay", ok, "--frob"}, 2, "", "flag provided but not defined: -frob", false},
		{"missing file", []string{"replay", filepath.Join(dir, "missing.json")}, 2, "", "no such file", false},
		{"device", []string{"replay", "/dev/zero"}, 2, "", "not a regular file (a character device)", false},
		{"directory", []string{"replay", dir}, 2, "", "not a regular file (a directory)", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, errs)
			}
			if c.stdout == "" && out != "" || !strings.Contains(out, c.stdout) {
				t.Errorf("stdout lacks %q:\n%s", c.stdout, clip(out, 2000))
			}
			if c.stderr == "" && errs != "" || !strings.Contains(errs, c.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errs, c.stderr)
			}
			if c.transcript {
				transcriptOf(t, out)
			}
		})
	}
}

func TestReplayTranscriptShape(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, dir, "ok.json", `{"name":"ok","input":"hi","script":{"parent":[{"content":"hello"}]}}`)
	outFile := filepath.Join(dir, "t.json")
	code, out, _ := runCLI(t, "replay", ok, "--out", outFile)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	tr := transcriptOf(t, out)
	for _, key := range []string{"scenario", "rounds", "task_tool", "parent_messages", "final_state_keys", "files", "events", "timing", "error"} {
		if _, present := tr[key]; !present {
			t.Errorf("transcript lacks %q", key)
		}
	}
	if data, err := os.ReadFile(outFile); err != nil || string(data) != out {
		t.Errorf("--out file differs from stdout: %v", err)
	}
	code, stdinOut, _ := runCLIStdin(t, `{"name":"ok","input":"hi","script":{"parent":[{"content":"hello"}]}}`, "replay", "--stable", "-")
	if code != 0 || transcriptOf(t, stdinOut)["scenario"] != "ok" {
		t.Errorf("replay - (standard input): exit %d\n%s", code, stdinOut)
	}
}

// The expect block never changes the run or the exit status without
// --check; with --check, what is not understood is listed as not checked.
func TestReplayAcceptsAnyExpect(t *testing.T) {
	dir := t.TempDir()
	body := `{"name":"free","input":"hi","script":{"parent":[{"tool_calls":[{"id":"c1","name":"write_file","args":{"file_path":"/a.md","content":"x\n"}}]},{"content":"done"}]}%s}`
	plain := writeFile(t, dir, "plain.json", strings.Replace(body, "%s", "", 1))
	_, base, _ := runCLI(t, "replay", "--stable", plain)
	baseTr := transcriptOf(t, base)
	delete(baseTr, "checks")
	cases := []struct {
		expect     string
		checkCode  int
		notChecked []string // names listed as not checked, in document order
		failed     []string // names of failed checks
	}{
		{`{"tool_message_contains": {"0": ["/a.md", "no such text"]}}`, 1, nil, []string{`tool message #0 contains "no such text"`}},
		{`{"tool_message_contains": {"0": ["/a.md"]}, "mystery": [1, 2], "parent_message_count": "lots", "files_include": {"odd": 1}}`, 0,
			[]string{"mystery", "parent_message_count", "files_include"}, nil},
		{`{"tool_message_contains": {"0": {"deep": true}}}`, 0, []string{"tool_message_contains"}, nil},
		{`{"tool_message_contains": {"first": "x"}}`, 0, []string{"tool_message_contains"}, nil},
		{`{"tool_message_contains": {"7": "x"}}`, 1, nil, []string{`tool message #7 contains "x"`}},
		{`[1, 2]`, 0, []string{"expect"}, nil},
		{`{"mystery": 1, "mystery": {"x": 1, "x": 2}}`, 0, []string{"mystery"}, nil}, // repeated keys are free-form too
		{`"just text"`, 0, []string{"expect"}, nil},
		{`42`, 0, []string{"expect"}, nil},
		{`null`, 0, nil, nil},
		{`{"no_error": false, "error_contains": null}`, 0, []string{"no_error", "error_contains"}, nil},
		{`{"files_include": "/a.md", "files_exclude": ["/b.md"], "error_contains": ["x"]}`, 1, nil, []string{`run error contains "x"`}},
	}
	for i, c := range cases {
		t.Run(c.expect, func(t *testing.T) {
			file := writeFile(t, dir, fmt.Sprintf("e%d.json", i), strings.Replace(body, "%s", `,"expect":`+c.expect, 1))
			code, out, errs := runCLI(t, "replay", "--stable", file)
			if code != 0 || errs != "" {
				t.Fatalf("without --check: exit %d, stderr %q", code, errs)
			}
			tr := transcriptOf(t, out)
			checks, _ := json.Marshal(tr["checks"])
			delete(tr, "checks")
			if !reflect.DeepEqual(tr, baseTr) {
				t.Errorf("the expect block changed the run")
			}
			var got []struct {
				Name       string `json:"name"`
				Pass       bool   `json:"pass"`
				NotChecked bool   `json:"not_checked"`
				Note       string `json:"note"`
			}
			_ = json.Unmarshal(checks, &got)
			var notChecked, failed []string
			for _, ch := range got {
				switch {
				case ch.NotChecked:
					notChecked = append(notChecked, ch.Name)
					if ch.Pass || ch.Note == "" {
						t.Errorf("not-checked entry %+v must have pass false and a note", ch)
					}
				case !ch.Pass:
					failed = append(failed, ch.Name)
				}
			}
			if !slices.Equal(notChecked, c.notChecked) || !slices.Equal(failed, c.failed) {
				t.Errorf("not checked %q (want %q), failed %q (want %q)", notChecked, c.notChecked, failed, c.failed)
			}
			code, _, errs = runCLI(t, "replay", "--check", file)
			if code != c.checkCode {
				t.Errorf("--check: exit %d, want %d (stderr %q)", code, c.checkCode, errs)
			}
			for _, n := range c.notChecked {
				if !strings.Contains(errs, "not checked: "+n+": ") {
					t.Errorf("--check stderr does not list %s as not checked: %q", n, errs)
				}
			}
			for _, n := range c.failed {
				if !strings.Contains(errs, "check failed: "+n) {
					t.Errorf("--check stderr does not list the failure %s: %q", n, errs)
				}
			}
		})
	}
}

func TestReplayInvalidScenariosExit2WithPosition(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body, want string // want: stderr after "PATH:"
	}{
		{"not JSON", `{"input": "x"`, `1:14: expected ',' or '}' after the value of "input", found the file ends`},
		{"input a number", `{"input": 3}`, `1:11: "input" must be a string or a list of {"role", "content"} messages, not a number`},
		{"duplicate key", "{\"input\": \"x\",\n  \"script\": {\"parent\": []},\n  \"input\": \"y\"}", `3:3: duplicate key "input" (first given at line 1, column 2)`},
		{"invalid mode", `{"input": "x", "script": {"parent": []}, "agent": {"subagents": [{"name": "a", "description": "d", "mode": "team"}]}}`,
			`1:108: agent.subagents[0].mode is "team"; use "isolated", "fork" or "handoff"`},
		{"type mismatch", `{"input": "x", "script": {"parent": [{"tool_calls": "ls"}]}}`, `1:53: script.parent[0].tool_calls must be a list, not a string`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := writeFile(t, dir, "bad.json", c.body)
			code, out, errs := runCLI(t, "replay", file, "--check")
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if errs != file+":"+c.want+"\n" {
				t.Errorf("stderr\n got  %q\n want %q", errs, file+":"+c.want+"\n")
			}
		})
	}
}

func TestReplayAcceptsABOMAndWarnsOfUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "bom.json", "\xEF\xBB\xBF{\"input\": \"hi\", \"script\": {\"parent\": [{\"content\": \"hello\"}]}, \"surprise\": 1}")
	code, out, errs := runCLI(t, "replay", file)
	if code != 0 || transcriptOf(t, out)["error"] != nil {
		t.Fatalf("BOM scenario: exit %d, stderr %q", code, errs)
	}
	if want := file + `:1:63: unknown key "surprise" in the scenario (ignored)` + "\n"; errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

// A case with "steps": [] fails its child at run time, not at validation;
// the sibling and the parent go on, and the exit status is 0.
func TestReplayEmptyStepsFailOneSibling(t *testing.T) {
	code, out, errs := runCLI(t, "replay", "--check", filepath.Join("..", "..", "testdata", "scenarios", "empty-script-sibling.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var tr struct {
		Status    string `json:"status"`
		Subagents []struct {
			CallID string `json:"call_id"`
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"subagents"`
	}
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Status != "ok" || len(tr.Subagents) != 2 {
		t.Fatalf("status %q, subagents %+v", tr.Status, tr.Subagents)
	}
	bad, good := tr.Subagents[0], tr.Subagents[1]
	if bad.CallID != "call_empty" || bad.Status != "error" || good.Status != "ok" {
		t.Errorf("subagents %+v", tr.Subagents)
	}
	for _, want := range []string{`agent "general-purpose"`, "instance call_empty", "round 0"} {
		if !strings.Contains(bad.Error, want) {
			t.Errorf("the failed child's error %q does not name %s", bad.Error, want)
		}
	}
}

func TestSubcommandHelp(t *testing.T) {
	for _, c := range []struct {
		cmd   string
		wants []string
	}{
		{"demo", []string{"usage: deepagents demo", "no API key", "Exit status:", "0  the demo ran as expected"}},
		{"replay", []string{"usage: deepagents replay", "Exit status:", "-check", "-stable", "-out FILE", "2  bad usage, or the scenario"}},
		{"inspect", []string{"usage: deepagents inspect", "Exit status:", "-scenario FILE", "-json"}},
		{"bench", []string{"usage: deepagents bench", "Exit status:", "-runs", "-sub-rounds", "stderr"}},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			for _, args := range [][]string{{c.cmd, "-h"}, {c.cmd, "--help"}, {"help", c.cmd}} {
				code, out, errs := runCLI(t, args...)
				if code != 0 || errs != "" {
					t.Errorf("%v: exit %d, stderr %q", args, code, errs)
				}
				for _, w := range c.wants {
					if !strings.Contains(out, w) {
						t.Errorf("%v: help lacks %q:\n%s", args, w, out)
					}
				}
			}
			code, _, errs := runCLI(t, c.cmd, "--no-such-flag")
			if code != 2 || !strings.Contains(errs, "Run 'deepagents "+c.cmd+" -h' for help.") {
				t.Errorf("bad flag: exit %d, stderr %q", code, errs)
			}
		})
	}
}

func TestParseFlagsAcceptsFlagsAnywhere(t *testing.T) {
	cases := []struct {
		args     []string
		operands []string
		stable   bool
		out      string
	}{
		{[]string{"a.json"}, []string{"a.json"}, false, ""},
		{[]string{"a.json", "--stable"}, []string{"a.json"}, true, ""},
		{[]string{"--out", "o.json", "a.json", "-stable"}, []string{"a.json"}, true, "o.json"},
		{[]string{"a.json", "--out=o.json", "b.json"}, []string{"a.json", "b.json"}, false, "o.json"},
		{[]string{"--", "--stable"}, []string{"--stable"}, false, ""},
		{[]string{"a.json", "--", "-x"}, []string{"a.json", "-x"}, false, ""},
		{[]string{"-"}, []string{"-"}, false, ""},
		{nil, nil, false, ""},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		stable := fs.Bool("stable", false, "")
		out := fs.String("out", "", "")
		ops, code, ok := parseFlags(fs, c.args, "", io.Discard, io.Discard)
		if !ok || code != 0 || !slices.Equal(ops, c.operands) || *stable != c.stable || *out != c.out {
			t.Errorf("parseFlags(%q) = %q ok=%v, stable %v, out %q; want %q, %v, %q", c.args, ops, ok, *stable, *out, c.operands, c.stable, c.out)
		}
	}
}

// TestBenchChildProcess is not a test: it is the fresh process that
// "bench --runs N" starts, when TestBenchRunsPrintsOnlyTheResultOnStdout
// runs this test binary again.
func TestBenchChildProcess(t *testing.T) {
	if os.Getenv("DEEPAGENTS_BENCH_CHILD") != "1" {
		t.Skip("only run as a child process of TestBenchRunsPrintsOnlyTheResultOnStdout")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(context.Background(), args, os.Stdin, os.Stdout, os.Stderr))
}

func TestBenchRunsPrintsOnlyTheResultOnStdout(t *testing.T) {
	var children int
	prev := benchCommand
	benchCommand = func(ctx context.Context, args ...string) (*exec.Cmd, error) {
		children++
		cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestBenchChildProcess$", "--"}, args...)...)
		cmd.Env = append(os.Environ(), "DEEPAGENTS_BENCH_CHILD=1")
		return cmd, nil
	}
	t.Cleanup(func() { benchCommand = prev })
	code, out, errs := runCLI(t, "bench", "--runs", "2", "-k", "3", "-n", "2", "--sub-rounds", "2", "--json")
	if code != 0 || children != 2 {
		t.Fatalf("exit %d after %d children; stderr %q", code, children, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep bench.Report
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rep) != nil {
		t.Fatalf("stdout must be exactly one JSON report:\n%s", out)
	}
	if p := rep.Phases["sequential"]; p.ModelCalls != 4 || p.Cut != "" || rep.Phases["fanout_2"].ModelCalls != 6 {
		t.Errorf("report phases %+v", rep.Phases)
	}
	if strings.Contains(errs, "{") || strings.Count(errs, "done\n") != 2 {
		t.Errorf("stderr must hold progress only, no JSON: %q", errs)
	}
}

// -k above the default step limit is not silently capped: every round runs.
func TestBenchKAboveTheDefaultStepLimit(t *testing.T) {
	k := agent.DefaultMaxSteps + 30
	code, out, errs := runCLI(t, "bench", "-k", strconv.Itoa(k), "-n", "1", "--sub-rounds", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if p := rep.Phases["sequential"]; p.ModelCalls != k+1 || p.Cut != "" {
		t.Errorf("sequential phase: %d model calls (want %d), cut %q", p.ModelCalls, k+1, p.Cut)
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

func TestInspectRefusesAnInvalidScenario(t *testing.T) {
	file := writeFile(t, t.TempDir(), "bad.json", "{\"input\": \"x\", \"script\": {\"parent\": []},\n \"agent\": {\"max_steps\": -5}}")
	code, out, errs := runCLI(t, "inspect", "--scenario", file)
	if want := file + ":2:25: agent.max_steps must not be negative (0 means the default)\n"; code != 2 || out != "" || errs != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, want)
	}
	if code, _, errs := runCLI(t, "inspect", file); code != 2 || !strings.Contains(errs, "use --scenario FILE") {
		t.Errorf("a bare file: exit %d, stderr %q", code, errs)
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

// TestMainChildProcess is not a test: it is the deepagents command, with
// its signal handling, that a test runs again in this test binary (see
// startCLI) as a user would run the installed one.
func TestMainChildProcess(t *testing.T) {
	if os.Getenv("DEEPAGENTS_MAIN_CHILD") != "1" {
		t.Skip("only run as a child process of the terminal tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(command(args))
}

// runProcess runs `deepagents args...` as a process of its own, in the
// test's environment and directory, with stdin as its standard input, and
// returns its exit status, stdout and stderr. It may run at most two
// minutes.
func runProcess(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestMainChildProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "DEEPAGENTS_MAIN_CHILD=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("deepagents %s: %v", strings.Join(args, " "), err)
	}
	return 0, out.String(), errb.String()
}
