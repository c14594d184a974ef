package offload_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/offload"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Only a result's text is measured and offloaded: a small text with a big
// image stays as it is, and a big text with an image is saved while the
// image reaches the model untouched, after the notice.
func TestToolResultWithImage(t *testing.T) {
	img := bytes.Repeat([]byte{0x89, 0x50, 0x4e, 0x47}, 20000) // large, but not text
	cases := []struct {
		name    string
		text    string
		offload bool
	}{
		{"small text, big image", "a screenshot of the page", false},
		{"big text and an image", numberedLines(200), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := vfs.NewMemory(nil)
			res := tool.WithParts(llm.TextPart(tc.text), llm.ImagePart("image/png", img))
			out, _ := callTool(t, offload.Config{ToolResultTokens: 500}, "browser", "call_img", "parent", files, res)
			msg := out.Message(llm.ToolCall{ID: "call_img", Name: "browser"})
			if len(msg.Parts) != 2 || msg.Parts[1].Type != llm.PartImage || !bytes.Equal(msg.Parts[1].Image.Data, img) {
				t.Fatalf("the image must reach the model intact; parts %d", len(msg.Parts))
			}
			if msg.Parts[0].Type != llm.PartText || msg.Parts[0].Text != out.Content {
				t.Errorf("the first part must be the result's text %q, got %+v", out.Content, msg.Parts[0])
			}
			saved := strings.HasPrefix(out.Content, "[This result of browser was too large")
			if saved != tc.offload {
				t.Fatalf("offloaded = %v, want %v: %q", saved, tc.offload, out.Content[:min(80, len(out.Content))])
			}
			if tc.offload {
				got, err := files.Read(t.Context(), offload.ResultPath("parent", "call_img"))
				if err != nil || got != tc.text {
					t.Errorf("the saved file must hold the text alone (err %v, %d bytes of %d)", err, len(got), len(tc.text))
				}
			} else if out.Content != tc.text {
				t.Errorf("content changed: %q", out.Content)
			}
		})
	}
}
