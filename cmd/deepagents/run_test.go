package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// delegationServer plays the seed's experiment over the OpenAI wire format:
// the parent (offered task) delegates; the child writes /child.md and reports.
func delegationServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.HasTool("task") {
			if r.Round() == 0 {
				return ot.Tools(ot.Call{ID: "call_p1", Name: "task", Args: `{"description":"Find the answer; write /child.md; report.","subagent_type":"general-purpose"}`})
			}
			res, _ := r.ToolResult("call_p1")
			return ot.Text("Relayed: " + res.Text())
		}
		if r.Round() == 0 {
			return ot.Tools(ot.Call{ID: "call_c1", Name: "write_file", Args: `{"file_path":"/child.md","content":"42\n"}`})
		}
		return ot.Text("The conclusion is 42.")
	})
}

// runEnv isolates a run: a temporary home and project directory, the fake
// server as the OpenAI endpoint, and no other keys.
func runEnv(t *testing.T, srv *ot.Server) (project, home string) {
	home, project = t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"} {
		t.Setenv(k, "")
	}
	if srv != nil {
		t.Setenv("OPENAI_API_KEY", "test-key")
		t.Setenv("OPENAI_BASE_URL", srv.URL)
	}
	t.Chdir(project)
	return project, home
}

func TestRunWithoutAKeySaysWhatToSet(t *testing.T) {
	runEnv(t, nil)
	code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "anthropic:claude-sonnet-4-5")
	if code != 2 || !strings.Contains(errs, "set ANTHROPIC_API_KEY") || !strings.Contains(errs, "deepagents demo") {
		t.Errorf("exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, "run", "-p", "hi")
	for _, v := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "deepagents demo"} {
		if code != 2 || !strings.Contains(errs, v) {
			t.Errorf("no model, no key: exit %d, stderr lacks %s: %s", code, v, errs)
		}
	}
	if code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "mymodel"); code != 2 || !strings.Contains(errs, `write "mymodel:MODEL"`) {
		t.Errorf("bad model string: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, "run", "-p", "hi", "--output", "yaml"); code != 2 || !strings.Contains(errs, "--output") {
		t.Errorf("bad output: %d %s", code, errs)
	}
}

// A model name written without its provider is refused with the
// provider:model it most likely means, on the command line and in an agent
// file.
func TestModelWithoutProviderSaysWhatToWrite(t *testing.T) {
	project, _ := runEnv(t, nil)
	t.Setenv("OPENAI_API_KEY", "k")
	for model, want := range map[string]string{
		"gpt-4.1":           `--model: "gpt-4.1" is a model name without its provider: write openai:gpt-4.1`,
		"claude-sonnet-4-5": "write anthropic:claude-sonnet-4-5",
		"gemini-2.5-flash":  "write gemini:gemini-2.5-flash",
	} {
		if code, _, errs := runCLI(t, "run", "-p", "hi", "--model", model); code != 2 || !strings.Contains(errs, want) {
			t.Errorf("--model %s: exit %d, want %q in: %s", model, code, want, errs)
		}
	}
	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "scout.md"), "---\ndescription: Scouts.\nmodel: claude-haiku-4-5\n---\nYou scout.\n")
	code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-4.1")
	if want := `scout.md:3: model claude-haiku-4-5: "claude-haiku-4-5" is a model name without its provider: write anthropic:claude-haiku-4-5`; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("agent file: exit %d, want %q in: %s", code, want, errs)
	}
}

func TestRunTextAndJSON(t *testing.T) {
	srv := delegationServer(t)
	_, home := runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "What is the answer?", "--model", "openai:gpt-test")
	if code != 0 || strings.TrimSpace(out) != "Relayed: The conclusion is 42." {
		t.Fatalf("text: exit %d out %q err %s", code, out, errs)
	}
	code, out, errs = runCLI(t, "run", "-p", "What is the answer?", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var sum runSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if sum.Result != "Relayed: The conclusion is 42." || sum.Status != "ok" || len(sum.FilesChanged) != 1 || sum.FilesChanged[0] != "/child.md" {
		t.Errorf("summary %+v", sum)
	}
	if len(sum.Subagents) != 1 || sum.Subagents[0].CallID != "call_p1" || sum.Subagents[0].Status != "ok" || sum.UsageByAgent["parent / general-purpose#call_p1"].InputTokens == 0 {
		t.Errorf("subagent accounting: %+v %v", sum.Subagents, sum.UsageByAgent)
	}
	if sum.Usage.InputTokens != sum.UsageByAgent["parent"].InputTokens+sum.UsageByAgent["parent / general-purpose#call_p1"].InputTokens {
		t.Errorf("total usage %+v is not the sum by agent %v", sum.Usage, sum.UsageByAgent)
	}
	if !strings.HasPrefix(sum.Transcript, filepath.Join(home, ".deepagents", "threads")) {
		t.Fatalf("transcript at %q", sum.Transcript)
	}
	data, err := os.ReadFile(sum.Transcript)
	if err != nil || !strings.Contains(string(data), `"children"`) || !strings.Contains(string(data), "The conclusion is 42.") {
		t.Errorf("saved transcript: %v", err)
	}
}

func TestRunStreamJSON(t *testing.T) {
	srv := delegationServer(t)
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--output", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	var types []string
	var last map[string]any
	childEvents := 0
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line is not JSON: %q", sc.Text())
		}
		types = append(types, ev["type"].(string))
		if ev["agent"] == "parent / general-purpose#call_p1" {
			childEvents++
		}
		last = ev
	}
	if types[0] != "run.start" || last["type"] != "result" || last["result"] != "Relayed: The conclusion is 42." {
		t.Errorf("first %s, last %v", types[0], last)
	}
	if childEvents < 6 || !strings.Contains(strings.Join(types, " "), "model.delta") {
		t.Errorf("child events %d; types %v", childEvents, types)
	}
}

func TestRunRootAndStdinPrompt(t *testing.T) {
	srv := delegationServer(t)
	runEnv(t, srv)
	dir := t.TempDir()
	var outb, errb strings.Builder
	code := run(t.Context(), []string{"run", "--model", "openai:gpt-test", "--root", dir}, strings.NewReader("What is the answer?\n"), &outb, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if data, err := os.ReadFile(filepath.Join(dir, "child.md")); err != nil || string(data) != "42\n" {
		t.Errorf("the child's write did not reach the real directory: %v %q", err, data)
	}
	if got := srv.Requests()[0].FirstUser(); got != "What is the answer?" {
		t.Errorf("prompt from stdin = %q", got)
	}
	if code, _, errs := runCLI(t, "run", "-p", "x", "--model", "openai:gpt-test", "--root", filepath.Join(dir, "missing")); code != 2 || !strings.Contains(errs, "--root") {
		t.Errorf("missing root: %d %s", code, errs)
	}
}

func TestRunConfigAndAgentFiles(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.HasTool("task") {
			if r.Round() == 0 {
				return ot.Tools(ot.Call{ID: "c1", Name: "task", Args: `{"description":"look it up","subagent_type":"scout"}`})
			}
			return ot.Text("done")
		}
		return ot.Text("scouted")
	})
	project, _ := runEnv(t, srv)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(project, "deepagents.toml"), []byte("model = \"openai:gpt-from-config\"\nmax_steps = 5\n"), 0o644))
	agents := filepath.Join(project, ".deepagents", "agents")
	must(os.MkdirAll(agents, 0o755))
	must(os.WriteFile(filepath.Join(agents, "scout.md"), []byte("---\ndescription: Scouts ahead.\ntools: [read_file, grep]\n---\nYou scout.\n"), 0o644))
	code, out, errs := runCLI(t, "run", "-p", "go")
	if code != 0 || strings.TrimSpace(out) != "done" {
		t.Fatalf("exit %d out %q err %s", code, out, errs)
	}
	reqs := srv.Requests()
	if reqs[0].Model != "gpt-from-config" {
		t.Errorf("model from deepagents.toml not used: %s", reqs[0].Model)
	}
	var task string
	for _, tl := range reqs[0].Tools {
		if tl.Function.Name == "task" {
			task = tl.Function.Description
		}
	}
	if !strings.Contains(task, "- scout: Scouts ahead.") {
		t.Errorf("agent file not listed:\n%s", task)
	}
	child := reqs[1]
	if names := strings.Join(child.ToolNames(), ","); names != "read_file,grep" || child.System() != "You scout." {
		t.Errorf("scout got tools %s and system %q", names, child.System())
	}

	// Flags beat the config; an invalid agent file fails with file:line.
	if code, _, _ := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-flag"); code != 0 || srv.Requests()[len(srv.Requests())-1].Model != "gpt-flag" {
		t.Errorf("--model did not override the config")
	}
	must(os.WriteFile(filepath.Join(agents, "bad.md"), []byte("---\ndescription: x\nmode: shared\n---\n"), 0o644))
	code, _, errs = runCLI(t, "run", "-p", "go")
	if code != 2 || !strings.Contains(errs, "bad.md:3:") || !strings.Contains(errs, `"shared"`) {
		t.Errorf("invalid agent file: exit %d: %s", code, errs)
	}
}

func TestRunStepLimitFails(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		return ot.Tools(ot.Call{Name: "ls", Args: `{}`})
	})
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "loop", "--model", "openai:gpt-test", "--max-steps", "2", "--output", "json")
	var sum runSummary
	_ = json.Unmarshal([]byte(out), &sum)
	if code != 1 || sum.Status != "limit" || sum.Rounds != 2 {
		t.Errorf("exit %d status %s rounds %d: %s", code, sum.Status, sum.Rounds, errs)
	}
}

// interactive runs an interactive session on the test server srv (model
// openai:gpt-test, text output) with input as what the user types, and
// returns its exit status, stdout and stderr.
func interactive(t *testing.T, srv *ot.Server, input string) (code int, out, errb *strings.Builder) {
	t.Helper()
	runEnv(t, srv)
	f := runFlags{model: "openai:gpt-test", output: "text", set: map[string]bool{}}
	out, errb = &strings.Builder{}, &strings.Builder{}
	s, err := assemble(t.Context(), f, errb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	sess := &session{setup: s, flags: f, stdout: out, stderr: errb}
	return sess.interactive(t.Context(), strings.NewReader(input)), out, errb
}

// An interactive session keeps the conversation across turns.
func TestInteractiveSessionKeepsTheConversation(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		return ot.Text("turn " + string(rune('0'+r.Round())) + " of " + r.Last().Text())
	})
	code, out, errb := interactive(t, srv, "first\n\nsecond\n/exit\nnever\n")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := out.String(); got != "turn 0 of first\nturn 1 of second\n" {
		t.Errorf("answers:\n%s", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 3 {
		t.Fatalf("the second turn must carry the first: %d requests", len(reqs))
	}
	if !strings.Contains(errb.String(), "> ") || !strings.Contains(errb.String(), "openai:gpt-test") {
		t.Errorf("prompt/banner missing: %q", errb.String())
	}
}

func TestSystemPromptFileAndSubagentsDir(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	project, _ := runEnv(t, srv)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(project, "prompt.txt"), []byte("You are terse."), 0o644))
	extra := filepath.Join(project, "extra-agents")
	must(os.MkdirAll(extra, 0o755))
	must(os.WriteFile(filepath.Join(extra, "critic.md"), []byte("---\ndescription: Criticises drafts.\n---\nBe harsh.\n"), 0o644))
	code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--system", "@prompt.txt", "--subagents", extra, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := srv.Requests()[0]
	if r.System() != "You are terse." {
		t.Errorf("system = %q", r.System())
	}
	var task string
	for _, tl := range r.Tools {
		if tl.Function.Name == "task" {
			task = tl.Function.Description
		}
	}
	if !strings.Contains(task, "- critic: Criticises drafts.") {
		t.Errorf("--subagents agent not listed:\n%s", task)
	}
	if code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--subagents", filepath.Join(project, "nope")); code != 2 || !strings.Contains(errs, "not a directory") {
		t.Errorf("missing --subagents dir: %d %s", code, errs)
	}
}

func TestProgressPrinter(t *testing.T) {
	var b strings.Builder
	p := &progressPrinter{w: &b}
	p.event(agent.Event{Type: agent.ModelRequest, Agent: agent.RootPath("parent"), Request: &agent.RequestInfo{Round: 0, MessageCount: 1}})
	p.event(agent.Event{Type: agent.ModelResponse, Agent: agent.RootPath("parent"), Response: &agent.ResponseInfo{Usage: llm.Usage{InputTokens: 12000, OutputTokens: 40}, ToolCalls: []string{"task"}}})
	p.event(agent.Event{Type: agent.SubagentStart, Agent: agent.RootPath("parent"), Subagent: &agent.SubagentInfo{Name: "general-purpose", CallID: "c1", Task: "look"}})
	p.event(agent.Event{Type: agent.ToolStart, Agent: mustPath("parent / general-purpose#c1"), Tool: &agent.ToolInfo{Name: "write_file", Args: []byte(`{"file_path":"/a"}`)}})
	p.event(agent.Event{Type: agent.ToolEnd, Agent: mustPath("parent / general-purpose#c1"), Tool: &agent.ToolInfo{Name: "write_file", IsError: true, Result: "Error: nope"}})
	p.event(agent.Event{Type: agent.SubagentEnd, Agent: agent.RootPath("parent"), Subagent: &agent.SubagentInfo{Name: "general-purpose", CallID: "c1", Status: agent.StatusOK, Rounds: 2, Usage: llm.Usage{InputTokens: 900, OutputTokens: 100}}})
	out := b.String()
	for _, want := range []string{"parent · round 1 · 1 message\n", "asked for task · 12k tokens in, 40 out so far", "⇢ subagent general-purpose (c1) started: look",
		"parent / general-purpose#c1 → write_file {\"file_path\":\"/a\"}", "✗ write_file: Error: nope", "⇠ subagent general-purpose (c1) ok after 2 rounds, 1.0k tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"run", "-h"}, {"run", "--help"}, {"help", "run"}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || errs != "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
		for _, w := range []string{"usage: deepagents run", "Exit status:", "cancelled or refused", "-reasoning string", "-output string"} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: help lacks %q:\n%s", args, w, out)
			}
		}
	}
	if code, _, errs := runCLI(t, "run", "--no-such-flag"); code != 2 || !strings.Contains(errs, "Run 'deepagents run -h' for help.") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI(t, "run", "hello"); code != 2 || !strings.Contains(errs, `unexpected argument "hello" (put the prompt after -p)`) {
		t.Errorf("operand: exit %d, stderr %q", code, errs)
	}
}

// Counts read as words: "1 round", "2 rounds", in the progress lines and
// 'threads show'.
func TestCountsReadAsWords(t *testing.T) {
	var b strings.Builder
	p := &progressPrinter{w: &b}
	p.event(agent.Event{Type: agent.ModelRequest, Agent: agent.RootPath("parent"), Request: &agent.RequestInfo{Round: 0, MessageCount: 2}})
	p.event(agent.Event{Type: agent.SubagentEnd, Agent: agent.RootPath("parent"), Subagent: &agent.SubagentInfo{Name: "general-purpose", CallID: "c1", Status: agent.StatusOK, Rounds: 1}})
	var r strings.Builder
	printRun(&r, &shownRun{Messages: []shownMessage{{Role: "assistant", ToolCalls: []shownCall{{ID: "c1", Name: "task", Args: []byte(`{}`),
		Subagent: &shownRun{Path: "parent / general-purpose#c1", Status: "ok", Rounds: 1}}}}}}, "")
	out := b.String() + r.String()
	for _, want := range []string{"· round 1 · 2 messages\n", "ok after 1 round, ", "· ok · 1 round\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "1 rounds") {
		t.Errorf("says 1 rounds:\n%s", out)
	}
}

// Each agent's resume notice is shown, even when a subagent stopped where
// its parent did and its notice reads the same; a warning repeated by
// every run is still shown once.
func TestTellShowsEveryRunsResumeNotice(t *testing.T) {
	var errb strings.Builder
	s := &session{stderr: &errb}
	text := `resumed from checkpoint 00000002 of thread "T"; 0 of the step's 1 tool calls had finished and are kept`
	for _, who := range []string{"parent", "parent / general-purpose#c1", "parent"} {
		s.tell(agent.Event{Type: agent.Notice, Agent: mustPath(who), Notice: &agent.NoticeInfo{Source: "resume", Count: 1, Text: text}}, nil)
		s.tell(agent.Event{Type: agent.Warning, Agent: mustPath(who), Warning: &agent.WarningInfo{Source: "settings", Text: "reasoning dropped"}}, nil)
	}
	got := errb.String()
	if n := strings.Count(got, "resume: "+text); n != 3 {
		t.Errorf("%d resume notices shown, want 3:\n%s", n, got)
	}
	if !strings.Contains(got, "deepagents: parent / general-purpose#c1: resume: ") {
		t.Errorf("the subagent's resume notice is missing:\n%s", got)
	}
	if n := strings.Count(got, "reasoning dropped"); n != 1 {
		t.Errorf("the warning was shown %d times, want once:\n%s", n, got)
	}
}

// Answering a waiting call at the prompt goes on with the run without a
// note that it was resumed from a checkpoint: that is how the process
// goes on, not news to the person who answered.
func TestApprovalAtThePromptIsNoResume(t *testing.T) {
	srv := gatedServer(t)
	runEnv(t, srv)
	f := runFlags{model: "openai:gpt-test", output: "text", set: map[string]bool{}, gates: map[string]approve.Policy{"write_file": {}}}
	var out, errb strings.Builder
	s, err := assemble(t.Context(), f, &errb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	sess := &session{setup: s, flags: f, stdout: &out, stderr: &errb, askAtPrompt: true}
	if code := sess.interactive(t.Context(), strings.NewReader("write it\na\n")); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != "done\n" || !strings.Contains(errb.String(), "⏸ Approval 1 of 1") {
		t.Fatalf("the turn with an approval did not run: out %q\n%s", out.String(), errb.String())
	}
	if strings.Contains(errb.String(), "resumed from checkpoint") {
		t.Errorf("an approval at the prompt is followed by a resume note:\n%s", errb.String())
	}
}

// The endpoint notice and the notice of how execute runs are shown once
// per thread: a later turn of the thread shows them only when they
// changed; a new thread shows them again.
func TestNoticesOncePerThread(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	project, home := runEnv(t, srv)
	if err := os.Mkdir(filepath.Join(project, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	const endpoint = "deepagents: provider openai sends its requests to "
	const execute = "deepagents: execute: "
	code, _, errs := runCLI(t, "run", "-p", "one", "--model", "openai:gpt-test", "--root", "work", "--thread", "n1", "--new-thread")
	if code != 0 || !strings.Contains(errs, endpoint+srv.URL) {
		t.Fatalf("turn 1: exit %d; no endpoint notice:\n%s", code, errs)
	}
	sandboxShown := strings.Contains(errs, execute)
	code, _, errs = runCLI(t, "run", "-p", "two", "--thread", "n1")
	if code != 0 || strings.Contains(errs, endpoint) || strings.Contains(errs, execute) {
		t.Errorf("turn 2 repeats a notice (exit %d):\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "resume", "--thread", "n1"); strings.Contains(errs, endpoint) || strings.Contains(errs, execute) {
		t.Errorf("resume repeats a notice (exit %d):\n%s", code, errs)
	}
	moved := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	t.Setenv("OPENAI_BASE_URL", moved)
	code, _, errs = runCLI(t, "run", "-p", "three", "--thread", "n1")
	if code != 0 || !strings.Contains(errs, endpoint+moved) || strings.Contains(errs, execute) {
		t.Errorf("turn 3, whose endpoint changed, must show that notice only (exit %d):\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "run", "-p", "four", "--model", "openai:gpt-test", "--root", "work")
	if code != 0 || !strings.Contains(errs, endpoint+moved) || sandboxShown != strings.Contains(errs, execute) {
		t.Errorf("a new thread must show the notices again (exit %d):\n%s", code, errs)
	}
	// The thread remembers digests of its notices, not the lines: an
	// endpoint's URL may carry a secret.
	files, _ := filepath.Glob(filepath.Join(home, ".deepagents", "state.db*"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && strings.Contains(string(b), "sends its requests") {
			t.Errorf("%s holds a notice's text", name)
		}
	}
}

// A --root that cannot be a workspace is named as the directory, not by
// the package that opens it.
func TestRootErrorsSayTheDirectory(t *testing.T) {
	project, _ := runEnv(t, nil)
	t.Setenv("OPENAI_API_KEY", "k")
	writeFileAt(t, filepath.Join(project, "file"), "x")
	for root, want := range map[string]string{
		"missing": "deepagents run: --root: the directory " + filepath.Join(project, "missing") + " does not exist\n",
		"file":    "deepagents run: --root: " + filepath.Join(project, "file") + " is not a directory\n",
	} {
		code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-4.1", "--root", root)
		if code != 2 || !strings.HasSuffix(errs, want) || strings.Contains(errs, "osfs") {
			t.Errorf("--root %s: exit %d, want %q in:\n%s", root, code, want, errs)
		}
	}
}

// Gemini's endpoint variable, GOOGLE_GEMINI_BASE_URL (read by the genai
// SDK), sends its requests elsewhere, is announced like the others, and is
// the one docs/RUN.md names for Gemini.
func TestGeminiEndpointVariable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "RUN.md"))
	if err != nil {
		t.Fatal(err)
	}
	srv := geminitest.NewServer(t, func(r *geminitest.Request) geminitest.Reply { return geminitest.Text("from the gateway") })
	runEnv(t, nil)
	t.Setenv("GEMINI_API_KEY", "k")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", srv.URL)
	code, out, errs := runCLI(t, "run", "-p", "hi", "--model", "gemini:gemini-2.5-flash")
	if code != 0 || strings.TrimSpace(out) != "from the gateway" || len(srv.Requests()) == 0 {
		t.Fatalf("exit %d, out %q: %s", code, out, errs)
	}
	if want := "provider gemini sends its requests to " + srv.URL + " (set by the environment variable GOOGLE_GEMINI_BASE_URL)"; !strings.Contains(errs, want) {
		t.Errorf("no endpoint notice %q in:\n%s", want, errs)
	}
	for line := range strings.SplitSeq(string(doc), "\n") {
		if strings.HasPrefix(line, "| `gemini`") && !strings.Contains(line, "`GOOGLE_GEMINI_BASE_URL`") {
			t.Errorf("docs/RUN.md's row for Gemini does not name its endpoint variable:\n%s", line)
		}
	}
}

// mustPath reads an agent path's text form, which the test knows is valid.
func mustPath(s string) agent.Path {
	p, err := agent.ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}
