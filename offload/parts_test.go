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

// A long user message that also carries an image is sent as the notice
// plus the image: the text parts give way to the notice, the image stays,
// and the run's own copy is untouched.
func TestUserMessageWithImage(t *testing.T) {
	huge := numberedLines(300)
	m, err := offload.New(offload.Config{UserMessageTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	img := llm.ImagePart("image/jpeg", []byte{0xff, 0xd8, 0xff})
	msg := llm.NewMessage(llm.RoleUser, llm.TextPart(huge[:len(huge)/2]), img, llm.TextPart(huge[len(huge)/2:]))
	state := []llm.Message{msg}
	req, _ := step(t, m, vfs.NewMemory(nil), state)
	sent := req.Messages[0]
	if len(sent.Parts) != 2 || sent.Parts[0].Type != llm.PartText || sent.Parts[1].Type != llm.PartImage {
		t.Fatalf("sent parts %+v", sent.Parts)
	}
	if !strings.HasPrefix(sent.Content, "[This user message was too long") || sent.Parts[0].Text != sent.Content {
		t.Errorf("sent text %q", sent.Content[:min(60, len(sent.Content))])
	}
	if state[0].Content != huge || len(state[0].Parts) != 3 {
		t.Error("the run's state was changed")
	}
}
