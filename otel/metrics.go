package daotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/deepagents-go/deepagents/llm"
)

// Bucket boundaries the GenAI conventions advise for their histograms.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// metrics are the GenAI client instruments. An instrument the meter would
// not make is left nil and records nothing.
type metrics struct {
	usage     metric.Int64Histogram
	opSeconds metric.Float64Histogram
	ttfc      metric.Float64Histogram
	// spend is our own cost counter (cost.go), not a GenAI convention.
	spend metric.Float64Counter
}

func newMetrics(mp metric.MeterProvider) metrics {
	m := mp.Meter(ScopeName)
	var out metrics
	out.usage, _ = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(tokenBuckets...))
	out.opSeconds, _ = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	out.ttfc, _ = m.Float64Histogram("gen_ai.client.operation.time_to_first_chunk", metric.WithUnit("s"),
		metric.WithDescription("Time to receive the first chunk in a streaming operation."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	out.spend, _ = m.Float64Counter(CostMetric, metric.WithUnit("USD"),
		metric.WithDescription("What model calls cost, in US dollars, at the configured prices (calls of a model without a price are not counted)."))
	return out
}

// tokens records a call's input and output tokens; a call whose provider
// reported no usage records none.
func (m metrics) tokens(ctx context.Context, u llm.Usage, attrs []attribute.KeyValue) {
	if m.usage == nil || (u.Unknown && u.InputTokens == 0 && u.OutputTokens == 0) {
		return
	}
	in := append(attrs[:len(attrs):len(attrs)], semconv.GenAITokenTypeKey.String("input"))
	out := append(attrs[:len(attrs):len(attrs)], semconv.GenAITokenTypeKey.String("output"))
	m.usage.Record(ctx, int64(u.InputTokens), metric.WithAttributes(in...))
	m.usage.Record(ctx, int64(u.OutputTokens), metric.WithAttributes(out...))
}

func (m metrics) duration(ctx context.Context, d time.Duration, attrs []attribute.KeyValue) {
	if m.opSeconds != nil && d >= 0 {
		m.opSeconds.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	}
}

func (m metrics) firstChunk(ctx context.Context, d time.Duration, attrs []attribute.KeyValue) {
	if m.ttfc != nil && d >= 0 {
		m.ttfc.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	}
}
