package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm/scripted"
)

// FuzzExpect: whatever the expect block holds, checking it never panics,
// every entry has a name, not-checked entries have a note and never count
// as failures, and the known keys evaluated are the ones the block holds.
func FuzzExpect(f *testing.F) {
	for _, s := range []string{`{"no_error": true}`, `{"tool_message_contains": {"0": ["a", "b"]}}`, `{"mystery": 1}`, `[1]`, `"x"`, `null`,
		`{"parent_message_count": 2.5, "files_include": "/a", "files_exclude": [1], "error_contains": ["x"], "final_state_keys": null}`,
		`{"subagent_message_contains": {"w#0": "hi"}, "max_concurrent_model_calls": 1e300, "tool_message_contains": {"-1": "x"}}`, `{`} {
		f.Add([]byte(s))
	}
	errText := "boom"
	tr := &Transcript{ParentMessages: []Message{{Role: "user", Content: "hi"}, {Role: "tool", Content: "a b"}},
		Files: map[string]string{"/a": "x"}, FinalStateKeys: []string{"files", "messages"}, Error: &errText,
		SubagentConversations: map[string]Conversation{"w#0": {Messages: []Message{{Content: "hi there"}}}}}
	model := scripted.New(nil, scripted.Options{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := &Scenario{Expect: raw}
		checks := s.check(tr, model)
		for _, c := range checks {
			if c.Name == "" {
				t.Fatalf("a check without a name: %+v", c)
			}
			if c.NotChecked && (c.Pass || c.Note == "") {
				t.Fatalf("a not-checked entry must have pass false and a note: %+v", c)
			}
		}
		if (&Transcript{Checks: checks}).Failed() {
			for _, c := range checks {
				if !c.Pass && !c.NotChecked {
					return
				}
			}
			t.Fatal("Failed() without a failed check")
		}
		root, err := parseTreeOpts(raw, "", true)
		if err != nil || root.kind != kObject {
			if len(raw) > 0 && string(raw) != "null" && !hasCheck(checks, "expect") {
				t.Fatalf("an expect that is not an object must be one not-checked entry: %+v", checks)
			}
			return
		}
		for _, m := range root.members {
			name := m.key
			if name == "" {
				name = `""`
			}
			if expectShapes[m.key] == "" && !hasCheck(checks, name) {
				t.Fatalf("unknown key %q not listed as not checked: %+v", m.key, checks)
			}
		}
	})
}

func hasCheck(checks []Check, name string) bool {
	for _, c := range checks {
		if c.NotChecked && c.Name == name {
			return true
		}
	}
	return false
}

func TestExpectChecks(t *testing.T) {
	errText := "model overloaded"
	tr := &Transcript{ParentMessages: []Message{{Role: "user", Content: "hi"}, {Role: "tool", Content: "wrote /a.md"}, {Role: "tool", Content: "second"}},
		Files: map[string]string{"/a.md": "x"}, FinalStateKeys: []string{"files", "messages"}, Error: &errText,
		SubagentConversations: map[string]Conversation{"w#1": {Messages: []Message{{Content: "task text"}, {Content: "result 42"}}}}}
	cases := []struct {
		expect string
		want   []string // "pass NAME", "fail NAME" or "skip NAME"
	}{
		{`{"parent_message_count": 3}`, []string{"pass parent has 3 messages"}},
		{`{"parent_message_count": 3.0, "no_error": true}`, []string{"pass parent has 3 messages", "fail run finished without error"}},
		{`{"error_contains": ["overloaded", "quota"]}`, []string{`pass run error contains "overloaded"`, `fail run error contains "quota"`}},
		{`{"files_include": "/a.md", "files_exclude": ["/a.md", "/b.md"]}`,
			[]string{"pass files include /a.md", "fail files exclude /a.md", "pass files exclude /b.md"}},
		{`{"tool_message_contains": {"1": ["sec", "ond"], "0": "/a.md", "5": "x"}}`,
			[]string{`pass tool message #0 contains "/a.md"`, `pass tool message #1 contains "sec"`, `pass tool message #1 contains "ond"`, `fail tool message #5 contains "x"`}},
		{`{"subagent_message_contains": {"w#1": ["42", "43"]}}`, []string{`pass w#1 saw a message containing "42"`, `fail w#1 saw a message containing "43"`}},
		{`{"final_state_keys": ["files", "messages"]}`, []string{"pass final state keys are [files messages]"}},
		{`{"max_concurrent_model_calls": 0}`, []string{"pass max concurrent model calls is 0"}},
		{`{"zzz": 1, "parent_message_count": "three", "no_error": true}`,
			[]string{"fail run finished without error", "skip zzz", "skip parent_message_count"}},
		{`["no_error"]`, []string{"skip expect"}},
	}
	model := scripted.New(nil, scripted.Options{})
	for _, c := range cases {
		s := &Scenario{Expect: json.RawMessage(c.expect)}
		var got []string
		for _, ch := range s.check(tr, model) {
			switch {
			case ch.NotChecked:
				got = append(got, "skip "+ch.Name)
			case ch.Pass:
				got = append(got, "pass "+ch.Name)
			default:
				got = append(got, "fail "+ch.Name)
			}
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("expect %s:\n got  %q\n want %q", c.expect, got, c.want)
		}
	}
}
