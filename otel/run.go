package daotel

import (
	"context"
	"iter"

	"github.com/deepagents-go/deepagents/agent"
)

// Run starts a's run traced by a new Recorder: the run's context carries the
// recorder (for Middleware) and its stream is observed. It is the one call a
// caller such as a server needs per run; cfg.ConversationID should be the
// thread the run is saved under.
func Run(ctx context.Context, cfg Config, a *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
	rec := NewRecorder(ctx, cfg)
	return rec.Observe(a.Run(WithRecorder(ctx, rec), in, opts...))
}

// ProviderName maps a deepagents provider name ("openai", "anthropic",
// "gemini", ...) to the conventions' gen_ai.provider.name; a provider the
// conventions do not name is returned as it is.
func ProviderName(provider string) string {
	switch provider {
	case "gemini", "google":
		return "gcp.gemini"
	case "vertex", "vertexai":
		return "gcp.vertex_ai"
	case "bedrock":
		return "aws.bedrock"
	case "mistral":
		return "mistral_ai"
	case "xai":
		return "x_ai"
	}
	return provider
}
