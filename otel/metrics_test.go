package daotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	daotel "github.com/deepagents-go/deepagents/otel"
)

// The GenAI client metrics come from the events' times and usage: one
// streamed call that answers and one that fails for good.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	h := newHarness(t)
	rec := daotel.NewRecorder(context.Background(), daotel.Config{TracerProvider: h.tp, MeterProvider: mp, Model: "m1", Provider: "openai"})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, ev := range []agent.Event{
		{Type: agent.RunStart, Agent: agent.RootPath("parent"), Time: at(0), Run: &agent.RunInfo{}},
		{Type: agent.ModelRequest, Agent: agent.RootPath("parent"), Time: at(100), Request: &agent.RequestInfo{Round: 0}},
		{Type: agent.ModelDelta, Agent: agent.RootPath("parent"), Time: at(400), Delta: &llm.StreamEvent{}},
		{Type: agent.ModelDelta, Agent: agent.RootPath("parent"), Time: at(900), Delta: &llm.StreamEvent{}},
		{Type: agent.ModelResponse, Agent: agent.RootPath("parent"), Time: at(1600), Response: &agent.ResponseInfo{Round: 0, StopReason: llm.StopEnd,
			Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, CachedInputTokens: 80}}},
		{Type: agent.ModelRequest, Agent: agent.RootPath("parent"), Time: at(2000), Request: &agent.RequestInfo{Round: 1}},
		{Type: agent.RunEnd, Agent: agent.RootPath("parent"), Time: at(2500), Run: &agent.RunInfo{Status: agent.StatusError, Error: "boom"}},
	} {
		rec.Record(ev)
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
