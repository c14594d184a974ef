package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/subagent"
)

// minimal is the smallest valid scenario body, to wrap test values in.
const minimal = `"input": "x", "script": {"parent": [{"content": "hi"}]}`

// goTypeName matches what encoding/json puts in its errors (Go type names
// such as scripted.Case, []string, struct { ... }, int64); none may reach a
// user.
var goTypeName = regexp.MustCompile(`struct \{|\[\][a-z]|\bscripted\.|\bllm\.|\bscenario\.|\bint64\b|\bfloat64\b|Go (struct|value)|json:`)

func TestParseErrorsHavePositionsAndPlainWords(t *testing.T) {
	nested := `{"input": "x", "script": {"parent": [{"tool_calls": [{"name": "t", "args": ` +
		strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}]}]}}`
	cases := []struct {
		name, doc string
		want      string // the whole error, "LINE:COL: reason"
	}{
		{"not JSON", `{"input": "x"`, `1:14: expected ',' or '}' after the value of "input", found the file ends`},
		{"empty", "  \n", `1:1: the file is empty; a scenario is a JSON object`},
		{"top level list", `[1]`, `1:1: the top level must be a JSON object, not a list`},
		{"missing input", `{"script": {"parent": []}}`, `1:1: "input" is missing or empty`},
		{"input number", "{\n  \"input\": 3}", `2:12: "input" must be a string or a list of {"role", "content"} messages, not a number`},
		{"unknown role", `{"input": [{"role": "wizard", "content": "a"}], "script": {"parent": []}}`,
			`1:21: input[0] has unknown role "wizard"; use user, assistant, system or tool`},
		{"no parent script", `{"input": "x", "script": {}}`, `1:26: "script" has no "parent" replies (the top-level agent's steps)`},
		{"negative delay", `{"input": "x", "delay_ms": -1, "script": {"parent": []}}`, `1:28: delay_ms must not be negative`},
		{"huge delay", `{"input": "x", "delay_ms": 1e12, "script": {"parent": []}}`,
			`1:28: delay_ms is 1e+12; at most 600000 (10 minutes per model call) is allowed`},
		{"huge step delay", `{"input": "x", "script": {"parent": [{"delay_ms": 600001}]}}`,
			`1:51: script.parent[0].delay_ms is 600001; at most 600000 (10 minutes per model call) is allowed`},
		{"traversal", `{"input": "x", "files": {"../x": "y"}, "script": {"parent": []}}`, `1:26: files: `},
		{"tool call without name", "{\"input\": \"x\",\n \"script\": {\"parent\": [{\"tool_calls\": [{\"args\": {}}]}]}}",
			`2:40: script.parent[0].tool_calls[0] has no name (the tool to call)`},
		{"wrong type deep", `{"input": "x", "script": {"parent": {"cases": [{"match": 3, "steps": []}]}}}`,
			`1:58: script.parent.cases[0].match must be a string, not a number`},
		{"cases not a list", `{"input": "x", "script": {"parent": {"cases": {}}}}`, `1:47: script.parent.cases must be a list, not an object`},
		{"script object without cases", `{"input": "x", "script": {"parent": {}}}`,
			`1:37: script.parent has no "cases"; an agent's script is a list of steps or {"cases": [{"match": "...", "steps": [...]}]}`},
		{"script string", `{"input": "x", "script": {"parent": "hi"}}`,
			`1:37: script.parent must be a list of steps or {"cases": [{"match": "...", "steps": [...]}]}, not a string`},
		{"fractional max_steps", `{` + minimal + `, "agent": {"max_steps": 2.5}}`, `1:82: agent.max_steps must be a whole number, not 2.5`},
		{"huge max_steps", `{` + minimal + `, "agent": {"max_steps": 1e300}}`, `1:82: agent.max_steps is too large: 1e300`},
		{"huge whole max_steps", `{` + minimal + `, "agent": {"max_steps": 99999999999999999999}}`, `1:82: agent.max_steps is too large: 99999999999999999999`},
		{"huge crash point", `{` + minimal + `, "crash_after_events": [-1e20]}`, `1:82: crash_after_events[0] is too small: -1e20`},
		{"duplicate key", "{\"input\": \"x\",\n  \"input\": \"y\"}", `2:3: duplicate key "input" (first given at line 1, column 2)`},
		{"duplicate nested key", `{` + minimal + `, "agent": {"subagents": [{"name": "a", "name": "b"}]}}`,
			`1:97: duplicate key "name" (first given at line 1, column 84)`},
		{"invalid UTF-8", "{\"input\": \"caf\xe9\", \"script\": {\"parent\": []}}", `1:15: invalid UTF-8 in a string (the file must be UTF-8 text)`},
		{"invalid UTF-8 outside strings", "{\"input\": \"x\" \xff}", `1:15: expected ',' or '}' after the value of "input", found a byte that is not valid UTF-8`},
		{"invalid mode", `{` + minimal + `, "agent": {"subagents": [{"name": "a", "description": "d", "mode": "swarm"}]}}`,
			`1:125: agent.subagents[0].mode is "swarm"; use "isolated", "fork" or "handoff"`},
		{"parent max_steps", `{` + minimal + `, "agent": {"max_steps": -5, "subagents": [{"name": "a", "description": "d"}]}}`,
			`1:82: agent.max_steps must not be negative (0 means the default)`},
		{"subagent max_steps", `{` + minimal + `, "agent": {"subagents": [{"name": "a", "description": "d"}, {"name": "b", "description": "d", "max_steps": -1}]}}`,
			`1:165: agent.subagents[1].max_steps must not be negative (0 means the parent's limit)`},
		{"timeout", `{` + minimal + `, "agent": {"subagents": [{"name": "a", "description": "d", "timeout_ms": 1e15}]}}`,
			`1:131: agent.subagents[0].timeout_ms must be between 0 and 86400000 (24 hours), not 1e+15`},
		{"nesting", nested, `1:366: nested more than 64 levels deep (the limit)`},
		{"trailing text", `{` + minimal + `} x`, `1:59: unexpected text after the end of the JSON value: 'x'`},
		{"control character", "{\"input\": \"a\tb\"}", `1:13: control character U+0009 inside a string (write it as an escape such as \n)`},
		{"bad escape", `{"input": "a\qb"}`, `1:13: unknown escape sequence \q in a string`},
		{"leading zero", `{"input": "x", "delay_ms": 01}`, `1:28: a number must not start with 0`},
		{"tool without name", `{` + minimal + `, "agent": {"tools": [{"description": "d"}]}}`, `1:79: agent.tools[0] has no name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if err == nil {
				t.Fatalf("accepted; want %q", c.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			if got := err.Error(); !strings.HasPrefix(got, c.want) {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if strings.Contains(err.Error(), "\n") || goTypeName.MatchString(err.Error()) {
				t.Errorf("error must be one line in plain words: %q", err)
			}
		})
	}
}

func TestParseAcceptsBOMAndAnyExpect(t *testing.T) {
	for _, expect := range []string{`{"tool_message_contains": {"0": ["a", "b"]}}`, `{"a": 1, "a": {"b": 2, "b": 3}}`, `{"whatever": {"deep": [1, {"x": null}]}}`,
		`[1, 2]`, `"text"`, `3.5`, `null`, `true`, `{"parent_message_count": "many"}`} {
		doc := "\xEF\xBB\xBF{" + minimal + `, "expect": ` + expect + `}`
		s, err := Parse([]byte(doc))
		if err != nil {
			t.Errorf("expect %s: %v", expect, err)
			continue
		}
		if expect != "null" && !bytes.Equal(s.Expect, compact(t, expect)) {
			t.Errorf("expect kept as %s, want %s", s.Expect, expect)
		}
	}
}

func compact(t *testing.T, s string) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEmptyScriptsAreValid(t *testing.T) {
	for _, script := range []string{`{"parent": []}`, `{"parent": {"cases": []}}`, `{"parent": {"cases": [{"match": "a", "steps": []}]}}`,
		`{"parent": [{"content": "x"}], "general-purpose": []}`} {
		if _, err := Parse([]byte(`{"input": "x", "script": ` + script + `}`)); err != nil {
			t.Errorf("script %s refused: %v", script, err)
		}
	}
}

func TestWarningsHavePositions(t *testing.T) {
	s, err := Parse([]byte("{" + minimal + ",\n \"surprise\": 1, \"agent\": {\"systemPrompt\": \"a\", \"system_prompt\": \"b\", \"subagents\": [{\"name\": \"s\", \"description\": \"d\", \"extra\": 2}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`2:2: unknown key "surprise" in the scenario (ignored)`,
		`2:27: both "systemPrompt" and "system_prompt" are given in agent; "system_prompt" is used`,
		`2:118: unknown key "extra" in agent.subagents[0] (ignored)`,
	}
	if !slices.Equal(s.Warnings, want) {
		t.Errorf("warnings:\n got  %q\n want %q", s.Warnings, want)
	}
	if s.Agent.SystemPrompt != "b" {
		t.Errorf("system prompt %q, want the snake_case value", s.Agent.SystemPrompt)
	}
}

func TestLoadRefusesWhatIsNotARegularFileUnderTheCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "not a regular file",
		dir:         "not a regular file",
		big:         "file too large: 16 MiB, the limit is 16 MiB",
	} {
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("Load(%s) = %v, want an error naming the file and saying %q", path, err, want)
		}
	}
	if _, err := Parse(bytes.Repeat([]byte(" "), MaxFileSize+1)); err == nil || !strings.Contains(err.Error(), "the limit is 16 MiB") {
		t.Errorf("Parse of too much data: %v", err)
	}
	good := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(good, []byte("{\n"+minimal+`, "agent": {"max_steps": -1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(good); err == nil || err.Error() != good+`:2:81: agent.max_steps must not be negative (0 means the default)` {
		t.Errorf("Load error = %v, want PATH:LINE:COL: reason", err)
	}
}

func TestBuildAssemblesTheDeclaredAgent(t *testing.T) {
	s, err := Parse([]byte(`{` + minimal + `, "agent": {"system_prompt": "Lead.", "max_steps": 7,
		"tools": [{"name": "web_search"}],
		"subagents": [{"name": "researcher", "description": "Finds things.", "tools": ["web_search", "calc"]},
		              {"name": "forker", "description": "Forks.", "mode": "fork"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Build(s.Model())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, spec := range a.ToolSpecs() {
		names = append(names, spec.Name)
	}
	if !slices.Contains(names, "web_search") || !slices.Contains(names, subagent.TaskToolName) {
		t.Errorf("parent tools %v lack web_search or task", names)
	}
	if a.System() == "" || !strings.Contains(a.System(), "Lead.") {
		t.Errorf("system prompt %q lacks the scenario's", a.System())
	}
	var task *subagent.Task
	for _, tl := range a.Tools() {
		if tt, ok := tl.(*subagent.Task); ok {
			task = tt
		}
	}
	if task == nil {
		t.Fatal("no task tool")
	}
	if got := task.Names(); !slices.Equal(got, []string{"general-purpose", "researcher", "forker"}) {
		t.Errorf("subagents %v", got)
	}
	child, ok := task.Agent("researcher")
	if !ok {
		t.Fatal("researcher missing")
	}
	var childTools []string
	for _, spec := range child.ToolSpecs() {
		childTools = append(childTools, spec.Name)
	}
	if !slices.Contains(childTools, "web_search") || !slices.Contains(childTools, "calc") || slices.Contains(childTools, subagent.TaskToolName) {
		t.Errorf("researcher tools %v: want web_search and the fake calc, no task", childTools)
	}
}

// FuzzParse: no scenario text makes Parse panic; errors are one-line *Error
// values with a position inside the text and no Go type names; a scenario
// that parses marshals to a document that parses to the same scenario, and
// it either builds or fails with a one-line assembly error.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "scenarios", "*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{`{}`, `{"input":"x","script":{"parent":[]}}`, `{"input":[{"role":"ai","content":"x"}],"script":{"parent":{"cases":[]}}}`,
		`{"input":"x","script":{"parent":[{"tool_calls":[{"name":"t","args":[1]}]}]},"agent":{"systemPrompt":"a","system_prompt":"b"}}`,
		"\xEF\xBB\xBF{\"input\":\"x\",\"script\":{\"parent\":[]}}", `{"input":"x","input":"y"}`, "{\"input\":\"\xff\"}",
		`{"input":"x","script":{"parent":[]},"expect":{"tool_message_contains":{"0":["a","b"]}}}`,
		`{"input":"x","script":{"parent":[]},"agent":{"subagents":[{"name":"a","description":"d","mode":"swarm"}]}}`,
		`{"input":"x","delay_ms":1e12,"script":{"parent":[{"delay_ms":-1}]}}`, `{"input":"x","script":{"parent":[]},"agent":{"max_steps":-5}}`,
		`{"input":"\ud83d\ude00\ud800x","script":{"parent":[{"content":"\u00e9"}]}}`,
		`{"input":"x","script":{"parent":[{"tool_calls":[{"name":"t","args":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}]}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			if strings.Contains(err.Error(), "\n") || se.Reason == "" || goTypeName.MatchString(se.Reason) {
				t.Fatalf("bad error: %q", err)
			}
			if len(data) <= MaxFileSize && se.Line == 0 {
				t.Fatalf("error without a position: %q", err)
			}
			return
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("parsed scenario does not marshal: %v", err)
		}
		s2, err := Parse(again)
		if err != nil {
			t.Fatalf("the marshalled scenario does not parse: %v\n%s", err, again)
		}
		if again2, _ := json.Marshal(s2); !bytes.Equal(again, again2) {
			t.Fatalf("round trip changed the scenario:\n%s\n%s", again, again2)
		}
		a, err := s.Build(s.Model())
		switch {
		case err != nil && (err.Error() == "" || strings.Contains(err.Error(), "\n")):
			t.Fatalf("assembly error must be one non-empty line: %q", err)
		case err == nil && len(a.ToolSpecs()) == 0:
			t.Fatal("assembled agent has no tools")
		}
	})
}

func TestLineColsAgreesWithLineCol(t *testing.T) {
	data := []byte("{\"é\": 1,\n  \"日本\": [\n\t\"x\"]}\n")
	offs := []int{len(data), 0, 5, 9, 12, 3, 20, 9}
	got := lineCols(data, offs)
	for i, off := range offs {
		l, c := lineCol(data, off)
		if got[i] != [2]int{l, c} {
			t.Errorf("offset %d: lineCols %v, lineCol %d:%d", off, got[i], l, c)
		}
	}
	if l, c := lineCol(data, 19); l != 2 || c != 6 { // the quote after 日本
		t.Errorf("lineCol(19) = %d:%d, want 2:6", l, c)
	}
}

func TestWarningsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("{" + minimal)
	for i := range 150 {
		b.WriteString(`, "unknown` + strings.Repeat("x", i) + `": 1`)
	}
	b.WriteString("}")
	s, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 101 || s.Warnings[100] != "50 more warnings not shown" || !strings.HasPrefix(s.Warnings[0], `1:59: unknown key "unknown"`) {
		t.Errorf("%d warnings, first %q, last %q", len(s.Warnings), s.Warnings[0], s.Warnings[len(s.Warnings)-1])
	}
}
