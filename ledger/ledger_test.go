package ledger_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/ledger"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
)

// newMetered returns an agent with cfg and its ledger, last among its
// middleware.
func newMetered(t *testing.T, cfg agent.Config) (*agent.Agent, *ledger.Meter) {
	t.Helper()
	m := ledger.New(cfg)
	cfg.Middleware = append(append([]agent.Middleware{}, cfg.Middleware...), m.Middleware())
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, m
}

func newAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, _ := newMetered(t, cfg)
	return a
}

// ledgerModel is a model whose provider reports `factor` times our own
// estimate of each request as its input tokens. Each answer asks for one
// call of the "echo" tool with `grow` bytes of text (or, when grow is
// negative, with as many bytes as the request is estimated to hold, which
// doubles the history on every step), until `calls` answers have been given.
type ledgerModel struct {
	name   string
	factor float64
	calls  int
	grow   int
	// nest, when set, is the args of a "nest" call made on the first step.
	nest string

	mu   sync.Mutex
	seen map[string]int
}

func (m *ledgerModel) Name() string { return m.name }

func (m *ledgerModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ci, _ := llm.CallInfoFrom(ctx)
	m.mu.Lock()
	if m.seen == nil {
		m.seen = map[string]int{}
	}
	n := m.seen[ci.Path]
	m.seen[ci.Path]++
	m.mu.Unlock()
	est := tokens.Estimate(req).Total
	usage := llm.Usage{InputTokens: int(float64(est)*m.factor + 0.5), OutputTokens: 7}
	if n >= m.calls {
		return &llm.Response{Message: llm.Assistant("done"), Usage: usage, StopReason: llm.StopEnd}, nil
	}
	if m.nest != "" && n == 0 && !strings.Contains(ci.Path, "/") {
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "nest", Args: json.RawMessage(m.nest)}),
			Usage: usage, StopReason: llm.StopToolCalls}, nil
	}
	size := m.grow
	if size < 0 {
		size = est * 4
	}
	args, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", size)})
	return &llm.Response{Message: llm.Assistant("", llm.ToolCall{Name: "echo", Args: args}),
		Usage: usage, StopReason: llm.StopToolCalls}, nil
}

func (m *ledgerModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return llm.StreamOf(ctx, req, m.Generate)
}

type echoIn struct {
	Text string `json:"text"`
}

var echoTool = tool.MustFunc("echo", "Say it back.", func(_ context.Context, _ *tool.Env, in echoIn) (string, error) {
	return "ok", nil
})

// requestReports runs a and returns the context reports of its model
// requests, in order, by agent path.
func requestReports(t *testing.T, a *agent.Agent, prompt string) (map[string][]tokens.Report, *agent.Result) {
	t.Helper()
	reps := map[string][]tokens.Report{}
	var mu sync.Mutex
	res, err := agent.Drain(a.Run(context.Background(), agent.Prompt(prompt)), func(ev agent.Event) {
		if ev.Type == agent.ModelRequest {
			if ev.Request.Context == nil {
				t.Errorf("model.request of %s without a context report", ev.Agent)
				return
			}
			mu.Lock()
			reps[ev.Agent.String()] = append(reps[ev.Agent.String()], *ev.Request.Context)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return reps, res
}

// A provider that reports twice our estimate moves the agent's ratio into
// [1.8, 2.0] within three calls, and the calibrated size of a doubling
// history crosses 0.85 of the window one call before the raw estimate does.
func TestCalibrationInTheLoop(t *testing.T) {
	const window = 40_000
	m := &ledgerModel{name: "double-counter", factor: 2, calls: 7, grow: -1}
	a, meter := newMetered(t, agent.Config{Model: m, System: "Be brief.", Tools: []tool.Tool{echoTool}, ContextWindow: window})
	reps, _ := requestReports(t, a, strings.Repeat("Please look at this. ", 40))
	got := reps["parent"]
	if len(got) != 8 {
		t.Fatalf("%d requests, want 8", len(got))
	}
	if got[0].Ratio != 1 || got[0].Calibrated != got[0].Estimated {
		t.Errorf("the first request is not at ratio 1: %+v", got[0])
	}
	for i, r := range got[3:] {
		if r.Ratio < 1.8 || r.Ratio > 2.0 {
			t.Errorf("request %d: ratio %.3f after %d reports", i+3, r.Ratio, i+3)
		}
	}
	if r := meter.Ratio(); r < 1.8 || r > 2.0 {
		t.Errorf("agent's ratio after the run: %.3f", r)
	}
	threshold := window * 85 / 100
	first := func(size func(tokens.Report) int) int {
		for i, r := range got {
			if size(r) >= threshold {
				return i
			}
		}
		return -1
	}
	calibrated := first(func(r tokens.Report) int { return r.Load() })
	raw := first(func(r tokens.Report) int { return r.Estimated })
	if calibrated < 0 || raw < 0 || calibrated != raw-1 {
		var sizes []int
		for _, r := range got {
			sizes = append(sizes, r.Estimated, r.Calibrated)
		}
		t.Fatalf("threshold %d crossed at call %d calibrated and %d uncalibrated; one call earlier expected (estimated, calibrated: %v)", threshold, calibrated, raw, sizes)
	}
}

// Every report adds up: the parts are the calibrated total, and the parts
// plus the free space are the window. Without a window, free is left out of
// the JSON.
func TestContextReportAddsUp(t *testing.T) {
	m := &ledgerModel{name: "m", factor: 1.37, calls: 3, grow: 2000}
	a := newAgent(t, agent.Config{Model: m, System: strings.Repeat("Rules. ", 50), Tools: []tool.Tool{echoTool}, ContextWindow: 100_000})
	reps, res := requestReports(t, a, "Go.")
	got := reps["parent"]
	if len(got) != 4 {
		t.Fatalf("%d requests", len(got))
	}
	for i, r := range got {
		parts := r.System + r.Tools + r.Messages + r.ToolResults + r.Memory + r.Skills
		if parts != r.Calibrated || parts+r.Free != 100_000 || r.Window != 100_000 {
			t.Errorf("request %d does not add up: %+v", i, r)
		}
		if r.System == 0 || r.Tools == 0 || r.Messages == 0 {
			t.Errorf("request %d: an empty part: %+v", i, r)
		}
	}
	if got[0].ToolResults != 0 || got[1].ToolResults == 0 || got[3].Messages <= got[0].Messages+3*400 {
		t.Errorf("tool results and messages are not where they belong: %+v", got)
	}
	// The result carries the last and the largest request.
	if res.Context == nil || res.Context.Calls != 4 || res.Context.Last != got[3] {
		t.Fatalf("result ledger %+v", res.Context)
	}
	sum := 0
	for _, r := range got {
		sum += r.Calibrated
	}
	if res.Context.Sent != sum || res.Context.Peak != got[3] || res.ContextByAgent["parent"] != *res.Context {
		t.Errorf("ledger sums %+v, want sent %d", res.Context, sum)
	}

	b, _ := json.Marshal(got[0])
	if !strings.Contains(string(b), `"free":`) {
		t.Errorf("a report with a window has no free space in JSON: %s", b)
	}
	var back tokens.Report
	if err := json.Unmarshal(b, &back); err != nil || back != got[0] {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}
	noWindow := newAgent(t, agent.Config{Model: &ledgerModel{name: "m", factor: 1}})
	reps, _ = requestReports(t, noWindow, "Go.")
	r := reps["parent"][0]
	b, _ = json.Marshal(r)
	if r.Window != 0 || r.Free != 0 || strings.Contains(string(b), "free") || strings.Contains(string(b), "window") {
		t.Errorf("unknown window: %+v %s", r, b)
	}
}

// nestTool runs a real child agent under the calling run's path.
type nestTool struct{ child *agent.Agent }

func (nestTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "nest", Description: "Run a child.", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (n nestTool) Run(ctx context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	res, _, err := n.RunNested(ctx, env, args, agent.Host{})
	return res, err
}

func (n nestTool) RunNested(ctx context.Context, env *tool.Env, _ json.RawMessage, host agent.Host) (tool.Result, *agent.Result, error) {
	res, err := agent.Drain(n.child.Run(ctx, agent.Prompt("child work"), agent.AsChild(agent.Child{Path: host.Path.Child("helper", env.CallID)})),
		host.Emit)
	if res == nil {
		return tool.Result{}, nil, err
	}
	return tool.Text(res.FinalText()), res, nil
}

// A subagent's requests are measured against its own window and summed
// under its own path; the parent's result carries every path and the tree
// total.
func TestContextLedgerPerSubagent(t *testing.T) {
	m := &ledgerModel{name: "m", factor: 1, calls: 2, grow: 400, nest: `{}`}
	child := newAgent(t, agent.Config{Name: "helper", Model: m, Tools: []tool.Tool{echoTool}, ContextWindow: 8_000})
	parent := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{echoTool, nestTool{child}}, ContextWindow: 50_000})
	reps, res := requestReports(t, parent, "Delegate.")
	var cp string
	for p := range reps {
		if p != "parent" {
			cp = p
		}
	}
	if cp == "" || len(reps) != 2 {
		t.Fatalf("reports by path: %v", reps)
	}
	for _, r := range reps[cp] {
		if r.Window != 8_000 || r.Free != 8_000-r.Calibrated {
			t.Errorf("child report against the wrong window: %+v", r)
		}
	}
	pl, cl := res.ContextByAgent["parent"], res.ContextByAgent[cp]
	if pl.Calls != len(reps["parent"]) || cl.Calls != len(reps[cp]) || cl.Calls != 3 {
		t.Fatalf("calls by path: parent %d (%d seen), child %d (%d seen)", pl.Calls, len(reps["parent"]), cl.Calls, len(reps[cp]))
	}
	total := tokens.LedgerTree(res.Agent.String(), res.ContextByAgent)
	if total.Calls != pl.Calls+cl.Calls || total.Sent != pl.Sent+cl.Sent || total.Last != pl.Last {
		t.Errorf("tree total %+v from parent %+v and child %+v", total, pl, cl)
	}
	if want := max(pl.Peak.Calibrated, cl.Peak.Calibrated); total.Peak.Calibrated != want {
		t.Errorf("tree peak %d, want %d", total.Peak.Calibrated, want)
	}
	kid, ok := res.Child(strings.TrimPrefix(cp, "parent / helper#"))
	if !ok || kid.Context == nil || *kid.Context != cl {
		t.Errorf("the child's own result ledger: %+v", kid)
	}
}

// A BeforeModel hook measures a request as the loop will report it: same
// window, same calibration, same floor from the previous call's usage.
func TestStepInfoMeasure(t *testing.T) {
	m := &ledgerModel{name: "m", factor: 1.5, calls: 2, grow: 800}
	var measured []tokens.Report
	mw := agent.Middleware{Name: "measure", BeforeModel: func(_ context.Context, st agent.StepInfo, req *llm.Request) error {
		measured = append(measured, st.Measure(req))
		return nil
	}}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{echoTool}, Middleware: []agent.Middleware{mw}, ContextWindow: 20_000})
	reps, _ := requestReports(t, a, "Go.")
	got := reps["parent"]
	if len(got) != 3 || len(measured) != 3 {
		t.Fatalf("%d reports, %d measured", len(got), len(measured))
	}
	for i := range got {
		if measured[i] != got[i] {
			t.Errorf("request %d: measured %+v, reported %+v", i, measured[i], got[i])
		}
	}
	if got[1].Ratio < 1.45 || got[1].Ratio > 1.55 || got[1].LastReported == 0 || got[2].Load() < got[1].Load() {
		t.Errorf("the second request is not calibrated by the first: %+v", got[1])
	}
	req := &llm.Request{System: strings.Repeat("s", 400)}
	if r := (agent.StepInfo{}).Measure(req); r.System != 100 || r.Calibrated != 100 || r.Window != 0 || r.Ratio != 1 {
		t.Errorf("a hand-made StepInfo measures %+v", r)
	}
}

// A middleware that shrinks the request inside the model call (as
// compaction does) does not skew the calibration: the ledger compares the
// provider's count with the request that reached the model.
func TestCalibrationUsesTheRequestSent(t *testing.T) {
	m := &ledgerModel{name: "double-counter", factor: 2, calls: 5, grow: -1}
	shrink := agent.Middleware{Name: "shrink", WrapModel: func(ctx context.Context, req *llm.Request, next agent.ModelFunc) (*llm.Response, error) {
		r := *req
		r.Messages = r.Messages[len(r.Messages)-1:]
		return next(ctx, &r)
	}}
	a, meter := newMetered(t, agent.Config{Model: m, Tools: []tool.Tool{echoTool}, Middleware: []agent.Middleware{shrink}})
	if _, err := a.Invoke(t.Context(), agent.Prompt(strings.Repeat("Please look at this. ", 40))); err != nil {
		t.Fatal(err)
	}
	if r := meter.Ratio(); r < 1.8 || r > 2.0 {
		t.Fatalf("ratio %.3f; the model reports 2× what it was sent", r)
	}
}

// fixedUsageModel calls echo once, then answers; every response reports
// the same usage, whatever the request.
type fixedUsageModel struct {
	usage llm.Usage
	n     int
}

func (m *fixedUsageModel) Name() string { return "fixed-usage" }

func (m *fixedUsageModel) Generate(_ context.Context, _ *llm.Request) (*llm.Response, error) {
	m.n++
	if m.n == 1 {
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "c1", Name: "echo", Args: json.RawMessage(`{"text":"x"}`)}),
			Usage: m.usage, StopReason: llm.StopToolCalls}, nil
	}
	return &llm.Response{Message: llm.Assistant("done"), Usage: m.usage, StopReason: llm.StopEnd}, nil
}

func (m *fixedUsageModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return llm.StreamOf(ctx, req, m.Generate)
}

// The floor a request reports is everything the provider counted for the
// previous call: its input and its answer (output), which the next request
// sends again. A short request whose previous call was long loads as that
// floor, not as its own small estimate.
func TestContextFloorIsInputPlusOutput(t *testing.T) {
	m := &fixedUsageModel{usage: llm.Usage{InputTokens: 9_000, OutputTokens: 2_500}}
	a := newAgent(t, agent.Config{Model: m, Tools: []tool.Tool{echoTool}, ContextWindow: 100_000})
	reps, _ := requestReports(t, a, "Go.")
	got := reps["parent"]
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	if got[0].LastReported != 0 {
		t.Errorf("the first request has a floor before any report: %d", got[0].LastReported)
	}
	if got[1].LastReported != 11_500 {
		t.Errorf("floor of the second request = %d, want 11500 (9000 input + 2500 output)", got[1].LastReported)
	}
	if got[1].Calibrated >= 11_500 || got[1].Load() != 11_500 {
		t.Errorf("the second request loads as %d (calibrated %d), want the floor 11500", got[1].Load(), got[1].Calibrated)
	}
}

// helperModel reports 3× the estimate of a call a middleware makes on its
// own behalf (CallInfo agent "helper") and the estimate itself for the
// agent's: it calls echo once, then answers.
type helperModel struct{ n int }

func (m *helperModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ci, _ := llm.CallInfoFrom(ctx)
	est := tokens.Estimate(req).Total
	if ci.Agent == "helper" {
		return &llm.Response{Message: llm.Assistant("summary"), Usage: llm.Usage{InputTokens: 3 * est, OutputTokens: 50_000}, StopReason: llm.StopEnd}, nil
	}
	m.n++
	usage := llm.Usage{InputTokens: est, OutputTokens: 1}
	if m.n == 1 {
		return &llm.Response{Message: llm.Assistant("", llm.ToolCall{ID: "c1", Name: "echo", Args: json.RawMessage(`{"text":"x"}`)}),
			Usage: usage, StopReason: llm.StopToolCalls}, nil
	}
	return &llm.Response{Message: llm.Assistant("done"), Usage: usage, StopReason: llm.StopEnd}, nil
}

func (m *helperModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return llm.StreamOf(ctx, req, m.Generate)
}

// A call a middleware makes through the rest of the chain on its own
// behalf (as compaction's summariser does when it has no model of its own)
// is not the step's: its usage neither calibrates nor sets the floor.
func TestCalibrationIgnoresAMiddlewaresOwnCalls(t *testing.T) {
	helper := agent.Middleware{Name: "helper", WrapStream: func(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
		hctx := llm.WithCallInfo(ctx, llm.CallInfo{Agent: "helper"})
		if _, err := llm.Collect(next(hctx, &llm.Request{Messages: []llm.Message{llm.User(strings.Repeat("summarise this. ", 100))}})); err != nil {
			return func(yield func(llm.StreamEvent, error) bool) { yield(llm.StreamEvent{}, err) }
		}
		return next(ctx, req)
	}}
	a, meter := newMetered(t, agent.Config{Model: &helperModel{}, Tools: []tool.Tool{echoTool}, Middleware: []agent.Middleware{helper}, ContextWindow: 100_000})
	reps, _ := requestReports(t, a, "Go.")
	got := reps["parent"]
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	if r := meter.Ratio(); r != 1 || got[1].Ratio != 1 {
		t.Errorf("ratio %v (second request %v), want 1: the helper's calls calibrated", r, got[1].Ratio)
	}
	if got[1].LastReported >= 50_000 || got[1].LastReported == 0 {
		t.Errorf("floor %d: want the agent's own previous call, not the helper's", got[1].LastReported)
	}
}
