package daotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/tool"
)

// perThousand prices a model at a dollar per thousand tokens, but for
// "unpriced".
type perThousand struct{}

func (perThousand) Price(model string, u llm.Usage) (float64, bool) {
	if model == "unpriced" {
		return 0, false
	}
	return float64(u.Total()) / 1000, true
}

// The cost counter adds what each priced model call cost, with the model
// and agent attributes; the chat span carries the call's cost. Without a
// price nothing is recorded, not zero.
func TestCostMetric(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	h := newHarness(t)
	script := scripted.Script{"parent": scripted.AgentScript{Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{{ID: "n", Name: "noop"}}, Usage: &llm.Usage{InputTokens: 900, OutputTokens: 100}},
		{Content: "done", Usage: &llm.Usage{InputTokens: 400, OutputTokens: 100}},
	}}}
	run := func(cfg daotel.Config) {
		rec := daotel.NewRecorder(context.Background(), cfg)
		noop := tool.MustFunc("noop", "Does nothing.", func(context.Context, *tool.Env, struct{}) (string, error) { return "ok", nil })
		a, err := agent.New(agent.Config{Model: scripted.New(script, scripted.Options{}), Tools: []tool.Tool{noop}, Middleware: []agent.Middleware{daotel.Middleware()}})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := agent.Drain(rec.Observe(a.Run(daotel.WithRecorder(context.Background(), rec), agent.Prompt("go"))), nil); err != nil || res.Status != agent.StatusOK {
			t.Fatalf("run: %v", err)
		}
	}
	run(daotel.Config{TracerProvider: h.tp, MeterProvider: mp, Model: "scripted", Provider: "openai", Pricer: perThousand{}})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var sum metricdata.Sum[float64]
	unit := ""
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == daotel.CostMetric {
				sum, _ = m.Data.(metricdata.Sum[float64])
				unit = m.Unit
			}
		}
	}
	if unit != "USD" || !sum.IsMonotonic || len(sum.DataPoints) != 1 {
		t.Fatalf("cost metric %q %+v", unit, sum)
	}
	dp := sum.DataPoints[0]
	if dp.Value != 1.5 {
		t.Errorf("cost %v, want $1.50 (1,000 and 500 tokens)", dp.Value)
	}
	for k, want := range map[attribute.Key]string{"gen_ai.request.model": "scripted", "gen_ai.response.model": "scripted",
		"gen_ai.agent.name": "parent", "gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat"} {
		if v, ok := dp.Attributes.Value(k); !ok || v.AsString() != want {
			t.Errorf("%s = %q, want %q", k, v.AsString(), want)
		}
	}
	costs := 0
	for _, s := range h.exp.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Key == daotel.CostKey {
				costs++
			}
		}
	}
	if costs != 2 {
		t.Errorf("%d chat spans with a cost, want 2", costs)
	}

	// A model without a price: nothing more is counted.
	run(daotel.Config{TracerProvider: h.tp, MeterProvider: mp, Model: "scripted", Pricer: pricerAs("unpriced")})
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == daotel.CostMetric {
				if s := m.Data.(metricdata.Sum[float64]); len(s.DataPoints) != 1 || s.DataPoints[0].Value != 1.5 {
					t.Errorf("after an unpriced run: %+v", s.DataPoints)
				}
			}
		}
	}
}

type pricerAs string

func (p pricerAs) Price(_ string, u llm.Usage) (float64, bool) {
	return perThousand{}.Price(string(p), u)
}
