package daotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepagents-go/deepagents/llm"
)

// CostMetric is the name of our cost counter: what each model call cost in
// US dollars, with the chat metrics' attributes (operation, provider,
// request and response model) and the agent's name (gen_ai.agent.name). The GenAI conventions have no cost metric; this one is ours.
const CostMetric = "deepagents.client.cost"

// CostKey is the chat span attribute of the call's cost in US dollars.
const CostKey = attribute.Key("deepagents.cost_usd")

// Pricer prices one model call (budget.Pricer; pricing.Table is one): the
// cost in US dollars of usage u by model, ok false when the model has no
// price.
type Pricer interface {
	Price(model string, u llm.Usage) (usd float64, ok bool)
}

// cost records what a call cost, when the recorder has a pricer and the
// model a price: on the chat span and in the cost counter. A call without
// a price, or without usage, records nothing rather than zero.
func (r *Recorder) cost(ctx context.Context, span trace.Span, path, model string, u llm.Usage, attrs []attribute.KeyValue) {
	if r.cfg.Pricer == nil || (u.Unknown && u.InputTokens == 0 && u.OutputTokens == 0) {
		return
	}
	usd, ok := r.cfg.Pricer.Price(model, u)
	if !ok || usd < 0 {
		return
	}
	span.SetAttributes(CostKey.Float64(usd))
	if r.metrics.spend != nil {
		attrs = append(attrs[:len(attrs):len(attrs)], semconv.GenAIAgentName(agentName(path)))
		r.metrics.spend.Add(ctx, usd, metric.WithAttributes(attrs...))
	}
}
