package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
)

func TestParseDurableFieldsErrors(t *testing.T) {
	cases := []struct {
		name, doc string
		want      string
	}{
		{"turn not a string", `{` + minimal + `, "turns": [3]}`, `1:69: turns[0] must be a string, not a number`},
		{"empty turn", `{` + minimal + `, "turns": ["  "]}`, `1:69: turns[0] is empty; a turn is the text of the next user message`},
		{"turns not a list", `{` + minimal + `, "turns": "again"}`, `1:68: turns must be a list, not a string`},
		{"crash point zero", `{` + minimal + `, "crash_after_events": [0]}`, `1:82: crash_after_events[0] is 0; a crash point counts events from 1`},
		{"crash point null", `{` + minimal + `, "crash_after_events": [3, null]}`, `1:85: crash_after_events[1] must be a whole number, not null`},
		{"turn null", `{` + minimal + `, "turns": [null]}`, `1:69: turns[0] must be a string, not null`},
		{"crash point fraction", `{` + minimal + `, "crash_after_events": [1.5]}`, `1:82: crash_after_events[0] must be a whole number, not 1.5`},
		{"gate number", `{` + minimal + `, "agent": {"interrupt_on": {"write_file": 1}}}`,
			`1:100: agent.interrupt_on.write_file must be true, false, a list of decisions ("approve", "edit", "reject", "respond") or {"allowed_decisions": [...], "description": "..."}, not a number`},
		{"gate unknown decision", `{` + minimal + `, "agent": {"interrupt_on": {"write_file": ["approve", "ignore"]}}}`,
			`1:112: agent.interrupt_on.write_file[1]: a decision is "approve", "edit", "reject" or "respond", not "ignore"`},
		{"gate empty list", `{` + minimal + `, "agent": {"interrupt_on": {"write_file": []}}}`,
			`1:100: agent.interrupt_on.write_file allows no decision, so a waiting call could never go on; list at least one, or use false for a tool that does not wait`},
		{"subagent gate", `{` + minimal + `, "agent": {"subagents": [{"name": "s", "description": "d", "interrupt_on": {"ls": "yes"}}]}}`,
			`1:140: agent.subagents[0].interrupt_on.ls must be true, false, a list of decisions ("approve", "edit", "reject", "respond") or {"allowed_decisions": [...], "description": "..."}, not a string`},
		{"decision not an object", `{` + minimal + `, "decisions": ["approve"]}`,
			`1:73: decisions[0] must be a decision {"call_id", "type", ...}, not a string`},
		{"decision without type", `{` + minimal + `, "decisions": [{"call_id": "c1"}]}`,
			`1:73: decisions[0]: the decision has no "type"; it must be approve, edit, reject or respond`},
		{"decision unknown type", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": "maybe"}]}`,
			`1:99: decisions[0]: decision type "maybe" is not one of approve, edit, reject, respond`},
		{"decision without call id", `{` + minimal + `, "decisions": [{"type": "approve"}]}`,
			`1:73: decisions[0] names no "call_id" (the id of the call it answers)`},
		{"edit without args", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": "edit"}]}`,
			`1:73: decisions[0]: an edit of call "c1" has no arguments`},
		{"edit args not an object", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": "edit", "args": [1]}]}`,
			`1:115: decisions[0].args must be an object, not a list`},
		{"edited_action args not an object", `{` + minimal + `, "decisions": [{"id": "c1", "type": "edit", "edited_action": {"name": "w", "args": 3}}]}`,
			`1:141: decisions[0].edited_action.args must be an object, not a number`},
		{"edited_action name not a string", `{` + minimal + `, "decisions": [{"id": "c1", "type": "edit", "edited_action": {"name": 1, "args": {}}}]}`,
			`1:128: decisions[0].edited_action.name must be a string, not a number`},
		{"edit with an empty edited_action", `{` + minimal + `, "decisions": [{"id": "c1", "type": "edit", "edited_action": {}}]}`,
			`1:119: decisions[0]: an edit of call "c1" has no arguments`},
		{"type not a string", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": 1}]}`,
			`1:99: decisions[0].type must be a string, not a number`},
		{"stop zero", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": "approve", "stop": 0}]}`,
			`1:118: decisions[0].stop is 0; stops are counted from 1`},
		{"stop fraction", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": "approve", "stop": 1.5}]}`,
			`1:118: decisions[0].stop must be a whole number, not 1.5`},
		{"respond without message", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": "respond"}]}`,
			`1:73: decisions[0]: the respond to call "c1" has no "message": a respond answers the call with its message, in the tool's place`},
		{"respond with an empty message", `{` + minimal + `, "decisions": [{"call_id": "c1", "type": "respond", "message": ""}]}`,
			`1:121: decisions[0]: the respond to call "c1" has no "message": a respond answers the call with its message, in the tool's place`},
		{"respond without call id", `{` + minimal + `, "decisions": [{"type": "respond", "message": "hi"}]}`,
			`1:73: decisions[0] names no "call_id" (the id of the call it answers)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			if err.Error() != c.want {
				t.Errorf("error\n got %q\nwant %q", err, c.want)
			}
			if goTypeName.MatchString(err.Error()) {
				t.Errorf("error names a Go type: %q", err)
			}
		})
	}
}

func TestParseDurableFields(t *testing.T) {
	doc := `{` + minimal + `, "turns": ["again", "and again"], "crash_after_events": [3, 9],
		"agent": {"interruptOn": {"write_file": true, "ls": false, "edit_file": ["reject", "approve", "reject"],
			"delete": {"allowedDecisions": ["approve"], "description": "Deleting needs a yes.", "extra": 1}},
			"subagents": [{"name": "a", "description": "d", "interrupt_on": {}}, {"name": "b", "description": "d"}]},
		"decisions": [{"call_id": "c1", "type": "approve"},
			{"id": "c2", "type": "edit", "edited_action": {"name": "write_file", "args": {"file_path": "/x"}}},
			{"call_id": "c3", "type": "reject", "message": "no", "stop": 2, "why": "?"}]}`
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Turns, []string{"again", "and again"}) || !slices.Equal(s.CrashAfterEvents, []int{3, 9}) {
		t.Errorf("turns %q, crash points %v", s.Turns, s.CrashAfterEvents)
	}
	got := s.Agent.InterruptOn.approvals()
	want := map[string]approve.Policy{
		"write_file": {},
		"edit_file":  {Allowed: []agent.DecisionType{agent.Reject, agent.Approve}},
		"delete":     {Allowed: []agent.DecisionType{agent.Approve}, Description: "Deleting needs a yes."},
	}
	if len(got) != len(want) {
		t.Errorf("approvals %+v, want %+v", got, want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || !slices.Equal(g.Allowed, w.Allowed) || g.Description != w.Description {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
	if a := s.Agent.Subagents[0].InterruptOn.approvals(); a == nil || len(a) != 0 {
		t.Errorf("interrupt_on {} on a subagent must gate nothing (an empty, non-nil policy), got %#v", a)
	}
	if b := s.Agent.Subagents[1].InterruptOn.approvals(); b != nil {
		t.Errorf("a subagent without interrupt_on must inherit (nil), got %#v", b)
	}
	wantDs := []Decision{
		{Decision: agent.Decision{Type: agent.Approve, CallID: "c1"}},
		{Decision: agent.Decision{Type: agent.Edit, CallID: "c2", Args: json.RawMessage(`{"file_path": "/x"}`)}},
		{Decision: agent.Decision{Type: agent.Reject, CallID: "c3", Message: "no"}, Stop: 2},
	}
	if len(s.Decisions) != len(wantDs) {
		t.Fatalf("decisions %+v", s.Decisions)
	}
	for i, w := range wantDs {
		g := s.Decisions[i]
		if g.Type != w.Type || g.CallID != w.CallID || g.Message != w.Message || g.Stop != w.Stop || string(g.Args) != string(w.Args) {
			t.Errorf("decision %d: %+v, want %+v", i, g, w)
		}
	}
	var warned []string
	for _, w := range s.Warnings {
		warned = append(warned, w[strings.Index(w, " ")+1:])
	}
	for _, w := range []string{`unknown key "extra" in agent.interrupt_on.delete (ignored)`, `unknown key "why" in decisions[2] (ignored)`} {
		if !slices.Contains(warned, w) {
			t.Errorf("warnings %q lack %q", warned, w)
		}
	}
}

func run(t *testing.T, doc string) *Transcript {
	t.Helper()
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

const gatedWrite = `"input": "write", "agent": {"interrupt_on": {"write_file": ["approve", "reject"]}},
	"script": {"parent": [{"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}]}, {"content": "done"}]}`

// A run that stops for approval with no decision left ends "interrupted",
// with the waiting call listed and no error: it is waiting, not failed.
func TestInterruptedWithNoDecisionLeft(t *testing.T) {
	tr := run(t, `{"name": "wait", `+gatedWrite+`}`)
	if tr.Status != agent.StatusInterrupted || tr.Error != nil {
		t.Fatalf("status %s, error %v; want interrupted and no error", tr.Status, tr.Error)
	}
	want := Interrupt{Stop: 1, Path: "parent", CallID: "c1", Tool: "write_file", Allowed: []agent.DecisionType{agent.Approve, agent.Reject}}
	if len(tr.Interrupts) != 1 {
		t.Fatalf("interrupts %+v", tr.Interrupts)
	}
	g := tr.Interrupts[0]
	if g.Stop != want.Stop || g.Path != want.Path || g.CallID != want.CallID || g.Tool != want.Tool || !slices.Equal(g.Allowed, want.Allowed) ||
		string(g.Args) != `{"file_path":"/a.md","content":"a"}` {
		t.Errorf("interrupt %+v, want %+v", g, want)
	}
	if _, ok := tr.Files["/a.md"]; ok {
		t.Error("the waiting call must not have run")
	}
	if tr.ThreadID != "replay-wait" || tr.Checkpoints < 2 {
		t.Errorf("thread %q, %d checkpoints", tr.ThreadID, tr.Checkpoints)
	}
}

// A decision the waiting call does not allow is the transcript's error; the
// run stays interrupted and nothing runs.
func TestDecisionErrorIsTheTranscriptError(t *testing.T) {
	tr := run(t, `{`+gatedWrite+`, "decisions": [{"call_id": "c1", "type": "edit", "args": {"file_path": "/b.md", "content": "b"}}]}`)
	if tr.Status != agent.StatusInterrupted {
		t.Errorf("status %s, want interrupted", tr.Status)
	}
	if tr.Error == nil || !strings.Contains(*tr.Error, `call "c1" (write_file) allows approve, reject, not edit`) {
		t.Errorf("error %v", tr.Error)
	}
	if len(tr.Files) != 0 {
		t.Errorf("files %v: nothing may run after refused decisions", tr.Files)
	}
	if len(tr.Rounds) != 1 {
		t.Errorf("%d model calls; the refused decision must not call the model again", len(tr.Rounds))
	}
}

// Decisions that never answer a waiting call are listed, not dropped
// silently.
func TestUnusedDecisionsAreListed(t *testing.T) {
	tr := run(t, `{`+gatedWrite+`, "decisions": [{"call_id": "c1", "type": "approve"}, {"call_id": "c9", "type": "reject"}]}`)
	if tr.Status != agent.StatusOK || tr.Files["/a.md"] != "a" {
		t.Errorf("status %s, files %v", tr.Status, tr.Files)
	}
	if len(tr.UnusedDecisions) != 1 || tr.UnusedDecisions[0].CallID != "c9" {
		t.Errorf("unused decisions %+v, want the one for c9", tr.UnusedDecisions)
	}
}

// A call id the model uses again in a later turn stops the run again, and
// the decisions for that id are given one per stop, in order: the first
// turn's call is approved, the second turn's rejected.
func TestDecisionsForOneCallIDGoToSuccessiveStops(t *testing.T) {
	tr := run(t, `{"input": "write", "turns": ["again"], "agent": {"interrupt_on": {"write_file": true}},
		"script": {"parent": [
			{"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/a.md", "content": "one"}}]}, {"content": "wrote"},
			{"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/a.md", "content": "two"}}]}, {"content": "kept"}]},
		"decisions": [{"call_id": "c1", "type": "approve"}, {"call_id": "c1", "type": "reject", "message": "keep one"}]}`)
	if tr.Status != agent.StatusOK || tr.Error != nil {
		errText := ""
		if tr.Error != nil {
			errText = *tr.Error
		}
		t.Fatalf("status %s, error %q; want ok", tr.Status, errText)
	}
	var stops []int
	for _, in := range tr.Interrupts {
		stops = append(stops, in.Stop)
	}
	if !slices.Equal(stops, []int{1, 2}) || tr.Files["/a.md"] != "one" || len(tr.UnusedDecisions) != 0 {
		t.Errorf("stops %v, files %v, unused %+v; want c1 at stops 1 and 2, /a.md written once", stops, tr.Files, tr.UnusedDecisions)
	}
	var results []string
	for _, m := range tr.ParentMessages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || !strings.Contains(results[1], "keep one") {
		t.Errorf("tool results %q; the second must be the rejection", results)
	}
}

// A stop takes, in order, at most one decision for each waiting call (call
// id and path); a decision whose stop has not come, or that names no
// waiting call, is left for later stops.
func TestTakeDecisions(t *testing.T) {
	d := func(id, path string, stop int, typ agent.DecisionType) Decision {
		var p agent.Path
		if path != "" {
			p, _ = agent.ParsePath(path)
		}
		return Decision{Decision: agent.Decision{Type: typ, CallID: id, Path: p}, Stop: stop}
	}
	waiting := []agent.Interrupt{{Path: agent.RootPath("parent"), CallID: "c1"}, {Path: agent.RootPath("parent").Child("w", "t1"), CallID: "c1"}, {Path: agent.RootPath("parent"), CallID: "c2"}}
	ds := []Decision{
		d("c1", "parent", 0, agent.Approve),        // taken: parent's c1
		d("c2", "", 2, agent.Approve),              // its stop has not come
		d("c1", "parent", 0, agent.Reject),         // parent's c1 has one already
		d("c9", "", 0, agent.Approve),              // nothing waits for c9
		d("c1", "parent / w#t1", 0, agent.Approve), // taken: the subagent's c1
		d("c1", "", 0, agent.Reject),               // names two calls, both answered
		d("c2", "", 0, agent.Reject),               // taken: c2
		d("c2", "", 0, agent.Approve),              // c2 has one already
	}
	same := func(a, b Decision) bool { return reflect.DeepEqual(a, b) }
	take, rest := takeDecisions(ds, waiting, 1)
	if want := []Decision{ds[0], ds[4], ds[6]}; !slices.EqualFunc(take, want, same) {
		t.Errorf("taken %+v, want %+v", take, want)
	}
	if want := []Decision{ds[1], ds[2], ds[3], ds[5], ds[7]}; !slices.EqualFunc(rest, want, same) {
		t.Errorf("left %+v, want %+v", rest, want)
	}
	// A decision without a path that names two waiting calls, neither of
	// them answered, is taken: the agent then asks for a path.
	take, _ = takeDecisions([]Decision{d("c1", "", 0, agent.Approve)}, waiting, 1)
	if len(take) != 1 {
		t.Errorf("taken %+v, want the ambiguous decision", take)
	}
}

// A subagent spec's interrupt_on replaces the agent's: {} gates nothing;
// absent inherits.
func TestSubagentInterruptOnOverridesTheAgents(t *testing.T) {
	doc := func(spec string) string {
		return `{"input": "go", "agent": {"interrupt_on": {"write_file": true}, "subagents": [{"name": "w", "description": "writes"` + spec + `}]},
			"script": {"parent": [{"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "write", "subagent_type": "w"}}]}, {"content": "ok"}],
				"w": [{"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/w.md", "content": "w"}}]}, {"content": "written"}]}}`
	}
	inherited := run(t, doc(``))
	if inherited.Status != agent.StatusInterrupted || len(inherited.Interrupts) != 1 || inherited.Interrupts[0].Path != "parent / w#t1" {
		t.Errorf("inherited policy: status %s, interrupts %+v", inherited.Status, inherited.Interrupts)
	}
	none := run(t, doc(`, "interrupt_on": {}`))
	if none.Status != agent.StatusOK || none.Files["/w.md"] != "w" || len(none.Interrupts) != 0 {
		t.Errorf("empty policy: status %s, files %v, interrupts %+v", none.Status, none.Files, none.Interrupts)
	}
}

// A crash point on the run's very last event loses nothing (the end was
// saved before it); one past the end never fires.
func TestCrashPointsAtAndAfterTheEnd(t *testing.T) {
	const body = `"input": "x", "script": {"parent": [{"tool_calls": [{"id": "w", "name": "write_file", "args": {"file_path": "/a", "content": "a"}}]}, {"content": "done"}]}`
	plain := run(t, `{`+body+`}`)
	n := len(plain.Events)
	if plain.Events[n-1].Type != agent.RunEnd {
		t.Fatalf("last event %s", plain.Events[n-1].Type)
	}
	for _, c := range []struct {
		at      int
		crashes int
	}{{n, 1}, {n + 1, 0}, {n - 1, 1}} {
		tr := run(t, `{`+body+`, "crash_after_events": [`+itoa(c.at)+`]}`)
		if tr.Crashes != c.crashes || tr.Status != agent.StatusOK || tr.Files["/a"] != "a" || len(tr.ParentMessages) != len(plain.ParentMessages) {
			t.Errorf("crash after event %d of %d: %d crashes (want %d), status %s, files %v, %d messages",
				c.at, n, tr.Crashes, c.crashes, tr.Status, tr.Files, len(tr.ParentMessages))
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// After the crash nothing the crashed process does reaches the saver: every
// write fails, and waiting actions are let go at once.
func TestCrashedProcessWritesNothing(t *testing.T) {
	ctx := context.Background()
	cs := newCountingSaver(checkpoint.NewMemory(0))
	l := newLockstep(cs)
	step := checkpoint.Step{ThreadID: "t", ID: "00000000", Step: 0, Metadata: map[string]string{"source": "input"}}
	if err := l.Put(ctx, step); err != nil {
		t.Fatal(err)
	}
	// A subagent's first checkpoint waits for its run.start.
	child := step
	child.NS = "parent / w#t1"
	done := make(chan error, 1)
	go func() { done <- l.Put(ctx, child) }()
	l.see(agent.Event{Type: agent.ModelRequest, Agent: agent.RootPath("parent"), Request: &agent.RequestInfo{Round: 0}})
	l.crash(agent.Event{Type: agent.ModelResponse, Agent: agent.RootPath("parent"), Response: &agent.ResponseInfo{Round: 0}})
	select {
	case err := <-done:
		if !errors.Is(err, errCrashed) {
			t.Errorf("the waiting put returned %v, want the crash", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting put was not let go by the crash")
	}
	next := step
	next.ID, next.Step, next.ParentID = "00000001", 1, "00000000"
	for name, err := range map[string]error{
		"put":      l.Put(ctx, next),
		"write":    l.PutWrite(ctx, checkpoint.Ref{ThreadID: "t", ID: "00000000"}, checkpoint.Write{CallID: "c", Kind: checkpoint.KindResult}),
		"release":  l.Release(ctx, "t", "h"),
		"acquire":  func() error { _, err := l.Acquire(ctx, "t", "h", time.Now(), time.Minute); return err }(),
		"delete":   l.DeleteThread(ctx, "t"),
		"prune":    l.Prune(ctx, "t", checkpoint.PruneOptions{}),
		"copy":     l.CopyThread(ctx, checkpoint.Ref{ThreadID: "t"}, "u"),
		"renewing": func() error { _, err := l.Renew(ctx, "t", "h", time.Now(), time.Minute); return err }(),
	} {
		if !errors.Is(err, errCrashed) {
			t.Errorf("%s after the crash: %v, want the crash", name, err)
		}
	}
	if n := cs.puts.Load(); n != 1 {
		t.Errorf("%d checkpoints counted, want the 1 written before the crash", n)
	}
	cp, err := cs.inner.Get(ctx, checkpoint.Ref{ThreadID: "t"})
	if err != nil || cp.ID != "00000000" {
		t.Errorf("latest checkpoint %v, %v; want 00000000", cp, err)
	}
	if _, err := l.runtime().Model(ctx, nil, nil); !errors.Is(err, errCrashed) {
		t.Errorf("a model call after the crash: %v", err)
	}
}

// durableSlots are where FuzzDurableFields puts its value.
var durableSlots = []string{
	`{` + minimal + `, "turns": %s}`,
	`{` + minimal + `, "decisions": %s}`,
	`{` + minimal + `, "crash_after_events": %s}`,
	`{` + minimal + `, "agent": {"interrupt_on": %s}}`,
	`{` + minimal + `, "agent": {"subagents": [{"name": "s", "description": "d", "interrupt_on": %s}]}}`,
}

func FuzzDurableFields(f *testing.F) {
	for i, v := range []string{`["next"]`, `[{"call_id": "c1", "type": "approve"}, {"id": "c2", "type": "edit", "edited_action": {"args": {}}, "stop": 2}]`,
		`[1, 5, 9]`, `{"write_file": true, "ls": false, "edit_file": ["approve", "reject"], "delete": {"allowed_decisions": ["edit"], "description": "d"}}`,
		`{}`} {
		f.Add(i, v)
	}
	f.Fuzz(func(t *testing.T, where int, value string) {
		slot := durableSlots[uint(where)%uint(len(durableSlots))]
		doc := []byte(strings.Replace(slot, "%s", value, 1))
		s, err := Parse(doc)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.Line == 0 || strings.Contains(err.Error(), "\n") || goTypeName.MatchString(se.Reason) {
				t.Fatalf("bad error %q (%T)", err, err)
			}
			return
		}
		for i, n := range s.CrashAfterEvents {
			if n <= 0 || i > 0 && n <= s.CrashAfterEvents[i-1] {
				t.Fatalf("crash points %v accepted", s.CrashAfterEvents)
			}
		}
		for _, turn := range s.Turns {
			if strings.TrimSpace(turn) == "" {
				t.Fatalf("blank turn accepted: %q", s.Turns)
			}
		}
		for _, d := range s.Decisions {
			if err := d.Check(); err != nil || d.Stop < 0 {
				t.Fatalf("decision %+v accepted: %v", d, err)
			}
		}
		policies := []InterruptOn{s.Agent.InterruptOn}
		for _, sa := range s.Agent.Subagents {
			policies = append(policies, sa.InterruptOn)
		}
		for _, p := range policies {
			for name, a := range p.approvals() {
				if len(a.Decisions()) == 0 {
					t.Fatalf("%s allows no decision", name)
				}
			}
		}
		if _, err := s.Build(s.Model()); err != nil {
			t.Fatalf("a parsed scenario does not assemble: %v", err)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Parse(again)
		if err != nil {
			t.Fatalf("the marshalled scenario does not parse: %v\n%s", err, again)
		}
		if again2, _ := json.Marshal(s2); string(again) != string(again2) {
			t.Fatalf("round trip changed the scenario:\n%s\n%s", again, again2)
		}
	})
}

// A crash at any event, the first one of a run or of a turn included (before
// the run saved its input), resumes to the transcript of the uncrashed run:
// input that was not saved is sent again, not dropped.
func TestCrashAtEveryEventEqualsTheUncrashedRun(t *testing.T) {
	const body = `"name": "every-event", "input": "write a, then have a helper write b", "turns": ["now c"],
		"agent": {"interrupt_on": {"write_file": true}},
		"script": {"parent": [
			{"tool_calls": [{"id": "a", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}},
				{"id": "t1", "name": "task", "args": {"description": "write b", "subagent_type": "general-purpose"}}]},
			{"content": "a and b"},
			{"tool_calls": [{"id": "c", "name": "write_file", "args": {"file_path": "/c.md", "content": "c"}}]},
			{"content": "c too"}],
		 "general-purpose": [{"tool_calls": [{"id": "b", "name": "write_file", "args": {"file_path": "/b.md", "content": "b"}}]}, {"content": "b written"}]},
		"decisions": [{"call_id": "a", "type": "approve"}, {"call_id": "b", "type": "edit", "args": {"file_path": "/b.md", "content": "b2"}},
			{"call_id": "c", "type": "reject", "message": "no c"}]`
	plain := run(t, `{`+body+`, "crash_after_events": [1000000]}`)
	if plain.Status != agent.StatusOK || plain.Crashes != 0 {
		t.Fatalf("the uncrashed run: status %s, %d crashes, error %v", plain.Status, plain.Crashes, plain.Error)
	}
	for at := 1; at <= len(plain.Events); at++ {
		tr := run(t, `{`+body+`, "crash_after_events": [`+itoa(at)+`]}`)
		if tr.Crashes != 1 {
			t.Errorf("crash after event %d (%s): %d crashes", at, plain.Events[at-1].Type, tr.Crashes)
		}
		if d := sameEnd(plain, tr); len(d) > 0 {
			t.Errorf("crash after event %d (%s) differs from the uncrashed run:\n%s", at, plain.Events[at-1].Type, strings.Join(d, "\n"))
		}
		// No model call is made twice: one whose request was the last event
		// never reached the model (the replay crashed first), and a response
		// that was shown had been saved.
		if tr.Timing.ModelCalls != plain.Timing.ModelCalls {
			t.Errorf("crash after event %d (%s): %d model calls, want %d", at, plain.Events[at-1].Type, tr.Timing.ModelCalls, plain.Timing.ModelCalls)
		}
	}
}

// An edit in LangChain's shape names its tool (edited_action.name): the
// agent refuses one that names another tool than the waiting call's, as it
// does for the same decision given through its API, and runs one that names
// the call's own.
func TestEditedActionNameIsTheEditsTool(t *testing.T) {
	doc := func(name string) string {
		return `{` + gatedWrite + `, "decisions": [{"id": "c1", "type": "edit", "edited_action": {"name": "` + name + `", "args": {"file_path": "/b.md", "content": "b"}}}]}`
	}
	wrong := run(t, strings.Replace(doc("delete"), `["approve", "reject"]`, `true`, 1))
	if wrong.Status != agent.StatusInterrupted || wrong.Error == nil || !strings.Contains(*wrong.Error, "names tool delete, but the call is a write_file call") {
		t.Errorf("an edit naming another tool: status %s, error %v", wrong.Status, wrong.Error)
	}
	if len(wrong.Files) != 0 {
		t.Errorf("files %v: the refused edit must not run", wrong.Files)
	}
	right := run(t, strings.Replace(doc("write_file"), `["approve", "reject"]`, `true`, 1))
	if right.Status != agent.StatusOK || right.Files["/b.md"] != "b" {
		t.Errorf("an edit naming its own tool: status %s, error %v, files %v", right.Status, right.Error, right.Files)
	}
	s, err := Parse([]byte(doc("delete")))
	if err != nil || len(s.Decisions) != 1 || s.Decisions[0].Tool != "delete" {
		t.Fatalf("parsed %+v, %v", s.Decisions, err)
	}
	again, _ := json.Marshal(s)
	if s2, err := Parse(again); err != nil || len(s2.Decisions) != 1 || s2.Decisions[0].Tool != "delete" || len(s2.Warnings) != 0 {
		t.Errorf("round trip: %+v, warnings %q, %v", s2, s2.Warnings, err)
	}
}

// sameEnd lists what differs between how two runs of one scenario ended,
// beyond the fields that count crashes and what was done again.
func sameEnd(plain, tr *Transcript) []string {
	var diff []string
	for name, pair := range map[string][2]any{
		"status": {plain.Status, tr.Status}, "error": {plain.Error, tr.Error}, "parent_messages": {plain.ParentMessages, tr.ParentMessages},
		"files": {plain.Files, tr.Files}, "interrupts": {plain.Interrupts, tr.Interrupts}, "unused_decisions": {plain.UnusedDecisions, tr.UnusedDecisions},
		"usage": {plain.Usage, tr.Usage}, "subagents": {plain.Subagents, tr.Subagents}, "final_state_keys": {plain.FinalStateKeys, tr.FinalStateKeys},
	} {
		a, _ := json.Marshal(pair[0])
		b, _ := json.Marshal(pair[1])
		if string(a) != string(b) {
			diff = append(diff, name+": "+string(b)+", want "+string(a))
		}
	}
	slices.Sort(diff)
	return diff
}

// A crash at any event of a scenario that compacts resumes to the end of
// the uncrashed run: the summariser calls and the round sent again after an
// overflow that the crashed process made after its last saved write are
// made again and get the same script steps, and a crashed process reaches
// the scripted model by no path (a summariser call or a resent round does
// not go through the runtime).
func TestCrashAtEveryEventOfACompaction(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "scenarios", "compaction-*.json"))
	files = append(files, filepath.Join("testdata", "compaction-failing-summarizer.json"))
	if len(files) < 3 {
		t.Fatalf("compaction scenarios: %v", files)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			runAt := func(points ...int) *Transcript {
				c := *s
				c.CrashAfterEvents = points
				tr, err := c.Run(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				tr.Normalize() // the history files' times
				return tr
			}
			plain := runAt(1 << 30)
			for at := 1; at <= len(plain.Events); at++ {
				tr := runAt(at)
				if tr.Crashes != 1 {
					t.Errorf("crash after event %d: %d crashes", at, tr.Crashes)
				}
				if d := sameEnd(plain, tr); len(d) > 0 {
					t.Errorf("crash after event %d (%s %s) differs from the uncrashed run:\n%s", at, plain.Events[at-1].Type, plain.Events[at-1].Agent, strings.Join(d, "\n"))
				}
			}
		})
	}
}

// A rejected call that the model sends again unchanged is answered as
// rejected without a second stop, also when the process crashed between
// the rejection's saved result and the step's checkpoint, at the top and
// inside a subagent.
func TestCrashKeepsARejection(t *testing.T) {
	const again = `{"tool_calls": [{"id": "%s", "name": "write_file", "args": {"file_path": "/x.md", "content": "x"}}]}`
	for name, body := range map[string]string{
		"top": `"name": "reject-crash", "input": "write x",
			"agent": {"interrupt_on": {"write_file": true}},
			"script": {"parent": [` + fmt.Sprintf(again, "d1") + `, ` + fmt.Sprintf(again, "d2") + `, {"content": "gave up"}]},
			"decisions": [{"call_id": "d1", "type": "reject", "message": "not x"}]`,
		"subagent": `"name": "reject-crash-sub", "input": "have a helper write x",
			"agent": {"subagents": [{"name": "helper", "description": "Writes.", "interrupt_on": {"write_file": true}}]},
			"script": {"parent": [{"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "write x", "subagent_type": "helper"}}]}, {"content": "done"}],
				"helper": [` + fmt.Sprintf(again, "c1") + `, ` + fmt.Sprintf(again, "c2") + `, {"content": "gave up"}]},
			"decisions": [{"call_id": "c1", "type": "reject", "message": "not x"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			plain := run(t, `{`+body+`, "crash_after_events": [1000000]}`)
			if plain.Status != agent.StatusOK || len(plain.Interrupts) != 1 {
				t.Fatalf("the uncrashed run: status %s, %d interrupts, error %v", plain.Status, len(plain.Interrupts), plain.Error)
			}
			for at := 1; at <= len(plain.Events); at++ {
				tr := run(t, `{`+body+`, "crash_after_events": [`+itoa(at)+`]}`)
				if d := sameEnd(plain, tr); len(d) > 0 {
					t.Errorf("crash after event %d (%s) differs from the uncrashed run:\n%s", at, plain.Events[at-1].Type, strings.Join(d, "\n"))
				}
			}
		})
	}
}

// The calls one stop waits at are listed in the same order on every run:
// by agent path, whichever of two parallel subagents stopped first. Here
// the subagent called first (alpha) is slower, so it stops second; the
// interrupted_calls check, evaluated on the transcript as printed, passes.
func TestInterruptsOfOneStopInAFixedOrder(t *testing.T) {
	const doc = `{"name": "two-stop", "input": "both",
		"agent": {"interrupt_on": {"write_file": true}, "subagents": [
			{"name": "alpha", "description": "a"}, {"name": "beta", "description": "b"}]},
		"script": {
			"parent": [{"tool_calls": [
				{"id": "ta", "name": "task", "args": {"description": "a", "subagent_type": "alpha"}},
				{"id": "tb", "name": "task", "args": {"description": "b", "subagent_type": "beta"}}]}],
			"alpha": [{"delay_ms": 150, "tool_calls": [{"id": "a1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}]}],
			"beta": [{"tool_calls": [{"id": "b1", "name": "write_file", "args": {"file_path": "/b.md", "content": "b"}}]}]},
		"expect": {"interrupted_calls": ["a1", "b1"]}}`
	tr := run(t, doc)
	var got []string
	for _, in := range tr.Interrupts {
		got = append(got, in.Path+" "+in.CallID)
	}
	want := []string{"parent / alpha#ta a1", "parent / beta#tb b1"}
	if tr.Status != agent.StatusInterrupted || !slices.Equal(got, want) {
		t.Errorf("status %s, interrupts %q, want %q", tr.Status, got, want)
	}
	if tr.Failed() {
		t.Errorf("checks %+v", tr.Checks)
	}
}

// interrupts is part of every transcript, an empty list when the run never
// stopped for approval (and when the agent could not be assembled).
func TestInterruptsAlwaysPresent(t *testing.T) {
	for name, doc := range map[string]string{
		"no approval": `{"name": "plain", ` + minimal + `}`,
		"assembly":    `{"name": "bad", ` + minimal + `, "agent": {"subagents": [{"name": "f", "description": "d", "mode": "fork", "skills": ["x"]}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			tr := run(t, doc)
			tr.Normalize()
			b, err := json.Marshal(tr)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for key, want := range map[string]string{"interrupts": "[]", "thread_id": `"replay-` + map[string]string{"no approval": "plain", "assembly": "bad"}[name] + `"`} {
				if string(m[key]) != want {
					t.Errorf("%s: %s, want %s", key, m[key], want)
				}
			}
			for _, key := range []string{"status", "checkpoints"} {
				if _, ok := m[key]; !ok {
					t.Errorf("no %s in %s", key, b)
				}
			}
		})
	}
}

// Crash points are a set of moments: given in any order or more than once,
// they are taken in increasing order, each once, with a warning at the
// first that is out of order, and the run is the one of the sorted list.
func TestCrashPointsInAnyOrder(t *testing.T) {
	for doc, want := range map[string]struct {
		points []int
		warn   string
	}{
		`[9, 3]`:       {[]int{3, 9}, `1:85: crash_after_events[1] (3) comes after a larger one; crash points are taken in increasing order, each once`},
		`[5, 5]`:       {[]int{5}, `1:85: crash_after_events[1] (5) repeats the one before; crash points are taken in increasing order, each once`},
		`[7, 2, 7, 2]`: {[]int{2, 7}, `1:85: crash_after_events[1] (2) comes after a larger one; crash points are taken in increasing order, each once`},
		`[1, 2, 3]`:    {[]int{1, 2, 3}, ``},
		`[4.0, 1e1]`:   {[]int{4, 10}, ``},
	} {
		s, err := Parse([]byte(`{` + minimal + `, "crash_after_events": ` + doc + `}`))
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if !slices.Equal(s.CrashAfterEvents, want.points) {
			t.Errorf("%s: crash points %v, want %v", doc, s.CrashAfterEvents, want.points)
		}
		if got := strings.Join(s.Warnings, "\n"); got != want.warn {
			t.Errorf("%s: warnings %q, want %q", doc, got, want.warn)
		}
	}
	body := `"name": "crash-order", "input": "two helpers",
		"script": {"parent": [{"tool_calls": [
				{"id": "ta", "name": "task", "args": {"description": "A", "subagent_type": "general-purpose"}},
				{"id": "tb", "name": "task", "args": {"description": "B", "subagent_type": "general-purpose"}}]},
			{"content": "done"}],
			"general-purpose": {"cases": [
				{"match": "A", "steps": [{"tool_calls": [{"id": "a1", "name": "write_file", "args": {"file_path": "/a.md", "content": "a"}}]}, {"content": "a"}]},
				{"match": "B", "steps": [{"tool_calls": [{"id": "b1", "name": "write_file", "args": {"file_path": "/b.md", "content": "b"}}]}, {"content": "b"}]}]}}`
	sorted := run(t, `{`+body+`, "crash_after_events": [6, 14]}`)
	unsorted := run(t, `{`+body+`, "crash_after_events": [14, 6, 14]}`)
	if sorted.Crashes != 2 || unsorted.Crashes != 2 {
		t.Fatalf("crashes %d and %d, want 2", sorted.Crashes, unsorted.Crashes)
	}
	sorted.Normalize()
	unsorted.Normalize()
	a, _ := json.Marshal(sorted)
	b, _ := json.Marshal(unsorted)
	if string(a) != string(b) {
		t.Errorf("[14, 6, 14] ran differently from [6, 14]:\n%s\n%s", b, a)
	}
	// Set in Go, with no Parse to sort them, they are taken the same way.
	s, err := Parse([]byte(`{` + body + `}`))
	if err != nil {
		t.Fatal(err)
	}
	s.CrashAfterEvents = []int{14, 6, 6}
	tr, err := s.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tr.Normalize()
	if c, _ := json.Marshal(tr); string(c) != string(a) {
		t.Errorf("[14, 6, 6] set in Go ran differently from [6, 14]:\n%s\n%s", c, a)
	}
}

// null in a gate object is an absent value, as it is elsewhere in a
// scenario: no description, all three decisions.
func TestGateNulls(t *testing.T) {
	s, err := Parse([]byte(`{` + minimal + `, "agent": {"interrupt_on": {
		"write_file": {"allowed_decisions": null, "description": "Writes need a yes."},
		"edit_file": {"allowed_decisions": ["reject"], "description": null}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Agent.InterruptOn.approvals()
	if w := got["write_file"]; len(w.Allowed) != 0 || w.Description != "Writes need a yes." {
		t.Errorf("write_file: %+v", w)
	}
	if e := got["edit_file"]; !slices.Equal(e.Allowed, []agent.DecisionType{agent.Reject}) || e.Description != "" {
		t.Errorf("edit_file: %+v", e)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %q", s.Warnings)
	}
}

// The parent and two subagents wait with one call id (w1) at one stop.
// Each decision names its call's agent path, and reaches that call only,
// in whatever order the decisions are listed: the approved agent's file
// is written and no other, and each rejected agent reads its own reason.
func TestDecisionsWithPathsReachTheirOwnAgent(t *testing.T) {
	s, err := Load(filepath.Join("..", "testdata", "scenarios", "same-call-id-two-agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	given := slices.Clone(s.Decisions)
	reasons := map[string]string{}
	for _, d := range given {
		if d.Type == agent.Reject {
			reasons[d.Path.String()] = d.Message
		}
	}
	for _, order := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s.Decisions = nil
			for _, i := range order {
				s.Decisions = append(s.Decisions, given[i])
			}
			tr, err := s.Run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if tr.Status != agent.StatusOK || tr.Error != nil || len(tr.UnusedDecisions) != 0 {
				t.Fatalf("status %s, error %v, unused %+v", tr.Status, tr.Error, tr.UnusedDecisions)
			}
			if len(tr.Files) != 1 || tr.Files["/b.md"] != "b\n" {
				t.Errorf("files %v, want only /b.md (the approved subagent's)", tr.Files)
			}
			var parentTool []string
			for _, m := range tr.ParentMessages {
				if m.Role == "tool" {
					parentTool = append(parentTool, m.Content)
				}
			}
			if len(parentTool) != 3 || !strings.Contains(parentTool[2], reasons["parent"]) {
				t.Errorf("the parent's tool results %q; the third must carry %q", parentTool, reasons["parent"])
			}
			a := tr.SubagentConversations["general-purpose#0"]
			if got := fmt.Sprint(a.Messages); !strings.Contains(got, reasons["parent / general-purpose#t1"]) || strings.Contains(got, reasons["parent"]) {
				t.Errorf("subagent a's conversation does not carry its own rejection only: %s", got)
			}
		})
	}
}
