package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
)

// SearchToolName is the tool bound in place of the MCP tools when their
// definitions would take too much of the context window.
const SearchToolName = "mcp_search"

// FoundValue is the run-state value listing the tools mcp_search found (a
// JSON array of tool names), so a resumed run keeps them bound.
const FoundValue = "mcp.found"

// DisclosureShare is the part of the context window the MCP tools'
// definitions may take before they are replaced by mcp_search.
const DisclosureShare = 0.10

// UnknownWindow is the window assumed when the model's is unknown.
const UnknownWindow = 200_000

// maxFound bounds the tools one search returns.
const maxFound = 5

// Binding is how the MCP tools are given to an agent: Tools go into
// deepagents.Config.Tools; when Middleware is set (the tools are too many
// for the window), it goes into deepagents.Config.Middleware and binds
// mcp_search plus the tools found so far.
type Binding struct {
	Tools      []tool.Tool
	Middleware *agent.Middleware
	// Tokens is the estimated cost of all the MCP tools' definitions, and
	// Limit the share of the window they may take.
	Tokens, Limit int
	// Deferred is true when the tools are found through mcp_search.
	Deferred bool
}

// Bind decides how the given tools are bound for an agent with a context
// window of window tokens (0: unknown, taken as 200,000). When their
// definitions cost more than a tenth of the window only the pinned ones
// (by mcp__ name or by server name) are bound directly, with mcp_search,
// whose finds are bound from the next model call on.
func Bind(tools []*Tool, window int, pinned []string) Binding {
	return bind(tools, nil, window, pinned)
}

// Bind is the package's Bind over the manager's tools, kept live: when a
// server's tools change (tools/list_changed), a tool that appeared is bound
// from the agent's next step on (or, behind mcp_search, can be found).
// Middleware is then always set.
func (m *Manager) Bind(window int, pinned []string) Binding {
	return bind(m.Tools(), m.Tools, window, pinned)
}

func bind(tools []*Tool, live func() []*Tool, window int, pinned []string) Binding {
	if window <= 0 {
		window = UnknownWindow
	}
	b := Binding{Tokens: specTokens(tools), Limit: int(float64(window) * DisclosureShare)}
	isPinned := func(t *Tool) bool { return slices.Contains(pinned, t.spec.Name) || slices.Contains(pinned, t.Server()) }
	current := func() []*Tool {
		if live != nil {
			return live()
		}
		return tools
	}
	bound := map[string]bool{}
	b.Deferred = b.Tokens > b.Limit
	for _, t := range tools {
		if !b.Deferred || isPinned(t) {
			b.Tools = append(b.Tools, t)
			bound[t.spec.Name] = true
		}
	}
	if !b.Deferred && live == nil {
		return b
	}
	// deferred lists the tools the search covers: all but those bound.
	deferred := func() []*Tool {
		var out []*Tool
		for _, t := range current() {
			if !bound[t.spec.Name] && !isPinned(t) {
				out = append(out, t)
			}
		}
		return out
	}
	mw := agent.Middleware{
		Name: "mcp",
		StepTools: func(_ context.Context, step agent.StepInfo) []tool.Tool {
			var out []tool.Tool
			if !b.Deferred {
				// Tools that appeared after binding; the agent's own are
				// skipped by the loop.
				for _, t := range deferred() {
					out = append(out, t)
				}
				return out
			}
			names, _, err := agent.GetValue[[]string](step.State, FoundValue)
			if err != nil || len(names) == 0 {
				return nil
			}
			for _, t := range deferred() {
				if slices.Contains(names, t.spec.Name) {
					out = append(out, t)
				}
			}
			return out
		},
	}
	if b.Deferred {
		mw.Tools = []tool.Tool{&searchTool{tools: deferred}}
	}
	b.Middleware = &mw
	return b
}

// searchTool finds deferred MCP tools by words of their names and
// descriptions and binds them from the next step on.
type searchTool struct {
	tools func() []*Tool
}

var searchSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words describing what you want to do, or a tool's exact name."}},"required":["query"],"additionalProperties":false}`)

// searchSchemaCompiled is searchSchema compiled once, not on every call.
var searchSchemaCompiled = func() *tool.Schema {
	s, err := tool.CompileSchema(searchSchema)
	if err != nil {
		panic(err)
	}
	return s
}()

func (s *searchTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: SearchToolName, Description: "Finds tools of the connected MCP servers, which are not all loaded because there are many. " +
		"Give a few words of what you need (or a tool's exact mcp__ name); the best matches, at most 5, become callable from your next step on.",
		Parameters: searchSchema}
}

// MCPServers names every server the search covers.
func (s *searchTool) MCPServers() []string {
	var out []string
	for _, t := range s.tools() {
		if !slices.Contains(out, t.Server()) {
			out = append(out, t.Server())
		}
	}
	return out
}

func (s *searchTool) Run(_ context.Context, env *tool.Env, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := tool.DecodeArgs(searchSchemaCompiled, args, &in); err != nil {
		return tool.ArgumentError(SearchToolName, err), nil
	}
	found := s.find(in.Query)
	if len(found) == 0 {
		return tool.Text(fmt.Sprintf("No MCP tool matches %q. Try other words.", in.Query)), nil
	}
	var prev []string
	if env != nil && env.State != nil {
		if raw, ok := env.State[FoundValue]; ok {
			_ = json.Unmarshal(raw, &prev)
		}
	}
	all := slices.Clone(prev)
	var b strings.Builder
	b.WriteString("These tools can be called from your next step on:\n")
	for _, t := range found {
		if !slices.Contains(all, t.spec.Name) {
			all = append(all, t.spec.Name)
		}
		desc := strings.TrimSpace(t.spec.Description)
		if i := strings.IndexByte(desc, '\n'); i >= 0 {
			desc = desc[:i]
		}
		fmt.Fprintf(&b, "- %s: %s\n", t.spec.Name, desc)
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return tool.Result{}, err
	}
	res := tool.Text(strings.TrimRight(b.String(), "\n"))
	res.State = map[string]json.RawMessage{FoundValue: raw}
	return res, nil
}

// find ranks the tools by the query's words found in their names (worth
// more) and descriptions; an exact name wins outright.
func (s *searchTool) find(query string) []*Tool {
	q := strings.ToLower(strings.TrimSpace(query))
	tools := s.tools()
	for _, t := range tools {
		if strings.ToLower(t.spec.Name) == q || strings.ToLower(t.remote) == q {
			return []*Tool{t}
		}
	}
	words := strings.FieldsFunc(q, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	})
	if len(words) == 0 {
		return nil
	}
	type hit struct {
		t     *Tool
		score int
		i     int
	}
	var hits []hit
	for i, t := range tools {
		name := strings.ToLower(t.spec.Name)
		desc := strings.ToLower(t.spec.Description)
		score := 0
		for _, w := range words {
			if strings.Contains(name, w) {
				score += 3
			}
			if strings.Contains(desc, w) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{t, score, i})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	var out []*Tool
	for _, h := range hits[:min(len(hits), maxFound)] {
		out = append(out, h.t)
	}
	return out
}

// Subagents fits the MCP tools to the subagent specs (the general-purpose
// one included: pass deepagents.WithGeneralPurpose(specs)). parentTools are
// the parent's deepagents.Config.Tools, the MCP tools the parent binds among
// them; tools are all the MCP tools. Each isolated subagent gets the MCP
// tools it may use (its spec's servers, or all) bound the way Bind decides
// for its own window: directly, or through an mcp_search of its own whose
// finds are bound from its next step on. A spec that lists its exact tools
// gets MCP tools only when it names servers. Forks keep their parent's.
func Subagents(specs []subagent.Spec, parentTools []tool.Tool, tools []*Tool, parentWindow int, pinned []string) []subagent.Spec {
	return subagents(specs, parentTools, tools, nil, parentWindow, pinned)
}

// Subagents is the package's Subagents over the manager's tools, kept live
// as Manager.Bind keeps the parent's: a tool a server adds later
// (tools/list_changed) reaches each subagent that may use its server.
func (m *Manager) Subagents(specs []subagent.Spec, parentTools []tool.Tool, parentWindow int, pinned []string) []subagent.Spec {
	return subagents(specs, parentTools, m.Tools(), m.Tools, parentWindow, pinned)
}

func subagents(specs []subagent.Spec, parentTools []tool.Tool, tools []*Tool, live func() []*Tool, parentWindow int, pinned []string) []subagent.Spec {
	out := slices.Clone(specs)
	for i, s := range out {
		if s.Mode == subagent.Fork || s.ExactTools && s.MCPServers == nil {
			continue
		}
		usable := func(tools []*Tool) []*Tool {
			var mine []*Tool
			for _, t := range tools {
				if s.MCPServers == nil || slices.Contains(s.MCPServers, t.Server()) {
					mine = append(mine, t)
				}
			}
			return mine
		}
		var liveMine func() []*Tool
		if live != nil {
			liveMine = func() []*Tool { return usable(live()) }
		}
		w := s.ContextWindow
		if w == 0 {
			w = parentWindow
		}
		b := bind(usable(tools), liveMine, w, pinned)
		own := s.Tools
		if own == nil {
			own = parentTools
		}
		list := []tool.Tool{}
		for _, t := range own {
			if _, isMCP := t.(interface{ MCPServers() []string }); !isMCP {
				list = append(list, t)
			}
		}
		out[i].Tools = append(list, b.Tools...)
		if b.Middleware != nil {
			out[i].Middleware = append(slices.Clone(s.Middleware), *b.Middleware)
		}
	}
	return out
}
