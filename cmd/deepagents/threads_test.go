package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/runner"
)

// decode reads a run's --output json summary.
func decode(t *testing.T, out string) runSummary {
	t.Helper()
	var sum runSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("output is not a JSON summary: %v\n%s", err, out)
	}
	return sum
}

// gatedServer asks, in its first round, for a write_file call (c1) and an
// ls call (c2), then answers "done".
func gatedServer(t *testing.T) *ot.Server {
	return ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Round() == 0 {
			return ot.Tools(ot.Call{ID: "c1", Name: "write_file", Args: `{"file_path":"/a.md","content":"A\n"}`},
				ot.Call{ID: "c2", Name: "ls", Args: `{}`})
		}
		return ot.Text("done")
	})
}

// Without --thread a thread is made, its id shown, and the run saved in the
// home database outside a project; --thread continues it.
func TestRunMakesAThreadAndContinuesIt(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("answer to " + r.Last().Text()) })
	_, home := runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "first", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sum := decode(t, out)
	if sum.ThreadID == "" || sum.Result != "answer to first" {
		t.Fatalf("summary %+v", sum)
	}
	if want := "deepagents: thread " + sum.ThreadID + " (continue it with --thread " + sum.ThreadID + ")\n"; !strings.Contains(errs, want) {
		t.Errorf("json output did not name the new thread on stderr: %s", errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".deepagents", "state.db")); err != nil {
		t.Fatalf("no database in the home directory: %v", err)
	}

	code, out, errs = runCLI(t, "run", "-p", "second", "--model", "openai:gpt-test", "--thread", sum.ThreadID)
	if code != 0 || strings.TrimSpace(out) != "answer to second" {
		t.Fatalf("second turn: exit %d out %q: %s", code, out, errs)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	var texts []string
	for _, m := range last.Messages {
		texts = append(texts, m.Role+":"+m.Text())
	}
	if got := strings.Join(texts, " | "); !strings.Contains(got, "user:first | assistant:answer to first | user:second") {
		t.Errorf("the second turn does not carry the first: %s", got)
	}
	if strings.Contains(errs, "deepagents: thread") {
		t.Errorf("a given thread was announced as new: %s", errs)
	}

	// Text output names the new thread on stderr.
	code, _, errs = runCLI(t, "run", "-p", "third", "--model", "openai:gpt-test")
	if code != 0 || !strings.Contains(errs, "deepagents: thread ") || !strings.Contains(errs, "(continue it with --thread ") {
		t.Errorf("new thread not announced: exit %d: %s", code, errs)
	}
}

// In a project the database is .deepagents/state.db, kept out of version
// control; --db and the db key choose another; bad values are usage errors.
func TestDatabaseChoice(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	project, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "model = \"openai:gpt-test\"\n")
	writeFileAt(t, filepath.Join(project, ".git", "HEAD"), "ref: refs/heads/main\n")
	// Listing threads makes no database.
	if code, out, errs := runCLI(t, "threads", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("threads without a database: exit %d %q %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "threads", "show", "x"); code != 1 || !strings.Contains(errs, "there is no thread database at "+filepath.Join(project, ".deepagents", "state.db")+" yet") {
		t.Errorf("show without a database: exit %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(project, ".deepagents")); err == nil {
		t.Fatal("threads made the database")
	}
	if code, _, errs := runCLI(t, "run", "-p", "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	st, err := os.Stat(filepath.Join(project, ".deepagents", "state.db"))
	if err != nil {
		t.Fatalf("no project database: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("the database is readable by others: %v", st.Mode())
	}
	if data, err := os.ReadFile(filepath.Join(project, ".deepagents", ".gitignore")); err != nil || !strings.Contains(string(data), "state.db") {
		t.Errorf("the project database is not ignored by git: %v %q", err, data)
	}
	if _, err := os.Stat(filepath.Join(home, ".deepagents", "state.db")); err == nil {
		t.Error("a project run wrote the home database")
	}

	flagDB := filepath.Join(t.TempDir(), "sub", "flag.db")
	if code, _, errs := runCLI(t, "run", "-p", "hi", "--db", "sqlite:"+flagDB); code != 0 {
		t.Fatalf("--db: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(flagDB); err != nil {
		t.Fatalf("--db file not made: %v", err)
	}
	code, out, _ := runCLI(t, "threads", "--db", "sqlite:"+flagDB, "--json")
	var listed []threadEntry
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 {
		t.Errorf("threads in --db: exit %d %s", code, out)
	}

	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "model = \"openai:gpt-test\"\ndb = \"sqlite:keys/threads.db\"\n")
	if code, _, errs := runCLI(t, "run", "-p", "hi"); code != 0 {
		t.Fatalf("db key: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(project, "keys", "threads.db")); err != nil {
		t.Fatalf("the db key was not used: %v", err)
	}

	dir := t.TempDir()
	for _, tt := range []struct{ db, want string }{
		{"threads.db", `--db: "threads.db" is not a database: write "sqlite:PATH" or "postgres://USER@HOST/DB" (for this file: "sqlite:threads.db")`},
		{"sqlite:", `--db: "sqlite:" names no file`},
		{"mysql://h/x", `--db: "mysql://h/x" is not a database`},
		{"postgres:x", `write a PostgreSQL database as a URL`},
		{"sqlite:" + dir, "thread database sqlite:" + dir},
	} {
		code, _, errs := runCLI(t, "run", "-p", "hi", "--db", tt.db)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("--db %s: exit %d, stderr %q, want %q", tt.db, code, errs, tt.want)
		}
	}
	if code, _, errs := runCLI(t, "run", "-p", "hi", "--thread", ""); code != 2 || !strings.Contains(errs, "--thread: ") {
		t.Errorf("--thread '': exit %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, "run", "-p", "hi", "--interrupt-on", "write file"); code != 2 || !strings.Contains(errs, `--interrupt-on: "write file" is not a tool name`) {
		t.Errorf("--interrupt-on: exit %d %s", code, errs)
	}
}

// A project file that sends the threads to a PostgreSQL server is refused
// until trusted, before any connection is tried.
func TestProjectPostgresDatabaseNeedsTrust(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	project, _ := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "db = \"postgres://me:secret@203.0.113.1:5432/x\"\n")
	for _, args := range [][]string{{"run", "-p", "hi", "--model", "openai:gpt-test"}, {"threads"}} {
		code, _, errs := runCLIIn(t, strings.NewReader(""), args...)
		if code != 2 || !strings.Contains(errs, "stores every conversation of this project") || strings.Contains(errs, "secret") {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
	if len(srv.Requests()) != 0 {
		t.Error("the model was called")
	}
}

// A gated call stops a headless run with exit status 3 and the waiting
// calls in our shape and LangChain's; the step's other call ran. resume
// --approve runs the call without repeating the model call.
func TestInterruptedRunResumedWithApprove(t *testing.T) {
	srv := gatedServer(t)
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--output", "json")
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s", code, errs)
	}
	sum := decode(t, out)
	if sum.Status != "interrupted" || sum.Result != "" || len(sum.Interrupts) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(out), &raw)
	ar := raw["action_requests"].([]any)[0].(map[string]any)
	if ar["name"] != "write_file" || ar["id"] != "c1" || ar["call_id"] != "c1" || ar["path"] != "parent" || ar["args"].(map[string]any)["file_path"] != "/a.md" {
		t.Errorf("action request %v", ar)
	}
	rc := raw["review_configs"].([]any)[0].(map[string]any)
	if rc["action_name"] != "write_file" || len(rc["allowed_decisions"].([]any)) != 3 {
		t.Errorf("review config %v", rc)
	}
	in := sum.Interrupts[0]
	if in.CallID != "c1" || in.Tool != "write_file" || in.Path.String() != "parent" {
		t.Errorf("interrupt %+v", in)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d model calls before the decision", n)
	}

	// The thread is listed as interrupted.
	_, list, _ := runCLI(t, "threads", "--json")
	if !strings.Contains(list, `"status": "interrupted"`) || !strings.Contains(list, sum.ThreadID) {
		t.Errorf("threads:\n%s", list)
	}

	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--approve", "c1", "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--output", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s\n%s", code, errs, out)
	}
	done := decode(t, out)
	if done.Status != "ok" || done.Result != "done" || done.ThreadID != sum.ThreadID || strings.Join(done.FilesChanged, ",") != "/a.md" {
		t.Errorf("after resume %+v", done)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls in all, want 2 (the one that asked is not repeated)", len(reqs))
	}
	if res, ok := reqs[1].ToolResult("c1"); !ok || !strings.Contains(res.Text(), "/a.md") {
		t.Errorf("the approved call's result: %v %q", ok, res.Text())
	}
	if _, ok := reqs[1].ToolResult("c2"); !ok {
		t.Error("the ungated call of the step has no result")
	}
	// Nothing is left to resume.
	if code, _, errs := runCLI(t, "resume", "--thread", sum.ThreadID, "--model", "openai:gpt-test"); code != 1 || !strings.Contains(errs, "no unfinished run to resume") {
		t.Errorf("resume of a finished thread: exit %d: %s", code, errs)
	}
}

// Headless text output lists the waiting calls and how to answer them.
func TestInterruptedTextRunSaysHowToResume(t *testing.T) {
	runEnv(t, gatedServer(t))
	code, out, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--interrupt-on", "write_file,edit_file")
	if code != 3 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"is waiting for approval of 1 tool call(s):", `c1  write_file {"file_path":"/a.md","content":"A\n"}  (agent parent; allowed: approve, edit, reject)`,
		"Answer c1 with: deepagents resume --thread "} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// A rejection reaches the model with its reason; an edit runs the call with
// the new arguments.
func TestResumeRejectAndEdit(t *testing.T) {
	srv := gatedServer(t)
	runEnv(t, srv)
	start := func() string {
		code, out, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--output", "json")
		if code != 3 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		return decode(t, out).ThreadID
	}
	id := start()
	code, out, errs := runCLI(t, "resume", "--thread", id, "--reject", "c1", "--message", "not in this repo", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("reject: exit %d: %s", code, errs)
	}
	if sum := decode(t, out); len(sum.FilesChanged) != 0 {
		t.Errorf("a rejected write changed files: %v", sum.FilesChanged)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	res, ok := last.ToolResult("c1")
	if !ok || !strings.Contains(res.Text(), "rejected") || !strings.Contains(res.Text(), "not in this repo") {
		t.Errorf("the model did not see the rejection: %q", res.Text())
	}

	id = start()
	code, out, errs = runCLI(t, "resume", "--thread", id, "--edit", "c1", "--args", `{"file_path":"/b.md","content":"B"}`, "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("edit: exit %d: %s", code, errs)
	}
	if sum := decode(t, out); strings.Join(sum.FilesChanged, ",") != "/b.md" {
		t.Errorf("edited call wrote %v", sum.FilesChanged)
	}

	// Decisions from a file, and from stdin.
	id = start()
	dfile := filepath.Join(t.TempDir(), "d.json")
	writeFileAt(t, dfile, `{"decisions": [{"type": "edit", "call_id": "c1", "edited_action": {"name": "write_file", "args": {"file_path": "/c.md", "content": "C"}}}]}`)
	code, out, errs = runCLI(t, "resume", "--thread", id, "--decisions", dfile, "--model", "openai:gpt-test", "--output", "json")
	if code != 0 || strings.Join(decode(t, out).FilesChanged, ",") != "/c.md" {
		t.Fatalf("--decisions FILE: exit %d: %s %s", code, errs, out)
	}
	// LangChain's clients name no call: each decision answers the waiting
	// call at its position, the order of action_requests.
	id = start()
	writeFileAt(t, dfile, `{"decisions": [{"type": "edit", "edited_action": {"name": "write_file", "args": {"file_path": "/d.md", "content": "D"}}}]}`)
	code, out, errs = runCLI(t, "resume", "--thread", id, "--decisions", dfile, "--model", "openai:gpt-test", "--output", "json")
	if code != 0 || strings.Join(decode(t, out).FilesChanged, ",") != "/d.md" {
		t.Fatalf("--decisions FILE in LangChain's order: exit %d: %s %s", code, errs, out)
	}
	id = start()
	code, out, errs = runCLIStdin(t, `[{"type":"approve","call_id":"c1"}]`, "resume", "--thread", id, "--decisions", "-", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 || strings.Join(decode(t, out).FilesChanged, ",") != "/a.md" {
		t.Fatalf("--decisions -: exit %d: %s %s", code, errs, out)
	}
}

// --respond answers a waiting call in its tool's place: the call does not
// run, and the model reads the --message as the call's result.
func TestResumeRespond(t *testing.T) {
	srv := gatedServer(t)
	project, _ := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "model = \"openai:gpt-test\"\ninterrupt_on = { write_file = [\"approve\", \"respond\"] }\n")
	code, out, errs := runCLI(t, "run", "-p", "write it", "--output", "json")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sum := decode(t, out)
	if got := sum.Interrupts[0].Allowed; len(got) != 2 || got[1] != agent.Respond {
		t.Fatalf("allowed decisions from the config: %v", got)
	}
	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--respond", "c1", "--message", "/a.md is written by hand already.", "--output", "json")
	if code != 0 {
		t.Fatalf("respond: exit %d: %s", code, errs)
	}
	if done := decode(t, out); done.Status != "ok" || len(done.FilesChanged) != 0 {
		t.Errorf("after the respond %+v (the call must not run)", done)
	}
	last := srv.Requests()[len(srv.Requests())-1]
	if res, ok := last.ToolResult("c1"); !ok || res.Text() != "/a.md is written by hand already." {
		t.Errorf("the model did not read the answer as the call's result: %v %q", ok, res.Text())
	}

	// In LangChain's shape, naming no call: it answers the waiting call at
	// its position.
	code, out, errs = runCLI(t, "run", "-p", "write it", "--output", "json")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, out, errs = runCLIStdin(t, `{"decisions": [{"type": "respond", "message": "kept elsewhere"}]}`, "resume", "--thread", decode(t, out).ThreadID, "--decisions", "-", "--output", "json")
	if code != 0 || len(decode(t, out).FilesChanged) != 0 {
		t.Fatalf("--decisions - with a respond: exit %d: %s %s", code, errs, out)
	}
	last = srv.Requests()[len(srv.Requests())-1]
	if res, ok := last.ToolResult("c1"); !ok || res.Text() != "kept elsewhere" {
		t.Errorf("the model did not read the answer: %v %q", ok, res.Text())
	}
}

// Decisions that do not fit are refused with exit status 2 and leave the
// thread waiting; bad flags are usage errors.
func TestResumeRefusesBadDecisions(t *testing.T) {
	srv := gatedServer(t)
	project, _ := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "model = \"openai:gpt-test\"\ninterrupt_on = { write_file = [\"approve\", \"reject\"] }\n")
	code, out, errs := runCLI(t, "run", "-p", "write it", "--output", "json")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sum := decode(t, out)
	if got := sum.Interrupts[0].Allowed; len(got) != 2 || got[0] != "approve" || got[1] != "reject" {
		t.Errorf("allowed decisions from the config: %v", got)
	}
	id := sum.ThreadID
	bad := filepath.Join(t.TempDir(), "bad.json")
	writeFileAt(t, bad, `[{"type":"maybe","call_id":"c1"}]`)
	twice := filepath.Join(t.TempDir(), "twice.json")
	writeFileAt(t, twice, `{"decisions": [{"type":"approve"}, {"type":"approve"}]}`)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--approve", "c9"}, 2, `no call "c9" is waiting for a decision; waiting: c1; nothing ran, and thread ` + id + " is unchanged"},
		{[]string{"--edit", "c1", "--args", `{"file_path":"/x"}`}, 2, `call "c1" (write_file) allows approve, reject, not edit`},
		{[]string{"--approve", "c1", "--reject", "c1"}, 2, `call "c1" has two decisions`},
		{[]string{"--message", "why"}, 2, "must follow the --reject CALL_ID it explains"},
		{[]string{"--edit", "c1"}, 2, "--edit c1 needs --args JSON after it"},
		{[]string{"--respond", "c1", "--message", "written by hand"}, 2, `call "c1" (write_file) allows approve, reject, not respond`},
		{[]string{"--respond", "c1"}, 2, "--respond c1 needs --message TEXT after it"},
		{[]string{"--edit", "c1", "--args", "[1]"}, 2, "call c1: not JSON"},
		{[]string{"--approve", ""}, 2, "needs a call id"},
		{[]string{"--decisions", bad}, 2, `decision type "maybe" is not one of approve, edit, reject`},
		{[]string{"--decisions", filepath.Join(t.TempDir(), "missing.json")}, 2, "no such file"},
		{[]string{"--decisions", twice}, 2, "2 decisions for 1 waiting call (write_file c1): give one decision per waiting call, in order, or name each one's call_id; nothing ran"},
		{[]string{"c1"}, 2, `unexpected argument "c1"`},
	} {
		args := append([]string{"resume", "--thread", id}, tt.args...)
		code, _, errs := runCLI(t, args...)
		if code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", tt.args, code, errs, tt.code, tt.want)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("refused decisions called the model: %d requests", n)
	}
	if code, _, errs := runCLI(t, "resume", "--approve", "c1"); code != 2 || !strings.Contains(errs, "--thread ID is required") {
		t.Errorf("no --thread: exit %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, "resume", "--thread", "no-such-thread"); code != 1 || !strings.Contains(errs, `thread "no-such-thread" has no run to resume`) {
		t.Errorf("unknown thread: exit %d %s", code, errs)
	}
	// Still waiting, and a good decision releases it.
	if code, out, errs := runCLI(t, "resume", "--thread", id, "--reject", "c1", "--output", "json"); code != 0 || decode(t, out).Status != "ok" {
		t.Errorf("after the refusals: exit %d: %s", code, errs)
	}
}

// A subagent's call inherits the parent's interrupt_on, waits with the
// child's path, and resumes inside the child; an agent file's own
// interrupt_on: {} asks nothing.
func TestSubagentApprovalNestsAndResumes(t *testing.T) {
	srv := delegationServer(t)
	project, _ := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "model = \"openai:gpt-test\"\ninterrupt_on = { write_file = true }\n")
	code, out, errs := runCLI(t, "run", "-p", "What is the answer?", "--output", "json")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	sum := decode(t, out)
	if len(sum.Interrupts) != 1 || sum.Interrupts[0].Path.String() != "parent / general-purpose#call_p1" || sum.Interrupts[0].CallID != "call_c1" {
		t.Fatalf("interrupts %+v", sum.Interrupts)
	}
	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--approve", "call_c1", "--output", "json")
	if code != 0 || decode(t, out).Result != "Relayed: The conclusion is 42." {
		t.Fatalf("resume: exit %d: %s\n%s", code, errs, out)
	}

	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "general-purpose.md"), "---\ndescription: Does anything.\ninterrupt_on: {}\n---\nWork.\n")
	if code, out, errs := runCLI(t, "run", "-p", "What is the answer?", "--output", "json"); code != 0 || decode(t, out).Status != "ok" {
		t.Errorf("interrupt_on: {} still asked: exit %d: %s", code, errs)
	}
}

// threads lists, shows (a subagent's conversation nested under its task
// call) and removes threads.
func TestThreadsListShowRemove(t *testing.T) {
	runEnv(t, delegationServer(t))
	code, out, errs := runCLI(t, "run", "-p", "What is the answer?", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := decode(t, out).ThreadID

	code, out, _ = runCLI(t, "threads", "--json")
	var ts []threadEntry
	if code != 0 || json.Unmarshal([]byte(out), &ts) != nil || len(ts) != 1 {
		t.Fatalf("threads --json: exit %d\n%s", code, out)
	}
	if e := ts[0]; e.ID != id || e.Title != "What is the answer?" || e.Status != "ok" || e.Steps < 2 || e.Tokens == 0 || e.Updated.IsZero() {
		t.Errorf("entry %+v", e)
	}
	code, out, _ = runCLI(t, "threads", "--limit", "5")
	if code != 0 || !strings.HasPrefix(out, "ID") || !strings.Contains(out, id) || !strings.Contains(out, "What is the answer?") {
		t.Errorf("threads:\n%s", out)
	}

	code, out, errs = runCLI(t, "threads", "show", id)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	order := []string{
		`thread ` + id + `: "What is the answer?"`,
		"status ok",
		"user: What is the answer?",
		"assistant → task [call_p1] ",
		"  ┃ subagent general-purpose (call_p1) · ok · 2 rounds",
		"  ┃ user: Find the answer; write /child.md; report.",
		"  ┃ assistant → write_file [call_c1] {\"file_path\":\"/child.md\",\"content\":\"42\\n\"}",
		"  ┃ tool write_file [call_c1]: ",
		"  ┃ assistant: The conclusion is 42.",
		"  ┃ files changed: /child.md",
		"tool task [call_p1]: The conclusion is 42.",
		"assistant: Relayed: The conclusion is 42.",
		"files changed: /child.md",
	}
	rest := out
	for _, w := range order {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("show lacks %q (in this order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}

	code, out, _ = runCLI(t, "threads", "show", id, "--json")
	var th struct {
		ID       string `json:"thread_id"`
		Status   string `json:"status"`
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Subagent *struct {
					Path     string `json:"path"`
					Status   string `json:"status"`
					Messages []struct {
						Role      string `json:"role"`
						Content   string `json:"content"`
						ToolCalls []struct {
							Name string `json:"name"`
						} `json:"tool_calls"`
					} `json:"messages"`
				} `json:"subagent"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &th) != nil || th.ID != id || th.Status != "ok" || len(th.Messages) != 4 {
		t.Fatalf("show --json: exit %d\n%s", code, out)
	}
	sub := th.Messages[1].ToolCalls[0].Subagent
	if sub == nil || sub.Path != "parent / general-purpose#call_p1" || len(sub.Messages) != 4 || sub.Messages[1].ToolCalls[0].Name != "write_file" || sub.Messages[3].Content != "The conclusion is 42." {
		t.Errorf("nested subagent: %+v", sub)
	}

	code, out, errs = runCLI(t, "threads", "rm", id)
	if code != 0 || !strings.HasPrefix(out, "removed thread "+id+": ") || !strings.Contains(out, "1 subagent run(s)") {
		t.Errorf("rm: exit %d %q %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "threads", "show", id); code != 1 || !strings.Contains(errs, `no thread "`+id+`" in sqlite:`) {
		t.Errorf("show after rm: exit %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, "threads", "rm", "nope"); code != 1 || !strings.Contains(errs, `deepagents threads rm: no thread "nope"`) {
		t.Errorf("rm unknown: exit %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, "threads"); code != 0 || !strings.Contains(errs, "no threads yet") {
		t.Errorf("empty list: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"threads", "frob"}, {"threads", "show"}, {"threads", "rm", "a", "b"}, {"threads", "--limit", "-1"}, {"threads", "--db", "x"}} {
		if code, _, errs := runCLI(t, args...); code != 2 || !strings.Contains(errs, "deepagents threads: ") {
			t.Errorf("%v: exit %d %s", args, code, errs)
		}
	}
}

// A second run on a thread that a live run holds is refused, naming the
// holder; the first run is not disturbed.
func TestSecondRunOnAThreadIsRefused(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		once.Do(func() {
			close(entered)
			<-release
		})
		return ot.Text("first done")
	})
	runEnv(t, srv)
	first := make(chan struct {
		code     int
		out, err string
	}, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"run", "-p", "one", "--model", "openai:gpt-test", "--thread", "shared", "--new-thread"}, strings.NewReader(""), &out, &errb)
		first <- struct {
			code     int
			out, err string
		}{code, out.String(), errb.String()}
	}()
	<-entered
	code, _, errs := runCLIIn(t, strings.NewReader(""), "run", "-p", "two", "--model", "openai:gpt-test", "--thread", "shared")
	close(release)
	if code != 1 || !strings.Contains(errs, `thread "shared" is being run by another`) {
		t.Errorf("second run: exit %d: %s", code, errs)
	}
	r := <-first
	if r.code != 0 || strings.TrimSpace(r.out) != "first done" {
		t.Errorf("first run: exit %d %q: %s", r.code, r.out, r.err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the refused run called the model: %d requests", n)
	}
}

func TestNewCommandsHelp(t *testing.T) {
	for cmd, wants := range map[string][]string{
		"run":     {"3  the run is interrupted", "-thread string", "-db string", "-interrupt-on string"},
		"resume":  {"usage: deepagents resume --thread ID", "--reject CALL_ID [--message WHY]", "3  calls still wait for approval", "-decisions string"},
		"threads": {"deepagents threads show ID [--json]", "-limit int"},
	} {
		code, out, _ := runCLI(t, cmd, "-h")
		for _, w := range wants {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("%s -h lacks %q", cmd, w)
			}
		}
	}
	if _, out, _ := runCLI(t, "help"); !strings.Contains(out, "deepagents resume --thread ID") || !strings.Contains(out, "deepagents threads") {
		t.Errorf("usage:\n%s", out)
	}
}

// A run cut off during a model call (here by Ctrl-C) stays unfinished in its
// thread; resume continues it from the last checkpoint: the step that had
// finished is not repeated, only the call that was in flight.
func TestResumeContinuesACutOffRun(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	var mu sync.Mutex
	cut := false
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Round() == 0 {
			return ot.Tools(ot.Call{ID: "c1", Name: "write_file", Args: `{"file_path":"/a.md","content":"A"}`})
		}
		mu.Lock()
		first := !cut
		cut = true
		mu.Unlock()
		if first {
			cancel(errInterrupted) // what Ctrl-C does, while this call is in flight
		}
		return ot.Text("done")
	})
	runEnv(t, srv)
	var out, errb bytes.Buffer
	code := run(ctx, []string{"run", "-p", "go", "--model", "openai:gpt-test", "--output", "json"}, strings.NewReader(""), &out, &errb)
	sum := decode(t, out.String())
	if code != 1 || sum.Status != "cancelled" {
		t.Fatalf("cut-off run: exit %d status %s: %s", code, sum.Status, errb.String())
	}
	_, list, _ := runCLI(t, "threads", "--json")
	if !strings.Contains(list, `"status": "unfinished"`) {
		t.Errorf("the cut-off thread is not listed as unfinished:\n%s", list)
	}
	code, o, errs := runCLI(t, "resume", "--thread", sum.ThreadID, "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	done := decode(t, o)
	if done.Result != "done" || strings.Join(done.FilesChanged, ",") != "/a.md" || !strings.Contains(errs, "resume: resumed from checkpoint") {
		t.Errorf("resumed: %+v\n%s", done, errs)
	}
	rounds := map[int]int{}
	for _, r := range srv.Requests() {
		rounds[r.Round()]++
	}
	if rounds[0] != 1 || rounds[1] != 2 {
		t.Errorf("model calls by round %v: the finished step must not be repeated, the one in flight once more", rounds)
	}
}

// A gate that names no tool is refused: the calls it meant to stop would
// run without asking.
func TestMisspeltGateIsRefused(t *testing.T) {
	srv := gatedServer(t)
	project, _ := runEnv(t, srv)
	code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--interrupt-on", "write_fil")
	if code != 2 || !strings.Contains(errs, `interrupt_on (or --interrupt-on) names "write_fil", which is not a tool, so its calls would never wait; the tools are ls, read_file, write_file`) {
		t.Errorf("exit %d: %s", code, errs)
	}
	writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "scout.md"), "---\ndescription: Scouts.\ninterrupt_on: {grepp: true}\n---\n")
	code, _, errs = runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test")
	if code != 2 || !strings.Contains(errs, `subagent scout's interrupt_on names "grepp"`) {
		t.Errorf("agent file: exit %d: %s", code, errs)
	}
	if len(srv.Requests()) != 0 {
		t.Error("the model was called")
	}
}

// stream-json shows the waiting call as an interrupt event, and the result
// line says interrupted, with the thread and the requests.
func TestInterruptedStreamJSON(t *testing.T) {
	runEnv(t, gatedServer(t))
	code, out, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--interrupt-on", "write_file", "--output", "stream-json")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	interrupts := 0
	for _, l := range lines[:len(lines)-1] {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		if ev["type"] == "interrupt" {
			interrupts++
		}
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if interrupts != 1 || last["type"] != "result" || last["status"] != "interrupted" || last["thread_id"] == "" || len(last["action_requests"].([]any)) != 1 {
		t.Errorf("%d interrupt events; result %v", interrupts, last)
	}
}

// Runs that never held a thread, or saved nothing in it, leave its
// transcript file as the last run that did wrote it: a resume of a
// finished thread, a resume of a thread that does not exist, and a run
// refused because another run holds the thread.
func TestOnlyARunThatSavedWritesTheTranscript(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Last().Text() == "hold" {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		return ot.Text("answer to " + r.Last().Text())
	})
	_, home := runEnv(t, srv)
	dir := filepath.Join(home, ".deepagents", "threads")
	code, _, errs := runCLI(t, "run", "-p", "first", "--model", "openai:gpt-test", "--thread", "A1", "--new-thread")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	before, err := os.ReadFile(filepath.Join(dir, "A1.json"))
	if err != nil || !strings.Contains(string(before), "answer to first") {
		t.Fatalf("transcript of the first run: %v\n%s", err, before)
	}
	code, _, errs = runCLI(t, "resume", "--thread", "A1", "--model", "openai:gpt-test")
	if code != 1 || !strings.Contains(errs, "no unfinished run to resume") {
		t.Fatalf("resume of a finished thread: exit %d: %s", code, errs)
	}
	if after, err := os.ReadFile(filepath.Join(dir, "A1.json")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("a resume with nothing to resume rewrote the transcript: %v\n%s", err, after)
	}
	code, _, errs = runCLI(t, "resume", "--thread", "nope", "--model", "openai:gpt-test")
	if code != 1 {
		t.Errorf("resume of no thread: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.json")); err == nil {
		t.Error("a resume of a thread that does not exist made its transcript")
	}

	first := make(chan int, 1)
	go func() {
		var out, errb bytes.Buffer
		first <- run(t.Context(), []string{"run", "-p", "hold", "--model", "openai:gpt-test", "--thread", "T5", "--new-thread"}, strings.NewReader(""), &out, &errb)
	}()
	<-entered
	code, _, errs = runCLIIn(t, strings.NewReader(""), "run", "-p", "refused", "--model", "openai:gpt-test", "--thread", "T5")
	_, statErr := os.Stat(filepath.Join(dir, "T5.json"))
	close(release)
	if code != 1 || !strings.Contains(errs, "is being run by another") {
		t.Errorf("second run: exit %d: %s", code, errs)
	}
	if statErr == nil {
		t.Error("the refused run wrote the transcript of a thread it never held")
	}
	if c := <-first; c != 0 {
		t.Fatalf("the holding run: exit %d", c)
	}
	data, err := os.ReadFile(filepath.Join(dir, "T5.json"))
	if err != nil || !strings.Contains(string(data), "answer to hold") || strings.Contains(string(data), "refused") {
		t.Errorf("transcript of T5: %v\n%s", err, data)
	}
}

// A run that lost its thread to another run while it was stopped (its
// lease ran out and was taken over) does not replace the transcript the
// other run wrote when it ends after it.
func TestStaleRunDoesNotOverwriteTheTranscript(t *testing.T) {
	saver := checkpoint.NewMemory(0)
	entered := make(chan struct{})
	resume := make(chan struct{})
	stale := &scriptModel{steps: []func(context.Context) (*llm.Response, error){
		func(ctx context.Context) (*llm.Response, error) {
			close(entered)
			<-resume // stopped (SIGSTOP) past its lease
			return answer("stale answer")(ctx)
		},
	}}
	var out, errb bytes.Buffer
	a := testSession(t, stale, "text", &out, &errb)
	a.progress = false
	a.setup.saver, a.thread = saver, "T"
	done := make(chan int, 1)
	go func() { done <- a.turn(t.Context(), "one") }()
	<-entered

	// Its lease is taken over once expired, and the winner runs a turn.
	if _, err := saver.Acquire(t.Context(), "T", "winner/1/x", time.Now().Add(2*runner.DefaultLeaseTTL), time.Second); err != nil {
		t.Fatal(err)
	}
	_ = saver.Release(t.Context(), "T", "winner/1/x")
	var wout, werr bytes.Buffer
	b := testSession(t, &scriptModel{steps: []func(context.Context) (*llm.Response, error){answer("winner answer")}}, "text", &wout, &werr)
	b.progress = false
	b.setup.saver, b.thread, b.flags.threadDir = saver, "T", a.flags.threadDir
	if code := b.turn(t.Context(), "two"); code != 0 {
		t.Fatalf("winner: exit %d: %s", code, werr.String())
	}
	close(resume)
	<-done
	data, err := os.ReadFile(filepath.Join(a.flags.threadDir, "T.json"))
	if err != nil || !strings.Contains(string(data), "winner answer") || strings.Contains(string(data), "stale answer") {
		t.Errorf("the stale run replaced the winner's transcript: %v\n%s", err, data)
	}
	if !strings.Contains(errb.String(), "thread T: the thread went on in another run") {
		t.Errorf("the stale run did not say why it wrote no transcript:\n%s", errb.String())
	}
}

// Two threads never share a transcript file, and ids that are plain file
// names keep the file they always had.
func TestTranscriptNamesAreDistinct(t *testing.T) {
	for _, id := range []string{"20261203-092937-c5895c66", "A1", "a_b_c", "x.y-z", strings.Repeat("x", 120)} {
		if got := fileName(id); got != id {
			t.Errorf("fileName(%q) = %q, want the id itself", id, got)
		}
	}
	ids := []string{"a b/c", "a_b_c", "a%20b%2Fc", "a b_c", ".hidden", "%2Ehidden", "_hidden", "a~b", "a%7Eb",
		strings.Repeat("x", 121), strings.Repeat("x", 122), strings.Repeat("é", 100), strings.Repeat("é", 100) + "a",
		strings.Repeat("/", 200), strings.Repeat("/", 201)}
	seen := map[string]string{}
	for _, id := range ids {
		name := fileName(id)
		if other, ok := seen[name]; ok {
			t.Errorf("threads %q and %q share the file name %q", id, other, name)
		}
		seen[name] = id
	}

	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("answer to " + r.Last().Text()) })
	_, home := runEnv(t, srv)
	for _, id := range []string{"a b/c", "a_b_c"} {
		if code, _, errs := runCLI(t, "run", "-p", "in "+id, "--model", "openai:gpt-test", "--thread", id, "--new-thread"); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
	}
	for _, id := range []string{"a b/c", "a_b_c"} {
		data, err := os.ReadFile(transcriptPath(filepath.Join(home, ".deepagents", "threads"), id))
		if err != nil || !strings.Contains(string(data), "answer to in "+id) {
			t.Errorf("transcript of %q: %v\n%.200s", id, err, data)
		}
	}
}

// 'threads rm' removes the thread's transcript file with its checkpoints:
// the file holds the whole conversation too.
func TestThreadsRmRemovesTheTranscript(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("answer to " + r.Last().Text()) })
	_, home := runEnv(t, srv)
	other := t.TempDir()
	for _, args := range [][]string{{"--thread", "a b", "--new-thread"}, {"--thread", "kept", "--new-thread"}, {"--thread", "elsewhere", "--new-thread", "--thread-dir", other}} {
		if code, _, errs := runCLI(t, append([]string{"run", "-p", "hi", "--model", "openai:gpt-test"}, args...)...); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
	}
	dir := filepath.Join(home, ".deepagents", "threads")
	code, out, errs := runCLI(t, "threads", "rm", "a b")
	path := transcriptPath(dir, "a b")
	if code != 0 || !strings.HasSuffix(out, ", transcript "+path+"\n") {
		t.Errorf("rm: exit %d %q %s", code, out, errs)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("rm left the transcript behind")
	}
	if _, err := os.Stat(transcriptPath(dir, "kept")); err != nil {
		t.Errorf("rm removed another thread's transcript: %v", err)
	}
	code, out, errs = runCLI(t, "threads", "rm", "elsewhere", "--thread-dir", other)
	if _, err := os.Stat(transcriptPath(other, "elsewhere")); code != 0 || err == nil || !strings.Contains(out, ", transcript "+other) {
		t.Errorf("rm --thread-dir: exit %d %q %s (file: %v)", code, out, errs, err)
	}
	if err := os.Remove(transcriptPath(dir, "kept")); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "threads", "rm", "kept"); code != 0 || !strings.HasSuffix(out, ", no transcript file\n") {
		t.Errorf("rm without a transcript: exit %d %q", code, out)
	}
}

// lockedBuffer is a buffer that the command writes while a test's fake
// model reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A program reading --output json or stream-json learns the new thread's
// id before the run's first model call, so that it can resume a run that
// is killed before its result is printed: json names it on stderr,
// stream-json in its first line.
func TestMachineOutputNamesTheThreadAtTheStart(t *testing.T) {
	var out, errb lockedBuffer
	seen := map[string]string{}
	var mu sync.Mutex
	output := ""
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		mu.Lock()
		seen[output] = out.String() + "\x00" + errb.String()
		mu.Unlock()
		return ot.Text("ok")
	})
	runEnv(t, srv)
	for _, o := range []string{"json", "stream-json"} {
		mu.Lock()
		output = o
		mu.Unlock()
		if code := run(t.Context(), []string{"run", "-p", "hi", "--model", "openai:gpt-test", "--output", o}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", o, code, errb.String())
		}
		all := out.String()
		id := decode(t, all[strings.LastIndex(strings.TrimSuffix(all, "\n"), "\n")+1:]).ThreadID
		mu.Lock()
		stdout, stderr, _ := strings.Cut(seen[o], "\x00")
		mu.Unlock()
		switch o {
		case "json":
			if want := "deepagents: thread " + id + " (continue it with --thread " + id + ")\n"; !strings.Contains(stderr, want) || stdout != "" {
				t.Errorf("json: at the model call, stderr %q, stdout %q; want the thread %s on stderr", stderr, stdout, id)
			}
		case "stream-json":
			var first map[string]any
			line, _, _ := strings.Cut(stdout, "\n")
			if err := json.Unmarshal([]byte(line), &first); err != nil || first["type"] != "run.start" || first["thread_id"] != id {
				t.Errorf("stream-json: first line %q (%v); want run.start with thread_id %s", line, err, id)
			}
		}
		out.mu.Lock()
		out.b.Reset()
		out.mu.Unlock()
		errb.mu.Lock()
		errb.b.Reset()
		errb.mu.Unlock()
	}
}

// The tokens 'threads' lists, and the header of 'threads show', count the
// whole thread: every turn, and the subagents' calls as well as the
// top-level agent's.
func TestThreadTokensCountEveryRun(t *testing.T) {
	runEnv(t, delegationServer(t))
	code, out, errs := runCLI(t, "run", "-p", "What is the answer?", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	first := decode(t, out)
	if first.Usage == first.UsageByAgent["parent"] {
		t.Fatalf("the subagent used nothing: %+v", first.UsageByAgent)
	}
	code, out, errs = runCLI(t, "run", "-p", "Again?", "--model", "openai:gpt-test", "--output", "json", "--thread", first.ThreadID)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	second := decode(t, out)
	total := first.Usage.Add(second.Usage)

	code, out, _ = runCLI(t, "threads", "--json")
	var ts []threadEntry
	if code != 0 || json.Unmarshal([]byte(out), &ts) != nil || len(ts) != 1 {
		t.Fatalf("threads --json: exit %d\n%s", code, out)
	}
	if ts[0].Tokens != total.Total() {
		t.Errorf("listed %d tokens, want %d (both turns, subagents included)", ts[0].Tokens, total.Total())
	}
	if _, out, _ := runCLI(t, "threads"); !strings.Contains(out, "  "+short(total.Total())+"  ") {
		t.Errorf("TOKENS column lacks %s:\n%s", short(total.Total()), out)
	}
	code, out, _ = runCLI(t, "threads", "show", first.ThreadID, "--json")
	var th shownThread
	if code != 0 || json.Unmarshal([]byte(out), &th) != nil || th.Tokens != total.Total() || th.ThreadUsage.InputTokens != total.InputTokens {
		t.Errorf("show --json: tokens %d, usage %+v; want %d, %+v", th.Tokens, th.ThreadUsage, total.Total(), total)
	}
	if _, out, _ := runCLI(t, "threads", "show", first.ThreadID); !strings.Contains(out, " · "+tokensText(total)+" in the whole thread · ") {
		t.Errorf("show's header lacks %q:\n%s", tokensText(total), out)
	}
}

// 'threads show' shows the results of the calls that finished in the step
// still in progress of an interrupted or cut-off run, marked so, and the
// files the run changed so far.
func TestShowTheUnfinishedStep(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		switch {
		case r.Messages[0].Text() == "cut" && r.Round() == 0:
			return ot.Tools(ot.Call{ID: "w1", Name: "write_file", Args: `{"file_path":"/b.md","content":"B"}`})
		case r.Messages[0].Text() == "cut" && r.Round() == 1:
			return ot.Tools(ot.Call{ID: "w2", Name: "ls", Args: `{}`})
		case r.Messages[0].Text() == "cut" || r.Round() == 1:
			cancel(errInterrupted) // Ctrl-C while this call is in flight
			return ot.Text("late")
		}
		return ot.Tools(ot.Call{ID: "c1", Name: "write_file", Args: `{"file_path":"/a.md","content":"A"}`},
			ot.Call{ID: "c2", Name: "ls", Args: `{}`})
	})
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--interrupt-on", "ls", "--output", "json")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := decode(t, out).ThreadID
	code, out, errs = runCLI(t, "threads", "show", id)
	if code != 0 || !strings.Contains(out, "tool write_file [c1] (finished in the unfinished step): ") ||
		!strings.Contains(out, "files changed: /a.md (by the unfinished step)\n") || !strings.Contains(out, "waiting for approval: ls") {
		t.Errorf("show of an interrupted run: exit %d %s\n%s", code, errs, out)
	}
	_, out, _ = runCLI(t, "threads", "show", id, "--json")
	var th shownThread
	if err := json.Unmarshal([]byte(out), &th); err != nil {
		t.Fatal(err)
	}
	last := th.Messages[len(th.Messages)-1]
	if last.Role != "tool" || last.ToolCallID != "c1" || !last.UnfinishedStep || strings.Join(th.FilesChanged, ",") != "/a.md" || strings.Join(th.UnfinishedStepFiles, ",") != "/a.md" {
		t.Errorf("show --json: last message %+v, files %v, unfinished step's %v", last, th.FilesChanged, th.UnfinishedStepFiles)
	}

	// A run cut off after a finished step that wrote a file lists the file.
	var o, e bytes.Buffer
	if code := run(ctx, []string{"run", "-p", "cut", "--model", "openai:gpt-test", "--output", "json"}, strings.NewReader(""), &o, &e); code != 1 {
		t.Fatalf("cut-off run: exit %d: %s", code, e.String())
	}
	code, out, errs = runCLI(t, "threads", "show", decode(t, o.String()).ThreadID)
	if code != 0 || !strings.Contains(out, "status unfinished") || !strings.Contains(out, "files changed: /b.md\n") {
		t.Errorf("show of a cut-off run: exit %d %s\n%s", code, errs, out)
	}
}

// A run on a real directory (--root) that is cut off after finished steps
// lists the files those steps changed: in 'threads show' of the cut-off
// run, and, with the rest, in the result and the transcript of its resume,
// as the run would have had it not been cut off.
func TestCutOffRunOnARootListsItsFiles(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	var mu sync.Mutex
	cut := false
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		switch r.Round() {
		case 0:
			return ot.Tools(ot.Call{ID: "w1", Name: "write_file", Args: `{"file_path":"/a.md","content":"A"}`},
				ot.Call{ID: "w2", Name: "write_file", Args: `{"file_path":"/s/b.md","content":"B"}`})
		case 1:
			return ot.Tools(ot.Call{ID: "w3", Name: "write_file", Args: `{"file_path":"/c.md","content":"C"}`})
		case 2:
			mu.Lock()
			first := !cut
			cut = true
			mu.Unlock()
			if first {
				cancel(errInterrupted) // Ctrl-C while this call is in flight
			}
			return ot.Tools(ot.Call{ID: "w4", Name: "write_file", Args: `{"file_path":"/d.md","content":"D"}`})
		}
		return ot.Text("done")
	})
	runEnv(t, srv)
	root := t.TempDir()
	var o, e bytes.Buffer
	code := run(ctx, []string{"run", "-p", "go", "--model", "openai:gpt-test", "--root", root, "--output", "json"}, strings.NewReader(""), &o, &e)
	sum := decode(t, o.String())
	if code != 1 || sum.Status != "cancelled" {
		t.Fatalf("cut-off run: exit %d status %s: %s", code, sum.Status, e.String())
	}
	// The second step's call finished, the step did not: the model call
	// of the third was in flight.
	const finished = "/a.md,/c.md,/s/b.md"
	_, out, errs := runCLI(t, "threads", "show", sum.ThreadID, "--json")
	var th shownThread
	if err := json.Unmarshal([]byte(out), &th); err != nil {
		t.Fatalf("%v: %s", err, errs)
	}
	if th.Status != "unfinished" || strings.Join(th.FilesChanged, ",") != finished {
		t.Errorf("show --json of the cut-off run: status %s, files %v, want %s", th.Status, th.FilesChanged, finished)
	}
	if code, out, errs := runCLI(t, "threads", "show", sum.ThreadID); code != 0 || !strings.Contains(out, "files changed: /a.md, /c.md (by the unfinished step), /s/b.md\n") {
		t.Errorf("show of the cut-off run: exit %d %s\n%s", code, errs, out)
	}

	code, out, errs = runCLI(t, "resume", "--thread", sum.ThreadID, "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	const all = "/a.md,/c.md,/d.md,/s/b.md"
	done := decode(t, out)
	if done.Result != "done" || strings.Join(done.FilesChanged, ",") != all {
		t.Errorf("resumed: files %v, want %s (%+v)", done.FilesChanged, all, done)
	}
	var saved struct {
		Result agent.Result `json:"result"`
	}
	if data, err := os.ReadFile(done.Transcript); err != nil || json.Unmarshal(data, &saved) != nil || strings.Join(saved.Result.Changed, ",") != all {
		t.Errorf("transcript %s: %v, files %v, want %s", done.Transcript, err, saved.Result.Changed, all)
	}
	if _, out, _ := runCLI(t, "threads", "show", sum.ThreadID, "--json"); json.Unmarshal([]byte(out), &th) != nil || strings.Join(th.FilesChanged, ",") != all {
		t.Errorf("show --json of the resumed run: files %v, want %s", th.FilesChanged, all)
	}
}

// Two subagents whose models numbered their calls alike wait with the same
// call id: the listing says how to answer each one (a decision with its
// path), and --approve ID, which cannot say which, is refused with that
// advice before anything runs; the advised command works.
func TestSameCallIDInTwoSubagents(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		switch first := r.FirstUser(); {
		case strings.HasPrefix(first, "Work on "):
			if r.Round() == 0 {
				return ot.Tools(ot.Call{ID: "call_0", Name: "write_file", Args: `{"file_path":"/` + first[len("Work on "):] + `.md","content":"x"}`})
			}
			return ot.Text("written")
		case r.Round() == 0:
			return ot.Tools(ot.Call{ID: "t1", Name: "task", Args: `{"description":"Work on a","subagent_type":"general-purpose"}`},
				ot.Call{ID: "t2", Name: "task", Args: `{"description":"Work on b","subagent_type":"general-purpose"}`})
		}
		return ot.Text("done")
	})
	project, _ := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "model = \"openai:gpt-test\"\ninterrupt_on = { write_file = true }\n")
	code, _, errs := runCLI(t, "run", "-p", "go", "--thread", "T2", "--new-thread")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		`Answer call_0 of parent / general-purpose#t1 (another agent's call has this id too) with: echo '[{"type":"approve","call_id":"call_0","path":"parent / general-purpose#t1"}]' | deepagents resume --thread T2 --decisions -  (or "type": "edit" with "args": {...}, "type": "reject" with "message": "WHY")`,
		`Answer call_0 of parent / general-purpose#t2 (another agent's call has this id too)`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	n := len(srv.Requests())
	code, _, errs = runCLI(t, "resume", "--thread", "T2", "--reject", "call_0", "--message", "no")
	want := `call id "call_0" is waiting in more than one agent (parent / general-purpose#t1; parent / general-purpose#t2), and --reject cannot say which: ` +
		`answer with --decisions, naming the call's "path" too, such as echo '[{"type":"reject","call_id":"call_0","path":"parent / general-purpose#t1","message":"no"}]' | deepagents resume --thread T2 --decisions -; nothing ran, and thread T2 is unchanged`
	if code != 2 || !strings.Contains(errs, want) {
		t.Errorf("--reject of a shared id: exit %d, stderr %q, want 2 and %q", code, errs, want)
	}
	if len(srv.Requests()) != n {
		t.Errorf("the refused resume called the model")
	}
	code, out, errs := runCLIStdin(t, `[{"type":"approve","call_id":"call_0","path":"parent / general-purpose#t1"},{"type":"reject","call_id":"call_0","path":"parent / general-purpose#t2"}]`,
		"resume", "--thread", "T2", "--decisions", "-", "--output", "json")
	if code != 0 || strings.Join(decode(t, out).FilesChanged, ",") != "/a.md" {
		t.Errorf("decisions with paths: exit %d: %s\n%s", code, errs, out)
	}
}

// A run whose first model call fails (here a wrong key: 401) leaves no
// thread behind holding only its prompt, nor a transcript; a later turn
// that fails so keeps its thread, and an interactive session goes on in a
// thread of its own.
func TestFailedFirstCallLeavesNoThread(t *testing.T) {
	var wrongKey atomic.Bool
	wrongKey.Store(true)
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if wrongKey.Load() {
			return ot.ErrorReply(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided")
		}
		return ot.Text("answer to " + r.Last().Text())
	})
	_, home := runEnv(t, srv)
	threads := func() []threadEntry {
		t.Helper()
		code, out, errs := runCLI(t, "threads", "--json")
		var list []threadEntry
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("threads: exit %d: %s%s", code, out, errs)
		}
		return list
	}
	code, out, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--output", "json")
	if code != 1 || !strings.Contains(errs, "is not kept: its first model call failed") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if sum := decode(t, out); sum.Status != "error" || sum.ThreadID != "" || !strings.Contains(sum.Error, "401") {
		t.Errorf("result %+v", sum)
	}
	if list := threads(); len(list) != 0 {
		t.Errorf("a run whose first call failed left threads %+v", list)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, ".deepagents", "threads")); len(entries) != 0 {
		t.Errorf("it left a transcript: %v", entries)
	}
	if code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--thread", "mine", "--new-thread"); code != 1 || !strings.Contains(errs, "thread mine is not kept") {
		t.Errorf("--new-thread: exit %d: %s", code, errs)
	}

	wrongKey.Store(false)
	if code, _, errs := runCLI(t, "run", "-p", "first", "--model", "openai:gpt-test", "--thread", "kept", "--new-thread"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	wrongKey.Store(true)
	if code, _, errs := runCLI(t, "run", "-p", "second", "--thread", "kept"); code != 1 || strings.Contains(errs, "not kept") {
		t.Errorf("a later turn: exit %d: %s", code, errs)
	}
	if list := threads(); len(list) != 1 || list[0].ID != "kept" || list[0].Status != "error" {
		t.Errorf("threads %+v, want kept with status error", list)
	}

	// The session's first turn fails; its second makes a thread of its
	// own, announced anew.
	f := runFlags{model: "openai:gpt-test", output: "text", set: map[string]bool{}}
	var sout, serr strings.Builder
	s, err := assemble(t.Context(), f, &serr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	sess := &session{setup: s, flags: f, stdout: &sout, stderr: &serr}
	in := &flipReader{r: strings.NewReader("one\ntwo\n"), after: "one\n", flip: func() { wrongKey.Store(false) }}
	if code := sess.interactive(t.Context(), in); code != 0 {
		t.Fatalf("session: exit %d: %s", code, serr.String())
	}
	if sout.String() != "answer to two\n" || strings.Count(serr.String(), "deepagents: thread ") != 2 {
		t.Errorf("session: out %q\n%s", sout.String(), serr.String())
	}
	list := threads()
	if len(list) != 2 || list[0].Title != "two" || list[0].Status != "ok" {
		t.Errorf("threads %+v, want the session's with its second turn", list)
	}
}

// flipReader reads r and calls flip once after has been read, the line
// after which the world changes.
type flipReader struct {
	r     io.Reader
	after string
	read  string
	flip  func()
}

func (f *flipReader) Read(p []byte) (int, error) {
	if f.flip != nil && f.read == f.after {
		f.flip()
		f.flip = nil
	}
	n, err := f.r.Read(p[:min(len(p), 1)])
	f.read += string(p[:n])
	return n, err
}

// 'threads' and 'threads show' give a thread the same status, in the words
// of its last run.
func TestThreadsAndShowAgreeOnStatus(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		switch p := r.FirstUser(); {
		case p == "refuse":
			return ot.Reply{Refusal: "I cannot help with that."}
		case p == "fail" && r.Round() > 0:
			return ot.BadRequest("the request is not valid")
		case p == "ok" || r.Round() > 0:
			return ot.Text("fine")
		}
		return ot.Tools(ot.Call{ID: "c1", Name: "write_file", Args: `{"file_path":"/a.md","content":"A\n"}`})
	})
	runEnv(t, srv)
	for _, tt := range []struct {
		id, status string
		args       []string
	}{
		{"t-ok", "ok", nil},
		{"t-interrupted", "interrupted", []string{"--interrupt-on", "write_file"}},
		{"t-limit", "limit", []string{"--max-steps", "1"}},
		{"t-refused", "refused", nil},
		{"t-error", "error", nil},
	} {
		prompt := strings.TrimPrefix(tt.id, "t-")
		switch prompt {
		case "interrupted", "limit":
			prompt = "write"
		case "refused":
			prompt = "refuse"
		case "error":
			prompt = "fail"
		}
		runCLI(t, append([]string{"run", "-p", prompt, "--model", "openai:gpt-test", "--thread", tt.id, "--new-thread"}, tt.args...)...)
		code, out, errs := runCLI(t, "threads", "show", tt.id, "--json")
		var th shownThread
		if code != 0 || json.Unmarshal([]byte(out), &th) != nil {
			t.Fatalf("show %s: exit %d: %s", tt.id, code, errs)
		}
		if th.Status != tt.status {
			t.Errorf("threads show %s: status %q, want %q", tt.id, th.Status, tt.status)
		}
	}
	_, out, _ := runCLI(t, "threads", "--json")
	var list []threadEntry
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 5 {
		t.Fatalf("threads: %v\n%s", err, out)
	}
	for _, e := range list {
		if want := strings.TrimPrefix(e.ID, "t-"); e.Status != want {
			t.Errorf("threads lists %s with status %q; threads show says %q", e.ID, e.Status, want)
		}
	}
	_, text, _ := runCLI(t, "threads")
	if !strings.Contains(text, "t-ok ") || strings.Contains(text, " done ") {
		t.Errorf("threads:\n%s", text)
	}
}
