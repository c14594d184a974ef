package testkit

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/tool"
)

// Approvals records, per call id, whether a tool call ran with a context
// that says a person approved it (agent.Approved).
type Approvals struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Note records the call id's approval as ctx says it.
func (a *Approvals) Note(ctx context.Context, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	a.seen[id] = agent.Approved(ctx)
}

// Get reports whether the call ran, and whether it was approved then.
func (a *Approvals) Get(id string) (approved, ran bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	approved, ran = a.seen[id]
	return approved, ran
}

// WriteIn is the arguments of the tool WriteTool returns.
type WriteIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// WriteTool is a tool named "write" that writes a file and notes in seen
// whether each call was approved; a path starting with /fail fails.
func WriteTool(seen *Approvals) tool.Tool {
	return tool.MustFunc("write", "Write a file.", func(ctx context.Context, env *tool.Env, in WriteIn) (string, error) {
		seen.Note(ctx, env.CallID)
		if strings.HasPrefix(in.Path, "/fail") {
			return "", errors.New("this path fails")
		}
		return "wrote " + in.Path, env.Files.Write(ctx, in.Path, in.Content)
	})
}
