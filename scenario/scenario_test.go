package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: no scenario text makes Parse panic, errors are one line, and a
// scenario that parses can be built and marshalled again.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "scenarios", "*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{`{}`, `{"input":"x","script":{"parent":[]}}`, `{"input":[{"role":"ai","content":"x"}],"script":{"parent":{"cases":[]}}}`,
		`{"input":"x","script":{"parent":[{"tool_calls":[{"name":"t","args":[1]}]}]},"agent":{"systemPrompt":"a","system_prompt":"b"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("parsed scenario does not marshal: %v", err)
		}
		_, _ = s.Build(s.Model())
	})
}

func TestInputForms(t *testing.T) {
	var in Input
	if err := json.Unmarshal([]byte(`"hi"`), &in); err != nil || len(in) != 1 || in[0].Content != "hi" || in[0].Role != "user" {
		t.Errorf("string input: %v %+v", err, in)
	}
	if err := json.Unmarshal([]byte(`[{"role":"human","content":"a"},{"role":"ai","content":"b"},{"role":"user","content":"c"}]`), &in); err != nil ||
		len(in) != 3 || in[0].Role != "user" || in[1].Role != "assistant" {
		t.Errorf("message input: %v %+v", err, in)
	}
	if err := json.Unmarshal([]byte(`[{"role":"wizard","content":"a"}]`), &in); err == nil {
		t.Error("unknown role accepted")
	}
}
