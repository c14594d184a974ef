package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/providers"
)

// tracingFlushTimeout bounds how long the CLI waits at exit for buffered
// spans to reach the collector.
const tracingFlushTimeout = 5 * time.Second

// cliTracing is the OpenTelemetry set-up of one run or resume command.
type cliTracing struct {
	tracing  *daotel.Tracing
	model    string
	provider string
}

// startTracing configures exporters from the standard OTEL_* environment
// variables (see docs/OTEL.md). With none set it does nothing; otherwise it
// adds the tracing middleware to the agent's configuration and a closer
// that flushes the spans at exit.
func (s *setup) startTracing(ctx context.Context, stderr io.Writer) error {
	tr, err := daotel.Setup(ctx, daotel.SetupOptions{Console: stderr})
	if err != nil {
		return fmt.Errorf("OpenTelemetry: %w", err)
	}
	if tr == nil {
		return nil
	}
	t := &cliTracing{tracing: tr, model: s.modelName}
	if spec, err := providers.Parse(s.modelName); err == nil {
		t.model, t.provider = spec.Model, daotel.ProviderName(spec.Provider)
	}
	s.tracing = t
	s.config.Middleware = append(s.config.Middleware, daotel.Middleware())
	s.closers = append(s.closers, func() error {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := tr.Shutdown(fctx); err != nil {
			fmt.Fprintf(stderr, "deepagents: could not send the trace (%s): %v\n", strings.Join(tr.Exporters, ", "), err)
		}
		return nil
	})
	return nil
}

// run starts the agent's run on thread, traced when tracing is on.
func (s *setup) run(ctx context.Context, thread string, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
	if s.tracing == nil {
		return s.agent.Run(ctx, in, opts...)
	}
	cfg := daotel.Config{
		TracerProvider: s.tracing.tracing.Provider,
		ConversationID: thread,
		Model:          s.tracing.model,
		Provider:       s.tracing.provider,
	}
	if m := s.tracing.tracing.Meters; m != nil {
		cfg.MeterProvider = m
	}
	return daotel.Run(ctx, cfg, s.agent, in, opts...)
}
