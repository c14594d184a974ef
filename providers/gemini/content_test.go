package gemini

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
)

// A 1x1 PNG and the start of a JPEG: what read_file would hand over.
var (
	pngBytes  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
)

func partKinds(ps []geminitest.Part) string {
	var out []string
	for _, p := range ps {
		switch {
		case p.FunctionResponse != nil:
			s := "response " + p.FunctionResponse.Name
			for _, fp := range p.FunctionResponse.Parts {
				if fp.InlineData != nil {
					s += fmt.Sprintf(" +inline %s %s", fp.InlineData.MIMEType, fp.InlineData.Data)
				} else if fp.FileData != nil {
					s += fmt.Sprintf(" +file %s %s", fp.FileData.MIMEType, fp.FileData.FileURI)
				}
			}
			out = append(out, s)
		case p.InlineData != nil:
			out = append(out, fmt.Sprintf("inline %s %s", p.InlineData.MIMEType, p.InlineData.Data))
		case p.FileData != nil:
			out = append(out, fmt.Sprintf("file %s %s", p.FileData.MIMEType, p.FileData.FileURI))
		default:
			out = append(out, fmt.Sprintf("text %q", p.TextOf()))
		}
	}
	return strings.Join(out, " | ")
}

// TestImagesReachTheWire: images of a user message and of a tool result
// (as read_file returns one) go as inlineData (bytes) or fileData (URL): in
// the function response on Gemini 3, in a labelled user part after the
// responses on 2.5; a type Gemini does not read becomes a note.
func TestImagesReachTheWire(t *testing.T) {
	pngB64, jpegB64 := base64.StdEncoding.EncodeToString(pngBytes), base64.StdEncoding.EncodeToString(jpegBytes)
	user := llm.NewMessage(llm.RoleUser,
		llm.TextPart("What is in these?"),
		llm.ImagePart("image/png", pngBytes),
		llm.Part{Type: llm.PartImage, Image: &llm.Image{MediaType: "image/jpeg", URL: "https://example.com/cat.jpg"}},
		llm.ImagePart("image/gif", []byte("GIF89a")))
	ask := llm.Assistant("", call("c1", "read_file", `{"path":"/shot.png"}`), call("c2", "ls", `{}`))
	result := llm.NewMessage(llm.RoleTool, llm.TextPart("Image /shot.png (PNG, 26 bytes)"), llm.ImagePart("image/png", pngBytes), llm.ImagePart("image/jpeg", jpegBytes))
	result.ToolCallID, result.Name = "c1", "read_file"
	msgs := []llm.Message{user, ask, result, llm.ToolResult(ask.ToolCalls[1], "shot.png", false)}

	wantUser := `text "What is in these?" | inline image/png ` + pngB64 + ` | file image/jpeg https://example.com/cat.jpg | ` +
		`text "[An image of type image/gif was left out: Gemini reads PNG, JPEG, WebP, HEIC and HEIF images only.]"`
	for _, tc := range []struct {
		model, wantResults string
	}{
		{"gemini-3-pro-preview", "response read_file +inline image/png " + pngB64 + " +inline image/jpeg " + jpegB64 + " | response ls"},
		{"gemini-2.5-flash", "response read_file | response ls | " +
			`text "[Images from the result of read_file (call c1)]" | inline image/png ` + pngB64 + " | inline image/jpeg " + jpegB64},
	} {
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("A tiny picture.")))
		m, _ := newTestModel(t, srv, func(c *Config) { c.Model = tc.model })
		if _, err := m.Generate(context.Background(), &llm.Request{Messages: msgs, Tools: testTools}); err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		assertValid(t, srv)
		c := lastRequest(t, srv).Body.Contents
		if len(c) != 3 {
			t.Fatalf("%s: contents = %s", tc.model, mustJSON(t, c))
		}
		if got := partKinds(c[0].Parts); got != wantUser {
			t.Errorf("%s: user turn = %s\nwant %s", tc.model, got, wantUser)
		}
		if got := partKinds(c[2].Parts); got != tc.wantResults {
			t.Errorf("%s: results = %s\nwant %s", tc.model, got, tc.wantResults)
		}
		if out := c[2].Parts[0].FunctionResponse.Response["output"]; out != "Image /shot.png (PNG, 26 bytes)" {
			t.Errorf("%s: output = %v", tc.model, out)
		}
	}
}

// TestFakeRejectsMalformedImages: the fake server checks image parts the way
// the API does, so the test above means something.
func TestFakeRejectsMalformedImages(t *testing.T) {
	for _, tc := range []struct {
		name, part, want string
	}{
		{"bad base64", `{"inlineData": {"mimeType": "image/png", "data": "not base64!"}}`, "not valid base64"},
		{"no data", `{"inlineData": {"mimeType": "image/png", "data": ""}}`, "data is empty"},
		{"bad type", `{"inlineData": {"mimeType": "image/gif", "data": "R0lG"}}`, "unsupported MIME type: image/gif"},
		{"not a type", `{"inlineData": {"mimeType": "png", "data": "R0lG"}}`, "is not a MIME type"},
		{"no uri", `{"fileData": {"mimeType": "image/png", "fileUri": ""}}`, "fileUri is empty"},
	} {
		b, err := geminitest.DecodeRequest([]byte(`{"contents": [{"role": "user", "parts": [` + tc.part + `]}]}`))
		if err == nil {
			err = geminitest.Validate(b)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestUsage: thought tokens are output and reasoning tokens, cached tokens
// are reported, tool-use prompt tokens are input; a response without usage
// metadata is marked unknown rather than zero, streamed or not.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply geminitest.Reply
		want  llm.Usage
	}{
		{"thinking and cache", geminitest.Reply{Thought: "hm", Text: "ok", Usage: &geminitest.UsageMetadata{
			PromptTokenCount: 100, CachedContentTokenCount: 60, CandidatesTokenCount: 7, ThoughtsTokenCount: 30, ToolUsePromptTokenCount: 5}},
			llm.Usage{InputTokens: 105, CachedInputTokens: 60, OutputTokens: 37, ReasoningTokens: 30}},
		{"no usage", geminitest.Reply{Text: "ok", NoUsage: true}, llm.Usage{Unknown: true}},
		{"refusal without usage", geminitest.Reply{BlockReason: "SAFETY", NoUsage: true}, llm.Usage{Unknown: true}},
	} {
		for _, stream := range []bool{false, true} {
			srv := geminitest.NewServer(t, geminitest.Sequence(tc.reply))
			m, _ := newTestModel(t, srv)
			resp, _, err := generate(t, m, stream, &llm.Request{Messages: []llm.Message{llm.User("hi")}})
			if err != nil {
				t.Fatalf("%s stream=%v: %v", tc.name, stream, err)
			}
			if resp.Usage != tc.want {
				t.Errorf("%s stream=%v: usage = %+v, want %+v", tc.name, stream, resp.Usage, tc.want)
			}
		}
	}
}

// TestRefusalIsNotAnEmptyAnswer: an answer withheld midway ends with the
// refusal sentence and StopRefusal, streamed or not; the text that came
// before stays.
func TestRefusalIsNotAnEmptyAnswer(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Reply{Text: "Here is how to", FinishReason: "PROHIBITED_CONTENT"}))
		m, _ := newTestModel(t, srv)
		resp, _, err := generate(t, m, stream, &llm.Request{Messages: []llm.Message{llm.User("something bad")}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StopReason != "refusal" || resp.Message.Content != "Here is how to" || resp.Refusal != "Gemini withheld the answer (finish reason PROHIBITED_CONTENT)." {
			t.Errorf("stream=%v: stop %q refusal %q", stream, resp.StopReason, resp.Refusal)
		}
	}
}
