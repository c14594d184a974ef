package daotel

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// replaying reports whether the run's code is being replayed now (see
// Config.Replaying).
func (r *Recorder) replaying() bool { return r.cfg.Replaying != nil && r.cfg.Replaying() }

// replayTracer returns t whose spans are not ended, and so not exported,
// while replaying reports true; t itself when replaying is nil. A span
// started in a replay keeps its place as the parent of later ones, and is
// exported when it ends after the replay.
func replayTracer(t trace.Tracer, replaying func() bool) trace.Tracer {
	if replaying == nil {
		return t
	}
	return &quietTracer{Tracer: t, replaying: replaying}
}

type quietTracer struct {
	trace.Tracer
	replaying func() bool
}

func (t *quietTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, s := t.Tracer.Start(ctx, name, opts...)
	q := &quietSpan{Span: s, replaying: t.replaying}
	return trace.ContextWithSpan(ctx, q), q
}

type quietSpan struct {
	trace.Span
	replaying func() bool
}

func (s *quietSpan) End(opts ...trace.SpanEndOption) {
	if !s.replaying() {
		s.Span.End(opts...)
	}
}
