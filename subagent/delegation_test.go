package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/internal/testkit"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/scenario"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
)

var fileTools = fstools.Names

// The fixed texts as users see them, written out so that a changed text
// fails a test instead of changing the expectation with it.
const (
	gpPromptText = "You are a subagent doing one task that was delegated to you. " +
		"The agent that delegated it will see only your final message: none of your tool calls, tool results or files read. " +
		"So end with a complete, self-contained report of what you found or did."
	gpDescriptionText = "A general agent with the same file tools as you. Use it for research, searching many files, " +
		"and multi-step work whose details would crowd your own context."
	noReportText     = "The subagent finished without writing a final report."
	refusalText      = "You are a subagent and cannot delegate to another subagent. Complete this task yourself instead of calling this tool again."
	forkNoteText     = " (fork: inherits your full conversation and system prompt, so the brief can be short)"
	forkPreambleText = "You are now a forked copy of the agent above, running as a subagent. " +
		"Do only the task below; your final message goes back to the agent that forked you as your report, and the user does not see it.\n\nTask: "
)

// invokeScenario runs a checked-in scenario through the Go API and returns
// the result and the model, whose records show what every call was sent.
func invokeScenario(t *testing.T, name string) (*agent.Result, *scripted.Model) {
	t.Helper()
	sc := loadScenario(t, name)
	model := sc.Model()
	a, err := sc.Build(model)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Input{Messages: sc.Input})
	if err != nil {
		t.Fatal(err)
	}
	return res, model
}

func withTask(names []string) []string { return append(slices.Clone(names), "task") }

// F1, F9 and the seed's per-round table: parent 8 tools with task, child 7
// without; the child's first call is its system prompt plus the brief.
func TestSeedRoundTable(t *testing.T) {
	tr := replay(t, "seed-delegation")
	type row struct {
		who      string
		msgs     int
		roles    string
		system   int
		tools    []string
		instance string
	}
	gp := tokens.Chars(gpPromptText)
	want := []row{
		{"parent", 1, "user", 0, withTask(fileTools), ""},
		{"general-purpose", 1, "user", gp, fileTools, "call_1"},
		{"general-purpose", 3, "user assistant tool", gp, fileTools, "call_1"},
		{"parent", 3, "user assistant tool", 0, withTask(fileTools), ""},
	}
	if len(tr.Rounds) != len(want) {
		t.Fatalf("%d rounds, want 4", len(tr.Rounds))
	}
	for i, w := range want {
		r := tr.Rounds[i]
		got := row{r.Who, r.MessageCount, strings.Join(r.Roles, " "), r.SystemChars, r.Tools, r.Instance}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("round %d:\n got %v\nwant %v", i+1, got, w)
		}
	}
	conv := tr.SubagentConversations["general-purpose"]
	if conv.System == nil || *conv.System != gpPromptText {
		t.Errorf("child system prompt = %v", conv.System)
	}
	if conv.Messages[0].Role != "user" || conv.Messages[0].Content != "Find the answer, keep notes in /child.md, and report the conclusion." {
		t.Errorf("the child's brief must be the description verbatim, got %+v", conv.Messages[0])
	}
	for _, m := range conv.Messages {
		if strings.Contains(m.Content, "The user's question") {
			t.Error("the parent's history leaked into the isolated child (F7)")
		}
	}
}

// F8: the general-purpose prompt says the caller sees only the final reply,
// and stays within budget.
func TestGeneralPurposePrompt(t *testing.T) {
	p := gpPromptText
	if n := tokens.Chars(p); n > 300 || n < 100 {
		t.Errorf("general-purpose prompt is %d chars, want 100..300", n)
	}
	for _, must := range []string{"final message", "tool calls", "tool results", "complete"} {
		if !strings.Contains(p, must) {
			t.Errorf("prompt does not mention %q: %s", must, p)
		}
	}
}

// F10-F12: the parent's history grows by exactly the call and the receipt,
// and the receipt is the child's last AI message with text.
func TestReceiptAndParentHistory(t *testing.T) {
	tr := replay(t, "seed-delegation")
	roles := []string{}
	for _, m := range tr.ParentMessages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant tool assistant" {
		t.Fatalf("parent history: %s", got)
	}
	receipt := tr.ParentMessages[2]
	if receipt.Content != "subagent's final report: the conclusion is 42" || receipt.Name != "task" || receipt.ToolCallID != "call_1" {
		t.Errorf("receipt = %+v", receipt)
	}
	for _, m := range tr.ParentMessages {
		if strings.Contains(m.Content, "I just wrote a file") || strings.Contains(m.Content, "Created /child.md") {
			t.Error("the child's intermediate messages reached the parent (F17)")
		}
	}
	if n := tokens.Message(tokens.O200k, llm.Message{Role: llm.RoleTool, Name: receipt.Name, Content: receipt.Content}); n > 25 {
		t.Errorf("receipt costs %d tokens", n)
	}
}

// F11 edge: a child with no text at all yields a fixed notice, not "".
func TestReceiptWithoutText(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent":          {Steps: []scripted.Step{{ToolCalls: []scripted.StepCall{{ID: "c", Name: "task", Args: json.RawMessage(`{"description":"x","subagent_type":"general-purpose"}`)}}}, {Content: "ok"}}},
		"general-purpose": {Steps: []scripted.Step{{ToolCalls: []scripted.StepCall{{Name: "ls", Args: json.RawMessage(`{}`)}}}, {}}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.State.Messages[2].Content; got != noReportText {
		t.Errorf("receipt = %q", got)
	}
}

// F4-F6: the listing, its growth with a custom subagent, replacement of the
// default by name, and the fork note.
func TestTaskListing(t *testing.T) {
	def := subagent.Description(deepagents.WithGeneralPurpose(nil))
	if !strings.Contains(def, "\n- general-purpose: "+gpDescriptionText+"\n") {
		t.Errorf("default listing line missing:\n%s", def)
	}
	withResearcher := subagent.Description(deepagents.WithGeneralPurpose([]subagent.Spec{{Name: "researcher", Description: "查资料的"}}))
	if d := tokens.Chars(withResearcher) - tokens.Chars(def); d != tokens.Chars("\n- researcher: 查资料的") {
		t.Errorf("adding researcher grew the description by %d chars", d)
	}
	if strings.Index(withResearcher, "- general-purpose:") > strings.Index(withResearcher, "- researcher:") {
		t.Error("general-purpose must be listed first when it is the default")
	}
	custom := deepagents.WithGeneralPurpose([]subagent.Spec{{Name: "analyzer", Description: "A."}, {Name: "general-purpose", Description: "Mine."}})
	if len(custom) != 2 || custom[1].Description != "Mine." {
		t.Errorf("a custom general-purpose must replace the default in place: %+v", custom)
	}
	customDesc := subagent.Description(custom)
	if strings.Count(customDesc, "- general-purpose:") != 1 || strings.Contains(customDesc, gpDescriptionText) {
		t.Error("default and custom general-purpose coexist (F5)")
	}
	fork := subagent.Description([]subagent.Spec{{Name: "f1", Description: "Continues.", Mode: subagent.Fork}})
	if !strings.Contains(fork, "- f1: Continues."+forkNoteText) {
		t.Errorf("fork note missing (F6):\n%s", fork)
	}

	// In a real run: the researcher's child request shows its own prompt
	// and tools, the custom general-purpose its prompt and the file tools.
	tr := replay(t, "listing-researcher")
	if !strings.HasSuffix(strings.SplitN(tr.TaskTool.Description, "\n\nUsage:", 2)[0], "- researcher: 查资料的") {
		t.Errorf("task description:\n%s", tr.TaskTool.Description)
	}
	if r := tr.Rounds[1]; r.Who != "researcher" || !slices.Equal(r.Tools, append(slices.Clone(fileTools), "web_search")) {
		t.Errorf("researcher round = %+v", r)
	}
	if got := tr.ParentMessages[2].Content; !strings.Contains(got, "Douglas Adams") {
		t.Errorf("receipt = %q", got)
	}
	tr = replay(t, "listing-custom-gp")
	if r := tr.Rounds[1]; r.SystemChars != tokens.Chars("Answer in one line.") || !slices.Equal(r.Tools, fileTools) {
		t.Errorf("custom general-purpose round = %+v", r)
	}
	if strings.Contains(tr.TaskTool.Description, gpDescriptionText) {
		t.Error("custom general-purpose did not replace the default")
	}
}

// Budgets: the task tool ≤ 400 o200k tokens with the default listing; the
// default stack ≤ 1600; the seven file tools ≤ 1200.
func TestToolBudgets(t *testing.T) {
	a, err := deepagents.New(deepagents.Config{Model: scripted.New(nil, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	rows, total := tokens.Tools(a.ToolSpecs())
	var names []string
	files := 0
	for _, r := range rows {
		names = append(names, r.Name)
		t.Logf("%-10s %5d desc chars %5d json chars %4d o200k %4d cl100k", r.Name, r.DescChars, r.JSONChars, r.O200k, r.Cl100k)
		if r.Name == "task" {
			if r.O200k > 400 {
				t.Errorf("task tool costs %d o200k tokens, budget 400", r.O200k)
			}
		} else {
			files += r.O200k
		}
	}
	t.Logf("total %d o200k, %d cl100k", total.O200k, total.Cl100k)
	if !slices.Equal(names, deepagents.BuiltinToolNames) || len(names) != 8 {
		t.Errorf("default tools = %v, want the 8 of F1", names)
	}
	if files > 1200 {
		t.Errorf("file tools cost %d o200k tokens, budget 1200", files)
	}
	if total.O200k > 1600 {
		t.Errorf("default stack costs %d o200k tokens, budget 1600", total.O200k)
	}
}

// F13-F15: the structured receipt, its extra tool, unchanged parent keys.
func TestStructuredReceipt(t *testing.T) {
	tr := replay(t, "structured")
	child := tr.Rounds[1]
	if child.Who != "analyst" || len(child.Tools) != 8 || child.Tools[7] != "Findings" {
		t.Fatalf("analyst tools = %v, want the 7 file tools + Findings (F14)", child.Tools)
	}
	var got struct {
		Findings   string  `json:"findings"`
		Confidence float64 `json:"confidence"`
	}
	receipt := tr.ParentMessages[2].Content
	if err := json.Unmarshal([]byte(receipt), &got); err != nil || got.Findings != "3 leads" || got.Confidence != 0.82 {
		t.Errorf("receipt %q does not decode: %v", receipt, err)
	}
	if receipt != `{"findings":"3 leads","confidence":0.82}` {
		t.Errorf("receipt must be compact JSON in the call's key order: %s", receipt)
	}
	if !slices.Equal(tr.FinalStateKeys, []string{"files", "messages"}) {
		t.Errorf("state keys %v (F15)", tr.FinalStateKeys)
	}
	if _, ok := tr.Files["/leads.md"]; !ok {
		t.Error("the child's intermediate tool call (unconstrained by the schema) must have run")
	}
	// F16: with fork.
	tr = replay(t, "structured-fork")
	if tr.ParentMessages[2].Content != `{"number":7}` {
		t.Errorf("fork structured receipt = %q", tr.ParentMessages[2].Content)
	}
	if r := tr.Rounds[1]; !slices.Equal(r.Tools, append(withTask(fileTools), "Report")) {
		t.Errorf("fork with a response format has tools %v", r.Tools)
	}
}

// Go struct types as response formats, and the typed decode helper.
func TestStructuredReceiptFromGoType(t *testing.T) {
	type Verdict struct {
		Approved bool   `json:"approved"`
		Reason   string `json:"reason"`
	}
	m := scripted.New(scripted.Script{
		"parent":   {Steps: []scripted.Step{{ToolCalls: []scripted.StepCall{{ID: "c1", Name: "task", Args: json.RawMessage(`{"description":"review","subagent_type":"reviewer"}`)}}}, {Content: "ok"}}},
		"reviewer": {Steps: []scripted.Step{{ToolCalls: []scripted.StepCall{{Name: "Verdict", Args: json.RawMessage(`{"approved":true,"reason":"fine"}`)}}}}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Subagents: []subagent.Spec{{Name: "reviewer", Description: "Reviews.", ResponseFormat: subagent.As[Verdict]()}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := subagent.Decode[Verdict](res.State.Messages[2].Content)
	if err != nil || !v.Approved || v.Reason != "fine" {
		t.Errorf("decoded %+v, %v", v, err)
	}
	if child, ok := res.Child("c1"); !ok || string(child.Output) != `{"approved":true,"reason":"fine"}` {
		t.Errorf("child output = %+v", child)
	}
}

// F20-F22: what a fork sees, and the refusal of its own task call.
func TestForkInheritsAndRefuses(t *testing.T) {
	res, model := invokeScenario(t, "fork-refusal")
	recs := model.Records()
	if len(recs) != 4 {
		t.Fatalf("%d model calls; the fork's task call must run nothing", len(recs))
	}
	parent, fork := recs[0].Request, recs[1].Request
	if recs[1].Who != "forker" {
		t.Fatalf("second call by %s", recs[1].Who)
	}
	// The fork keeps the parent's static prompt (its cached prefix); its
	// own prompt comes after it, in the changing part.
	if fork.System != parent.System || !strings.HasPrefix(fork.SystemTail, "Fork note: be brief.") {
		t.Errorf("fork system = %q, tail = %q", fork.System, fork.SystemTail)
	}
	pj, _ := json.Marshal(parent.Tools)
	fj, _ := json.Marshal(fork.Tools)
	if string(pj) != string(fj) {
		t.Error("the fork's tool definitions must be byte-identical to the parent's, task included")
	}
	if len(fork.Messages) != len(parent.Messages)+1 {
		t.Fatalf("fork got %d messages, parent had %d", len(fork.Messages), len(parent.Messages))
	}
	for i := range parent.Messages {
		if fork.Messages[i].Content != parent.Messages[i].Content || fork.Messages[i].Role != parent.Messages[i].Role {
			t.Errorf("fork message %d differs from the parent's", i)
		}
	}
	last := fork.Messages[len(fork.Messages)-1]
	if last.Role != llm.RoleUser || last.Content != forkPreambleText+"Repeat the code word." {
		t.Errorf("fork's last message = %q", last.Content)
	}
	for _, m := range fork.Messages {
		if len(m.ToolCalls) > 0 {
			t.Error("the in-flight AI message holding the task call must not be in the fork's history")
		}
	}
	forkSecond := recs[2].Request.Messages
	refusal := forkSecond[len(forkSecond)-1]
	if refusal.Role != llm.RoleTool || refusal.Content != refusalText || refusal.IsError {
		t.Errorf("fork's task result = %+v, want the refusal as a normal result", refusal)
	}
	for _, m := range res.State.Messages {
		if strings.Contains(m.Content, "cannot delegate") {
			t.Error("the parent saw the refusal (F22)")
		}
	}
}

// F23-F28: what assembly rejects, with the seed's texts, as *ConfigError.
func TestAssemblyRejections(t *testing.T) {
	m := scripted.New(nil, scripted.Options{})
	webSearch := tool.MustFunc("web_search", "Search.", func(context.Context, *tool.Env, struct{}) (string, error) { return "", nil })
	lsClash := tool.MustFunc("ls", "Mine.", func(context.Context, *tool.Env, struct{}) (string, error) { return "", nil })
	cases := []struct {
		name     string
		cfg      deepagents.Config
		want     string
		subagent string // the spec blamed, "" for Config itself
	}{
		{"F23 invalid mode", deepagents.Config{Subagents: []subagent.Spec{{Name: "x", Description: "d", Mode: "shared"}}},
			"SubAgent 'x' has invalid mode 'shared'; expected 'isolated' or 'fork'", "x"},
		{"F24 fork with skills", deepagents.Config{Subagents: []subagent.Spec{{Name: "x", Description: "d", Mode: subagent.Fork, Skills: []string{"s"}}}},
			"SubAgent 'x' cannot set skills under mode='fork'; the parent's skills are inherited instead.", "x"},
		{"skills on an isolated subagent are refused, not ignored", deepagents.Config{Subagents: []subagent.Spec{{Name: "x", Description: "d", Skills: []string{"s"}}}},
			"SubAgent 'x' sets skills (s), but the agent has no skill sources, so they would be ignored; configure skills or remove them from its spec.", "x"},
		{"F25 string schema", deepagents.Config{Subagents: []subagent.Spec{{Name: "x", Description: "d", ResponseFormat: "Findings"}}},
			"Unsupported schema type: string", "x"},
		{"F25 number schema", deepagents.Config{Subagents: []subagent.Spec{{Name: "x", Description: "d", ResponseFormat: 42}}},
			"Unsupported schema type: int", "x"},
		{"top-level schema", deepagents.Config{ResponseFormat: true}, "Unsupported schema type: bool", ""},
		{"duplicate names", deepagents.Config{Subagents: []subagent.Spec{{Name: "x", Description: "d"}, {Name: "x", Description: "e"}}},
			"SubAgent 'x' is defined twice; subagent names must be unique", "x"},
		{"tool collision", deepagents.Config{Tools: []tool.Tool{webSearch, lsClash}},
			"Tool name(s) ls collide with built-in tools; rename your tools.", ""},
		{"nil tool", deepagents.Config{Tools: []tool.Tool{nil}}, "deepagents: nil tool in Config.Tools or a middleware", ""},
		{"the parent's negative step limit is blamed on the parent", deepagents.Config{MaxSteps: -5},
			"deepagents: MaxSteps is -5; it must be 0 (the default, 500) or more", ""},
		{"negative parallelism", deepagents.Config{MaxParallel: -1},
			"deepagents: MaxParallel is -1; it must be 0 (the default, 16) or more", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Model = m
			_, err := deepagents.New(c.cfg)
			var ce *deepagents.ConfigError
			if !errors.As(err, &ce) || err.Error() != c.want || ce.Subagent != c.subagent {
				t.Errorf("err = %v, want ConfigError %q blaming %q", err, c.want, c.subagent)
			}
			// One shape across constructors: the same type under all three names.
			var ae *agent.ConfigError
			var se *subagent.ConfigError
			if !errors.As(err, &ae) || !errors.As(err, &se) {
				t.Errorf("%T does not match agent.ConfigError and subagent.ConfigError", err)
			}
		})
	}
	if _, err := deepagents.New(deepagents.Config{}); err == nil || err.Error() != "deepagents: Config.Model is required" {
		t.Errorf("no model: %v", err)
	} else if ce := (*deepagents.ConfigError)(nil); !errors.As(err, &ce) {
		t.Errorf("no model: %T is not a ConfigError", err)
	}
	// F26: handoff is accepted as isolated; F27: an empty list keeps general-purpose.
	a, err := deepagents.New(deepagents.Config{Model: m, Subagents: []subagent.Spec{{Name: "h", Description: "d", Mode: subagent.Handoff}}})
	if err != nil {
		t.Fatalf("handoff rejected: %v", err)
	}
	task := a.Tools()[7].(*subagent.Task)
	if h, _ := task.Agent("h"); h == nil || slices.Contains(names(h.ToolSpecs()), "task") {
		t.Error("a handoff subagent must run isolated (no task tool)")
	}
	a, err = deepagents.New(deepagents.Config{Model: m, Subagents: []subagent.Spec{}})
	if err != nil || !slices.Equal(a.Tools()[7].(*subagent.Task).Names(), []string{"general-purpose"}) {
		t.Errorf("empty subagent list: %v", err)
	}
	// F28: the lower layer insists on an explicit, non-empty list.
	_, err = subagent.NewTask(subagent.Config{Model: m})
	var ce *subagent.ConfigError
	if !errors.As(err, &ce) || err.Error() != "At least one subagent must be specified" {
		t.Errorf("NewTask(empty) = %v", err)
	}
}

func names(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// F29 and bad arguments: answered as text, recorded as events, run goes on.
func TestCallTimeMistakesAreAnswered(t *testing.T) {
	tr := replay(t, "unknown-subagent")
	first := tr.ParentMessages[2]
	if first.Content != "We cannot invoke subagent wizard because it does not exist, the only allowed types are general-purpose" {
		t.Errorf("unknown type answer = %q", first.Content)
	}
	var recorded bool
	for _, e := range tr.Events {
		if e.Type == agent.ToolEnd && e.Tool.CallID == "call_w" && e.Tool.IsError && strings.Contains(e.Tool.Result, "wizard") {
			recorded = true
		}
	}
	if !recorded {
		t.Error("the answered mistake must be recorded as an event (F30)")
	}
	tr = replay(t, "bad-task-args")
	if c := tr.ParentMessages[2].Content; strings.Contains(c, ".go:") || strings.Contains(c, "goroutine") || !strings.Contains(c, "subagent_type") {
		t.Errorf("bad-args answer = %q", c)
	}
}

// F18, F19: files cross back (writes and deletes); nothing else does.
func TestStateComingBack(t *testing.T) {
	tr := replay(t, "seed-delegation")
	if tr.Files["/child.md"] != "notes: the answer is 42\n" {
		t.Errorf("child's file not in the parent's state: %v", tr.Files)
	}
	tr = replay(t, "deleting-child")
	if len(tr.Files) != 1 || tr.Files["/keep.md"] != "keep\n" {
		t.Errorf("after the deleting child the parent has %v", tr.Files)
	}
	var deletes []string
	for _, e := range tr.Events {
		if e.Type == agent.FileDelete && e.Agent.String() == "parent" {
			deletes = append(deletes, e.File.Path)
		}
	}
	if !slices.Equal(deletes, []string{"/old.md", "/scratch/one.txt", "/scratch/two.txt"}) {
		t.Errorf("parent file.delete events = %v", deletes)
	}
}

// F31: two task calls in one message run concurrently, measured from the
// recorded model-call intervals, and come back in call order. The scenario's
// model takes 100 ms per call; in a synctest bubble that is fake time, so the
// recorded intervals are exact: both children's calls start at the same
// instant, and the whole run takes 4 call lengths (parent, 2 rounds of the
// children side by side, parent) instead of the 6 of one-by-one children.
func TestParallelDelegation(t *testing.T) {
	testkit.Bubble(t, func(t *testing.T) {
		start := time.Now()
		res, model := invokeScenario(t, "parallel")
		if d := time.Since(start); d != 400*time.Millisecond {
			t.Errorf("the run took %s of fake time, want 400ms (children side by side)", d)
		}
		first := map[string]scripted.Record{}
		for _, r := range model.Records() {
			if r.Who == "general-purpose" && r.Round == 0 {
				first[r.Instance] = r
			}
		}
		ra, rb := first["call_a"], first["call_b"]
		if ra.Start != rb.Start || !(ra.Start < rb.End && rb.Start < ra.End) {
			t.Errorf("children's first calls do not overlap: A %v-%v, B %v-%v", ra.Start, ra.End, rb.Start, rb.End)
		}
		if model.MaxConcurrent() != 2 {
			t.Errorf("max concurrent model calls = %d", model.MaxConcurrent())
		}
		tm := res.State.Messages[2:4]
		if tm[0].ToolCallID != "call_a" || tm[0].Content != "A is done" || tm[1].ToolCallID != "call_b" || tm[1].Content != "B is done" {
			t.Errorf("receipts out of call order: %+v", tm)
		}
	})
}

// A failing sibling gives an error receipt and does not touch the other.
func TestFailingSiblingIsIsolated(t *testing.T) {
	tr := replay(t, "failing-sibling")
	bad, good := tr.ParentMessages[2], tr.ParentMessages[3]
	if bad.Status != "error" || !strings.Contains(bad.Content, "Subagent general-purpose did not finish (status: error") ||
		!strings.Contains(bad.Content, "upstream model overloaded") || !strings.Contains(bad.Content, "/partial.md") {
		t.Errorf("failing receipt = %+v", bad)
	}
	if good.Status != "" || good.Content != "job 2 finished" {
		t.Errorf("sibling receipt = %+v", good)
	}
	statuses := map[string]agent.Status{}
	for _, s := range tr.Subagents {
		statuses[s.CallID] = s.Status
	}
	if statuses["call_bad"] != agent.StatusError || statuses["call_good"] != agent.StatusOK {
		t.Errorf("subagent statuses = %v", statuses)
	}
}

// Two siblings writing one file: no write is silently lost.
func TestSiblingConflict(t *testing.T) {
	tr := replay(t, "sibling-conflict")
	if tr.Files["/summary.md"] != "draft two\n" || tr.Files["/summary.md.conflict-call_1"] != "draft one\n" {
		t.Errorf("files = %v", tr.Files)
	}
	later := tr.ParentMessages[3].Content
	if !strings.Contains(later, "the version of call_2 was kept at /summary.md") || !strings.Contains(later, "saved to /summary.md.conflict-call_1") {
		t.Errorf("later receipt does not explain the conflict: %q", later)
	}
	if strings.Contains(tr.ParentMessages[2].Content, "conflict") {
		t.Error("the note belongs on the later receipt")
	}
	var ev *agent.Event
	for i, e := range tr.Events {
		if e.Type == agent.FileConflict {
			ev = &tr.Events[i]
		}
	}
	if ev == nil || ev.Conflict.Path != "/summary.md" || ev.Conflict.Kept != "call_2" || ev.Conflict.Other != "call_1" {
		t.Errorf("file.conflict event = %+v", ev)
	}
}

func TestChildLimitAndTimeout(t *testing.T) {
	tr := replay(t, "child-limit")
	r := tr.ParentMessages[2]
	if r.Status != "error" || !strings.Contains(r.Content, "status: limit") || !strings.Contains(r.Content, "Its last message: Still going.") {
		t.Errorf("limit receipt = %+v", r)
	}
	if tr.Files["/progress.md"] != "step 2\n" {
		t.Errorf("what the child managed must be kept: %v", tr.Files)
	}

	// The child's model would take 5 s, its timeout is 50 ms: fake time in a
	// synctest bubble, so the timeout is exact and the test instant.
	testkit.Bubble(t, func(t *testing.T) {
		delay := 5000.0
		m := scripted.New(scripted.Script{
			"parent": {Steps: []scripted.Step{{ToolCalls: []scripted.StepCall{{ID: "c", Name: "task", Args: json.RawMessage(`{"description":"slow","subagent_type":"slow"}`)}}}, {Content: "ok"}}},
			"slow":   {Steps: []scripted.Step{{Content: "too late", DelayMS: &delay}}},
		}, scripted.Options{})
		a, err := deepagents.New(deepagents.Config{Model: m, Subagents: []subagent.Spec{{Name: "slow", Description: "Slow.", Timeout: 50 * time.Millisecond}}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := a.Invoke(t.Context(), agent.Prompt("go"))
		if err != nil || res.Status != agent.StatusOK {
			t.Fatalf("a child's timeout must not fail the parent: %v", err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("the run took %s of fake time, want the child's 50ms timeout", d)
		}
		if c := res.State.Messages[2].Content; c != "Subagent slow did not finish (status: limit; timed out after 50ms)." {
			t.Errorf("timeout receipt = %q", c)
		}
		if child, ok := res.Child("c"); !ok || child.Status != agent.StatusLimit || !errors.Is(child.Err(), agent.ErrLimit) {
			t.Errorf("child result = %+v", child)
		}
	})
}

// Visibility: child events reach the parent's stream tagged with the agent
// path and the task call; the child's transcript is kept; usage rolls up.
func TestChildEventsTranscriptAndUsage(t *testing.T) {
	sc := loadScenario(t, "seed-delegation")
	a, err := sc.Build(sc.Model())
	if err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Input{Messages: sc.Input}), func(e agent.Event) { evs = append(evs, e) })
	if err != nil {
		t.Fatal(err)
	}
	const childPath = "parent / general-purpose#call_1"
	var start, end *agent.SubagentInfo
	childEvents := 0
	for _, e := range evs {
		switch {
		case e.Type == agent.SubagentStart:
			start = e.Subagent
		case e.Type == agent.SubagentEnd:
			end = e.Subagent
		case e.Agent.String() == childPath:
			childEvents++
			if e.TaskCall != "call_1" {
				t.Errorf("child event %s has task_call %q", e.Type, e.TaskCall)
			}
		}
	}
	if childEvents < 8 {
		t.Errorf("only %d child events reached the parent's stream", childEvents)
	}
	if start == nil || start.Path.String() != childPath || start.Task == "" || end == nil || end.Status != agent.StatusOK || end.Rounds != 2 || end.Usage.InputTokens == 0 {
		t.Errorf("subagent start %+v end %+v", start, end)
	}
	child, ok := res.Child("call_1")
	if !ok || len(child.State.Messages) != 4 || child.State.Messages[1].Content != "I just wrote a file." {
		t.Fatalf("child transcript not kept: %+v", child)
	}
	if len(res.State.Messages) != 4 {
		t.Errorf("parent messages: %d", len(res.State.Messages))
	}
	own := res.UsageByAgent["parent"]
	kid := res.UsageByAgent[childPath]
	if own.InputTokens == 0 || kid.InputTokens == 0 || res.Usage != own.Add(kid) {
		t.Errorf("usage tree: total %+v, parent %+v, child %+v", res.Usage, own, kid)
	}
}

// Cancelling the parent's context stops every running child: children run
// on workers side by side, and a lone child on the parent's own goroutine.
func TestParentCancellationStopsChildren(t *testing.T) {
	long := 60000.0
	calls := []scripted.StepCall{
		{ID: "c1", Name: "task", Args: json.RawMessage(`{"description":"one","subagent_type":"general-purpose"}`)},
		{ID: "c2", Name: "task", Args: json.RawMessage(`{"description":"two","subagent_type":"general-purpose"}`)},
	}
	for _, n := range []int{2, 1} {
		m := scripted.New(scripted.Script{
			"parent":          {Steps: []scripted.Step{{ToolCalls: calls[:n]}}},
			"general-purpose": {Steps: []scripted.Step{{Content: "never", DelayMS: &long}}},
		}, scripted.Options{})
		a, err := deepagents.New(deepagents.Config{Model: m})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		started := 0
		done := make(chan *agent.Result, 1)
		go func() {
			res, _ := agent.Drain(a.Run(ctx, agent.Prompt("go")), func(e agent.Event) {
				if e.Type == agent.ModelRequest && e.Agent.String() != "parent" {
					if started++; started == n {
						cancel()
					}
				}
			})
			done <- res
		}()
		select {
		case res := <-done:
			if res.Status != agent.StatusCancelled {
				t.Errorf("%d children: status %s", n, res.Status)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d children: cancellation did not stop them", n)
		}
		cancel()
	}
}

// The README's library example works as documented on the scripted model.
func TestReadmeExample(t *testing.T) {
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{{Content: "Hello!"}}}}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("Say hello"))
	if err != nil || res.FinalText() != "Hello!" {
		t.Fatalf("%v %q", err, res.FinalText())
	}
}

// panicModel panics on every call: a broken model must not take the parent
// (or a sibling) down.
type panicModel struct{}

func (panicModel) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	panic("model exploded")
}
func (panicModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return llm.StreamOf(ctx, req, panicModel{}.Generate)
}

func TestPanickingChildIsIsolated(t *testing.T) {
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{{ToolCalls: []scripted.StepCall{
			{ID: "c_bad", Name: "task", Args: json.RawMessage(`{"description":"x","subagent_type":"broken"}`)},
			{ID: "c_ok", Name: "task", Args: json.RawMessage(`{"description":"y","subagent_type":"general-purpose"}`)},
		}}, {Content: "carried on"}}},
		"general-purpose": {Steps: []scripted.Step{{Content: "fine"}}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Subagents: []subagent.Spec{{Name: "broken", Description: "Breaks.", Model: panicModel{}}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil || res.Status != agent.StatusOK || res.FinalText() != "carried on" {
		t.Fatalf("parent: %v %s %q", err, res.Status, res.FinalText())
	}
	bad, ok := res.State.Messages[2], res.State.Messages[3]
	if !bad.IsError || !strings.Contains(bad.Content, "status: error; the subagent crashed: model exploded") || strings.Contains(bad.Content, "goroutine") {
		t.Errorf("panicking child's receipt = %q", bad.Content)
	}
	if ok.Content != "fine" {
		t.Errorf("sibling receipt = %q", ok.Content)
	}
}

// loadScenario reads a checked-in scenario of the repository's testdata.
func loadScenario(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "testdata", "scenarios", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// replay runs a checked-in scenario and returns its transcript.
func replay(t *testing.T, name string) *scenario.Transcript {
	t.Helper()
	tr, err := loadScenario(t, name).Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
