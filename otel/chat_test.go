package daotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/tool"
)

// A wrapper outside the otel middleware rewrites the stream: it drops every
// delta and replaces the answer. The run shows the rewritten answer; the
// chat span shows what the model sent to the otel wrapper — its text, its
// model, and a first chunk 0.2 s in by the run's clock, though the run
// never streamed a chunk of it.
func TestChatSpanIsWhatTheModelSentToTheWrapper(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	h := newHarness(t)
	rec := daotel.NewRecorder(context.Background(), daotel.Config{TracerProvider: h.tp, MeterProvider: mp, Model: "m", CaptureContent: new(true)})
	rt := newClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	model := streamFunc(func(context.Context, *llm.Request) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			for _, d := range []struct {
				after time.Duration
				text  string
			}{{200 * time.Millisecond, "Hello "}, {300 * time.Millisecond, "world"}} {
				rt.Advance(d.after)
				if !yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: d.text}, nil) {
					return
				}
			}
			rt.Advance(500 * time.Millisecond)
			yield(llm.StreamEvent{Type: llm.EventDone, Response: &llm.Response{Model: "m-2026-01",
				Message: llm.Message{Role: llm.RoleAssistant, Content: "Hello world"}, StopReason: llm.StopEnd,
				Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}}, nil)
		}
	})
	rewrite := agent.Middleware{Name: "rewrite", WrapStream: func(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			for ev, err := range next(ctx, req) {
				if err != nil {
					yield(ev, err)
					return
				}
				if ev.Type != llm.EventDone {
					continue
				}
				resp := *ev.Response
				resp.Model = "rewriter"
				resp.Message = llm.Message{Role: llm.RoleAssistant, Content: "REWRITTEN"}
				yield(llm.StreamEvent{Type: llm.EventDone, Response: &resp}, nil)
				return
			}
		}
	}}
	a, err := agent.New(agent.Config{Model: model, Stream: true, Middleware: []agent.Middleware{rewrite, daotel.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	res, err := agent.Drain(rec.Observe(a.Run(daotel.WithRecorder(context.Background(), rec), agent.Prompt("hi"), agent.WithRuntime(rt))), func(ev agent.Event) {
		if ev.Type == agent.ModelDelta {
			deltas++
		}
	})
	if err != nil || res.FinalText() != "REWRITTEN" || deltas != 0 {
		t.Fatalf("run: %v, final text %q, %d deltas; want the rewritten answer and no delta", err, res.FinalText(), deltas)
	}
	chat := one(t, h.exp.GetSpans(), "chat m")
	if got := attrOf(chat, "gen_ai.output.messages"); got != `[{"role":"assistant","parts":[{"type":"text","content":"Hello world"}],"finish_reason":"stop"}]` {
		t.Errorf("output messages %s, want the model's own answer", got)
	}
	if got := attrOf(chat, "gen_ai.response.model"); got != "m-2026-01" {
		t.Errorf("response model %q, want the model's", got)
	}
	if d := chat.EndTime.Sub(chat.StartTime); d != time.Second {
		t.Errorf("chat span lasted %v, want 1s of the run's clock", d)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var ttfc *metricdata.Histogram[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "gen_ai.client.operation.time_to_first_chunk" {
				ttfc = &h
			}
		}
	}
	if ttfc == nil || len(ttfc.DataPoints) != 1 || ttfc.DataPoints[0].Sum < 0.2-1e-9 || ttfc.DataPoints[0].Sum > 0.2+1e-9 {
		t.Fatalf("time to first chunk %+v, want one of 0.2 s", ttfc)
	}
}

// overflowing answers the parent's third call with the provider's overflow
// error; every other call is the scripted model's.
type overflowing struct {
	*scripted.Model
	parent atomic.Int64
}

func (m *overflowing) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	if ci, _ := llm.CallInfoFrom(ctx); ci.Agent == "parent" && m.parent.Add(1) == 3 {
		return func(yield func(llm.StreamEvent, error) bool) {
			yield(llm.StreamEvent{}, &llm.APIError{Kind: llm.ErrKindContextLength, Message: "prompt is too long"})
		}
	}
	return m.Model.Stream(ctx, req)
}

// A request compaction sends again after the provider said it was too long
// is one model call of the step: one chat span for the round, which ends
// with the resent request's answer and usage, not an error, and holds only
// that answer. The compaction is an event of the run's span. (The otel
// middleware is outside compaction, as deepagents.New orders them.)
func TestOverflowRetryIsOneChatSpan(t *testing.T) {
	echo := tool.MustFunc("echo", "Echo.", func(_ context.Context, _ *tool.Env, in struct {
		Q string `json:"q"`
	}) (string, error) {
		return "result for " + in.Q + ": " + strings.Repeat("data ", 40), nil
	})
	batch := func(round int) scripted.Step {
		var calls []scripted.StepCall
		for i := range 2 {
			calls = append(calls, scripted.StepCall{ID: fmt.Sprintf("c%d_%d", round, i), Name: "echo",
				Args: json.RawMessage(fmt.Sprintf(`{"q":"r%d-%d"}`, round, i))})
		}
		return scripted.Step{ToolCalls: calls}
	}
	sm := scripted.New(scripted.Script{
		"parent": scripted.AgentScript{Steps: []scripted.Step{batch(0), batch(1),
			{Content: "the refused call's step, never read"},
			{Content: "done", Usage: &llm.Usage{InputTokens: 70, OutputTokens: 1}}}},
		"summarizer": scripted.AgentScript{Steps: []scripted.Step{{Content: "summary with src/a.go and 30 s"}}},
	}, scripted.Options{})
	m := &overflowing{Model: sm}
	cm, err := compact.New(compact.Config{KeepMessages: 2, Model: sm})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Stream: true, Tools: []tool.Tool{echo},
		Middleware: []agent.Middleware{daotel.Middleware(), cm}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	rec := daotel.NewRecorder(context.Background(), daotel.Config{TracerProvider: h.tp, Model: "m", CaptureContent: new(true)})
	res, err := agent.Drain(rec.Observe(a.Run(daotel.WithRecorder(context.Background(), rec), agent.Prompt("Please edit src/a.go and keep the limit at 30 s."))), nil)
	if err != nil || res.FinalText() != "done" || m.parent.Load() != 4 {
		t.Fatalf("run: %v, final text %q after %d parent calls; want done after 4", err, res.FinalText(), m.parent.Load())
	}
	spans := h.exp.GetSpans()
	var last []string
	for _, c := range find(spans, "chat m") {
		if attrOf(c, "error.type") != "" || c.Status.Code.String() == "Error" {
			t.Errorf("chat span of round %s failed: %s %q", attrOf(c, "deepagents.round"), attrOf(c, "error.type"), c.Status.Description)
		}
		if attrOf(c, "deepagents.round") == "2" {
			last = append(last, attrOf(c, "gen_ai.output.messages"))
			if attrOf(c, "gen_ai.usage.input_tokens") != "70" || attrOf(c, "gen_ai.usage.output_tokens") != "1" {
				t.Errorf("round 2 usage %s/%s, want the resent request's 70/1", attrOf(c, "gen_ai.usage.input_tokens"), attrOf(c, "gen_ai.usage.output_tokens"))
			}
		}
	}
	if len(find(spans, "chat m")) != 3 || len(last) != 1 {
		t.Fatalf("%d chat spans, %d of round 2; want 3 and 1:\n%s", len(find(spans, "chat m")), len(last), tree(spans))
	}
	if last[0] != `[{"role":"assistant","parts":[{"type":"text","content":"done"}],"finish_reason":"stop"}]` {
		t.Errorf("round 2 output %s, want the resent request's answer alone", last[0])
	}
	root := one(t, spans, "invoke_agent parent")
	compacted := 0
	for _, e := range root.Events {
		if e.Name == "deepagents.compaction" {
			compacted++
		}
	}
	if compacted != 1 {
		t.Errorf("%d compaction events on the run's span, want 1", compacted)
	}
}

// A stream that ends with no response of its own (the loop builds it from
// the deltas) ends its chat span well, with no usage: the run goes on.
func TestChatSpanOfAStreamWithoutAResponse(t *testing.T) {
	h := newHarness(t)
	rec := daotel.NewRecorder(context.Background(), daotel.Config{TracerProvider: h.tp, Model: "m"})
	model := streamFunc(func(context.Context, *llm.Request) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			if yield(llm.StreamEvent{Type: llm.EventTextDelta, Text: "hi"}, nil) {
				yield(llm.StreamEvent{Type: llm.EventDone}, nil)
			}
		}
	})
	a, err := agent.New(agent.Config{Model: model, Stream: true, Middleware: []agent.Middleware{daotel.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Drain(rec.Observe(a.Run(daotel.WithRecorder(context.Background(), rec), agent.Prompt("hi"))), nil)
	if err != nil || res.FinalText() != "hi" {
		t.Fatalf("run: %v, final text %q", err, res.FinalText())
	}
	chat := one(t, h.exp.GetSpans(), "chat m")
	if chat.Status.Code.String() == "Error" {
		t.Errorf("chat span status %v, want no error", chat.Status)
	}
}
