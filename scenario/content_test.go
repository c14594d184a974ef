package scenario

import (
	"reflect"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

// The keys for reasoning, binary files and the model's capabilities are
// read and checked, each bad value at its own position.
func TestParseReasoningAndBinaryFiles(t *testing.T) {
	const head = `{"input":"x","script":{"parent":[{"content":"hi"}]},`
	ok, err := Parse([]byte(head + `"model":{"images":false},"binary_files":{"/a.png":"iVBORw0KGgo="},
		"agent":{"reasoning":{"effort":"high"},"subagents":[{"name":"s","description":"d","reasoning":{"budget_tokens":512}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ok.Agent.Reasoning, &llm.ReasoningConfig{Effort: "high"}) ||
		!reflect.DeepEqual(ok.Agent.Subagents[0].Reasoning, &llm.ReasoningConfig{BudgetTokens: 512}) {
		t.Errorf("reasoning %+v / %+v", ok.Agent.Reasoning, ok.Agent.Subagents[0].Reasoning)
	}
	if ok.ModelOptions == nil || ok.ModelOptions.Images == nil || *ok.ModelOptions.Images {
		t.Errorf("model options %+v", ok.ModelOptions)
	}
	if c := ok.Model().Capabilities(); c.Images {
		t.Error("model.images false must reach the scripted model")
	}
	cases := []struct {
		name, doc, want string
	}{
		{"bad effort", `"agent":{"reasoning":{"effort":"max"}}}`, `2:32: agent.reasoning.effort is "max"; use "low", "medium" or "high"`},
		{"negative budget", `"agent":{"subagents":[{"name":"s","description":"d","reasoning":{"budget_tokens":-1}}]}}`,
			"2:82: agent.subagents[0].reasoning.budget_tokens must not be negative"},
		{"reasoning not an object", `"agent":{"reasoning":"high"}}`, "2:22: agent.reasoning must be an object, not a string"},
		{"bad base64", `"binary_files":{"/a.png":"not base64!"}}`, "2:17: binary_files: /a.png is not valid base64: illegal base64 data at input byte 3"},
		{"binary file also a text file", `"files":{"/a":"t"},"binary_files":{"/a":"AA=="}}`, "2:36: /a is given in both files and binary_files; give it once"},
		{"binary file with a bad path", `"binary_files":{"":"AA=="}}`, "2:17: binary_files: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(head + "\n" + c.doc))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// A binary file seeds the run byte for byte and shows in the transcript as
// base64; the expect keys status and parent_messages_exclude are checked.
func TestBinaryFilesAndNewExpectKeys(t *testing.T) {
	s, err := Parse([]byte(`{"input":"x","binary_files":{"/b.bin":"AAEC/w=="},
		"script":{"parent":[{"reasoning":"SECRET plan","content":"done"}]},
		"expect":{"status":"ok","parent_messages_exclude":["SECRET","nothing like this"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Files["/b.bin"]; got != "binary, 4 bytes, base64: AAEC/w==" {
		t.Errorf("file shown as %q", got)
	}
	want := map[string]bool{"run status is ok": true, `no parent message contains "SECRET"`: false, `no parent message contains "nothing like this"`: true}
	if len(tr.Checks) != len(want) {
		t.Fatalf("checks %+v", tr.Checks)
	}
	for _, c := range tr.Checks {
		if p, ok := want[c.Name]; !ok || p != c.Pass || c.NotChecked {
			t.Errorf("check %+v", c)
		}
	}
}
