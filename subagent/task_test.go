package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/internal/testkit"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

var writeTool = tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in writeIn) (string, error) {
	return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
})

var noteTool = tool.MustFunc("note", "Take a note.", func(context.Context, *tool.Env, struct{}) (string, error) { return "noted", nil })

func step(content string, calls ...scripted.StepCall) scripted.Step {
	return scripted.Step{Content: content, ToolCalls: calls}
}

func tc(name, args string) scripted.StepCall {
	return scripted.StepCall{Name: name, Args: json.RawMessage(args)}
}

func newTask(t *testing.T, cfg subagent.Config) *subagent.Task {
	t.Helper()
	if cfg.BaseTools == nil {
		cfg.BaseTools = []tool.Tool{writeTool}
	}
	task, err := subagent.NewTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// call is one task call run directly, as the parent loop would run it.
type call struct {
	res    tool.Result
	events []agent.Event
	files  *vfs.Memory
	child  *agent.Result // from subagent.end
}

func (c *call) ofType(typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range c.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func runTask(t *testing.T, ctx context.Context, task *subagent.Task, callID, args string, req *llm.Request) *call {
	t.Helper()
	c := &call{files: vfs.NewMemory(nil)}
	env := &tool.Env{CallID: callID, Agent: "parent", Files: c.files, Request: req}
	res, child, err := task.RunNested(ctx, env, json.RawMessage(args), agent.Host{Emit: func(e agent.Event) { c.events = append(c.events, e) }})
	if err != nil {
		t.Fatalf("task returned a Go error: %v", err)
	}
	c.res, c.child = res, child
	// The run returned and the run the subagent.end event shows observers
	// are one and the same; with no child run there is no end event.
	ends := c.ofType(agent.SubagentEnd)
	switch {
	case child == nil && len(ends) != 0:
		t.Errorf("no child run returned, but %d subagent.end events", len(ends))
	case child != nil && (len(ends) != 1 || ends[0].Subagent.Run != child):
		t.Errorf("the returned child run is not the one subagent.end carries (%d end events)", len(ends))
	}
	return c
}

func TestListingAndNames(t *testing.T) {
	m := scripted.New(nil, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{
		subagent.GeneralPurpose(),
		{Name: "researcher", Description: "Finds sources."},
		{Name: "continuer", Description: "Picks up where you are.", Mode: subagent.Fork},
	}})
	if got := task.Names(); !slices.Equal(got, []string{"general-purpose", "researcher", "continuer"}) {
		t.Errorf("Names() = %v", got)
	}
	spec := task.Spec()
	if spec.Name != "task" {
		t.Errorf("tool name %q", spec.Name)
	}
	want := "Subagents:\n" +
		"- general-purpose: A general agent with the same file tools as you. Use it for research, searching many files, and multi-step work whose details would crowd your own context.\n" +
		"- researcher: Finds sources.\n" +
		"- continuer: Picks up where you are. (fork: inherits your full conversation and system prompt, so the brief can be short)\n\nUsage:"
	if !strings.Contains(spec.Description, want) {
		t.Errorf("listing:\n%s\nwant it to contain:\n%s", spec.Description, want)
	}
	var params struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(spec.Parameters, &params); err != nil || !slices.Equal(params.Required, []string{"description", "subagent_type"}) {
		t.Errorf("parameters %s", spec.Parameters)
	}
	if a, ok := task.Agent("researcher"); !ok || a.Name() != "researcher" {
		t.Error("Agent(researcher) missing")
	}
	if _, ok := task.Agent("nobody"); ok {
		t.Error("Agent(nobody) found")
	}
}

func TestUnknownSubagentAndBadArguments(t *testing.T) {
	m := scripted.New(nil, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{subagent.GeneralPurpose(), {Name: "b", Description: "Bee."}}})
	cases := []struct {
		name, args, want string
	}{
		{"unknown type", `{"description":"x","subagent_type":"wizard"}`,
			"We cannot invoke subagent wizard because it does not exist, the only allowed types are general-purpose, b"},
		{"missing type", `{"description":"x"}`, `missing required argument "subagent_type"`},
		{"not an object", `["x"]`, "Invalid arguments for task"},
		{"cut-off JSON", `{"description":"x","subagent_`, "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runTask(t, t.Context(), task, "c1", c.args, nil)
			if !got.res.IsError || !strings.Contains(got.res.Content, c.want) {
				t.Errorf("result = %+v, want an error containing %q", got.res, c.want)
			}
			if len(got.ofType(agent.SubagentStart)) != 0 || len(m.Records()) != 0 {
				t.Error("no subagent may start for a bad call")
			}
		})
	}
}

// Extra arguments are dropped and recorded, never passed on: a model that
// adds "mode": "fork" still gets the isolated subagent it named.
func TestUnknownExtraArgumentsAreIgnoredAndRecorded(t *testing.T) {
	m := scripted.New(scripted.Script{"general-purpose": {Steps: []scripted.Step{step("report")}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
	parentReq := &llm.Request{System: "Parent prompt.", Messages: []llm.Message{llm.User("the user's secret question")}}
	got := runTask(t, t.Context(), task, "c1",
		`{"mode":"fork","description":"Look it up.","subagent_type":"general-purpose","extra":{"deep":[1,2]}}`, parentReq)
	if got.res.IsError || got.res.Content != "report" {
		t.Fatalf("receipt = %+v, want the child's report", got.res)
	}
	recs := m.Records()
	if len(recs) != 1 {
		t.Fatalf("%d model calls", len(recs))
	}
	req := recs[0].Request
	if len(req.Messages) != 1 || req.Messages[0].Content != "Look it up." || strings.Contains(req.System, "Parent prompt.") {
		t.Errorf("the child was not isolated: system %q, messages %+v", req.System, req.Messages)
	}
	for _, s := range req.Tools {
		if s.Name == "task" {
			t.Error("an isolated child got the task tool")
		}
	}
	notices := got.ofType(agent.ToolProgress)
	if len(notices) != 1 {
		t.Fatalf("%d tool.progress events, want 1 recording the ignored arguments", len(notices))
	}
	n := notices[0]
	if n.Agent.String() != "parent" || n.Tool.CallID != "c1" || n.Tool.Name != "task" || !slices.Equal(n.Tool.Ignored, []string{"extra", "mode"}) {
		t.Errorf("notice = %+v %+v", n, n.Tool)
	}
	if n.Tool.Text != `ignored 2 argument(s) that task does not take: "extra", "mode"` {
		t.Errorf("notice text = %q", n.Tool.Text)
	}
	for _, e := range got.events {
		if b, _ := json.Marshal(e); e.Agent.String() != "parent" && (strings.Contains(string(b), `"fork"`) || strings.Contains(string(b), "deep")) {
			t.Errorf("an ignored argument reached the child: %s", b)
		}
	}

	// Without extras there is no notice; a flood of names is bounded.
	got = runTask(t, t.Context(), newTask(t, subagent.Config{Model: scripted.New(scripted.Script{"general-purpose": {Steps: []scripted.Step{step("ok")}}}, scripted.Options{}),
		Subagents: []subagent.Spec{subagent.GeneralPurpose()}}), "c2", `{"description":"d","subagent_type":"general-purpose"}`, nil)
	if len(got.ofType(agent.ToolProgress)) != 0 {
		t.Error("a notice without ignored arguments")
	}
	var b strings.Builder
	b.WriteString(`{"description":"d","subagent_type":"general-purpose"`)
	for i := range 30 {
		fmt.Fprintf(&b, `,"k%02d_%s":1`, i, strings.Repeat("x", 200))
	}
	b.WriteString("}")
	got = runTask(t, t.Context(), newTask(t, subagent.Config{Model: scripted.New(scripted.Script{"general-purpose": {Steps: []scripted.Step{step("ok")}}}, scripted.Options{}),
		Subagents: []subagent.Spec{subagent.GeneralPurpose()}}), "c3", b.String(), nil)
	notice := got.ofType(agent.ToolProgress)[0].Tool
	if got.res.Content != "ok" || len(notice.Ignored) != 20 || len(notice.Ignored[0]) > 104 || !strings.HasSuffix(notice.Text, " and 10 more") ||
		!strings.HasPrefix(notice.Text, "ignored 30 argument(s)") {
		t.Errorf("bounded notice: %d names, first %d bytes, text %.80q…%q", len(notice.Ignored), len(notice.Ignored[0]), notice.Text, notice.Text[len(notice.Text)-20:])
	}
}

func TestReceipts(t *testing.T) {
	schema := map[string]any{"type": "object", "title": "Answer", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}}
	cases := []struct {
		name   string
		steps  []scripted.Step
		format any
		want   string
	}{
		{"last text", []scripted.Step{step("working", tc("note", `{}`)), step("the answer is 42")}, nil, "the answer is 42"},
		{"whitespace-only last message is not the report", []scripted.Step{step("the real report", tc("note", `{}`)), step(" \n\t ")}, nil, "the real report"},
		{"only whitespace anywhere", []scripted.Step{step("  ", tc("note", `{}`)), step("\n")}, nil, "The subagent finished without writing a final report."},
		{"no text at all", []scripted.Step{step("", tc("note", `{}`)), step("")}, nil, "The subagent finished without writing a final report."},
		{"structured", []scripted.Step{step("", tc("Answer", `{ "n" : 7 }`))}, schema, `{"n":7}`},
		{"structured, after reasoning", []scripted.Step{{Reasoning: "n must be 7", Content: "here it is", ToolCalls: []scripted.StepCall{tc("Answer", `{"n":7}`)}}}, schema, `{"n":7}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"worker": {Steps: c.steps}}, scripted.Options{})
			task := newTask(t, subagent.Config{Model: m, DefaultTools: []tool.Tool{noteTool},
				Subagents: []subagent.Spec{{Name: "worker", Description: "Works.", ResponseFormat: c.format}}})
			got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, nil)
			if got.res.IsError || got.res.Content != c.want {
				t.Errorf("receipt = %q (error %v), want %q", got.res.Content, got.res.IsError, c.want)
			}
			if c.format != nil && string(got.res.Structured) != c.want {
				t.Errorf("structured = %s", got.res.Structured)
			}
			if got.child == nil || got.child.Status != agent.StatusOK {
				t.Errorf("child result = %+v", got.child)
			}
		})
	}
}

func TestFailureReceipts(t *testing.T) {
	cases := []struct {
		name   string
		spec   subagent.Spec
		steps  []scripted.Step
		status agent.Status
		want   string
	}{
		{"model error after some work", subagent.Spec{}, []scripted.Step{
			step("Halfway there.", tc("write", `{"path":"/partial.md","content":"half"}`)),
			{Error: "upstream overloaded"},
		}, agent.StatusError, "Subagent worker did not finish (status: error; model call 2 of parent / worker#c1 failed: upstream overloaded).\n" +
			"Its last message: Halfway there.\nFiles it changed were kept: /partial.md."},
		{"step limit", subagent.Spec{MaxSteps: 1}, []scripted.Step{
			step("Step one.", tc("note", `{}`)), step("never"),
		}, agent.StatusLimit, "Subagent worker did not finish (status: limit; stopped after 1 model call (the step limit)).\nIts last message: Step one."},
		{"script runs out at once", subagent.Spec{}, nil, agent.StatusError,
			"Subagent worker did not finish (status: error; model call 1 of parent / worker#c1 failed: scripted model: the script ran out: agent \"worker\" (instance c1) has no step for round 0 (it has 0))."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"worker": {Steps: c.steps}}, scripted.Options{})
			c.spec.Name, c.spec.Description = "worker", "Works."
			task := newTask(t, subagent.Config{Model: m, DefaultTools: []tool.Tool{noteTool}, Subagents: []subagent.Spec{c.spec}})
			got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, nil)
			if !got.res.IsError || got.res.Content != c.want {
				t.Errorf("receipt =\n%q\nwant\n%q", got.res.Content, c.want)
			}
			ends := got.ofType(agent.SubagentEnd)
			if len(ends) != 1 || ends[0].Subagent.Status != c.status || got.child.Status != c.status || got.child.Err() == nil {
				t.Errorf("subagent.end = %+v", ends)
			}
		})
	}
	// What the failed child wrote is in the parent's files.
	m := scripted.New(scripted.Script{"worker": {Steps: []scripted.Step{step("", tc("write", `{"path":"/partial.md","content":"half"}`)), {Error: "boom"}}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "worker", Description: "Works."}}})
	got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, nil)
	if f, ok := got.files.Files()["/partial.md"]; !ok || f.Content != "half" {
		t.Errorf("files after a failed child: %v", got.files.Files())
	}
}

// A timed-out child ends with status limit and says so. Runs in a synctest
// bubble: the model's 5 s delay and the 50 ms timeout are on its fake clock.
func TestTimeout(t *testing.T) {
	testkit.Bubble(t, func(t *testing.T) {
		slow := 5000.0
		m := scripted.New(scripted.Script{"slow": {Steps: []scripted.Step{{Content: "too late", DelayMS: &slow}}}}, scripted.Options{})
		task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "slow", Description: "Slow.", Timeout: 50 * time.Millisecond}}})
		start := time.Now()
		got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"slow"}`, nil)
		if got.res.Content != "Subagent slow did not finish (status: limit; timed out after 50ms)." || !got.res.IsError {
			t.Errorf("receipt = %q", got.res.Content)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("the child ran for %s of fake time, want exactly its 50ms timeout", d)
		}
		if err := got.child.Err(); !errors.Is(err, agent.ErrLimit) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("child error = %v", err)
		}
	})
	// The parent's own cancellation is not a timeout: status cancelled.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m := scripted.New(scripted.Script{"slow": {Steps: []scripted.Step{step("x")}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "slow", Description: "Slow.", Timeout: time.Hour}}})
	got := runTask(t, ctx, task, "c1", `{"description":"go","subagent_type":"slow"}`, nil)
	if !strings.HasPrefix(got.res.Content, "Subagent slow did not finish (status: cancelled; context canceled)") {
		t.Errorf("receipt = %q", got.res.Content)
	}
}

// A fork sees the parent's prompt and messages; its own task call is
// answered with a fixed refusal (a normal result) and starts nothing.
func TestForkRefusesToDelegate(t *testing.T) {
	m := scripted.New(scripted.Script{"forker": {Steps: []scripted.Step{
		step("", tc("task", `{"description":"deeper","subagent_type":"forker"}`)),
		step("done myself"),
	}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, ForkBefore: []tool.Tool{writeTool}, ForkAfter: []tool.Tool{noteTool},
		Subagents: []subagent.Spec{{Name: "forker", Description: "Forks.", Mode: subagent.Fork, SystemPrompt: "Be brief."}}})
	parentReq := &llm.Request{System: "Parent prompt.", Messages: []llm.Message{llm.User("question")}}
	got := runTask(t, t.Context(), task, "c1", `{"description":"Do the rest.","subagent_type":"forker"}`, parentReq)
	if got.res.Content != "done myself" || got.res.IsError {
		t.Fatalf("receipt = %+v", got.res)
	}
	recs := m.Records()
	if len(recs) != 2 {
		t.Fatalf("%d model calls; the fork's own task call must start nothing", len(recs))
	}
	first := recs[0].Request
	// The fork's own prompt comes after the parent's cached prefix.
	if first.System != "Parent prompt." || first.SystemTail != "Be brief." {
		t.Errorf("fork system = %q, tail = %q", first.System, first.SystemTail)
	}
	if len(first.Messages) != 2 || first.Messages[0].Content != "question" ||
		!strings.HasSuffix(first.Messages[1].Content, "\n\nTask: Do the rest.") {
		t.Errorf("fork messages = %+v", first.Messages)
	}
	var names []string
	for _, s := range first.Tools {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"write", "task", "note"}) {
		t.Errorf("fork tools = %v, want the parent's order with task in place", names)
	}
	refusal := recs[1].Request.Messages[len(recs[1].Request.Messages)-1]
	const want = "You are a subagent and cannot delegate to another subagent. Complete this task yourself instead of calling this tool again."
	if refusal.Role != llm.RoleTool || refusal.Content != want || refusal.IsError {
		t.Errorf("fork's task result = %+v, want the refusal %q as a normal result", refusal, want)
	}
	if n := len(got.ofType(agent.SubagentStart)); n != 1 {
		t.Errorf("%d subagent.start events, want only the fork's own", n)
	}
}

// Children inherit the parent's default step limit unless their spec sets
// one, and every instance has a budget of its own.
func TestStepLimitInheritance(t *testing.T) {
	loop := scripted.Options{Func: func(ci llm.CallInfo, _ *llm.Request) (scripted.Step, error) {
		return step("still going", tc("note", `{}`)), nil
	}}
	cases := []struct {
		name             string
		parent, spec     int
		wantRounds       int
		wantStatusReport string
	}{
		{"parent's limit", 3, 0, 3, "stopped after 3 model calls"},
		{"spec's own limit", 3, 2, 2, "stopped after 2 model calls"},
		{"the default, 500", 0, 0, 500, "stopped after 500 model calls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := newTask(t, subagent.Config{Model: scripted.New(nil, loop), MaxSteps: c.parent, DefaultTools: []tool.Tool{noteTool},
				Subagents: []subagent.Spec{{Name: "looper", Description: "Loops.", MaxSteps: c.spec}}})
			got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"looper"}`, nil)
			if got.child.Rounds != c.wantRounds || got.child.Status != agent.StatusLimit || !strings.Contains(got.res.Content, c.wantStatusReport) {
				t.Errorf("child made %d rounds (%s), receipt %q; want limit after %d", got.child.Rounds, got.child.Status, got.res.Content, c.wantRounds)
			}
		})
	}
	// Two instances of one subagent with a budget of 2 each: both finish.
	m := scripted.New(scripted.Script{"worker": {Steps: []scripted.Step{step("", tc("note", `{}`)), step("finished")}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, MaxSteps: 2, DefaultTools: []tool.Tool{noteTool},
		Subagents: []subagent.Spec{{Name: "worker", Description: "Works."}}})
	for _, id := range []string{"c1", "c2"} {
		if got := runTask(t, t.Context(), task, id, `{"description":"go","subagent_type":"worker"}`, nil); got.res.Content != "finished" {
			t.Errorf("instance %s: receipt %q; every instance must have its own budget", id, got.res.Content)
		}
	}
}

// Children run their tool calls under the parent's parallelism bound. In a
// synctest bubble every call the bound lets in is inside the tool before the
// fake clock moves, so the peak in-flight count is exactly the bound.
func TestParallelismInheritance(t *testing.T) {
	for _, c := range []struct {
		bound, want int
	}{{1, 1}, {2, 2}, {0, 4}} {
		t.Run(fmt.Sprint("bound ", c.bound), func(t *testing.T) {
			testkit.Bubble(t, func(t *testing.T) {
				holder := testkit.NewHolder()
				hold := holder.Tool
				calls := []scripted.StepCall{tc("hold", `{}`), tc("hold", `{}`), tc("hold", `{}`), tc("hold", `{}`)}
				m := scripted.New(scripted.Script{"worker": {Steps: []scripted.Step{step("", calls...), step("done")}}}, scripted.Options{NoUsage: true})
				task := newTask(t, subagent.Config{Model: m, MaxParallel: c.bound, DefaultTools: []tool.Tool{hold},
					Subagents: []subagent.Spec{{Name: "worker", Description: "Works."}}})
				got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"worker"}`, nil)
				if got.res.Content != "done" {
					t.Fatalf("receipt %q", got.res.Content)
				}
				if holder.Peak() != c.want {
					t.Errorf("peak of the child's in-flight calls = %d, want %d", holder.Peak(), c.want)
				}
			})
		})
	}
}

func TestAssemblyErrors(t *testing.T) {
	m := scripted.New(nil, scripted.Options{})
	cases := []struct {
		name     string
		cfg      subagent.Config
		want     string
		subagent string
	}{
		{"empty list", subagent.Config{Model: m}, "At least one subagent must be specified", ""},
		{"skills on an isolated subagent", subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "x", Description: "d", Skills: []string{"pdf", "csv"}}}},
			"SubAgent 'x' sets skills (pdf, csv), but the agent has no skill sources, so they would be ignored; configure skills or remove them from its spec.", "x"},
		{"skills on a fork", subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "x", Description: "d", Mode: subagent.Fork, Skills: []string{"s"}}}},
			"SubAgent 'x' cannot set skills under mode='fork'; the parent's skills are inherited instead.", "x"},
		{"invalid mode", subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "x", Description: "d", Mode: "shared"}}},
			"SubAgent 'x' has invalid mode 'shared'; expected 'isolated' or 'fork'", "x"},
		{"negative steps", subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "x", Description: "d", MaxSteps: -5}}},
			"SubAgent 'x' has a step limit of -5; it must be 0 (the parent's limit) or more", "x"},
		{"negative timeout", subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "x", Description: "d", Timeout: -time.Second}}},
			"SubAgent 'x' has a negative timeout (-1s); use 0 for none", "x"},
		{"negative default steps", subagent.Config{Model: m, MaxSteps: -5, Subagents: []subagent.Spec{{Name: "x", Description: "d"}}},
			"the subagents' default step limit is -5; it must be 0 (the default, 500) or more", ""},
		{"negative parallelism", subagent.Config{Model: m, MaxParallel: -1, Subagents: []subagent.Spec{{Name: "x", Description: "d"}}},
			"the subagents' parallelism bound is -1; it must be 0 (the default, 16) or more", ""},
		{"no model", subagent.Config{Subagents: []subagent.Spec{{Name: "x", Description: "d"}}},
			"SubAgent 'x' has no model, and there is no parent model to inherit", "x"},
		{"unsupported schema", subagent.Config{Model: m, Subagents: []subagent.Spec{{Name: "x", Description: "d", ResponseFormat: 1.5}}},
			"Unsupported schema type: float64", "x"},
		{"child assembly", subagent.Config{Model: m, DefaultTools: []tool.Tool{noteTool, noteTool}, Subagents: []subagent.Spec{{Name: "x", Description: "d"}}},
			`SubAgent 'x': agent: two tools are named "note"`, "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, err := subagent.NewTask(c.cfg)
			var ce *agent.ConfigError
			if task != nil || !errors.As(err, &ce) || err.Error() != c.want || ce.Subagent != c.subagent {
				t.Errorf("NewTask = %v; want a ConfigError %q blaming %q", err, c.want, c.subagent)
			}
		})
	}
}

// FuzzKnownArgs: dropping unknown arguments never panics, keeps the known
// ones exactly, reports every dropped name once, sorted, and leaves input
// that is not a JSON object untouched.
func FuzzKnownArgs(f *testing.F) {
	for _, seed := range []string{
		`{"description":"d","subagent_type":"general-purpose"}`,
		`{"description":"d","subagent_type":"x","mode":"fork"}`,
		`{"mode":"fork"}`, `{}`, `null`, `[1,2]`, `"text"`, `{"description":`, ``,
		`{"description":"d","description":"e","z":1,"a":{"b":[null]}}`,
		`{"subagent_type":"x","\u00e9":1,"\ud800":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		clean, ignored := subagent.KnownArgs(raw)
		var before map[string]json.RawMessage
		if json.Unmarshal(raw, &before) != nil || before == nil {
			if string(clean) != string(raw) || ignored != nil {
				t.Fatalf("non-object %q changed to %q (ignored %v)", raw, clean, ignored)
			}
			return
		}
		if len(ignored) == 0 {
			if string(clean) != string(raw) {
				t.Fatalf("nothing ignored but %q became %q", raw, clean)
			}
			return
		}
		if !slices.IsSorted(ignored) || len(slices.Compact(slices.Clone(ignored))) != len(ignored) {
			t.Fatalf("ignored names not sorted and unique: %q", ignored)
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(clean, &after); err != nil {
			t.Fatalf("cleaned arguments are not an object: %q: %v", clean, err)
		}
		for k, v := range before {
			switch known := k == "description" || k == "subagent_type"; {
			case known && compact(t, after[k]) != compact(t, v):
				t.Fatalf("known argument %s changed: %s -> %s", k, v, after[k])
			case !known && !slices.Contains(ignored, k):
				t.Fatalf("unknown argument %q neither kept nor reported", k)
			}
		}
		for k := range after {
			if k != "description" && k != "subagent_type" {
				t.Fatalf("unknown argument %q kept", k)
			}
		}
		for _, k := range ignored {
			if _, ok := before[k]; !ok || k == "description" || k == "subagent_type" {
				t.Fatalf("ignored %q, which was not an unknown argument", k)
			}
		}
		if len(after)+len(ignored) != len(before) {
			t.Fatalf("%d kept + %d ignored != %d given", len(after), len(ignored), len(before))
		}
	})
}

func compact(t *testing.T, v json.RawMessage) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Outside an agent loop (Task.Run, no host) the notice about ignored
// arguments goes to the call's Progress callback.
func TestRunOutsideALoopReportsIgnoredArguments(t *testing.T) {
	m := scripted.New(scripted.Script{"general-purpose": {Steps: []scripted.Step{step("fine")}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, Subagents: []subagent.Spec{subagent.GeneralPurpose()}})
	var progress []string
	env := &tool.Env{CallID: "c9", Files: vfs.NewMemory(nil), Progress: func(s string) { progress = append(progress, s) }}
	res, err := task.Run(t.Context(), env, json.RawMessage(`{"description":"d","subagent_type":"general-purpose","mode":"fork"}`))
	if err != nil || res.Content != "fine" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if want := []string{`ignored 1 argument(s) that task does not take: "mode"`}; !slices.Equal(progress, want) {
		t.Errorf("progress = %q, want %q", progress, want)
	}
}

// A child that inherits the parent's gates is not warned about gates on
// tools it was never given; a gate its own spec names wrongly is reported.
func TestInheritedGatesFitTheChild(t *testing.T) {
	gates := map[string]approve.Policy{"write": {}, "shell": {}}
	m := scripted.New(scripted.Script{"inherits": {Steps: []scripted.Step{step("done")}}, "own": {Steps: []scripted.Step{step("done")}}}, scripted.Options{})
	task := newTask(t, subagent.Config{Model: m, InterruptOn: gates, DefaultTools: []tool.Tool{noteTool},
		Subagents: []subagent.Spec{
			{Name: "inherits", Description: "Inherits."},
			{Name: "own", Description: "Its own gates.", InterruptOn: map[string]approve.Policy{"wirte": {}, "write": {}}},
		}})
	got := runTask(t, t.Context(), task, "c1", `{"description":"go","subagent_type":"inherits"}`, nil)
	if w := got.ofType(agent.Warning); len(w) != 0 {
		t.Errorf("a child warned about inherited gates: %+v", w[0].Warning)
	}
	got = runTask(t, t.Context(), task, "c2", `{"description":"go","subagent_type":"own"}`, nil)
	w := got.ofType(agent.Warning)
	if len(w) != 1 || !slices.Equal(w[0].Warning.Tools, []string{"wirte"}) {
		t.Fatalf("warnings %v, want one naming wirte", w)
	}
}
