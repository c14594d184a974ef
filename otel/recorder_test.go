package daotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/runner"
)

var update = flag.Bool("update", false, "rewrite the golden span trees in testdata/golden")

// harness runs agents with a recorder feeding an in-memory exporter.
type harness struct {
	t   *testing.T
	exp *tracetest.InMemoryExporter
	tp  *sdktrace.TracerProvider
}

func newHarness(t *testing.T) *harness {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &harness{t: t, exp: exp, tp: tp}
}

func buildAgent(t *testing.T, script string, cfg deepagents.Config) *agent.Agent {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	cfg.Model = scripted.New(s, scripted.Options{})
	cfg.Middleware = append(cfg.Middleware, daotel.Middleware())
	// Isolated subagents run their own middleware: the chat spans of their
	// model calls come from an otel middleware of their own.
	cfg.Subagents = daotel.Subagents(deepagents.WithGeneralPurpose(cfg.Subagents))
	a, err := deepagents.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// run drives one run of a on thread with a fresh recorder and returns its
// result and the recorder.
func (h *harness) run(a *agent.Agent, saver checkpoint.Saver, thread string, in agent.Input, capture bool, opts ...agent.RunOption) (*agent.Result, error, *daotel.Recorder) {
	h.t.Helper()
	ctx := context.Background()
	rec := daotel.NewRecorder(ctx, daotel.Config{
		TracerProvider: h.tp, ConversationID: thread, Model: "scripted-model", Provider: "scripted",
		CaptureContent: &capture,
	})
	ctx = daotel.WithRecorder(ctx, rec)
	opts = append(opts, runner.Checkpoints(saver, thread))
	res, err := agent.Drain(rec.Observe(a.Run(ctx, in, opts...)), nil)
	return res, err, rec
}

// tree renders the exported spans as an indented tree: name, kind, status,
// the attributes (sorted; usage counts included), events and links. Times
// are left out; children are sorted by name and tool call id so that
// parallel work renders the same every time.
func tree(spans tracetest.SpanStubs) string {
	byID := map[trace.SpanID]tracetest.SpanStub{}
	kids := map[trace.SpanID][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	for _, s := range spans {
		if _, ok := byID[s.Parent.SpanID()]; ok && s.Parent.IsValid() {
			kids[s.Parent.SpanID()] = append(kids[s.Parent.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	order := func(list []tracetest.SpanStub) {
		slices.SortStableFunc(list, func(a, b tracetest.SpanStub) int {
			return strings.Compare(sortKey(a), sortKey(b))
		})
	}
	var b strings.Builder
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		pad := strings.Repeat("  ", depth)
		fmt.Fprintf(&b, "%s%s [%s]", pad, s.Name, s.SpanKind)
		if s.Status.Code.String() != "Unset" {
			fmt.Fprintf(&b, " status=%s %q", s.Status.Code, s.Status.Description)
		}
		b.WriteString("\n")
		attrs := slices.Clone(s.Attributes)
		slices.SortFunc(attrs, func(x, y attribute.KeyValue) int { return strings.Compare(string(x.Key), string(y.Key)) })
		for _, kv := range attrs {
			fmt.Fprintf(&b, "%s  . %s=%s\n", pad, kv.Key, kv.Value.Emit())
		}
		for _, e := range s.Events {
			fmt.Fprintf(&b, "%s  ! %s\n", pad, e.Name)
		}
		for _, l := range s.Links {
			target := "?"
			if t, ok := byID[l.SpanContext.SpanID()]; ok {
				target = t.Name + " of conversation " + attrOf(t, "gen_ai.conversation.id")
			}
			var la []string
			for _, kv := range l.Attributes {
				la = append(la, string(kv.Key)+"="+kv.Value.Emit())
			}
			fmt.Fprintf(&b, "%s  -> link to %s (%s)\n", pad, target, strings.Join(la, ","))
		}
		c := kids[s.SpanContext.SpanID()]
		order(c)
		for _, k := range c {
			walk(k, depth+1)
		}
	}
	order(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

func sortKey(s tracetest.SpanStub) string {
	return fmt.Sprintf("%s|%s|%s|%08s", attrOf(s, "deepagents.run.status"), s.Name, attrOf(s, "gen_ai.tool.call.id"), attrOf(s, "deepagents.round"))
}

func attrOf(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("span tree of %s differs from %s (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// find returns the spans named name.
func find(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	got := find(spans, name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans:\n%s", len(got), name, tree(spans))
	}
	return got[0]
}

func TestOneTurn(t *testing.T) {
	h := newHarness(t)
	a := buildAgent(t, `{"parent": [{"content": "Hello there.", "usage": {"input_tokens": 120, "output_tokens": 30, "cached_input_tokens": 100, "cache_write_tokens": 20, "reasoning_tokens": 12}}]}`, deepagents.Config{SystemPrompt: "Be brief."})
	if _, err, _ := h.run(a, checkpoint.NewMemory(0), "thread-1", agent.Prompt("hi"), true); err != nil {
		t.Fatal(err)
	}
	spans := h.exp.GetSpans()
	golden(t, "one_turn", tree(spans))

	root := one(t, spans, "invoke_agent parent")
	chat := one(t, spans, "chat scripted-model")
	if chat.Parent.SpanID() != root.SpanContext.SpanID() || chat.SpanKind != trace.SpanKindClient || root.SpanKind != trace.SpanKindInternal {
		t.Errorf("chat %v under %v, kinds %v/%v", chat.Parent.SpanID(), root.SpanContext.SpanID(), chat.SpanKind, root.SpanKind)
	}
	if chat.StartTime.Before(root.StartTime) || chat.EndTime.After(root.EndTime) {
		t.Errorf("the chat span [%v, %v] is not inside its run [%v, %v]", chat.StartTime, chat.EndTime, root.StartTime, root.EndTime)
	}
	out := attrOf(chat, "gen_ai.output.messages")
	if out != `[{"role":"assistant","parts":[{"type":"text","content":"Hello there."}],"finish_reason":"stop"}]` {
		t.Errorf("output messages %s", out)
	}
	if in := attrOf(chat, "gen_ai.input.messages"); !strings.Contains(in, `{"role":"user","parts":[{"type":"text","content":"hi"}]}`) {
		t.Errorf("input messages %s", in)
	}
}

// Two tools of one step run at once: their spans are siblings under the
// run and overlap in time, and each carries its call id.
func TestParallelTools(t *testing.T) {
	h := newHarness(t)
	const script = `{"parent": [
	  {"tool_calls": [
	    {"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "A"}},
	    {"id": "w2", "name": "write_file", "args": {"file_path": "/b.md", "content": "B"}}], "usage": {"input_tokens": 200, "output_tokens": 40}},
	  {"content": "both written", "usage": {"input_tokens": 260, "output_tokens": 5, "cached_input_tokens": 200}}]}`
	a := buildAgent(t, script, deepagents.Config{Tools: nil})
	if _, err, _ := h.run(a, checkpoint.NewMemory(0), "thread-2", agent.Prompt("write"), false); err != nil {
		t.Fatal(err)
	}
	spans := h.exp.GetSpans()
	golden(t, "parallel_tools", tree(spans))
	root := one(t, spans, "invoke_agent parent")
	tools := find(spans, "execute_tool write_file")
	if len(tools) != 2 {
		t.Fatalf("%d tool spans", len(tools))
	}
	ids := []string{attrOf(tools[0], "gen_ai.tool.call.id"), attrOf(tools[1], "gen_ai.tool.call.id")}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"w1", "w2"}) {
		t.Errorf("call ids %v", ids)
	}
	for _, s := range tools {
		if s.Parent.SpanID() != root.SpanContext.SpanID() {
			t.Errorf("tool span %s is not a child of the run", attrOf(s, "gen_ai.tool.call.id"))
		}
		if attrOf(s, "gen_ai.tool.call.arguments") != "" {
			t.Error("arguments recorded without the opt-in")
		}
	}
	// Both calls started before either ended: they ran side by side.
	if tools[0].StartTime.After(tools[1].EndTime) || tools[1].StartTime.After(tools[0].EndTime) {
		t.Errorf("tool spans do not overlap: [%v,%v] [%v,%v]", tools[0].StartTime, tools[0].EndTime, tools[1].StartTime, tools[1].EndTime)
	}
	chats := find(spans, "chat scripted-model")
	if len(chats) != 2 || attrOf(chats[0], "gen_ai.output.messages") != "" {
		t.Errorf("%d chat spans, content %q", len(chats), attrOf(chats[0], "gen_ai.output.messages"))
	}
}

// A subagent's invoke_agent span is a child of the parent's
// execute_tool task span, and its own calls are under it.
func TestNestedSubagent(t *testing.T) {
	h := newHarness(t)
	const script = `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "write the note", "subagent_type": "general-purpose"}}], "usage": {"input_tokens": 300, "output_tokens": 25}},
	    {"content": "the child wrote it", "usage": {"input_tokens": 340, "output_tokens": 6}}],
	  "general-purpose": [
	    {"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/note.md", "content": "N"}}], "usage": {"input_tokens": 90, "output_tokens": 15}},
	    {"content": "note written", "usage": {"input_tokens": 110, "output_tokens": 4}}]}`
	a := buildAgent(t, script, deepagents.Config{})
	if _, err, _ := h.run(a, checkpoint.NewMemory(0), "thread-3", agent.Prompt("delegate"), false); err != nil {
		t.Fatal(err)
	}
	spans := h.exp.GetSpans()
	golden(t, "nested_subagent", tree(spans))
	task := one(t, spans, "execute_tool task")
	child := one(t, spans, "invoke_agent general-purpose")
	if child.Parent.SpanID() != task.SpanContext.SpanID() {
		t.Errorf("the subagent's span is not under the task call's span")
	}
	if attrOf(child, "gen_ai.conversation.id") != "thread-3" || attrOf(child, "deepagents.path") != "parent / general-purpose#t1" {
		t.Errorf("child attributes %v", child.Attributes)
	}
	write := one(t, spans, "execute_tool write_file")
	if write.Parent.SpanID() != child.SpanContext.SpanID() {
		t.Errorf("the child's tool call is not under the child's span")
	}
	if child.StartTime.Before(task.StartTime) || child.EndTime.After(task.EndTime) {
		t.Errorf("the child's run is not inside its task call")
	}
	if got := attrOf(task, "deepagents.subagent.name"); got != "general-purpose" {
		t.Errorf("task span names subagent %q", got)
	}
}

// A run interrupted for approval and resumed in a second run (a second
// recorder, as in another process) is two traces with one conversation id;
// the resumed run links to the interrupted one.
func TestInterruptedAndResumed(t *testing.T) {
	h := newHarness(t)
	const script = `{"parent": [
	  {"tool_calls": [{"id": "w1", "name": "write_file", "args": {"file_path": "/one.md", "content": "1"}}], "usage": {"input_tokens": 150, "output_tokens": 18}},
	  {"content": "done", "usage": {"input_tokens": 175, "output_tokens": 2}}]}`
	a := buildAgent(t, script, deepagents.Config{InterruptOn: map[string]approve.Policy{"write_file": {}}})
	saver := checkpoint.NewMemory(0)
	res, err, first := h.run(a, saver, "thread-4", agent.Prompt("go"), false)
	if !errors.Is(err, agent.ErrInterrupted) || res.Status != agent.StatusInterrupted {
		t.Fatalf("first run: %v %v", res.Status, err)
	}
	_, err, second := h.run(a, saver, "thread-4", agent.Input{}, false, agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "w1"}))
	if err != nil {
		t.Fatal(err)
	}
	spans := h.exp.GetSpans()
	golden(t, "interrupted_resumed", tree(spans))
	runs := find(spans, "invoke_agent parent")
	if len(runs) != 2 {
		t.Fatalf("%d runs", len(runs))
	}
	var before, after tracetest.SpanStub
	for _, r := range runs {
		switch r.SpanContext.SpanID() {
		case first.SpanContext().SpanID():
			before = r
		case second.SpanContext().SpanID():
			after = r
		}
	}
	if !before.SpanContext.IsValid() || !after.SpanContext.IsValid() {
		t.Fatal("the recorders' span contexts name no exported run")
	}
	if attrOf(before, "deepagents.run.status") != "interrupted" || attrOf(after, "deepagents.run.status") != "ok" {
		t.Errorf("statuses %q, %q", attrOf(before, "deepagents.run.status"), attrOf(after, "deepagents.run.status"))
	}
	if len(after.Links) != 1 || after.Links[0].SpanContext.SpanID() != before.SpanContext.SpanID() {
		t.Fatalf("the resumed run's links %+v, want one to %v", after.Links, before.SpanContext.SpanID())
	}
	if attrOf(after, "deepagents.checkpoint.id") == "" {
		t.Error("the resumed run does not name its checkpoint")
	}
	if len(before.Links) != 0 {
		t.Errorf("the first run links to %+v", before.Links)
	}
}

// A tool that fails and a model call that fails for good: error.type and
// an error status on the failing spans and on the run.
func TestErrors(t *testing.T) {
	h := newHarness(t)
	const script = `{"parent": [
	  {"tool_calls": [{"id": "r1", "name": "read_file", "args": {"file_path": "/missing.md"}}], "usage": {"input_tokens": 80, "output_tokens": 12}},
	  {"error": "the service fell over"}]}`
	a := buildAgent(t, script, deepagents.Config{})
	res, err, _ := h.run(a, checkpoint.NewMemory(0), "thread-5", agent.Prompt("read"), false)
	if err == nil || res == nil || res.Status != agent.StatusError {
		t.Fatalf("run: %v %v", res, err)
	}
	spans := h.exp.GetSpans()
	golden(t, "errors", tree(spans))
	read := one(t, spans, "execute_tool read_file")
	if attrOf(read, "error.type") != "tool_error" || read.Status.Code.String() != "Error" {
		t.Errorf("tool span %v %v", read.Attributes, read.Status)
	}
	root := one(t, spans, "invoke_agent parent")
	if attrOf(root, "error.type") != "error" || root.Status.Code.String() != "Error" {
		t.Errorf("run span %v %v", root.Attributes, root.Status)
	}
	var failed int
	for _, c := range find(spans, "chat scripted-model") {
		if attrOf(c, "error.type") != "" {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed chat spans, want 1", failed)
	}
}

func emptyConfig() deepagents.Config { return deepagents.Config{} }

// Content is recorded only when opted in (the environment variable or the
// Config field), redacted by the hook and cut to the limit on a UTF-8
// boundary. The secret sits before the cut, so the redacted value differs
// from what the cut alone would leave.
func TestContentCapture(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("é", 40) // 80 bytes
	events := []agent.Event{
		{Type: agent.RunStart, Agent: agent.RootPath("parent"), Time: at, Run: &agent.RunInfo{}},
		{Type: agent.ToolStart, Agent: agent.RootPath("parent"), Time: at.Add(time.Second), Tool: &agent.ToolInfo{CallID: "c1", Name: "echo", Args: json.RawMessage(`{"k":"s3cr3t","more":"x"}`)}},
		{Type: agent.ToolEnd, Agent: agent.RootPath("parent"), Time: at.Add(2 * time.Second), Tool: &agent.ToolInfo{CallID: "c1", Name: "echo", Result: long}},
		{Type: agent.RunEnd, Agent: agent.RootPath("parent"), Time: at.Add(3 * time.Second), Run: &agent.RunInfo{Status: agent.StatusOK}},
	}
	on, off := true, false
	cases := []struct {
		name     string
		env      string
		capture  *bool
		wantArgs string
		wantRes  string
	}{
		{"default is off", "", nil, "", ""},
		{"environment turns it on", "true", nil, `{"k":"[redacted]`, strings.Repeat("é", 8)},
		{"environment TRUE", "TRUE", nil, `{"k":"[redacted]`, strings.Repeat("é", 8)},
		{"other values keep it off", "1", nil, "", ""},
		{"config wins over environment", "true", &off, "", ""},
		{"config turns it on", "", &on, `{"k":"[redacted]`, strings.Repeat("é", 8)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", c.env)
			h := newHarness(t)
			rec := daotel.NewRecorder(context.Background(), daotel.Config{
				TracerProvider: h.tp, CaptureContent: c.capture, MaxAttributeBytes: 16,
				Redact: func(key attribute.Key, v string) string { return strings.ReplaceAll(v, "s3cr3t", "[redacted]") },
			})
			for _, ev := range events {
				rec.Record(ev)
			}
			tool := one(t, h.exp.GetSpans(), "execute_tool echo")
			// The redacted arguments are cut after the redaction, to 16
			// bytes; unredacted they would read {"k":"s3cr3t","m.
			if got := attrOf(tool, "gen_ai.tool.call.arguments"); got != c.wantArgs {
				t.Errorf("arguments %q, want %q", got, c.wantArgs)
			}
			if got := attrOf(tool, "gen_ai.tool.call.result"); got != c.wantRes {
				t.Errorf("result %q, want %q", got, c.wantRes)
			}
			if !tool.StartTime.Equal(at.Add(time.Second)) || !tool.EndTime.Equal(at.Add(2*time.Second)) {
				t.Errorf("tool span times %v..%v are not the events' times", tool.StartTime, tool.EndTime)
			}
		})
	}
}

// Redaction reaches every place content is recorded in a real run: the
// system instructions, the input and output messages, a tool call's
// arguments and result, and the status of a failed call. The secret comes
// first in each, well before the attribute limit.
func TestRedactionReachesEveryContentAttribute(t *testing.T) {
	h := newHarness(t)
	const script = `{"parent": [
	  {"content": "s3cr3t: reading it", "tool_calls": [{"id": "r1", "name": "read_file", "args": {"file_path": "/s3cr3t/notes.md"}}]},
	  {"content": "s3cr3t: done"}]}`
	a := buildAgent(t, script, deepagents.Config{SystemPrompt: "s3cr3t: the system prompt."})
	var keys []string
	ctx := context.Background()
	rec := daotel.NewRecorder(ctx, daotel.Config{
		TracerProvider: h.tp, Model: "scripted-model", Provider: "scripted", CaptureContent: new(true), MaxAttributeBytes: 4096,
		Redact: func(key attribute.Key, v string) string {
			keys = append(keys, string(key))
			return strings.ReplaceAll(v, "s3cr3t", "[redacted]")
		},
	})
	if _, err := agent.Drain(rec.Observe(a.Run(daotel.WithRecorder(ctx, rec), agent.Prompt("s3cr3t: my question"))), nil); err != nil {
		t.Fatal(err)
	}
	spans := h.exp.GetSpans()
	want := map[string]bool{
		"gen_ai.system_instructions": false, "gen_ai.input.messages": false, "gen_ai.output.messages": false,
		"gen_ai.tool.call.arguments": false, "gen_ai.tool.call.result": false,
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			v := kv.Value.Emit()
			if strings.Contains(v, "s3cr3t") {
				t.Errorf("span %q attribute %s holds the secret: %s", s.Name, kv.Key, v)
			}
			if _, ok := want[string(kv.Key)]; ok && strings.Contains(v, "[redacted]") {
				want[string(kv.Key)] = true
			}
		}
		if strings.Contains(s.Status.Description, "s3cr3t") {
			t.Errorf("span %q status holds the secret: %s", s.Name, s.Status.Description)
		}
		for _, ev := range s.Events {
			for _, kv := range ev.Attributes {
				if strings.Contains(kv.Value.Emit(), "s3cr3t") {
					t.Errorf("span %q event %s holds the secret: %s", s.Name, ev.Name, kv.Value.Emit())
				}
			}
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no redacted %s recorded (redact saw %v)", k, keys)
		}
	}
	tool := one(t, spans, "execute_tool read_file")
	if tool.Status.Code.String() != "Error" || !strings.Contains(tool.Status.Description, "[redacted]") {
		t.Errorf("failed read_file status %v %q, want an error naming the redacted path", tool.Status.Code, tool.Status.Description)
	}
}

// A consumer that stops reading a run ends its open spans, marked
// incomplete, instead of leaking them.
func TestAbandonedStreamEndsSpans(t *testing.T) {
	h := newHarness(t)
	const script = `{"parent": [
	  {"tool_calls": [{"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "A"}}]},
	  {"content": "done"}]}`
	a := buildAgent(t, script, deepagents.Config{})
	rec := daotel.NewRecorder(context.Background(), daotel.Config{TracerProvider: h.tp})
	for ev := range rec.Observe(a.Run(context.Background(), agent.Prompt("go"))) {
		if ev.Type == agent.ToolStart {
			break
		}
	}
	spans := h.exp.GetSpans()
	root := one(t, spans, "invoke_agent parent")
	if attrOf(root, "error.type") != "incomplete" || root.Status.Code.String() != "Error" {
		t.Errorf("abandoned run span %v %v", root.Attributes, root.Status)
	}
	if tool := one(t, spans, "execute_tool write_file"); tool.EndTime.IsZero() {
		t.Error("the open tool span was not ended")
	}
}

// A subagent's call waits for approval: the interrupted trace ends with the
// child's span under the task call, and the resumed trace nests the
// continued child under a task span again.
func TestSubagentInterruptedAndResumed(t *testing.T) {
	h := newHarness(t)
	const script = `{
	  "parent": [
	    {"tool_calls": [{"id": "t1", "name": "task", "args": {"description": "write the note", "subagent_type": "general-purpose"}}], "usage": {"input_tokens": 30, "output_tokens": 5}},
	    {"content": "the child wrote it", "usage": {"input_tokens": 40, "output_tokens": 5}}],
	  "general-purpose": [
	    {"tool_calls": [{"id": "c1", "name": "write_file", "args": {"file_path": "/note.md", "content": "N"}}], "usage": {"input_tokens": 10, "output_tokens": 3}},
	    {"content": "note written", "usage": {"input_tokens": 12, "output_tokens": 2}}]}`
	a := buildAgent(t, script, deepagents.Config{InterruptOn: map[string]approve.Policy{"write_file": {}}})
	saver := checkpoint.NewMemory(0)
	res, err, _ := h.run(a, saver, "thread-6", agent.Prompt("delegate"), false)
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("first run: %v %v", res.Status, err)
	}
	if _, err, _ := h.run(a, saver, "thread-6", agent.Input{}, false, agent.WithDecisions(agent.Decision{Type: agent.Approve, CallID: "c1"})); err != nil {
		t.Fatal(err)
	}
	spans := h.exp.GetSpans()
	golden(t, "subagent_interrupted_resumed", tree(spans))
	for _, child := range find(spans, "invoke_agent general-purpose") {
		var parent *tracetest.SpanStub
		for i := range spans {
			if spans[i].SpanContext.SpanID() == child.Parent.SpanID() {
				parent = &spans[i]
			}
		}
		if parent == nil || parent.Name != "execute_tool task" || parent.SpanContext.TraceID() != child.SpanContext.TraceID() {
			t.Errorf("a run of the subagent is not under a task span of its trace:\n%s", tree(spans))
		}
	}
	if n := len(find(spans, "execute_tool write_file")); n != 1 {
		t.Errorf("%d write_file spans: the approved call ran once", n)
	}
}

// A run started inside another span (a server's request span) is its child;
// a provider's retried attempts are events of the call's chat span, at the
// run's clock; a refusal is an error of the chat span but not a failure of
// the call's duration.
func TestParentSpanRetriesAndProviderNames(t *testing.T) {
	h := newHarness(t)
	ctx, server := h.tp.Tracer("test").Start(context.Background(), "POST /runs")
	rec := daotel.NewRecorder(ctx, daotel.Config{TracerProvider: h.tp, Model: "m"})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rt := newClock(t0)
	model := streamFunc(func(ctx context.Context, _ *llm.Request) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			rt.Advance(time.Second)
			llm.NotifyRetry(ctx, llm.Retry{Attempt: 1, Wait: 500 * time.Millisecond, Err: &llm.APIError{Kind: llm.ErrKindRateLimit, Message: "slow down"}})
			rt.Advance(time.Second)
			yield(llm.StreamEvent{Type: llm.EventDone, Response: &llm.Response{Message: llm.Message{Role: llm.RoleAssistant},
				StopReason: llm.StopRefusal, Refusal: "no"}}, nil)
		}
	})
	a, err := agent.New(agent.Config{Model: model, Stream: true, Middleware: []agent.Middleware{daotel.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := agent.Drain(rec.Observe(a.Run(daotel.WithRecorder(ctx, rec), agent.Prompt("hi"), agent.WithRuntime(rt))), nil)
	if res == nil || res.Status != agent.StatusRefused {
		t.Fatalf("run %+v, want refused", res)
	}
	server.End()
	spans := h.exp.GetSpans()
	root := one(t, spans, "invoke_agent parent")
	if root.Parent.SpanID() != server.SpanContext().SpanID() || rec.SpanContext().SpanID() != root.SpanContext.SpanID() {
		t.Errorf("the run's span is not under the server's span")
	}
	chat := one(t, spans, "chat m")
	if chat.Parent.SpanID() != root.SpanContext.SpanID() {
		t.Errorf("the chat span is not under the run's span")
	}
	if len(chat.Events) != 1 || chat.Events[0].Name != "deepagents.model.retry" || !chat.Events[0].Time.Equal(chat.StartTime.Add(time.Second)) {
		t.Errorf("chat events %+v (start %v)", chat.Events, chat.StartTime)
	}
	if !chat.StartTime.Equal(t0) || !chat.EndTime.Equal(t0.Add(2*time.Second)) {
		t.Errorf("chat span %v..%v, want the run's clock: %v..%v", chat.StartTime, chat.EndTime, t0, t0.Add(2*time.Second))
	}
	if attrOf(chat, "error.type") != "refusal" || attrOf(root, "error.type") != "refused" {
		t.Errorf("refusal: chat %q, run %q", attrOf(chat, "error.type"), attrOf(root, "error.type"))
	}
	for in, want := range map[string]string{"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini", "google": "gcp.gemini", "ollama": "ollama"} {
		if got := daotel.ProviderName(in); got != want {
			t.Errorf("ProviderName(%q) = %q, want %q", in, got, want)
		}
	}
}

// streamFunc is a model whose Stream is the function; Generate collects it.
type streamFunc func(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error]

func (f streamFunc) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return f(ctx, req)
}

func (f streamFunc) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return llm.Collect(f(ctx, req))
}
