package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/providers"
)

// tracingFlushTimeout bounds how long the CLI waits at exit for buffered
// spans to reach the collector.
const tracingFlushTimeout = 5 * time.Second

// cliTracing is the OpenTelemetry set-up of one run, resume or serve
// command: the recorder configuration every run starts from.
type cliTracing struct {
	config daotel.Config // all but ConversationID, set per run
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
	cfg := daotel.Config{TracerProvider: tr.Provider, Model: s.modelName, Pricer: s.pricer}
	if spec, err := providers.Parse(s.modelName); err == nil {
		cfg.Model, cfg.Provider = spec.Model, daotel.ProviderName(spec.Provider)
	}
	if tr.Meters != nil { // a nil *MeterProvider in the interface would be used
		cfg.MeterProvider = tr.Meters
	}
	s.tracing = &cliTracing{config: cfg}
	s.config.Middleware = append(s.config.Middleware, daotel.Middleware())
	// An isolated subagent runs its own middleware, not the agent's: each
	// gets the tracing middleware too, for the chat spans of its calls.
	s.config.Subagents = daotel.Subagents(deepagents.WithGeneralPurpose(s.config.Subagents))
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
	cfg := s.tracing.config
	cfg.ConversationID = thread
	return daotel.Run(ctx, cfg, s.agent, in, opts...)
}
