package agent

import (
	"context"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// RunMounted runs call through next with routes mounted over its files (a
// vfs.Composite whose fallback is the call's own view), for middleware that
// show folders to the tools, such as skills and memory files. A call with no
// files, or of a tool that runs a nested agent, runs as it is: the child
// mounts what it should see through its own middleware.
func RunMounted(ctx context.Context, call *ToolCall, next ToolFunc, routes ...vfs.Route) (tool.Result, error) {
	if call.Env == nil || call.Env.Files == nil {
		return next(ctx, call)
	}
	if _, nested := call.Tool.(Nested); nested {
		return next(ctx, call)
	}
	files, err := vfs.NewComposite(call.Env.Files, routes...)
	if err != nil {
		return tool.Result{}, err
	}
	env := *call.Env
	env.Files = files
	c := *call
	c.Env = &env
	return next(ctx, &c)
}
