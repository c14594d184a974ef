package agent_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// flakyModel fails its first attempts with a rate limit and then answers,
// retrying through the shared retry policy as the provider adapters do.
type flakyModel struct {
	fails int
	rec   *retry.Recorder
}

func (m *flakyModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	attempts := 0
	p := retry.Policy{Sleep: m.rec.Sleep}
	return retry.Do(ctx, p, func(ctx context.Context) (*llm.Response, error) {
		attempts++
		if attempts <= m.fails {
			return nil, &llm.APIError{Kind: llm.ErrKindRateLimit, Provider: "fake", StatusCode: 429,
				Message: "slow down", RetryAfter: 30 * time.Second}
		}
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "done"}}, nil
	})
}

func (m *flakyModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return llm.StreamOf(ctx, req, m.Generate)
}

func TestRetriesAreEvents(t *testing.T) {
	rec := &retry.Recorder{}
	a, err := agent.New(agent.Config{Model: &flakyModel{fails: 2, rec: rec}})
	if err != nil {
		t.Fatal(err)
	}
	var retries []agent.RetryInfo
	res, err := agent.Drain(a.Run(context.Background(), agent.Prompt("hi")), func(ev agent.Event) {
		if ev.Type == agent.ModelRetry {
			if ev.Agent.String() != "parent" {
				t.Errorf("retry event agent = %q", ev.Agent)
			}
			retries = append(retries, *ev.Retry)
		}
	})
	if err != nil || res.FinalText() != "done" {
		t.Fatalf("run: %v %q", err, res.FinalText())
	}
	if len(retries) != 2 {
		t.Fatalf("got %d retry events, want 2: %+v", len(retries), retries)
	}
	for i, r := range retries {
		if r.Attempt != i+1 || r.WaitMS != 30000 || r.Kind != llm.ErrKindRateLimit || r.Round != 0 || r.Error == "" {
			t.Errorf("retry %d = %+v", i, r)
		}
	}
}
