package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/subagent"
	"github.com/google/go-cmp/cmp"
)

const agentPath = ".deepagents/agents/researcher.md"

func TestParseAgentFileValid(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want AgentFile
	}{
		{
			name: "all keys, tools as a list, schema as a mapping",
			src: `---
name: deep-researcher
description: Finds and summarises sources on one question.
mode: isolated
tools:
  - read_file
  - grep
model: anthropic:claude-sonnet-4-5
response_format:
  title: Findings
  type: object
  properties:
    summary: {type: string}
    sources:
      type: array
      items: {type: string}
  required: [summary]
max_steps: 12
timeout: 90s
---

You are a careful researcher.

Cite every source.

`,
			want: AgentFile{
				Name: "deep-researcher", Description: "Finds and summarises sources on one question.", Mode: "isolated",
				Tools: []string{"read_file", "grep"}, ToolLines: []int{6, 7}, Model: "anthropic:claude-sonnet-4-5", ModelLine: 8,
				ResponseFormat: json.RawMessage(`{"title":"Findings","type":"object","properties":{"summary":{"type":"string"},"sources":{"type":"array","items":{"type":"string"}}},"required":["summary"]}`),
				MaxSteps:       12, Timeout: 90 * time.Second,
				Prompt: "You are a careful researcher.\n\nCite every source.",
			},
		},
		{
			name: "tools as a string, schema as a JSON string",
			src: `---
description: d
tools: read_file, grep ,glob
response_format: '{"type": "object", "properties": {"ok": {"type": "boolean"}}}'
---
Body.`,
			want: AgentFile{
				Name: "researcher", Description: "d", Mode: "isolated", Tools: []string{"read_file", "grep", "glob"}, ToolLines: []int{3, 3, 3},
				ResponseFormat: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`), Prompt: "Body.",
			},
		},
		{
			name: "one tool as a plain string is a list of one",
			src:  "---\ndescription: d\ntools: read_file\n---\n",
			want: AgentFile{Name: "researcher", Description: "d", Mode: "isolated", Tools: []string{"read_file"}, ToolLines: []int{3}},
		},
		{
			name: "schema as a JSON block",
			src: `---
description: d
response_format: |
  {
    "type": "object"
  }
---
`,
			want: AgentFile{Name: "researcher", Description: "d", Mode: "isolated", ResponseFormat: json.RawMessage(`{"type":"object"}`)},
		},
		{
			name: "empty body, defaults",
			src:  "---\ndescription: Only a description.\n---\n",
			want: AgentFile{Name: "researcher", Description: "Only a description.", Mode: "isolated"},
		},
		{
			name: "no body line at all",
			src:  "---\ndescription: d\n---",
			want: AgentFile{Name: "researcher", Description: "d", Mode: "isolated"},
		},
		{
			name: "empty tools list",
			src:  "---\ndescription: d\ntools: []\n---\n",
			want: AgentFile{Name: "researcher", Description: "d", Mode: "isolated", Tools: []string{}, ToolLines: []int{}},
		},
		{
			name: "empty tools string",
			src:  "---\ndescription: d\ntools: \"\"\n---\n",
			want: AgentFile{Name: "researcher", Description: "d", Mode: "isolated", Tools: []string{}, ToolLines: []int{}},
		},
		{
			name: "fork, handoff kept as written",
			src:  "---\ndescription: d\nmode: fork\n---\nAlso check the tests.\n",
			want: AgentFile{Name: "researcher", Description: "d", Mode: "fork", Prompt: "Also check the tests."},
		},
		{
			name: "handoff",
			src:  "---\ndescription: d\nmode: handoff\n---\n",
			want: AgentFile{Name: "researcher", Description: "d", Mode: "handoff"},
		},
		{
			name: "model inherit, bare provider, CRLF, BOM, folded description",
			src:  "\ufeff---\r\ndescription: >\r\n  Two\r\n  lines.\r\nmodel: inherit\r\n---\r\n\r\n  indented body\r\n",
			want: AgentFile{Name: "researcher", Description: "Two lines.", Mode: "isolated", Prompt: "  indented body"},
		},
		{
			name: "bare provider model, model with colons",
			src:  "---\ndescription: d\nmodel: ollama:qwen3:8b\n---\n",
			want: AgentFile{Name: "researcher", Description: "d", Mode: "isolated", Model: "ollama:qwen3:8b", ModelLine: 3},
		},
		{
			name: "provider-only model, aliases, comments",
			src:  "---\n# who\ndescription: &b research\nname: *b\nmodel: openai\n---\n",
			want: AgentFile{Name: "research", Description: "research", Mode: "isolated", Model: "openai", ModelLine: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAgentFile(agentPath, []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Path, tt.want.Line = agentPath, 1
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestAgentFileSpec(t *testing.T) {
	a, err := ParseAgentFile("a/reviewer.md", []byte("---\ndescription: Reviews.\nmode: fork\nmax_steps: 3\ntimeout: 2m\nresponse_format: {type: object}\n---\nBe strict.\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := a.Spec()
	want := subagent.Spec{Name: "reviewer", Description: "Reviews.", SystemPrompt: "Be strict.", Mode: subagent.Fork,
		MaxSteps: 3, Timeout: 2 * time.Minute, ResponseFormat: json.RawMessage(`{"type":"object"}`)}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if _, err := subagent.ResolveFormat(s.ResponseFormat); err != nil {
		t.Errorf("ResolveFormat: %v", err)
	}
	b, _ := ParseAgentFile("b.md", []byte("---\ndescription: d\n---\n"))
	if b.Spec().ResponseFormat != nil || b.Spec().Skills != nil {
		t.Errorf("ResponseFormat = %#v, Skills = %q, want nil", b.Spec().ResponseFormat, b.Spec().Skills)
	}
	for _, src := range []string{"skills: [pdf, csv-tools]", "skills: pdf, csv-tools", "skills:\n  - pdf\n  - csv-tools"} {
		c, err := ParseAgentFile("c.md", []byte("---\ndescription: d\n"+src+"\n---\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Spec().Skills; !slices.Equal(got, []string{"pdf", "csv-tools"}) {
			t.Errorf("%q: skills %q", src, got)
		}
	}
}

func TestParseAgentFileErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // every error, one a line
	}{
		{"empty file", "", `:1: missing front matter: the file must start with a line "---"`},
		{"missing front matter", "description: d\n---\n", `:1: missing front matter: the file must start with a line "---"`},
		{"blank line first", "\n---\ndescription: d\n---\n", `:1: missing front matter: the file must start with a line "---"`},
		{"unclosed front matter", "---\ndescription: d\n\nBody.\n", `:1: unclosed front matter: no line "---" ends it`},
		{"bad YAML: scanner", "---\ndescription: d\nmode: fork\n  tools: x\n---\n", `:4: invalid YAML: mapping values are not allowed in this context`},
		{"bad YAML: parser", "---\ndescription: d\ntools: [a, b\nmode: fork\n---\n", `:3: invalid YAML: did not find expected ',' or ']'`},
		{"bad YAML: tab", "---\ndescription: d\n\tmode: fork\n---\n", `:3: invalid YAML: found a tab character that violates indentation`},
		{"bad YAML: unknown anchor", "---\ndescription: d\nmodel: *nope\n---\n", `:3: invalid YAML: unknown anchor 'nope' referenced`},
		{"bad YAML: first line, parser", "---\n: : :\n---\n", `:2: invalid YAML: did not find expected key`},
		{"bad YAML: first line, scanner", "---\n\tmode: fork\n---\n", `:2: invalid YAML: found character that cannot start any token`},
		{"bad YAML: at the end", "---\ndescription: d\ntools: [a,\n---\n", `:4: invalid YAML: did not find expected node content`},
		{"not a mapping", "---\n- a\n- b\n---\n", `:2: the front matter must be keys and values, got a list`},
		{"unknown key with suggestion", "---\nname: r\n\n\nmode: fork\n\ndescripton: d\n---\n",
			":1: missing required key \"description\": the model chooses subagents by it\n" +
				`:7: unknown key "descripton" (did you mean "description"?)`},
		{"unknown key by case", "---\ndescription: d\nMax_Steps: 3\n---\n", `:3: unknown key "Max_Steps" (did you mean "max_steps"?)`},
		{"unknown key without suggestion", "---\ndescription: d\nplugins: [x]\n---\n",
			`:3: unknown key "plugins" (known keys: name, description, mode, tools, model, response_format, max_steps, timeout, reasoning, interrupt_on, permissions, context_window, mcpServers, skills, background, background_max_steps, background_max_tokens, background_timeout)`},
		{"skills on a fork", "---\ndescription: d\nmode: fork\nskills: [pdf]\n---\n", `:4: skills cannot be set for mode "fork": a fork has its parent's skills`},
		{"skills: bad name", "---\ndescription: d\nskills: [pdf, \"a b\"]\n---\n", `:3: skill name "a b" must be letters, digits, "_" and "-" only`},
		{"skills: twice", "---\ndescription: d\nskills: pdf, pdf\n---\n", `:3: skill "pdf" is listed twice`},
		{"skills: a number", "---\ndescription: d\nskills: 3\n---\n", `:3: skills must be a list of skill names or a comma-separated string, got the integer 3`},
		{"duplicate key", "---\ndescription: d\nmode: fork\nmode: isolated\n---\n", `:4: key "mode" is set twice (first on line 3)`},
		{"bad mode", "---\nname: researcher\ndescription: d\nmode: shared\n---\n", `:4: mode must be "isolated", "fork" or "handoff", got "shared"`},
		{"wrong type: description", "---\ndescription: 42\n---\n", `:2: description must be a string, got the integer 42; put it in quotes`},
		{"wrong type: name list", "---\nname: [a]\ndescription: d\n---\n", `:2: name must be a string, got a list`},
		{"wrong type: max_steps", "---\ndescription: d\nmax_steps: \"5\"\n---\n", `:3: max_steps must be a whole number, got the string "5"`},
		{"max_steps zero", "---\ndescription: d\nmax_steps: 0\n---\n", `:3: max_steps must be at least 1, got 0`},
		{"max_steps huge", "---\ndescription: d\nmax_steps: 99999999999999999999\n---\n", `:3: max_steps must be a whole number, got the number 99999999999999999999`},
		{"wrong type: tools mapping", "---\ndescription: d\ntools: {a: b}\n---\n", `:3: tools must be a list of tool names or a comma-separated string, got a mapping`},
		{"tools null", "---\ndescription: d\ntools:\n---\n", `:3: tools has no value: write "tools: []" for no tools, or leave the key out for the default tools`},
		{"tools item", "---\ndescription: d\ntools:\n  - grep\n  - 7\n  - [x]\n---\n",
			":5: tools item 2 must be a tool name, got the integer 7\n:6: tools item 3 must be a tool name, got a list"},
		{"tools spaces", "---\ndescription: d\ntools: read_file grep\n---\n", `:3: tool name "read_file grep" has spaces: separate tool names with commas`},
		{"tools bad name", "---\ndescription: d\ntools: [\"mcp/x\"]\n---\n", `:3: tool name "mcp/x" must be letters, digits, "_" and "-" only`},
		{"tools twice", "---\ndescription: d\ntools: grep, grep\n---\n", `:3: tool "grep" is listed twice`},
		{"tools for a fork", "---\ndescription: d\nmode: fork\ntools: [grep]\n---\n", `:4: tools cannot be set for mode "fork": a fork runs with its parent's exact tools`},
		{"bad name", "---\nname: deep researcher\ndescription: d\n---\n", `:2: name must be letters, digits, "_" and "-" only, got "deep researcher"`},
		{"missing description", "---\nname: r\n---\nBody.\n", `:1: missing required key "description": the model chooses subagents by it`},
		{"empty description", "---\ndescription: \"  \"\n---\n", `:2: description must not be empty: the model chooses subagents by it`},
		{"null description", "---\ndescription:\n---\n", `:2: description has no value`},
		{"non-object schema: array type", "---\ndescription: d\nresponse_format:\n  title: X\n  type: array\n---\n",
			`:5: response_format must be an object schema (type: object), got type "array"`},
		{"non-object schema: no type", "---\ndescription: d\nresponse_format:\n  properties: {}\n---\n",
			`:3: response_format must be an object schema (type: object), got no type`},
		{"non-object schema: JSON array", "---\ndescription: d\nresponse_format: '[1]'\n---\n",
			`:3: response_format must be a JSON schema object, got an array`},
		{"non-object schema: list", "---\ndescription: d\nresponse_format: [a]\n---\n",
			`:3: response_format must be a JSON schema: a mapping, or a string holding JSON; got a list`},
		{"non-object schema: type list", "---\ndescription: d\nresponse_format: {type: [object, \"null\"]}\n---\n",
			`:3: response_format must be an object schema (type: object), got type ["object","null"]`},
		{"schema bad JSON", "---\ndescription: d\nresponse_format: |\n  {\"type\":\n    \"object\",,}\n---\n",
			`:5: response_format is not valid JSON: invalid character ',' looking for beginning of object key string`},
		{"schema not JSON-able", "---\ndescription: d\nresponse_format:\n  type: object\n  maximum: .inf\n---\n",
			`:5: response_format: .inf is not a JSON number`},
		{"schema duplicate key", "---\ndescription: d\nresponse_format:\n  type: object\n  type: object\n---\n",
			`:5: response_format: key "type" is set twice`},
		{"schema contains itself", "---\ndescription: d\nresponse_format: &s\n  type: object\n  properties:\n    again: *s\n---\n",
			`:6: response_format: the schema contains itself (an alias of an enclosing anchor)`},
		{"schema too large", "---\ndescription: d\nresponse_format:\n  type: object\n  a: &a [1,2,3,4,5,6,7,8,9]\n  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n  d: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n---\n",
			`:3: response_format: the schema is too large`},
		{"schema title a number", "---\ndescription: d\nresponse_format:\n  type: object\n  title: 7\n---\n",
			`:5: response_format: title must be a string, got 7`},
		{"schema title a mapping, as JSON", "---\ndescription: d\nresponse_format: '{\"type\":\"object\",\"title\":{\"a\":1}}'\n---\n",
			`:3: response_format: title must be a string, got {"a":1}`},
		{"schema description a list", "---\ndescription: d\nresponse_format: {type: object,\n  description: [x]}\n---\n",
			`:4: response_format: description must be a string, got ["x"]`},
		{"schema title null", "---\ndescription: d\nresponse_format:\n  title:\n  type: object\n---\n",
			`:4: response_format: title must be a string, got null`},
		{"bad timeout", "---\ndescription: d\ntimeout: soon\n---\n", `:3: timeout must be a duration like "90s" or "5m", got "soon"`},
		{"timeout without unit", "---\ndescription: d\ntimeout: 90\n---\n", `:3: timeout must be a duration like "90s" or "5m", got the integer 90; add a unit`},
		{"timeout not positive", "---\ndescription: d\ntimeout: 0s\n---\n", `:3: timeout must be positive, got "0s"`},
		{"bad model", "---\ndescription: d\nmodel: \"gpt 4\"\n---\n", `:3: model must be "provider:model" (e.g. "openai:gpt-4.1"), got "gpt 4"`},
		{"model name without its provider", "---\ndescription: d\nmodel: gemini-2.5-pro\n---\n", `:3: model "gemini-2.5-pro" is a model name without its provider: write "gemini:gemini-2.5-pro"`},
		{"model without model", "---\ndescription: d\nmodel: \"openai:\"\n---\n", `:3: model "openai:" names no model after the ":"`},
		{"invalid UTF-8", "---\ndescription: d\n---\nok\n\xff\n", `:5: the file is not valid UTF-8 text`},
		{"context_window a string", "---\ndescription: d\ncontext_window: 128k\n---\n", `:3: context_window must be a whole number, got the string "128k"`},
		{"context_window zero", "---\ndescription: d\ncontext_window: 0\n---\n", `:3: context_window must be at least 1, got 0`},
		{"context_window huge", "---\ndescription: d\ncontext_window: 500000000\n---\n", `:3: context_window is too large: 500000000 tokens`},
		{"several errors at once", "---\nname: \"a b\"\nmode: shared\ntimeout: 1\ncolour: red\n---\n",
			":1: missing required key \"description\": the model chooses subagents by it\n" +
				":2: name must be letters, digits, \"_\" and \"-\" only, got \"a b\"\n" +
				":3: mode must be \"isolated\", \"fork\" or \"handoff\", got \"shared\"\n" +
				":4: timeout must be a duration like \"90s\" or \"5m\", got the integer 1; add a unit\n" +
				":5: unknown key \"colour\" (known keys: name, description, mode, tools, model, response_format, max_steps, timeout, reasoning, interrupt_on, permissions, context_window, mcpServers, skills, background, background_max_steps, background_max_tokens, background_timeout)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAgentFile(agentPath, []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; parsed %+v", a)
			}
			want := agentPath + strings.ReplaceAll(tt.want, "\n", "\n"+agentPath)
			if got := err.Error(); got != want {
				t.Errorf("error\n got: %s\nwant: %s", got, want)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != agentPath || fe.Line < 1 {
				t.Errorf("errors.As: %#v", fe)
			}
			if n := len(FileErrors(err)); n != strings.Count(tt.want, "\n")+1 {
				t.Errorf("FileErrors: %d, want %d", n, strings.Count(tt.want, "\n")+1)
			}
		})
	}
}

func TestFileNameAsName(t *testing.T) {
	_, err := ParseAgentFile("agents/my agent.md", []byte("---\ndescription: d\n---\n"))
	want := `agents/my agent.md:1: the file name "my agent" is not a subagent name (letters, digits, "_" and "-" only): rename the file or set "name"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	a, err := ParseAgentFile("agents/my agent.md", []byte("---\nname: mine\ndescription: d\n---\n"))
	if err != nil || a.Name != "mine" {
		t.Errorf("with name: %+v, %v", a, err)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func agentDoc(desc string) string { return "---\ndescription: " + desc + "\n---\n" }

func TestLoadAgents(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	writeFiles(t, root, map[string]string{
		"home/.deepagents/agents/researcher.md": agentDoc("user researcher"),
		"home/.deepagents/agents/writer.md":     agentDoc("user writer"),
		"home/.deepagents/agents/notes.txt":     "not an agent",
		"home/.deepagents/agents/.draft.md":     "not an agent either",
		"project/.deepagents/agents/aaa.md":     "---\nname: researcher\ndescription: project researcher\n---\n",
		"project/.deepagents/agents/tester.md":  agentDoc("project tester"),
		"project/.deepagents/agents/sub.md/x":   "a directory named .md is skipped",
	})
	dirs := AgentDirs(project, home)
	if want := []string{filepath.Join(home, ".deepagents", "agents"), filepath.Join(project, ".deepagents", "agents")}; !cmp.Equal(dirs, want) {
		t.Fatalf("AgentDirs = %v, want %v", dirs, want)
	}
	got, err := LoadAgents(append(dirs, filepath.Join(root, "missing"))...)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, a := range got {
		summary = append(summary, a.Name+"="+a.Description+"@"+filepath.Base(a.Path))
	}
	want := []string{"researcher=project researcher@aaa.md", "tester=project tester@tester.md", "writer=user writer@writer.md"}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}

	// Reversed, the user's files win.
	got, err = LoadAgents(dirs[1], dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Name != "researcher" || got[0].Description != "user researcher" {
		t.Errorf("reversed: %+v", got[0])
	}

	if got, err := LoadAgents(); err != nil || len(got) != 0 {
		t.Errorf("no dirs: %v, %v", got, err)
	}
	if got, err := LoadAgents(filepath.Join(root, "nope"), ""); err != nil || len(got) != 0 {
		t.Errorf("missing dirs: %v, %v", got, err)
	}
	if dirs := AgentDirs("p", ""); !cmp.Equal(dirs, []string{filepath.Join("p", ".deepagents", "agents")}) {
		t.Errorf("AgentDirs without home = %v", dirs)
	}
}

func TestLoadAgentsDuplicateInOneDir(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.md": "---\nname: reviewer\ndescription: one\n---\n",
		"b.md": "---\ndescription: two\nname: reviewer\n---\n",
	})
	_, err := LoadAgents(dir)
	want := filepath.Join(dir, "b.md") + `:3: subagent "reviewer" is also declared in ` + filepath.Join(dir, "a.md") + "; names must be unique within a directory"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	// The same name in two directories is an override, not an error.
	other := t.TempDir()
	writeFiles(t, other, map[string]string{"reviewer.md": agentDoc("three")})
	writeFiles(t, dir, map[string]string{"b.md": agentDoc("two")})
	got, err := LoadAgents(dir, other)
	if err != nil || len(got) != 2 || got[1].Description != "three" {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestLoadAgentsReportsEveryFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.md":  "no front matter",
		"b.md":  "---\ndescription: d\nmode: shared\ntimeout: x\n---\n",
		"ok.md": agentDoc("fine"),
	})
	_, err := LoadAgents(dir)
	a, b := filepath.Join(dir, "a.md"), filepath.Join(dir, "b.md")
	want := a + `:1: missing front matter: the file must start with a line "---"` + "\n" +
		b + `:3: mode must be "isolated", "fork" or "handoff", got "shared"` + "\n" +
		b + `:4: timeout must be a duration like "90s" or "5m", got "x"`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	fes := FileErrors(err)
	if len(fes) != 3 || fes[0].Path != a || fes[2].Line != 4 {
		t.Errorf("FileErrors = %+v", fes)
	}
}

func TestLoadAgentsUnreadable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFiles(t, dir, map[string]string{"file": "x"})
	_, err := LoadAgents(file)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != file || !strings.Contains(err.Error(), "cannot read the agents directory") {
		t.Errorf("not a directory: %v", err)
	}
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("permissions are not enforced here")
	}
	locked := filepath.Join(dir, "locked")
	writeFiles(t, dir, map[string]string{"locked/a.md": agentDoc("a")})
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	if _, err := LoadAgents(locked); err == nil {
		t.Error("unreadable directory: no error")
	}
}

func TestExampleAgent(t *testing.T) {
	data, err := os.ReadFile("testdata/agents/researcher.md")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseAgentFile("testdata/agents/researcher.md", data)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "researcher" || len(a.Tools) == 0 || a.ResponseFormat == nil || a.Prompt == "" {
		t.Errorf("%+v", a)
	}
}
