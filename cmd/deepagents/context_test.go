package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/tokens"
)

func TestContextTable(t *testing.T) {
	withWindow := tokens.Report{System: 1200, Tools: 5400, Messages: 3000, ToolResults: 12_400, Free: 178_000,
		Window: 200_000, Estimated: 11_000, Calibrated: 22_000, Ratio: 2}
	var b strings.Builder
	writeContextTable(&b, "parent", withWindow)
	want := `Context of the last model call (parent): 22,000 of 200,000 tokens (11.0%)
  system prompt           1,200    0.6%
  tool definitions        5,400    2.7%
  messages                3,000    1.5%
  tool results           12,400    6.2%
  memory                      0    0.0%
  skills                      0    0.0%
  free space            178,000   89.0%
Estimated at 11,000 tokens, scaled by 2.00 to match the usage the provider reported.
`
	if b.String() != want {
		t.Errorf("with a window:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	writeContextTable(&b, "parent", tokens.Report{System: 25, Tools: 50, Messages: 25, Estimated: 100, Calibrated: 100, Ratio: 1})
	want = `Context of the last model call (parent): 100 tokens; the model's window is unknown (set context_window in a [models."provider:model"] table), so shares are of the request
  system prompt              25   25.0%
  tool definitions           50   50.0%
  messages                   25   25.0%
  tool results                0    0.0%
  memory                      0    0.0%
  skills                      0    0.0%
Estimated; no usage reported by the provider yet to calibrate against.
`
	if b.String() != want {
		t.Errorf("without a window:\n%s\nwant:\n%s", b.String(), want)
	}
	for n, s := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1_047_576: "1,047,576", -12_345: "-12,345"} {
		if got := thousands(n); got != s {
			t.Errorf("thousands(%d) = %q, want %q", n, got, s)
		}
	}
}

// The session's log keeps the agent's last request and a ledger per
// subagent of the latest turn.
func TestContextLogListsSubagents(t *testing.T) {
	var l contextLog
	var b strings.Builder
	l.write(&b)
	if !strings.HasPrefix(b.String(), "No model call yet") {
		t.Errorf("empty log: %q", b.String())
	}
	req := func(who, task string, cal int) agent.Event {
		return agent.Event{Type: agent.ModelRequest, Agent: mustPath(who), TaskCall: task, Request: &agent.RequestInfo{
			Context: &tokens.Report{Messages: cal, Estimated: cal, Calibrated: cal, Ratio: 1, Window: 10_000, Free: 10_000 - cal}}}
	}
	l.startTurn()
	l.note(req("parent", "", 100))
	l.note(req("parent / researcher#call_1", "call_1", 2500))
	l.note(req("parent / researcher#call_1", "call_1", 1500))
	l.note(req("parent", "", 300))
	b.Reset()
	l.write(&b)
	got := b.String()
	if !strings.HasPrefix(got, "Context of the last model call (parent): 300 of 10,000 tokens (3.0%)\n") {
		t.Errorf("the table is not the parent's last request:\n%s", got)
	}
	if !strings.HasSuffix(got, "Subagents of the last turn (their largest request):\n"+
		"  parent / researcher#call_1: 2 calls, largest 2,500 tokens (25.0% of 10,000), 4,000 tokens sent in all\n") {
		t.Errorf("subagent lines:\n%s", got)
	}
	l.startTurn()
	b.Reset()
	l.write(&b)
	if strings.Contains(b.String(), "Subagents") || !strings.Contains(b.String(), "(parent): 300") {
		t.Errorf("a new turn keeps the last request and forgets the subagents:\n%s", b.String())
	}
}

// `run --output json` carries the last request's report and a ledger per
// agent path; stream-json carries a report in every model.request event.
func TestRunJSONCarriesTheLedger(t *testing.T) {
	srv := delegationServer(t)
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "What is the answer?", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var sum runSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	c := sum.Context
	if c == nil || c.Calibrated == 0 || c.System+c.Tools+c.Messages+c.ToolResults+c.Memory+c.Skills != c.Calibrated || c.ToolResults == 0 {
		t.Fatalf("last report %+v", c)
	}
	const child = "parent / general-purpose#call_p1"
	p, ch := sum.ContextByAgent["parent"], sum.ContextByAgent[child]
	if p.Calls != 2 || ch.Calls != 2 || p.Last != *c || p.Peak.Calibrated < ch.Peak.Calibrated || ch.Sent <= ch.Peak.Calibrated {
		t.Errorf("ledgers by agent: %+v", sum.ContextByAgent)
	}
	if tot := sum.ContextTotal; tot == nil || tot.Calls != 4 || tot.Sent != p.Sent+ch.Sent || tot.Peak.Calibrated != p.Peak.Calibrated {
		t.Errorf("tree total %+v", tot)
	}
	// The server reports usage: the second request of each agent is
	// calibrated by the first one's.
	if p.Last.Ratio == 1 && p.Last.Estimated == p.Last.Calibrated && p.Last.LastReported == 0 {
		t.Errorf("the parent's second request shows no calibration: %+v", p.Last)
	}

	code, out, errs = runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--output", "stream-json")
	if code != 0 {
		t.Fatalf("stream-json: exit %d: %s", code, errs)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	requests := 0
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Request *struct {
				Context map[string]any `json:"context"`
			} `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "model.request" {
			continue
		}
		requests++
		if ev.Request == nil || ev.Request.Context["calibrated"] == nil || ev.Request.Context["tools"] == nil {
			t.Errorf("model.request without a context report: %s", sc.Text())
		}
		if _, ok := ev.Request.Context["free"]; ok {
			t.Errorf("free space shown for an unknown window: %s", sc.Text())
		}
	}
	if requests != 4 {
		t.Errorf("%d model.request events, want 4", requests)
	}
}

// /context in an interactive session prints the last request's table.
func TestInteractiveContextCommand(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("hello back") })
	code, out, errb := interactive(t, srv, "/context\nhello\n/context\n")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := errb.String()
	empty := strings.Index(got, "No model call yet in this session")
	table := strings.Index(got, "Context of the last model call (parent): ")
	if empty < 0 || table < empty || !strings.Contains(got[table:], "  tool definitions  ") || out.String() != "hello back\n" {
		t.Errorf("/context before and after a turn:\nstderr:\n%s\nstdout:\n%s", got, out.String())
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("/context called the model: %d requests", len(srv.Requests()))
	}
}

// The window comes from the built-in profiles, the config's [models] tables
// and agent files.
func TestContextWindowsFromConfig(t *testing.T) {
	project, _ := runEnv(t, nil)
	t.Setenv("OPENAI_API_KEY", "test-key")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(project, "deepagents.toml"), []byte("[models.\"openai:my-model\"]\ncontext_window = 50000\n"), 0o644))
	agents := filepath.Join(project, ".deepagents", "agents")
	must(os.MkdirAll(agents, 0o755))
	must(os.WriteFile(filepath.Join(agents, "small.md"), []byte("---\ndescription: Small.\ncontext_window: 16000\n---\nBe quick.\n"), 0o644))
	must(os.WriteFile(filepath.Join(agents, "big.md"), []byte("---\ndescription: Big.\nmodel: openai:gpt-4.1\n---\nRead a lot.\n"), 0o644))
	must(os.WriteFile(filepath.Join(agents, "same.md"), []byte("---\ndescription: Same model.\n---\nHelp.\n"), 0o644))
	tests := []struct {
		model  string
		parent int
	}{
		{"openai:my-model", 50_000},
		{"openai:gpt-4o", 128_000},
		{"openai:unknown-model", 0},
	}
	for _, tt := range tests {
		f := runFlags{model: tt.model, output: "text", set: map[string]bool{}}
		var errb strings.Builder
		s, err := assemble(t.Context(), f, &errb)
		if err != nil {
			t.Fatal(err)
		}
		s.close()
		want := map[string]int{"small": 16_000, "big": 1_047_576, "same": tt.parent}
		if s.contextWindow != tt.parent || len(s.subagentWindows) != 3 {
			t.Errorf("%s: window %d, want %d; subagents %v", tt.model, s.contextWindow, tt.parent, s.subagentWindows)
		}
		for name, w := range want {
			if s.subagentWindows[name] != w {
				t.Errorf("%s: subagent %s window %d, want %d", tt.model, name, s.subagentWindows[name], w)
			}
		}
	}
}
