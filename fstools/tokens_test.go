package fstools

import (
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// TokenBudget is the most the seven tool definitions may cost, in o200k
// tokens, as sent in OpenAI function-tool JSON.
const TokenBudget = 1200

func TestTokenBudget(t *testing.T) {
	var specs []llm.ToolSpec
	for _, tl := range Tools() {
		specs = append(specs, tl.Spec())
	}
	per, total := tokens.Tools(specs)
	t.Logf("%-11s %6s %6s %6s %6s", "tool", "desc", "json", "o200k", "cl100k")
	for _, c := range per {
		t.Logf("%-11s %6d %6d %6d %6d", c.Name, c.DescChars, c.JSONChars, c.O200k, c.Cl100k)
	}
	t.Logf("%-11s %6d %6d %6d %6d", total.Name, total.DescChars, total.JSONChars, total.O200k, total.Cl100k)
	if total.O200k > TokenBudget {
		t.Errorf("the file tools cost %d o200k tokens, over the budget of %d", total.O200k, TokenBudget)
	}
}
