package tokens

import (
	"encoding/json"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

func TestCountKnownStrings(t *testing.T) {
	cases := []struct {
		enc  Encoding
		text string
		want int
	}{
		{O200k, "", 0},
		{O200k, "hello world", 2},
		{Cl100k, "hello world", 2},
		{O200k, "查资料的", 3},
		{Cl100k, "tiktoken is great!", 6},
	}
	for _, c := range cases {
		if got := Count(c.enc, c.text); got != c.want {
			t.Errorf("Count(%s, %q) = %d, want %d", c.enc, c.text, got, c.want)
		}
	}
	if Count(O200k, "\xff\xfe bad utf8") == 0 {
		t.Error("invalid UTF-8 must still be counted")
	}
}

func TestToolJSONIsTheOpenAIWireForm(t *testing.T) {
	spec := llm.ToolSpec{Name: "ls", Description: "List <dirs> & files.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	got := ToolJSON(spec)
	want := `{"type":"function","function":{"name":"ls","description":"List <dirs> & files.","parameters":{"type":"object","properties":{}}}}`
	if got != want {
		t.Errorf("ToolJSON =\n %s\nwant\n %s", got, want)
	}
	c := Tool(spec)
	if c.JSONChars != len(want) || c.DescChars != 20 || c.O200k == 0 || c.Cl100k == 0 || c.O200k != Count(O200k, want) {
		t.Errorf("Tool = %+v", c)
	}
	if again := Tool(spec); again != c {
		t.Error("memoised count differs")
	}
	rows, total := Tools([]llm.ToolSpec{spec, spec})
	if len(rows) != 2 || total.O200k != 2*c.O200k || total.JSONChars != 2*c.JSONChars {
		t.Errorf("Tools total = %+v", total)
	}
}

func TestMessagesFraming(t *testing.T) {
	msgs := []llm.Message{llm.User("hi"), llm.Assistant("", llm.ToolCall{ID: "1", Name: "ls", Args: json.RawMessage(`{}`)})}
	n := Messages(O200k, "Be brief.", msgs)
	want := perReply + SystemPrompt(O200k, "Be brief.") + Message(O200k, msgs[0]) + Message(O200k, msgs[1])
	if n != want || n < 15 {
		t.Errorf("Messages = %d, want %d", n, want)
	}
	if Chars("查资料的") != 4 {
		t.Error("Chars counts code points")
	}
}

func TestToolO200kMatchesTool(t *testing.T) {
	spec := llm.ToolSpec{Name: "grep", Description: "Search.", Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)}
	fast := ToolO200k(spec)
	if full := Tool(spec); fast != full.O200k || fast == 0 {
		t.Errorf("ToolO200k %d, Tool %+v", fast, full)
	}
	if ToolsO200k([]llm.ToolSpec{spec, spec}) != 2*fast {
		t.Error("ToolsO200k")
	}
}
