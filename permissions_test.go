package deepagents_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

func rules(t *testing.T, lines ...string) perm.Rules {
	t.Helper()
	rs, err := perm.ParseRules(lines)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// The agent's rules hold for its tool calls; a subagent inherits them
// unless its spec sets its own.
func TestPermissions(t *testing.T) {
	probe := func(p string) []scripted.StepCall {
		return []scripted.StepCall{
			call(p+"w", "write_file", `{"file_path":"/etc/hosts","content":"x"}`),
			call(p+"r", "read_file", `{"file_path":"/secrets/key"}`),
			call(p+"l", "ls", `{"path":"/"}`),
			call(p+"g", "glob", `{"pattern":"**"}`),
			call(p+"s", "grep", `{"pattern":"k","output_mode":"files_with_matches"}`),
			call(p+"e", "edit_file", `{"file_path":"/notes.md","old_string":"n","new_string":"m"}`),
		}
	}
	m := scripted.New(scripted.Script{
		"parent": {Steps: []scripted.Step{
			{ToolCalls: probe("p")},
			{ToolCalls: []scripted.StepCall{
				call("t1", "task", `{"description":"probe","subagent_type":"general-purpose"}`),
				call("t2", "task", `{"description":"probe","subagent_type":"trusted"}`),
				call("t3", "task", `{"description":"probe","subagent_type":"forky"}`),
			}},
			{Content: "done"},
		}},
		"general-purpose": {Steps: []scripted.Step{{ToolCalls: probe("c")}, {Content: "ok"}}},
		"trusted":         {Steps: []scripted.Step{{ToolCalls: probe("u")}, {Content: "ok"}}},
		"forky":           {Steps: []scripted.Step{{ToolCalls: probe("f")}, {Content: "ok"}}},
	}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{
		Model:       m,
		Permissions: rules(t, "deny write /etc/**", "deny all /secrets/**"),
		Subagents: []subagent.Spec{{Name: "trusted", Description: "Sees everything.",
			Permissions: rules(t, "deny write /notes.md")},
			{Name: "forky", Description: "A fork.", Mode: subagent.Fork}},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := agent.Prompt("go")
	in.Files = map[string]vfs.File{"/secrets/key": {Content: "k=1"}, "/notes.md": {Content: "n"}, "/etc/motd": {Content: "hi"}}
	res, err := a.Invoke(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	got := map[string]string{}
	collect := func(r *agent.Result) {
		for id, c := range toolResults(r.State.Messages) {
			got[id] = c
			all = append(all, id)
		}
	}
	collect(res)
	for _, c := range res.Children {
		collect(c)
	}
	denied := func(id, rule string) {
		t.Helper()
		if want := `permission denied by rule "` + rule + `"`; !strings.Contains(got[id], want) {
			t.Errorf("%s = %q; want it to contain %s", id, got[id], want)
		}
	}
	hidden := func(id string) {
		t.Helper()
		if strings.Contains(got[id], "secrets") {
			t.Errorf("%s leaks a denied path: %q", id, got[id])
		}
	}
	for _, who := range []string{"p", "c", "f"} { // the agent, a subagent inheriting, a fork
		denied(who+"w", "deny write /etc/**")
		denied(who+"r", "deny all /secrets/**")
		hidden(who + "l")
		hidden(who + "g")
		hidden(who + "s")
		if !strings.Contains(got[who+"l"], "/etc/") || !strings.Contains(got[who+"g"], "/notes.md") {
			t.Errorf("%s: allowed paths missing: ls %q, glob %q", who, got[who+"l"], got[who+"g"])
		}
	}
	// The parent's edit ran first; the trusted subagent's own rules
	// replace the parent's.
	if strings.Contains(got["pe"], "Error") || !strings.Contains(got["ur"], "k=1") || strings.Contains(got["uw"], "Error") {
		t.Errorf("own rules: edit %q, read %q, write %q", got["pe"], got["ur"], got["uw"])
	}
	denied("ue", "deny write /notes.md")
	if len(all) < 24 {
		t.Errorf("only %d tool results: %v", len(all), all)
	}
}

func TestForkCannotSetPermissions(t *testing.T) {
	_, err := deepagents.New(deepagents.Config{
		Model:     scripted.New(nil, scripted.Options{}),
		Subagents: []subagent.Spec{{Name: "f", Description: "A fork.", Mode: subagent.Fork, Permissions: perm.Rules{}}},
	})
	var ce *deepagents.ConfigError
	if !errors.As(err, &ce) || ce.Subagent != "f" || !strings.Contains(err.Error(), "a fork shares its parent's permissions") {
		t.Errorf("New = %v", err)
	}
}

// The rules see the files a tool finally gets: a mount another middleware
// adds on the way (as skills and memory do) is covered too, wherever that
// middleware sits.
func TestPermissionsCoverMountsOfOtherMiddleware(t *testing.T) {
	extra := vfs.NewMemory(map[string]vfs.File{"/x.md": {Content: "mounted"}, "/ok.md": {Content: "fine"}})
	mount := agent.Middleware{Name: "mount", WrapTool: func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
		if call.Env == nil || call.Env.Files == nil {
			return next(ctx, call)
		}
		files, err := vfs.NewComposite(call.Env.Files, vfs.Route{Prefix: "/extra/", Backend: extra})
		if err != nil {
			return tool.Result{}, err
		}
		env := *call.Env
		env.Files = files
		c := *call
		c.Env = &env
		return next(ctx, &c)
	}}
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{
			call("r1", "read_file", `{"file_path":"/extra/x.md"}`),
			call("r2", "read_file", `{"file_path":"/extra/ok.md"}`),
			call("g1", "glob", `{"pattern":"/extra/*"}`),
		}},
		{Content: "done"},
	}}}, scripted.Options{})
	a, err := deepagents.New(deepagents.Config{Model: m, Middleware: []agent.Middleware{mount},
		Permissions: rules(t, "deny read /extra/x.md")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Invoke(t.Context(), agent.Prompt("go"))
	if err != nil {
		t.Fatal(err)
	}
	got := toolResults(res.State.Messages)
	if !strings.Contains(got["r1"], `permission denied by rule "deny read /extra/x.md"`) || !strings.Contains(got["r2"], "fine") {
		t.Errorf("reads through another middleware's mount: %q, %q", got["r1"], got["r2"])
	}
	if strings.Contains(got["g1"], "x.md") || !strings.Contains(got["g1"], "/extra/ok.md") {
		t.Errorf("glob = %q", got["g1"])
	}
}
