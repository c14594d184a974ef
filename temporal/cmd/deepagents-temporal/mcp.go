package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/mcp"
	"github.com/deepagents-go/deepagents/temporal"
	"github.com/deepagents-go/deepagents/tool"
)

// mcpFit gives an agent's configuration the MCP tools: its own, and its
// subagents' (those an agent file's mcpServers names, or all), each bound
// directly or behind mcp_search when their definitions take more than a
// tenth of the context window (window tokens; 0: unknown), as the
// deepagents CLI binds them. It returns the fingerprint of what it bound
// (mcpFingerprint), which the worker folds into its snapshot.
type mcpFit func(dc *deepagents.Config, window int) string

// workerMCP starts the MCP servers a worker's agent gets: the user's,
// and the project's with trustProject (a worker asks nobody). Each
// server's tools are activities of the agent; a stdio server keeps state
// in this worker's process, so its calls in one run are pinned to the
// worker that made the first (Registry.SessionTool). The tool list is the
// one the servers give at start, never re-listed: workflow code sees the
// same tools on every replay (mcp_search searches that list, in the
// workflow, without I/O). The servers are stopped by the closers it
// appends to.
func workerMCP(trustProject bool, closers *[]func()) func(ctx context.Context, reg *temporal.Registry, name, project, home string, notice func(string, ...any)) (mcpFit, error) {
	return func(ctx context.Context, reg *temporal.Registry, name, project, home string, notice func(string, ...any)) (mcpFit, error) {
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
		tools := m.Tools()
		if len(tools) == 0 {
			return nil, nil
		}
		acts := map[*mcp.Tool]tool.Tool{}
		for _, t := range tools {
			if stdio[t.Server()] {
				acts[t] = reg.SessionTool(name, t)
			} else {
				acts[t] = reg.Tool(name, t)
			}
		}
		notice("%d MCP tool(s) from %d server(s): each call an activity, a stdio server's pinned to one worker per run", len(tools), len(start))
		return func(dc *deepagents.Config, window int) string {
			return bindMCP(dc, tools, acts, window, notice)
		}, nil
	}
}

// bindMCP binds tools into dc as mcp.Bind and mcp.Subagents decide, each
// MCP tool replaced by its activity in acts (wherever the binding puts it:
// the agent's tools, a subagent's, or those mcp_search's finds bind). It
// returns the binding's fingerprint (mcpFingerprint).
func bindMCP(dc *deepagents.Config, tools []*mcp.Tool, acts map[*mcp.Tool]tool.Tool, window int, notice func(string, ...any)) string {
	b := mcp.Bind(tools, window, nil)
	if b.Deferred {
		notice("the MCP tools' definitions take about %d tokens, over a tenth of the context window (%d): they are found through %s", b.Tokens, b.Limit, mcp.SearchToolName)
	}
	parent := dc.Tools
	dc.Tools = append(dc.Tools, activities(b.Tools, acts)...)
	if b.Middleware != nil {
		dc.Middleware = append(dc.Middleware, activityMiddleware(*b.Middleware, acts, tools))
	}
	specs := mcp.Subagents(deepagents.WithGeneralPurpose(dc.Subagents), append(parent, b.Tools...), tools, window, nil)
	for i, s := range specs {
		specs[i].Tools = activities(s.Tools, acts)
		specs[i].Middleware = slices.Clone(s.Middleware)
		// The MCP tools the subagent may use: its servers' (all when its
		// file names none), as mcp.Subagents chose them.
		var usable []*mcp.Tool
		for _, t := range tools {
			if s.MCPServers == nil || slices.Contains(s.MCPServers, t.Server()) {
				usable = append(usable, t)
			}
		}
		for j, mw := range s.Middleware {
			if mw.Name == "mcp" {
				specs[i].Middleware[j] = activityMiddleware(mw, acts, usable)
			}
		}
	}
	dc.Subagents = specs
	return mcpFingerprint(tools, b.Deferred)
}

// mcpFingerprint is a hash of the MCP tools a worker binds (names and
// schemas) and of whether they are found through mcp_search: workflow
// code sees them, so a worker with other MCP tools, or another decision,
// would take another path than a run's history. The worker folds it into
// its snapshot (Registry.Snapshot), so that such a worker refuses the run.
func mcpFingerprint(tools []*mcp.Tool, deferred bool) string {
	h := sha256.New()
	lines := make([]string, 0, len(tools))
	for _, t := range tools {
		s := t.Spec()
		lines = append(lines, fmt.Sprintf("tool %q %x %x\n", s.Name, sha256.Sum256([]byte(s.Description)), sha256.Sum256(s.Parameters)))
	}
	slices.Sort(lines)
	for _, l := range lines {
		io.WriteString(h, l)
	}
	fmt.Fprintf(h, "deferred %v\n", deferred)
	return hex.EncodeToString(h.Sum(nil))
}

// withMCP is the snapshot hash of a worker whose skills and memory
// snapshot is hash and whose MCP binding has fingerprint fp.
func withMCP(hash, fp string) string {
	if fp == "" {
		return hash
	}
	sum := sha256.Sum256([]byte("snapshot " + hash + "\nmcp " + fp + "\n"))
	return hex.EncodeToString(sum[:8])
}

// activities is list with each MCP tool replaced by its activity.
func activities(list []tool.Tool, acts map[*mcp.Tool]tool.Tool) []tool.Tool {
	if list == nil {
		return nil
	}
	out := make([]tool.Tool, len(list))
	for i, t := range list {
		out[i] = t
		if mt, ok := t.(*mcp.Tool); ok && acts[mt] != nil {
			out[i] = acts[mt]
		}
	}
	return out
}

// activityMiddleware is mw with the MCP tools it binds step by step (the
// finds of mcp_search) replaced by their activities, and mcp_search marked
// to run in workflow code: it searches the list fixed at start, and its
// finds are in the run's state. A run whose workflow started before
// workflows checked their snapshot may have been recorded by a worker that
// bound every MCP tool directly: it gets every one of all (the tools the
// agent may use) on every step, so that its calls by name still work.
func activityMiddleware(mw agent.Middleware, acts map[*mcp.Tool]tool.Tool, all []*mcp.Tool) agent.Middleware {
	mw.Tools = slices.Clone(mw.Tools)
	for i, t := range mw.Tools {
		if t.Spec().Name == mcp.SearchToolName {
			mw.Tools[i] = temporal.InWorkflow(t)
		}
	}
	step := mw.StepTools
	mw.StepTools = func(ctx context.Context, info agent.StepInfo) []tool.Tool {
		var out []tool.Tool
		if step != nil {
			out = activities(step(ctx, info), acts)
		}
		if temporal.StartedBeforeSnapshot(ctx) {
			// The agent loop skips the ones already bound.
			for _, t := range all {
				if a := acts[t]; a != nil {
					out = append(out, a)
				}
			}
		}
		return out
	}
	return mw
}
