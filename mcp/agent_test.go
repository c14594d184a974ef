package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/deepagents-go/deepagents/tool"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/mcp/internal/mcptest"
	"github.com/deepagents-go/deepagents/subagent"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func scall(id, name, args string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

func specNames(req *llm.Request) []string {
	var out []string
	for _, s := range req.Tools {
		out = append(out, s.Name)
	}
	return out
}

func mcpNames(req *llm.Request) []string {
	var out []string
	for _, n := range specNames(req) {
		if strings.HasPrefix(n, "mcp__") {
			out = append(out, n)
		}
	}
	return out
}

// 300 tools over a 100k window: the first request binds mcp_search (and the
// pinned tool) in their place; a search makes the found tool part of the
// next request, where a call to it works; the found names are a run-state
// value, so a resumed run keeps them.
func TestProgressiveDisclosure(t *testing.T) {
	m := started(t, []Server{{Name: "inv"}}, Options{Transport: inMemory(t, mcptest.Options{Extra: 300})})
	if n := len(m.Tools()); n != 310 {
		t.Fatalf("%d tools", n)
	}
	b := Bind(m.Tools(), 100_000, []string{"mcp__inv__echo"})
	if !b.Deferred || b.Middleware == nil || b.Limit != 10_000 || b.Tokens <= 10_000 {
		t.Fatalf("binding: deferred %v, tokens %d, limit %d", b.Deferred, b.Tokens, b.Limit)
	}
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{scall("s1", "mcp_search", `{"query":"`+mcptest.Topic(7)+`"}`)}},
		{ToolCalls: []scripted.StepCall{scall("c1", "mcp__inv__tool_007", `{"text":"the count"}`)}},
		{Content: "done"},
	}}}, scripted.Options{NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: b.Tools, Middleware: []agent.Middleware{*b.Middleware}, ContextWindow: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("count the stock"))
	if err != nil {
		t.Fatal(err)
	}
	recs := model.Records()
	if len(recs) != 3 {
		t.Fatalf("%d requests", len(recs))
	}
	first := specNames(recs[0].Request)
	if !slices.Contains(first, "mcp_search") || !slices.Equal(mcpNames(recs[0].Request), []string{"mcp__inv__echo"}) {
		t.Errorf("first request's tools: %v", first)
	}
	if got := mcpNames(recs[1].Request); !slices.Equal(got, []string{"mcp__inv__echo", "mcp__inv__tool_007"}) {
		t.Errorf("second request's MCP tools: %v", got)
	}
	search := res.State.Messages[2]
	if search.ToolCallID != "s1" || !strings.Contains(search.Content, "mcp__inv__tool_007") || strings.Contains(search.Content, "tool_008") {
		t.Errorf("search answered %q", search.Content)
	}
	if got := res.State.Messages[4]; got.ToolCallID != "c1" || got.IsError || got.Content != "tool_007 did the count" {
		t.Errorf("the found tool answered %+v", got)
	}
	found, ok, err := agent.GetValue[[]string](&res.State, FoundValue)
	if err != nil || !ok || !slices.Equal(found, []string{"mcp__inv__tool_007"}) {
		t.Errorf("state value %s = %v (%v, %v)", FoundValue, found, ok, err)
	}
}

// Few tools: all are bound and there is no search.
func TestNoDisclosureUnderTheLimit(t *testing.T) {
	m := started(t, []Server{{Name: "small"}}, Options{Transport: inMemory(t, mcptest.Options{})})
	b := Bind(m.Tools(), 100_000, nil)
	if b.Deferred || b.Middleware != nil || len(b.Tools) != 10 {
		t.Errorf("binding: deferred %v, %d tools, tokens %d", b.Deferred, len(b.Tools), b.Tokens)
	}
	// A window so small that the same tools take more than a tenth of it.
	if b := Bind(m.Tools(), 1000, []string{"small"}); !b.Deferred || len(b.Tools) != 10 {
		t.Errorf("pinning a server: deferred %v, %d tools", b.Deferred, len(b.Tools))
	}
}

// A 200k-character MCP result goes through the shared offload middleware:
// the file holds it all and the model reads a notice.
func TestLargeResultIsOffloaded(t *testing.T) {
	m := started(t, []Server{{Name: "srv"}}, Options{Transport: inMemory(t, mcptest.Options{})})
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{scall("call_big", "mcp__srv__big", `{"n":200000}`)}},
		{Content: "done"},
	}}}, scripted.Options{NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: m.AgentTools()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("get it all"))
	if err != nil {
		t.Fatal(err)
	}
	const path = "/large_tool_results/call_big"
	if got := len(res.State.Files[path].Content); got != 200_000 {
		t.Errorf("the saved file holds %d characters, want 200000", got)
	}
	notice := res.State.Messages[2].Content
	if !strings.Contains(notice, "too large") || !strings.Contains(notice, path) || len(notice) > 5000 {
		t.Errorf("the model got %d characters: %.300s", len(notice), notice)
	}
	if got := model.Records()[1].Request.Messages[2].Content; got != notice {
		t.Errorf("the next request does not carry the notice")
	}
}

// Subagents get the parent's MCP tools, unless their spec names servers:
// then only those servers' tools. A fork cannot narrow.
func TestSubagentsNarrowMCPServers(t *testing.T) {
	m := started(t, []Server{{Name: "alpha"}, {Name: "beta"}}, Options{Transport: inMemory(t, mcptest.Options{})})
	model := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				scall("t1", "task", `{"description":"a","subagent_type":"narrow"}`),
				scall("t2", "task", `{"description":"b","subagent_type":"wide"}`),
			}},
			{Content: "done"},
		}},
		"narrow": {Steps: []scripted.Step{{Content: "ok"}}},
		"wide":   {Steps: []scripted.Step{{Content: "ok"}}},
	}, scripted.Options{NoUsage: true})
	specs := []subagent.Spec{
		{Name: "narrow", Description: "alpha only", MCPServers: []string{"alpha"}},
		{Name: "wide", Description: "everything"},
	}
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: m.AgentTools(), Subagents: specs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invoke(t.Context(), agent.Prompt("go")); err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{}
	for _, r := range model.Records() {
		seen[r.Who] = mcpNames(r.Request)
	}
	hasServer := func(names []string, server string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp__"+server+"__") })
	}
	if n := seen["narrow"]; !hasServer(n, "alpha") || hasServer(n, "beta") {
		t.Errorf("narrow got %v", n)
	}
	if n := seen["wide"]; !hasServer(n, "alpha") || !hasServer(n, "beta") {
		t.Errorf("wide got %v", n)
	}
	if n := seen["parent"]; len(n) != 20 {
		t.Errorf("parent got %d MCP tools", len(n))
	}

	_, err = deepagents.New(deepagents.Config{Model: model, Tools: m.AgentTools(), Subagents: []subagent.Spec{
		{Name: "f", Description: "fork", Mode: subagent.Fork, MCPServers: []string{"alpha"}},
	}})
	var ce *deepagents.ConfigError
	if !errors.As(err, &ce) || ce.Subagent != "f" || !strings.Contains(err.Error(), "fork") {
		t.Errorf("a narrowing fork: %v", err)
	}
}

// With the parent's tools behind mcp_search, a subagent that names one
// small server binds its tools directly, and one that takes all gets a
// search of its own whose find it can call on its next step.
func TestSubagentsUnderDisclosure(t *testing.T) {
	byServer := map[string]mcptest.Options{"inv": {Extra: 300}, "small": {}}
	m := started(t, []Server{{Name: "inv"}, {Name: "small"}}, Options{Transport: func(s Server) (sdk.Transport, error) {
		return inMemory(t, byServer[s.Name])(s)
	}})
	b := Bind(m.Tools(), 100_000, nil)
	if !b.Deferred {
		t.Fatal("not deferred")
	}
	model := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{
				scall("t1", "task", `{"description":"a","subagent_type":"narrow"}`),
				scall("t2", "task", `{"description":"b","subagent_type":"wide"}`),
			}},
			{Content: "done"},
		}},
		"narrow": {Steps: []scripted.Step{{Content: "ok"}}},
		"wide": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{scall("s1", "mcp_search", `{"query":"`+mcptest.Topic(42)+`"}`)}},
			{ToolCalls: []scripted.StepCall{scall("c1", "mcp__inv__tool_042", `{"text":"it"}`)}},
			{Content: "ok"},
		}},
	}, scripted.Options{NoUsage: true})
	specs := Subagents(deepagents.WithGeneralPurpose([]subagent.Spec{
		{Name: "narrow", Description: "small only", MCPServers: []string{"small"}},
		{Name: "wide", Description: "everything"},
	}), b.Tools, m.Tools(), 100_000, nil)
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: b.Tools, Middleware: []agent.Middleware{*b.Middleware}, Subagents: specs, ContextWindow: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	var wide []*llm.Request
	for _, r := range model.Records() {
		switch r.Who {
		case "narrow":
			if n := mcpNames(r.Request); len(n) != 10 || slices.Contains(specNames(r.Request), "mcp_search") {
				t.Errorf("narrow got %v", specNames(r.Request))
			}
		case "wide":
			wide = append(wide, r.Request)
		}
	}
	if len(wide) != 3 || len(mcpNames(wide[0])) != 0 || !slices.Contains(specNames(wide[0]), "mcp_search") ||
		!slices.Equal(mcpNames(wide[1]), []string{"mcp__inv__tool_042"}) {
		t.Fatalf("wide's requests: %d", len(wide))
	}
	child := res.Children["t2"]
	if child == nil || !strings.Contains(child.State.Messages[len(child.State.Messages)-2].Content, "tool_042 did it") {
		t.Errorf("wide's call of the found tool: %+v", child)
	}
}

// With Manager.Bind, a tool a server adds (tools/list_changed) is bound
// from the agent's next step on.
func TestNewToolBoundAfterListChanged(t *testing.T) {
	changed := make(chan struct{}, 1)
	m := started(t, []Server{{Name: "live"}}, Options{
		Transport:     inMemory(t, mcptest.Options{}),
		OnListChanged: func(string) { changed <- struct{}{} },
	})
	b := m.Bind(100_000, nil)
	if b.Deferred || b.Middleware == nil || len(b.Tools) != 10 {
		t.Fatalf("binding: deferred %v, middleware %v, %d tools", b.Deferred, b.Middleware != nil, len(b.Tools))
	}
	wait := waitForListChanged(t, changed)
	model := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{scall("g1", "mcp__live__grow", `{}`)}},
		{ToolCalls: []scripted.StepCall{scall("g2", "mcp__live__grown", `{}`)}},
		{Content: "done"},
	}}}, scripted.Options{NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: b.Tools, Middleware: []agent.Middleware{wait, *b.Middleware}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("grow"))
	if err != nil {
		t.Fatal(err)
	}
	recs := model.Records()
	if slices.Contains(specNames(recs[0].Request), "mcp__live__grown") || !slices.Contains(specNames(recs[1].Request), "mcp__live__grown") {
		t.Errorf("grown in the first request %v, in the second %v", slices.Contains(specNames(recs[0].Request), "mcp__live__grown"), slices.Contains(specNames(recs[1].Request), "mcp__live__grown"))
	}
	if got := res.State.Messages[4]; got.ToolCallID != "g2" || got.Content != "grown here" {
		t.Errorf("the new tool answered %+v", got)
	}
}

// With Manager.Subagents, a tool a server adds (tools/list_changed) reaches
// an isolated subagent from its next step on, as it does the parent.
func TestSubagentBindsToolAddedAfterListChanged(t *testing.T) {
	changed := make(chan struct{}, 1)
	m := started(t, []Server{{Name: "live"}}, Options{
		Transport:     inMemory(t, mcptest.Options{}),
		OnListChanged: func(string) { changed <- struct{}{} },
	})
	b := m.Bind(100_000, nil)
	wait := waitForListChanged(t, changed)
	specs := m.Subagents([]subagent.Spec{{Name: "grower", Description: "grows", MCPServers: []string{"live"}, Middleware: []agent.Middleware{wait}}}, b.Tools, 100_000, nil)
	model := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{scall("t1", "task", `{"description":"grow","subagent_type":"grower"}`)}},
			{Content: "done"},
		}},
		"grower": {Steps: []scripted.Step{
			{ToolCalls: []scripted.StepCall{scall("g1", "mcp__live__grow", `{}`)}},
			{ToolCalls: []scripted.StepCall{scall("g2", "mcp__live__grown", `{}`)}},
			{Content: "ok"},
		}},
	}, scripted.Options{NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: model, Tools: b.Tools, Middleware: []agent.Middleware{*b.Middleware}, Subagents: specs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("grow"))
	if err != nil {
		t.Fatal(err)
	}
	var grower []*llm.Request
	for _, r := range model.Records() {
		if r.Who == "grower" {
			grower = append(grower, r.Request)
		}
	}
	if len(grower) != 3 || slices.Contains(specNames(grower[0]), "mcp__live__grown") || !slices.Contains(specNames(grower[1]), "mcp__live__grown") {
		t.Fatalf("the subagent's requests: %d", len(grower))
	}
	child := res.Children["t1"]
	if child == nil || child.State.Messages[4].ToolCallID != "g2" || child.State.Messages[4].Content != "grown here" {
		t.Errorf("the new tool's answer in the subagent: %+v", child)
	}
}

// waitForListChanged holds an agent's second step until the client has
// listed the tools again (changed receives), so a test does not depend on
// how fast the notification arrives.
func waitForListChanged(t *testing.T, changed <-chan struct{}) agent.Middleware {
	var waited bool
	return agent.Middleware{Name: "wait", StepTools: func(ctx context.Context, step agent.StepInfo) []tool.Tool {
		if step.Round >= 1 && !waited {
			waited = true
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Error("no tools/list_changed within 10 s")
			}
		}
		return nil
	}}
}
