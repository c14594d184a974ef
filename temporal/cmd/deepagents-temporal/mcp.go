package main

import (
	"context"
	"time"

	"github.com/deepagents-go/deepagents/mcp"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// workerMCP starts the MCP servers a worker's agent gets: the user's,
// and the project's with trustProject (a worker asks nobody). Each
// server's tools are activities of the agent; a stdio server keeps state
// in this worker's process, so its calls in one run are pinned to the
// worker that made the first (Registry.SessionTool). The servers are
// stopped by the closers it appends to.
func workerMCP(trustProject bool, closers *[]func()) func(ctx context.Context, reg *temporal.Registry, name, project, home string, notice func(string, ...any)) ([]tool.Tool, error) {
	return func(ctx context.Context, reg *temporal.Registry, name, project, home string, notice func(string, ...any)) ([]tool.Tool, error) {
		servers, err := mcp.Load(mcp.Sources(home, project))
		if err != nil {
			return nil, err
		}
		var start []mcp.Server
		for _, s := range servers {
			if s.Scope == mcp.ScopeProject && !trustProject {
				notice("MCP server %s (%s) of the project is not started: give --trust-project-mcp to start the project's servers", s.Name, s.Source)
				continue
			}
			start = append(start, s)
		}
		if len(start) == 0 {
			return nil, nil
		}
		m := mcp.NewManager(start, mcp.Options{ConnectTimeout: 30 * time.Second, CallTimeout: 5 * time.Minute})
		*closers = append(*closers, func() { _ = m.Close() })
		m.Start(ctx)
		stdio := map[string]bool{}
		for _, s := range start {
			stdio[s.Name] = s.Config.Kind() == mcp.KindStdio
		}
		for _, st := range m.Statuses() {
			if st.Status == mcp.StatusFailed {
				notice("MCP server %s (%s) is not available: %s", st.Name, st.Source, st.Error)
			}
		}
		var tools []tool.Tool
		for _, t := range m.Tools() {
			if stdio[t.Server()] {
				tools = append(tools, reg.SessionTool(name, t))
			} else {
				tools = append(tools, reg.Tool(name, t))
			}
		}
		if len(tools) > 0 {
			notice("%d MCP tool(s) from %d server(s): each call an activity, a stdio server's pinned to one worker per run", len(tools), len(start))
		}
		return tools, nil
	}
}
