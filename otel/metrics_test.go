package daotel_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/tool"
)

// The GenAI client metrics come from the model calls the otel wrapper
// sees, timed by the run's clock: one streamed call that answers (first
// chunk after 0.3 s, done after 1.5 s) and one that fails for good after
// 0.5 s.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	h := newHarness(t)
	rec := daotel.NewRecorder(context.Background(), daotel.Config{TracerProvider: h.tp, MeterProvider: mp, Model: "m1", Provider: "openai"})
	rt := newClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	calls := 0
	model := streamFunc(func(ctx context.Context, _ *llm.Request) iter.Seq2[llm.StreamEvent, error] {
		calls++
		first := calls == 1
		return func(yield func(llm.StreamEvent, error) bool) {
			if !first {
				rt.Advance(ms(500))
				yield(llm.StreamEvent{}, errors.New("boom"))
				return
			}
			call := llm.ToolCall{ID: "n1", Name: "noop", Args: []byte(`{}`)}
			rt.Advance(ms(300))
			if !yield(llm.StreamEvent{Type: llm.EventToolCallStart, ToolCall: &llm.ToolCall{ID: call.ID, Name: call.Name}}, nil) {
				return
			}
			rt.Advance(ms(500))
			if !yield(llm.StreamEvent{Type: llm.EventToolCallDelta, ArgsDelta: "{}"}, nil) {
				return
			}
			rt.Advance(ms(700))
			yield(llm.StreamEvent{Type: llm.EventDone, Response: &llm.Response{
				Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, StopReason: llm.StopToolCalls,
				Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, CachedInputTokens: 80}}}, nil)
		}
	})
	noop := tool.MustFunc("noop", "Does nothing.", func(context.Context, *tool.Env, struct{}) (string, error) { return "ok", nil })
	a, err := agent.New(agent.Config{Model: model, Stream: true, Tools: []tool.Tool{noop}, Middleware: []agent.Middleware{daotel.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := daotel.WithRecorder(context.Background(), rec)
	if res, _ := agent.Drain(rec.Observe(a.Run(ctx, agent.Prompt("go"), agent.WithRuntime(rt))), nil); res == nil || res.Status != agent.StatusError || calls != 2 {
		t.Fatalf("run %+v after %d calls, want an error on the second", res, calls)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	usage, ok := got["gen_ai.client.token.usage"].(metricdata.Histogram[int64])
	if !ok || len(usage.DataPoints) != 2 {
		t.Fatalf("token usage %#v", got["gen_ai.client.token.usage"])
	}
	for _, dp := range usage.DataPoints {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		want := map[string]int64{"input": 100, "output": 20}[typ.AsString()]
		if dp.Count != 1 || dp.Sum != want {
			t.Errorf("%s tokens: count %d sum %d, want 1 and %d", typ.AsString(), dp.Count, dp.Sum, want)
		}
		if len(dp.Bounds) != 14 || dp.Bounds[0] != 1 || dp.Bounds[13] != 67108864 {
			t.Errorf("token buckets %v", dp.Bounds)
		}
		if v, _ := dp.Attributes.Value("gen_ai.request.model"); v.AsString() != "m1" {
			t.Errorf("request model %q", v.AsString())
		}
	}
	dur, ok := got["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	if !ok || len(dur.DataPoints) != 2 {
		t.Fatalf("duration %#v", got["gen_ai.client.operation.duration"])
	}
	for _, dp := range dur.DataPoints {
		errType, failed := dp.Attributes.Value(attribute.Key("error.type"))
		want := 1.5
		if failed {
			want = 0.5
			if errType.AsString() != "_OTHER" {
				t.Errorf("error.type %q", errType.AsString())
			}
		}
		if dp.Count != 1 || dp.Sum < want-1e-9 || dp.Sum > want+1e-9 {
			t.Errorf("duration (failed %v): count %d sum %v, want %v", failed, dp.Count, dp.Sum, want)
		}
		if dp.Bounds[0] != 0.01 || dp.Bounds[len(dp.Bounds)-1] != 81.92 {
			t.Errorf("duration buckets %v", dp.Bounds)
		}
	}
	ttfc, ok := got["gen_ai.client.operation.time_to_first_chunk"].(metricdata.Histogram[float64])
	if !ok || len(ttfc.DataPoints) != 1 || ttfc.DataPoints[0].Count != 1 || ttfc.DataPoints[0].Sum < 0.3-1e-9 || ttfc.DataPoints[0].Sum > 0.3+1e-9 {
		t.Fatalf("time to first chunk %#v", got["gen_ai.client.operation.time_to_first_chunk"])
	}
}
