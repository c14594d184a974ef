package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/runner"
)

// 'resume' builds the agent the turn was started with: given only the
// thread and a decision, it writes into the --root the run had, under the
// model and gates the run had; a flag given to resume replaces the
// remembered one, with a warning.
func TestResumeTakesTheTurnsFlags(t *testing.T) {
	srv := gatedServer(t)
	project, home := runEnv(t, srv)
	if err := os.Mkdir("proj", 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--root", "proj", "--interrupt-on", "write_file", "--thread", "R1", "--new-thread", "--no-mcp", "--output", "json")
	if code != 3 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	// From another directory, so that a relative --root would go astray.
	t.Chdir(t.TempDir())
	code, _, errs = runCLI(t, "resume", "--thread", "R1", "--db", "sqlite:"+filepath.Join(home, ".deepagents", "state.db"), "--approve", "c1")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	abs := filepath.Join(project, "proj")
	want := "as thread R1 was started: --model openai:gpt-test --root " + abs + " --interrupt-on write_file --no-mcp"
	if !strings.Contains(errs, want) {
		t.Errorf("resume does not say which flags it took; want %q in:\n%s", want, errs)
	}
	if b, err := os.ReadFile(filepath.Join(abs, "a.md")); err != nil || string(b) != "A\n" {
		t.Errorf("the approved write did not reach --root: %q %v", b, err)
	}
}

func TestResumeWarnsOfAChangedFlag(t *testing.T) {
	srv := gatedServer(t)
	project, _ := runEnv(t, srv)
	for _, d := range []string{"one", "two"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--root", "one", "--interrupt-on", "write_file", "--thread", "R2", "--new-thread",
		"--permission", "deny write /secret/**", "--output", "json"); code != 3 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	code, _, errs := runCLI(t, "resume", "--thread", "R2", "--root", "two", "--permission", "deny read /nothing/**", "--approve", "c1")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"warning: thread R2 was started otherwise; now ",
		"--permission \"deny read /nothing/**\" (was --permission \"deny write /secret/**\")",
		"--root " + filepath.Join(project, "two") + " (was --root " + filepath.Join(project, "one") + ")",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("no warning %q in:\n%s", want, errs)
		}
	}
	if _, err := os.Stat(filepath.Join("two", "a.md")); err != nil {
		t.Errorf("the resume's own --root was not used: %v", err)
	}
}

func TestGivenFlags(t *testing.T) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&f.prompt, "p", "", "")
	fs.StringVar(&f.thread, "thread", "", "")
	agentFlags(fs, &f)
	wd, _ := os.Getwd()
	args := []string{"-p", "hi", "--root=r", "-model", "openai:x", "--no-skills", "--db", "sqlite:x.db", "--output", "json",
		"--permission", "deny write /a/**", "--thread", "T", "--permission=allow read /**", "--system", "@s.md", "--no-memory=false",
		"--max-steps", "7", "--", "--model", "ignored"}
	if _, _, ok := parseFlags(fs, args, "", nil, nil); !ok {
		t.Fatal("parse")
	}
	got := givenFlags(fs, args)
	want := [][2]string{{"root", filepath.Join(wd, "r")}, {"model", "openai:x"}, {"no-skills", "true"}, {"permission", "deny write /a/**"},
		{"permission", "allow read /**"}, {"system", "@" + filepath.Join(wd, "s.md")}, {"no-memory", "false"}, {"max-steps", "7"}}
	if !slices.Equal(got, want) {
		t.Errorf("givenFlags =\n %q\nwant\n %q", got, want)
	}
	for name := range notRemembered {
		if fs.Lookup(name) == nil {
			t.Errorf("notRemembered names %q, which is no flag of run", name)
		}
	}
	for _, name := range []string{"root", "model", "interrupt-on", "allow", "permission", "no-sandbox", "mcp-config"} {
		if !rememberedNames[name] {
			t.Errorf("--%s is not remembered", name)
		}
	}
	// Trust is consent for one command: never carried to the next.
	for _, name := range []string{"trust-project", "trust-project-mcp"} {
		if rememberedNames[name] {
			t.Errorf("--%s is remembered", name)
		}
	}
}

// FuzzGivenFlags: setting the flags givenFlags finds, one by one, leaves
// every remembered flag as parsing the command line did.
func FuzzGivenFlags(f *testing.F) {
	f.Add("-p\x00hi\x00--root=r\x00-model\x00openai:x\x00--no-skills\x00--max-steps\x007")
	f.Add("--interrupt-on\x00write_file\x00x\x00--system\x00@s\x00--\x00--model\x00y")
	f.Add("--no-memory=false\x00--reasoning=high\x00-thread\x00T\x00--max-parallel=3")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		newSet := func(r *runFlags) *flag.FlagSet {
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.StringVar(&r.prompt, "p", "", "")
			fs.StringVar(&r.thread, "thread", "", "")
			agentFlags(fs, r)
			return fs
		}
		var parsed runFlags
		fs := newSet(&parsed)
		if _, _, ok := parseFlags(fs, args, "", io.Discard, io.Discard); !ok {
			return
		}
		var again runFlags
		fs2 := newSet(&again)
		for _, p := range givenFlags(fs, args) {
			if err := fs2.Set(p[0], p[1]); err != nil {
				t.Fatalf("setting %q: %v (args %q)", p, err, args)
			}
		}
		fs.VisitAll(func(fl *flag.Flag) {
			if !rememberedNames[fl.Name] {
				return
			}
			want := absFlag(fl.Name, fl.Value.String())
			if fl.Value.String() == fl.DefValue {
				want = fl.DefValue
			}
			if got := fs2.Lookup(fl.Name).Value.String(); got != want {
				t.Fatalf("--%s: %q after setting the given flags, %q parsed (args %q)", fl.Name, got, want, args)
			}
		})
	})
}

// A thread id with control characters is refused for new runs, and shown
// quoted by listings.
func TestThreadIDsWithControlCharacters(t *testing.T) {
	runEnv(t, nil)
	for _, id := range []string{"a\tb", "x\x1b[31m", "line\nbreak"} {
		code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--thread", id)
		if code != 2 || !strings.Contains(errs, "control character") {
			t.Errorf("--thread %q: exit %d: %s", id, code, errs)
		}
	}
	if got := printableID("x\x1b[31m"); got != `"x\x1b[31m"` {
		t.Errorf("printableID = %s", got)
	}
	if got := printableID("plain-id"); got != "plain-id" {
		t.Errorf("printableID = %s", got)
	}
}

// A resume typed in another directory works in the one the turn was
// started in, so the project's files apply: here its rule that denies the
// write a person approves.
func TestResumeReadsTheTurnsProjectFiles(t *testing.T) {
	srv := gatedServer(t)
	project, _ := runEnv(t, srv)
	if err := os.Mkdir("proj", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("deepagents.toml", []byte("[permissions]\nrules = [\"deny write /a.md\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--root", "proj", "--interrupt-on", "write_file", "--thread", "P1", "--new-thread", "--db", "sqlite:state.db"); code != 3 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	if err := os.WriteFile("deepagents.toml", []byte("# no rules here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "resume", "--thread", "P1", "--db", "sqlite:"+filepath.Join(project, "state.db"), "--approve", "c1")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "working in "+project+", where thread P1 was started") {
		t.Errorf("resume does not say where it works:\n%s", errs)
	}
	if _, err := os.Stat(filepath.Join(project, "proj", "a.md")); err == nil {
		t.Error("the project's rule did not apply: /a.md was written")
	}
}

// The answer hint names the database a run was given; threads rm takes
// over the hold of a run whose process is gone, as resume does.
func TestHintNamesTheDatabaseAndRmTakesADeadHold(t *testing.T) {
	srv := gatedServer(t)
	runEnv(t, srv)
	code, _, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--thread", "H1", "--new-thread", "--db", "sqlite:my.db")
	if code != 3 || !strings.Contains(errs, "deepagents resume --thread H1 --db sqlite:my.db --approve c1") {
		t.Fatalf("exit %d; the hint lacks the database:\n%s", code, errs)
	}
	// A run of a process that is gone still holds the thread.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run a process:", err)
	}
	dead := runner.LeaseHolderOf(cmd.Process.Pid)
	s, err := sqlite.Open("my.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(t.Context(), "H1", dead, time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if code, _, errs := runCLI(t, "threads", "rm", "H1", "--db", "sqlite:my.db"); code != 0 {
		t.Fatalf("threads rm: exit %d: %s", code, errs)
	}
}

// A thread whose waiting call was answered by a resume that was then cut
// off waits for nothing: 'threads' lists it unfinished, as show and resume
// see it.
func TestThreadsListsAnAnsweredThreadRunning(t *testing.T) {
	runEnv(t, nil)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	saver, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cut context.CancelFunc
	var asked atomic.Int32
	model := scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		switch {
		case ci.Round == 0:
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "w1", Name: "write_file", Args: json.RawMessage(`{"file_path": "/a.md", "content": "a"}`)}}}, nil
		case asked.Add(1) == 1:
			cut()
			return scripted.Step{}, context.Canceled
		}
		return scripted.Step{Content: "done"}, nil
	}})
	a, err := deepagents.New(deepagents.Config{Model: model, InterruptOn: map[string]approve.Policy{"write_file": {}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(ctx, agent.Prompt("go"), runner.Checkpoints(saver, "A1")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cut = cancel
	if _, err := a.Invoke(cctx, agent.Input{}, runner.Checkpoints(saver, "A1"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"})); err == nil {
		t.Fatal("the cut-off resume ended well")
	}
	saver.Close()
	code, out, errs := runCLI(t, "threads", "--db", "sqlite:"+path, "--json")
	if code != 0 {
		t.Fatalf("threads: exit %d: %s", code, errs)
	}
	var list []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].Status != "unfinished" {
		t.Errorf("threads lists %s (%v); want A1 unfinished", out, err)
	}
}

// lastUser is the text of the request's last user message: the prompt of
// the turn the request belongs to.
func lastUser(r *ot.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// turnsServer plays a thread of turns: "write the note" writes /note.md;
// "read the note" reads it and /secret/s.md, then edits the note; "which
// model" answers with the model the request named.
func turnsServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		last := r.Last()
		switch lastUser(r) {
		case "write the note":
			if last.Role == "user" {
				return ot.Tools(ot.Call{ID: "w1", Name: "write_file", Args: `{"file_path":"/note.md","content":"hello from turn one\n"}`})
			}
			return ot.Text("written")
		case "read the note":
			if last.Role == "user" {
				return ot.Tools(ot.Call{ID: "r1", Name: "read_file", Args: `{"file_path":"/note.md"}`},
					ot.Call{ID: "r2", Name: "read_file", Args: `{"file_path":"/secret/s.md"}`})
			}
			if last.Role == "tool" && (last.ToolCallID == "r1" || last.ToolCallID == "r2") {
				return ot.Tools(ot.Call{ID: "e1", Name: "edit_file", Args: `{"file_path":"/note.md","old_string":"hello","new_string":"bye"}`})
			}
			return ot.Text("edited")
		case "which model":
			return ot.Text("model " + r.Model)
		}
		return ot.Text("?")
	})
}

// 'run --thread ID' builds the agent the thread's turn was built with, as
// resume does: the next turn, given no flags, works in the same --root
// (and reads the file the first wrote), under the same permission rules,
// gates, model and MCP servers. A flag given again replaces the remembered
// one, with a warning, and the next turn carries it on. Each command is a
// process of its own, as a user types them.
func TestRunThreadTakesTheTurnsFlags(t *testing.T) {
	srv := turnsServer(t)
	project, _ := runEnv(t, srv)
	root := filepath.Join(project, "work")
	writeFileAt(t, filepath.Join(root, "secret", "s.md"), "the secret\n")
	hs := mcpHTTPServer(t)
	mcpFile := filepath.Join(project, "servers.json")
	writeMCPFile(t, mcpFile, `{"mcpServers":{"web":{"type":"http","url":"`+hs.URL+`"}}}`)

	code, out, errs := runProcess(t, "", "run", "-p", "write the note", "--thread", "notes-1", "--new-thread", "--model", "openai:gpt-one",
		"--root", "work", "--permission", "deny read /secret/**", "--interrupt-on", "edit_file", "--mcp-config", mcpFile)
	if code != 0 || strings.TrimSpace(out) != "written" {
		t.Fatalf("turn 1: exit %d, out %q: %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(root, "note.md")); err != nil || string(b) != "hello from turn one\n" {
		t.Fatalf("turn 1 did not write into --root: %q %v", b, err)
	}

	n := srv.Count()
	code, out, errs = runProcess(t, "", "run", "-p", "read the note", "--thread", "notes-1", "--output", "json")
	if code != 3 {
		t.Fatalf("turn 2: exit %d (want 3: the remembered --interrupt-on edit_file stops the edit): %s\n%s", code, errs, out)
	}
	want := "deepagents run: as thread notes-1 was started: --model openai:gpt-one --root " + root +
		` --permission "deny read /secret/**" --interrupt-on edit_file --mcp-config ` + mcpFile
	if !strings.Contains(errs, want) {
		t.Errorf("turn 2 does not say which flags it took; want %q in:\n%s", want, errs)
	}
	reqs := srv.Requests()[n:]
	last := reqs[len(reqs)-1]
	if last.Model != "gpt-one" {
		t.Errorf("turn 2 asked model %q, want the remembered gpt-one", last.Model)
	}
	if !last.HasTool("mcp__web__shout") {
		t.Errorf("turn 2 has no tool of the remembered MCP server: %v", last.ToolNames())
	}
	if res, _ := last.ToolResult("r1"); !strings.Contains(res.Text(), "hello from turn one") {
		t.Errorf("turn 2 could not read the file turn 1 wrote in --root: %q", res.Text())
	}
	if res, _ := last.ToolResult("r2"); !strings.Contains(res.Text(), `permission denied by rule "deny read /secret/**"`) {
		t.Errorf("turn 2 read past the remembered permission rule: %q", res.Text())
	}

	code, out, errs = runProcess(t, "", "run", "-p", "which model", "--thread", "notes-1", "--model", "openai:gpt-two")
	if code != 0 || strings.TrimSpace(out) != "model gpt-two" {
		t.Fatalf("turn 3: exit %d, out %q: %s", code, out, errs)
	}
	if want := "deepagents run: warning: thread notes-1 was started otherwise; now --model openai:gpt-two (was --model openai:gpt-one)"; !strings.Contains(errs, want) {
		t.Errorf("turn 3 does not warn of the changed flag; want %q in:\n%s", want, errs)
	}
	code, out, errs = runProcess(t, "", "run", "-p", "which model", "--thread", "notes-1")
	if code != 0 || strings.TrimSpace(out) != "model gpt-two" {
		t.Errorf("turn 4 did not carry on turn 3's --model: exit %d, out %q: %s", code, out, errs)
	}
}

// 'run --thread ID' with an id no thread has is an error naming the
// nearest ids, and makes nothing; --new-thread makes the thread with that
// id, and is refused for one that exists.
func TestRunThreadMustExist(t *testing.T) {
	srv := turnsServer(t)
	runEnv(t, srv)
	code, _, errs := runCLI(t, "run", "-p", "which model", "--model", "openai:gpt-test", "--thread", "notes-1")
	if code != 2 || !strings.Contains(errs, `there is no thread "notes-1"`) || !strings.Contains(errs, "--new-thread") {
		t.Fatalf("a thread id before any database: exit %d: %s", code, errs)
	}
	for _, id := range []string{"notes-1", "notes-2", "other"} {
		if code, _, errs := runCLI(t, "run", "-p", "which model", "--model", "openai:gpt-test", "--thread", id, "--new-thread"); code != 0 {
			t.Fatalf("--thread %s --new-thread: exit %d: %s", id, code, errs)
		}
	}
	n := srv.Count()
	for _, tt := range []struct{ id, want string }{
		{"notes-3", " (the nearest ids: notes-2, notes-1); to start a new thread with this id, add --new-thread"},
		{"note", " (the nearest ids: notes-2, notes-1);"},
		{"othr", " (did you mean other?);"},
		{"unrelated-id", " (list the threads with 'deepagents threads');"},
	} {
		code, _, errs := runCLI(t, "run", "-p", "which model", "--model", "openai:gpt-test", "--thread", tt.id)
		if code != 2 || !strings.Contains(errs, `there is no thread "`+tt.id+`"`) || !strings.Contains(errs, tt.want) {
			t.Errorf("--thread %s: exit %d; want %q in: %s", tt.id, code, tt.want, errs)
		}
	}
	// resume names the nearest ids too, and offers no --new-thread.
	code, _, errs = runCLI(t, "resume", "--thread", "notes-3", "--approve", "c1", "--model", "openai:gpt-test")
	if code != 1 || !strings.Contains(errs, `thread "notes-3" has no run to resume`) || !strings.Contains(errs, "(the nearest ids: notes-2, notes-1)") ||
		strings.Contains(errs, "--new-thread") {
		t.Errorf("resume --thread notes-3: exit %d: %s", code, errs)
	}
	if srv.Count() != n {
		t.Error("a run on an unknown thread called the model")
	}
	_, out, _ := runCLI(t, "threads", "--json")
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 3 {
		t.Errorf("threads after the refused runs: %v %s", err, out)
	}
	code, _, errs = runCLI(t, "run", "-p", "which model", "--model", "openai:gpt-test", "--thread", "other", "--new-thread")
	if code != 2 || !strings.Contains(errs, `thread "other" exists already`) {
		t.Errorf("--new-thread on an existing thread: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "run", "-p", "x", "--new-thread"); code != 2 || !strings.Contains(errs, "--new-thread needs --thread ID") {
		t.Errorf("--new-thread alone: exit %d: %s", code, errs)
	}
}

// A thread database that is not the user's own (committed to a project they
// cloned, copied from another machine or user) cannot make a command take
// the flags its threads were started with: a thread started elsewhere with
// --root, --no-sandbox and --allow execute, continued by another user with
// 'run --thread', gets none of them (no execute tool, no directory), and
// the warning lists what was not taken; its notices do not hide this
// command's.
func TestRunThreadTakesNoFlagsFromAnotherUsersDatabase(t *testing.T) {
	srv := turnsServer(t)
	project, home := runEnv(t, srv)
	if err := os.MkdirAll(filepath.Join(project, ".deepagents"), 0o755); err != nil {
		t.Fatal(err) // a project: its threads live in .deepagents/state.db
	}
	writeFileAt(t, filepath.Join(project, "work", "keep.md"), "x\n")
	code, out, errs := runProcess(t, "", "run", "-p", "which model", "--thread", "fix-build", "--new-thread", "--model", "openai:gpt-one",
		"--root", "work", "--no-sandbox", "--allow", "execute")
	if code != 0 || strings.TrimSpace(out) != "model gpt-one" {
		t.Fatalf("the first user's turn: exit %d, out %q: %s", code, out, errs)
	}
	if st, err := os.Stat(filepath.Join(home, ".deepagents", turnKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the signing key: %v %v", st, err)
	}

	// Another user, with the same project (its database) in hand.
	t.Setenv("HOME", t.TempDir())
	code, _, errs = runProcess(t, "", "resume", "--thread", "fix-build", "--model", "openai:gpt-two")
	if strings.Contains(errs, "as thread fix-build was started") || !strings.Contains(errs, "was not started by you here") {
		t.Errorf("resume took the thread's flags (exit %d):\n%s", code, errs)
	}
	n := srv.Count()
	code, out, errs = runProcess(t, "", "run", "-p", "which model", "--thread", "fix-build", "--model", "openai:gpt-two")
	if code != 0 || strings.TrimSpace(out) != "model gpt-two" {
		t.Fatalf("the other user's turn: exit %d, out %q: %s", code, out, errs)
	}
	if !strings.Contains(errs, "thread fix-build in sqlite:") || !strings.Contains(errs, "was not started by you here") ||
		!strings.Contains(errs, "--no-sandbox --allow execute") {
		t.Errorf("the other user is not told which flags were not taken:\n%s", errs)
	}
	if strings.Contains(errs, "as thread fix-build was started") || strings.Contains(errs, "UNSANDBOXED") {
		t.Errorf("the other user's command took the thread's flags:\n%s", errs)
	}
	reqs := srv.Requests()[n:]
	if len(reqs) == 0 {
		t.Fatal("the other user's turn asked no model")
	}
	if last := reqs[len(reqs)-1]; last.HasTool("execute") {
		t.Errorf("the other user's turn has execute (the thread's --root and --allow execute were taken): %v", last.ToolNames())
	}
}
