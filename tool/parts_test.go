package tool

import (
	"reflect"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
)

// A result's tool message keeps its parts in order; when a middleware has
// rewritten Content, the text parts give way to the new text in place of
// the first of them and every image stays.
func TestResultMessage(t *testing.T) {
	call := llm.ToolCall{ID: "c1", Name: "shot"}
	img := llm.ImagePart("image/png", []byte{1, 2, 3})
	withParts := WithParts(llm.TextPart("see "), img, llm.TextPart("done"))
	if withParts.Content != "see done" {
		t.Fatalf("WithParts content %q, want %q", withParts.Content, "see done")
	}
	replaced := withParts
	replaced.Content = "[saved to /big.txt]"
	appended := withParts
	appended.Content += "\n\n[Note: conflict.]"
	emptied := withParts
	emptied.Content = ""
	onlyImage := Result{Parts: []llm.Part{img}, Content: "note"}
	cases := []struct {
		name        string
		res         Result
		wantContent string
		wantParts   []llm.Part
	}{
		{"plain text", Text("hello"), "hello", nil},
		{"parts as given", withParts, "see done", []llm.Part{llm.TextPart("see "), img, llm.TextPart("done")}},
		{"content replaced", replaced, "[saved to /big.txt]", []llm.Part{llm.TextPart("[saved to /big.txt]"), img}},
		{"content extended", appended, "see done\n\n[Note: conflict.]", []llm.Part{llm.TextPart("see done\n\n[Note: conflict.]"), img}},
		{"content emptied", emptied, "", []llm.Part{img}},
		{"text added to an image", onlyImage, "note", []llm.Part{llm.TextPart("note"), img}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.res.Message(call)
			if m.Role != llm.RoleTool || m.ToolCallID != "c1" || m.Name != "shot" {
				t.Errorf("role/id/name = %s/%s/%s", m.Role, m.ToolCallID, m.Name)
			}
			if m.Content != tc.wantContent {
				t.Errorf("content %q, want %q", m.Content, tc.wantContent)
			}
			if !reflect.DeepEqual(m.Parts, tc.wantParts) {
				t.Errorf("parts\n got %+v\nwant %+v", m.Parts, tc.wantParts)
			}
		})
	}
	errRes := Errorf("bad")
	if m := errRes.Message(call); !m.IsError || m.Content != "bad" {
		t.Errorf("error result message %+v", m)
	}
}
