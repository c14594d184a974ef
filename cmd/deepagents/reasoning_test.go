package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/google/go-cmp/cmp"
)

// assembleArgs parses run's flags as the command line gives them and
// assembles the agent, as `deepagents run` does before its first call.
func assembleArgs(t *testing.T, args ...string) *setup {
	t.Helper()
	var errb strings.Builder
	f, _, ok := parseRunFlags(t.Context(), args, io.Discard, &errb)
	if !ok {
		t.Fatalf("flags %q: %s", args, errb.String())
	}
	s, err := assemble(t.Context(), f, &errb)
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	t.Cleanup(s.close)
	return s
}

// The reasoning setting comes from the flag, else the project file, else the
// user's file; each subagent's from its agent file, else nil (the parent's).
func TestReasoningPrecedence(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	tests := []struct {
		name          string
		user, project string
		flag          []string
		want          *llm.ReasoningConfig
	}{
		{"nothing set", "", "", nil, nil},
		{"user file", "reasoning = \"low\"\n", "", nil, &llm.ReasoningConfig{Effort: "low"}},
		{"project over user", "reasoning = \"low\"\n", "reasoning = 8000\n", nil, &llm.ReasoningConfig{BudgetTokens: 8000}},
		{"project table over user", "reasoning = 1024\n", "[reasoning]\neffort = \"medium\"\n", nil, &llm.ReasoningConfig{Effort: "medium"}},
		{"flag over both", "reasoning = \"low\"\n", "reasoning = 8000\n", []string{"--reasoning", "high"}, &llm.ReasoningConfig{Effort: "high"}},
		{"flag budget over an effort", "", "reasoning = \"high\"\n", []string{"--reasoning=2048"}, &llm.ReasoningConfig{BudgetTokens: 2048}},
		{"flag alone", "", "", []string{"--reasoning", "Medium"}, &llm.ReasoningConfig{Effort: "medium"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project, home := runEnv(t, srv)
			if tt.user != "" {
				writeFileAt(t, filepath.Join(home, ".deepagents", "config.toml"), tt.user)
			}
			if tt.project != "" {
				writeFileAt(t, filepath.Join(project, "deepagents.toml"), tt.project)
			}
			s := assembleArgs(t, append([]string{"-p", "hi", "--model", "openai:gpt-test"}, tt.flag...)...)
			if !cmp.Equal(s.config.Reasoning, tt.want) {
				t.Errorf("deepagents.Config.Reasoning = %+v, want %+v", s.config.Reasoning, tt.want)
			}
		})
	}
}

func TestAgentFileReasoningReachesTheSpec(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	project, home := runEnv(t, srv)
	writeFileAt(t, filepath.Join(project, "deepagents.toml"), "reasoning = \"low\"\n")
	agents := filepath.Join(project, ".deepagents", "agents")
	writeFileAt(t, filepath.Join(agents, "thinker.md"), "---\ndescription: Thinks hard.\nreasoning: {budget_tokens: 12000}\n---\nThink.\n")
	writeFileAt(t, filepath.Join(agents, "quick.md"), "---\ndescription: Answers fast.\n---\nBe quick.\n")
	writeFileAt(t, filepath.Join(home, ".deepagents", "agents", "planner.md"), "---\ndescription: Plans.\nreasoning: high\n---\nPlan.\n")
	s := assembleArgs(t, "-p", "hi", "--model", "openai:gpt-test")
	got := map[string]*llm.ReasoningConfig{}
	for _, sp := range s.config.Subagents {
		got[sp.Name] = sp.Reasoning
	}
	want := map[string]*llm.ReasoningConfig{
		"thinker": {BudgetTokens: 12000},
		"planner": {Effort: "high"},
		"quick":   nil, // inherits the agent's
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subagent reasoning (-want +got)\n%s", diff)
	}
	if !cmp.Equal(s.config.Reasoning, &llm.ReasoningConfig{Effort: "low"}) {
		t.Errorf("agent reasoning = %+v", s.config.Reasoning)
	}
}

// A bad setting stops the run before any request, with where it is.
func TestReasoningErrors(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	tests := []struct {
		name, project, agent string
		args                 []string
		want                 string
	}{
		{"unknown effort on the flag", "", "", []string{"--reasoning", "extreme"},
			`deepagents run: --reasoning: want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got "extreme"`},
		{"zero on the flag", "", "", []string{"--reasoning", "0"},
			`deepagents run: --reasoning: a budget of 0 thinking tokens is too small: at least 1`},
		{"empty flag", "", "", []string{"--reasoning="},
			`deepagents run: --reasoning: want an effort ("low", "medium" or "high") or a number of thinking tokens (1 to 200000), got ""`},
		{"project file", "max_steps = 3\nreasoning = { effort = \"high\", budget_tokens = 100 }\n", "", nil,
			`deepagents.toml:2: reasoning sets both effort and budget_tokens: set one of them`},
		{"agent file", "", "---\ndescription: d\nreasoning: 999999\n---\n", nil,
			`thinker.md:3: reasoning: a budget of 999999 thinking tokens is too large: at most 200000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project, _ := runEnv(t, srv)
			if tt.project != "" {
				writeFileAt(t, filepath.Join(project, "deepagents.toml"), tt.project)
			}
			if tt.agent != "" {
				writeFileAt(t, filepath.Join(project, ".deepagents", "agents", "thinker.md"), tt.agent)
			}
			before := srv.Count()
			code, _, errs := runCLI(t, append([]string{"run", "-p", "hi", "--model", "openai:gpt-test"}, tt.args...)...)
			if code != 2 || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant it to contain %s", code, errs, tt.want)
			}
			if srv.Count() != before {
				t.Errorf("%d requests sent despite the bad setting", srv.Count()-before)
			}
		})
	}
}

// A reasoning model's thinking is not the answer: text output prints the
// answer only, over the wire of the OpenAI fake (reasoning_content).
func TestThinkingIsNotPrintedAsTheAnswer(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		return ot.Reply{Reasoning: "Let me weigh 6 times 7 in secret.", Content: "The answer is 42.",
			Usage: &ot.Usage{Prompt: 120, Completion: 40, Cached: 100}}
	})
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "What is 6x7?", "--model", "openai:gpt-test")
	if code != 0 || out != "The answer is 42.\n" {
		t.Fatalf("exit %d, stdout %q (stderr %s)", code, out, errs)
	}
	if strings.Contains(out+errs, "in secret") {
		t.Errorf("the thinking was printed:\n%s%s", out, errs)
	}
	code, out, errs = runCLI(t, "run", "-p", "What is 6x7?", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum["result"] != "The answer is 42." {
		t.Errorf("result %q", sum["result"])
	}
	wantUsage := map[string]any{"input_tokens": 120.0, "output_tokens": 40.0, "cached_input_tokens": 100.0}
	if diff := cmp.Diff(wantUsage, sum["usage"]); diff != "" {
		t.Errorf("usage (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"parent": wantUsage}, sum["usage_by_agent"]); diff != "" {
		t.Errorf("usage_by_agent (-want +got)\n%s", diff)
	}
}

// reasoningReply answers with thinking the provider wants back and a text.
func reasoningReply(usage llm.Usage) func(context.Context) (*llm.Response, error) {
	return func(context.Context) (*llm.Response, error) {
		msg := llm.NewMessage(llm.RoleAssistant,
			llm.ReasoningPart("pondering the question", &llm.Reasoning{Provider: "fake", Signature: "sig-1"}),
			llm.TextPart("42"))
		return &llm.Response{Message: msg, Usage: usage}, nil
	}
}

// Thinking tokens, cache reads and writes and unknown usage reach the
// progress line and the JSON result, in total and per agent.
func TestUsageShowsThinkingCacheAndUnknown(t *testing.T) {
	usage := llm.Usage{InputTokens: 2000, OutputTokens: 900, CachedInputTokens: 1500, CacheWriteTokens: 300, ReasoningTokens: 700}
	m := &scriptModel{steps: []func(context.Context) (*llm.Response, error){reasoningReply(usage)}}
	var out, errb bytes.Buffer
	s := testSession(t, m, "text", &out, &errb)
	if code := s.turn(t.Context(), "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != "42\n" {
		t.Errorf("stdout %q, want the answer only", out.String())
	}
	progress := errb.String()
	for _, want := range []string{
		"parent thought, then answered · 2.0k tokens in (1.5k cached, 300 written to the cache), 900 out (700 thinking) so far",
		"done: ok · 1 round · 2.0k tokens in (1.5k cached, 300 written to the cache), 900 out (700 thinking)",
	} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}
	if strings.Contains(progress, "pondering") {
		t.Errorf("progress shows the thinking:\n%s", progress)
	}

	for _, output := range []string{"json", "stream-json"} {
		t.Run(output, func(t *testing.T) {
			m := &scriptModel{steps: []func(context.Context) (*llm.Response, error){
				func(ctx context.Context) (*llm.Response, error) {
					return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "no usage here"}, Usage: llm.Usage{Unknown: true}}, nil
				},
			}}
			var out, errb bytes.Buffer
			s := testSession(t, m, output, &out, &errb)
			s.progress = false
			if code := s.turn(t.Context(), "hi"); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			last := lines[len(lines)-1]
			for _, want := range []string{`"usage":{"input_tokens":0,"output_tokens":0,"unknown":true}`,
				`"usage_by_agent":{"parent":{"input_tokens":0,"output_tokens":0,"unknown":true}}`} {
				if !strings.Contains(last, want) {
					t.Errorf("result lacks %s:\n%s", want, last)
				}
			}
		})
	}
}

// The JSON result carries every usage field per subagent too.
func TestSummaryUsageFields(t *testing.T) {
	child := &agent.Result{Agent: mustPath("parent / thinker#c1"), Status: agent.StatusOK, Rounds: 2,
		Usage: llm.Usage{InputTokens: 50, OutputTokens: 30, ReasoningTokens: 20, Unknown: true}}
	res := &agent.Result{Agent: agent.RootPath("parent"), Status: agent.StatusOK, Rounds: 1,
		Usage:        llm.Usage{InputTokens: 150, OutputTokens: 40, ReasoningTokens: 25, CachedInputTokens: 60, Unknown: true},
		UsageByAgent: map[string]llm.Usage{"parent": {InputTokens: 100, OutputTokens: 10, ReasoningTokens: 5, CachedInputTokens: 60}, "parent / thinker#c1": child.Usage},
		Children:     map[string]*agent.Result{"c1": child}}
	b, err := json.Marshal(summarise(res, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"usage":{"input_tokens":150,"output_tokens":40,"cached_input_tokens":60,"reasoning_tokens":25,"unknown":true}`,
		`"parent":{"input_tokens":100,"output_tokens":10,"cached_input_tokens":60,"reasoning_tokens":5}`,
		`"parent / thinker#c1":{"input_tokens":50,"output_tokens":30,"reasoning_tokens":20,"unknown":true}`,
		`"subagents":[{"call_id":"c1","agent":"parent / thinker#c1","status":"ok","rounds":2,"usage":{"input_tokens":50,"output_tokens":30,"reasoning_tokens":20,"unknown":true}}]`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("summary lacks %s:\n%s", want, b)
		}
	}
	var p bytes.Buffer
	(&progressPrinter{w: &p}).event(agent.Event{Type: agent.SubagentEnd, Agent: agent.RootPath("parent"),
		Subagent: &agent.SubagentInfo{Name: "thinker", CallID: "c1", Status: agent.StatusOK, Rounds: 2, Usage: child.Usage}})
	if want := "⇠ subagent thinker (c1) ok after 2 rounds, 80 tokens or more: a model reported no usage\n"; !strings.Contains(p.String(), want) {
		t.Errorf("progress %q lacks %q", p.String(), want)
	}
}

// A refused run is no answer: the refusal goes to stderr in every format,
// stdout shows no earlier text as if it answered, and the exit code is 1.
func TestRefusalIsReportedAndFails(t *testing.T) {
	res := func() *agent.Result {
		return &agent.Result{Agent: agent.RootPath("parent"), Status: "refused", Error: "I can't help with building that.", Rounds: 2,
			State: agent.State{Messages: []llm.Message{llm.User("build it"), {Role: llm.RoleAssistant, Content: "Let me look first."}}}}
	}
	tests := []struct {
		output  string
		wantOut string // stdout, exactly (JSON: a fragment)
	}{
		{"text", ""},
		{"json", `"result":"","status":"refused","error":"I can't help with building that.","refusal":"I can't help with building that."`},
		{"stream-json", `{"type":"result","result":"","status":"refused","error":"I can't help with building that.","refusal":"I can't help with building that."`},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			var out, errb bytes.Buffer
			s := &session{flags: runFlags{output: tt.output}, stdout: &out, stderr: &errb}
			if code := s.report(res(), res().Error, "", nil); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if want := "deepagents run: the model refused to answer: I can't help with building that.\n"; errb.String() != want {
				t.Errorf("stderr %q, want %q", errb.String(), want)
			}
			if tt.wantOut == "" && out.Len() != 0 || !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q, want %q", out.String(), tt.wantOut)
			}
		})
	}
	var out, errb bytes.Buffer
	s := &session{flags: runFlags{output: "text"}, stdout: &out, stderr: &errb}
	r := res()
	r.Error = ""
	s.report(r, "", "", nil)
	if want := "deepagents run: the model refused to answer: (the model gave no reason)\n"; errb.String() != want {
		t.Errorf("refusal without a reason: %q", errb.String())
	}
}

// warningModel answers twice, after a middleware emitted a warning and a
// notice before each call (as a run repeats them per subagent).
func warnedSession(t *testing.T, output string, progress, quiet bool, stdout, stderr io.Writer) *session {
	t.Helper()
	mw := agent.Middleware{Name: "test", BeforeModel: func(ctx context.Context, step agent.StepInfo, req *llm.Request) error {
		step.Emit(agent.Event{Type: "warning", Notice: &agent.NoticeInfo{Source: "anthropic", Text: "temperature is not sent with thinking on"}})
		step.Emit(agent.Event{Type: agent.Notice, Notice: &agent.NoticeInfo{Source: "offload", Text: "kept a large result inline"}})
		return nil
	}}
	m := &scriptModel{steps: []func(context.Context) (*llm.Response, error){
		func(context.Context) (*llm.Response, error) {
			return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "nope", Args: []byte(`{}`)}}}}, nil
		},
		answer("done"),
	}}
	a, err := agent.New(agent.Config{Model: m, Middleware: []agent.Middleware{mw}})
	if err != nil {
		t.Fatal(err)
	}
	f := runFlags{output: output, threadDir: t.TempDir(), quiet: quiet, set: map[string]bool{}}
	return &session{setup: &setup{agent: a, modelName: "fake:model"}, flags: f, stdout: stdout, stderr: stderr, progress: progress}
}

// Warnings (settings a model dropped) are never silent: shown on stderr once
// per session, in the progress line or on a line of their own, even with
// --quiet; notices unless --quiet.
func TestWarningsAndNoticesAreShown(t *testing.T) {
	tests := []struct {
		name            string
		progress, quiet bool
		want, notWant   []string
	}{
		{"plain stderr", false, false,
			[]string{"deepagents: warning: parent: anthropic: temperature is not sent with thinking on\n", "deepagents: parent: offload: kept a large result inline\n"}, nil},
		{"quiet", false, true,
			[]string{"deepagents: warning: parent: anthropic: temperature is not sent with thinking on\n"}, []string{"offload"}},
		{"progress", true, false,
			[]string{"] parent ⚠ warning: anthropic: temperature is not sent with thinking on\n", "] parent note: offload: kept a large result inline\n"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			s := warnedSession(t, "text", tt.progress, tt.quiet, &out, &errb)
			if code := s.turn(t.Context(), "hi"); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if code := s.turn(t.Context(), "again"); code != 0 {
				t.Fatalf("second turn: exit %d: %s", code, errb.String())
			}
			got := errb.String()
			for _, w := range tt.want {
				if n := strings.Count(got, w); n != 1 {
					t.Errorf("stderr has %q %d times, want once:\n%s", w, n, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("stderr has %q:\n%s", w, got)
				}
			}
		})
	}
	// stream-json prints every warning event as it comes, on stdout.
	var out, errb bytes.Buffer
	s := warnedSession(t, "stream-json", false, true, &out, &errb)
	if code := s.turn(t.Context(), "hi"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	warnings := 0
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		if ev["type"] == "warning" {
			warnings++
		}
	}
	if warnings != 2 {
		t.Errorf("%d warning events in stream-json, want 2 (one per model call)", warnings)
	}
}

func TestNoticeText(t *testing.T) {
	tests := []struct {
		name string
		ev   agent.Event
		want string
	}{
		{"notice with source", agent.Event{Type: agent.Notice, Notice: &agent.NoticeInfo{Source: "offload", Text: "saved"}}, "offload: saved"},
		{"notice without source", agent.Event{Type: agent.Notice, Notice: &agent.NoticeInfo{Text: "saved"}}, "saved"},
		{"settings warning", agent.Event{Type: agent.Warning, Warning: &agent.WarningInfo{Source: "settings", Dropped: []string{"top_p"},
			Text: "the model does not take top_p; it is not sent"}}, "settings: the model does not take top_p; it is not sent"},
		{"no payload", agent.Event{Type: agent.Warning}, "warning"},
	}
	for _, tt := range tests {
		if got := noticeText(tt.ev); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The session's banner says what reasoning the agent was asked for.
func TestBannerShowsReasoning(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("hi back") })
	tests := []struct {
		flag []string
		want string
	}{
		{nil, "deepagents — openai:gpt-test. Type"},
		{[]string{"--reasoning", "high"}, "deepagents — openai:gpt-test, reasoning effort high. Type"},
		{[]string{"--reasoning", "8000"}, "deepagents — openai:gpt-test, thinking budget 8000 tokens. Type"},
	}
	for _, tt := range tests {
		runEnv(t, srv)
		s := assembleArgs(t, append([]string{"--model", "openai:gpt-test"}, tt.flag...)...)
		var out, errb bytes.Buffer
		sess := &session{setup: s, flags: runFlags{output: "text", threadDir: t.TempDir()}, stdout: &out, stderr: &errb}
		if code := sess.interactive(t.Context(), strings.NewReader("hello\n")); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.HasPrefix(errb.String(), tt.want) {
			t.Errorf("%v: banner %q, want it to start with %q", tt.flag, errb.String(), tt.want)
		}
	}
}

// A server's reasoning (reasoning_content) goes back with the message that
// called tools, as DeepSeek's thinking mode needs; reasoning_back = false in
// a provider's table keeps it out.
func TestReasoningBackSwitch(t *testing.T) {
	for _, off := range []bool{false, true} {
		var second string
		model := ot.NewServer(t, func(r *ot.Request) ot.Reply {
			if _, ok := r.ToolResult("c1"); ok {
				second = string(r.Body)
				return ot.Text("done")
			}
			rep := ot.Tools(ot.Call{ID: "c1", Name: "ls", Args: `{"path":"/"}`})
			rep.Reasoning = "list the root first"
			return rep
		})
		project, _ := runEnv(t, model)
		if off {
			if err := os.WriteFile(filepath.Join(project, "deepagents.toml"), []byte("[providers.openai]\nreasoning_back = false\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errs := runCLI(t, "run", "--model", "openai:gpt-4.1", "-p", "look around")
		if code != 0 || strings.TrimSpace(out) != "done" {
			t.Fatalf("exit %d, out %q: %s", code, out, errs)
		}
		if sent := strings.Contains(second, `"reasoning_content":"list the root first"`); sent == off {
			t.Errorf("reasoning_back off %v: the second request carries the reasoning: %v\n%s", off, sent, second)
		}
	}
}
