package openai

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// pngBytes is the start of a PNG file: enough for the wire checks, which
// look at the media type and the base64 only.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

const pngDataURL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="

// imageHistory is a conversation with an image in the user message and one
// returned by a tool.
func imageHistory() []llm.Message {
	user := llm.NewMessage(llm.RoleUser, llm.TextPart("What does this show?"), llm.ImagePart("image/png", pngBytes))
	calls := []llm.ToolCall{
		{ID: "call_img", Name: "read_file", Args: json.RawMessage(`{"path":"chart.png"}`)},
		{ID: "call_txt", Name: "read_file", Args: json.RawMessage(`{"path":"notes.txt"}`)},
	}
	img := llm.ToolResult(calls[0], "", false)
	img.SetParts([]llm.Part{llm.TextPart("chart.png (13 B)"), {Type: llm.PartImage, Image: &llm.Image{MediaType: "image/jpeg", URL: "https://example.com/c.jpg"}}, llm.ImagePart("image/png", pngBytes)})
	return []llm.Message{user, llm.Assistant("", calls...), img, llm.ToolResult(calls[1], "notes", false)}
}

func TestImagesOnChatCompletions(t *testing.T) {
	if base64.StdEncoding.EncodeToString(pngBytes) != strings.TrimPrefix(pngDataURL, "data:image/png;base64,") {
		t.Fatal("the test's data URL does not match its bytes")
	}
	for _, stream := range []bool{false, true} {
		srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("A chart.")))
		m, _ := newModel(t, srv, Config{Model: "gpt-4.1"})
		resp, _, err := call(testCtx(t), m, &llm.Request{Messages: imageHistory(), Tools: []llm.ToolSpec{readFileTool}}, stream)
		if err != nil || resp.Message.Content != "A chart." {
			t.Fatalf("%v %+v", err, resp)
		}
		msgs := srv.Requests()[0].Messages
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.Role)
		}
		// The tool results stay together; the images follow them.
		if got := strings.Join(roles, " "); got != "user assistant tool tool user" {
			t.Fatalf("roles %s", got)
		}
		if got := msgs[0].Images(); len(got) != 1 || got[0] != pngDataURL || msgs[0].Text() != "What does this show?" {
			t.Errorf("user message: %s", msgs[0].Content)
		}
		var s string
		if json.Unmarshal(msgs[2].Content, &s) != nil || s != "chart.png (13 B)\n\n[2 images: sent in the next user message]" {
			t.Errorf("tool message content %s", msgs[2].Content)
		}
		follow := msgs[4]
		if got := follow.Images(); len(got) != 2 || got[0] != "https://example.com/c.jpg" || got[1] != pngDataURL {
			t.Errorf("images after the tool messages: %s", follow.Content)
		}
		if !strings.Contains(follow.Text(), "call_img") || !strings.Contains(follow.Text(), "read_file") {
			t.Errorf("the image message does not say which call it belongs to: %q", follow.Text())
		}
	}
}

func TestImagesOnResponses(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("A chart.")))
		m, _ := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
		resp, _, err := call(testCtx(t), m, &llm.Request{Messages: imageHistory(), Tools: []llm.ToolSpec{readFileTool}}, stream)
		if err != nil || resp.Message.Content != "A chart." {
			t.Fatalf("%v %+v", err, resp)
		}
		items := srv.Requests()[0].Responses.Items
		if len(items) != 5 {
			t.Fatalf("%d items", len(items))
		}
		user := openaitest.Parts(items[0].Content)
		if len(user) != 2 || user[0].Type != "input_text" || user[1].Type != "input_image" || user[1].ImageURL != pngDataURL {
			t.Errorf("user content %s", items[0].Content)
		}
		out := openaitest.Parts(items[3].Output)
		if items[3].CallID != "call_img" || len(out) != 3 || out[0].Text != "chart.png (13 B)" ||
			out[1].ImageURL != "https://example.com/c.jpg" || out[2].Type != "input_image" || out[2].ImageURL != pngDataURL {
			t.Errorf("tool output %s", items[3].Output)
		}
		var s string
		if json.Unmarshal(items[4].Output, &s) != nil || s != "notes" {
			t.Errorf("text tool output %s", items[4].Output)
		}
	}
}

func TestBadImagesAreRefusedBeforeSending(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		img  llm.Image
		want string
	}{
		{"unsupported type", Config{Model: "gpt-5"}, llm.Image{MediaType: "image/bmp", Data: pngBytes}, `image type "image/bmp"`},
		{"no data", Config{Model: "gpt-5"}, llm.Image{MediaType: "image/png"}, "neither data nor URL"},
		{"file URL", Config{Model: "gpt-5"}, llm.Image{MediaType: "image/png", URL: "file:///etc/passwd"}, "neither http(s) nor a data URL"},
		{"text-only model", Config{Model: "gpt-3.5-turbo"}, llm.Image{MediaType: "image/png", Data: pngBytes}, "reads no images"},
		{"NoImages", Config{Model: "llava", NoImages: true}, llm.Image{MediaType: "image/png", Data: pngBytes}, "reads no images"},
	}
	for _, tc := range cases {
		for _, api := range []string{APIChat, APIResponses} {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				srv := openaitest.NewServer(t, openaitest.Sequence())
				tc.cfg.API = api
				m, _ := newModel(t, srv, tc.cfg)
				img := tc.img
				req := &llm.Request{Messages: []llm.Message{llm.NewMessage(llm.RoleUser, llm.TextPart("look"), llm.Part{Type: llm.PartImage, Image: &img})}}
				_, err := m.Generate(testCtx(t), req)
				if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "message 0") {
					t.Fatalf("error %v, want a bad request saying %q", err, tc.want)
				}
				if srv.Count() != 0 {
					t.Fatal("the request was sent")
				}
			})
		}
	}
}

func TestFakeRefusesMalformedImages(t *testing.T) {
	// The fake checks images as the API does, so the tests above prove the
	// adapter's images are well formed.
	for _, tc := range []struct{ url, want string }{
		{pngDataURL, ""},
		{"https://example.com/a.png", ""},
		{"data:image/bmp;base64,AAAA", "unsupported MIME type 'image/bmp'"},
		{"data:image/png;base64,%%%", "does not decode"},
		{"data:image/png,rawbytes", "base64-encoded data URL"},
		{"ftp://x/a.png", "base64-encoded data URL"},
	} {
		err := openaitest.CheckImageURL(tc.url)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.url, err, tc.want)
		}
	}
}

func TestRefusal(t *testing.T) {
	for _, api := range []string{APIChat, APIResponses} {
		for _, stream := range []bool{false, true} {
			t.Run(api+map[bool]string{false: "/generate", true: "/stream"}[stream], func(t *testing.T) {
				srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{Refusal: "I can't help with that request."}))
				m, _ := newModel(t, srv, Config{Model: "gpt-5", API: api})
				resp, _, err := call(testCtx(t), m, userReq("something bad"), stream)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StopReason != llm.StopRefusal || resp.Refusal != "I can't help with that request." || resp.Message.Content != "" {
					t.Fatalf("%+v", resp)
				}
			})
		}
	}
}

func TestUsage(t *testing.T) {
	full := &openaitest.Usage{Prompt: 1000, Completion: 300, Cached: 600, CacheWrite: 50, Reasoning: 200}
	cases := []struct {
		api   string
		reply openaitest.Reply
		want  llm.Usage
	}{
		{APIChat, openaitest.Reply{Content: "x", Usage: full}, llm.Usage{InputTokens: 1000, OutputTokens: 300, CachedInputTokens: 600, CacheWriteTokens: 50, ReasoningTokens: 200}},
		{APIResponses, openaitest.Reply{Content: "x", Usage: full}, llm.Usage{InputTokens: 1000, OutputTokens: 300, CachedInputTokens: 600, ReasoningTokens: 200}},
		{APIChat, openaitest.Reply{Content: "x", NoUsage: true}, llm.Usage{Unknown: true}},
		{APIResponses, openaitest.Reply{Content: "x", NoUsage: true}, llm.Usage{Unknown: true}},
		{APIChat, openaitest.Reply{Content: "x", Usage: &openaitest.Usage{}}, llm.Usage{}},
	}
	for i, tc := range cases {
		for _, stream := range []bool{false, true} {
			srv := openaitest.NewServer(t, openaitest.Sequence(tc.reply))
			m, _ := newModel(t, srv, Config{Model: "gpt-5", API: tc.api})
			resp, _, err := call(testCtx(t), m, userReq("hi"), stream)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != tc.want {
				t.Errorf("case %d (%s, stream %v): usage %+v, want %+v", i, tc.api, stream, resp.Usage, tc.want)
			}
		}
	}
}

func TestResponsesStopReasonsAndStructuredOutput(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(
		openaitest.Reply{Content: "cut", FinishReason: "length"},
		openaitest.Reply{Content: "cut", FinishReason: "length"},
		openaitest.Text(`{"a":1}`),
	))
	m, _ := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
	for _, stream := range []bool{false, true} {
		resp, _, err := call(testCtx(t), m, userReq("hi"), stream)
		if err != nil || resp.StopReason != llm.StopMaxTokens || resp.Message.Content != "cut" {
			t.Fatalf("stream %v: %v %+v", stream, err, resp)
		}
	}
	req := userReq("hi")
	req.System = "Be brief."
	req.Settings.MaxTokens = 77
	req.Response = &llm.ResponseSchema{Name: "out", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`)}
	req.Tools = []llm.ToolSpec{readFileTool}
	req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "read_file"}
	if _, err := m.Generate(testCtx(t), req); err != nil {
		t.Fatal(err)
	}
	rb := srv.Requests()[2].Responses
	var text struct {
		Format struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	}
	if err := json.Unmarshal(rb.Text, &text); err != nil || text.Format.Type != "json_schema" || text.Format.Name != "out" || !text.Format.Strict ||
		!strings.Contains(string(text.Format.Schema), `"additionalProperties":false`) {
		t.Errorf("text %s", rb.Text)
	}
	if rb.Instructions != "Be brief." || rb.MaxOutputTokens == nil || *rb.MaxOutputTokens != 77 || string(rb.ToolChoice) != `{"name":"read_file","type":"function"}` {
		t.Errorf("body %s", srv.Requests()[2].Body)
	}
}

func TestResponsesStreamCut(t *testing.T) {
	// Events of Text("hello") with ChunkSize 2: created, in_progress,
	// item added, part added, 3 text deltas, part done, item done, completed.
	cases := []struct {
		name     string
		cutAfter int
		clean    bool
		retried  bool
	}{
		{"before any output", 3, false, true},
		{"before any output, body ended", 4, true, true},
		{"after text", 6, false, false},
		{"before the terminal event", 9, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Sequence(
				openaitest.Reply{Content: "hello", ChunkSize: 2, CutAfter: tc.cutAfter, CleanCut: tc.clean},
				openaitest.Reply{Content: "hello", ChunkSize: 2},
			))
			m, _ := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
			resp, err := llm.Collect(m.Stream(testCtx(t), userReq("hi")))
			if tc.retried {
				if err != nil || resp.Message.Content != "hello" || srv.Count() != 2 {
					t.Fatalf("%v %+v after %d requests", err, resp, srv.Count())
				}
				return
			}
			if !errors.Is(err, llm.ErrNetwork) || srv.Count() != 1 {
				t.Fatalf("error %v after %d requests; want a network error and no retry", err, srv.Count())
			}
		})
	}
}

func TestResponsesErrorStatus(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.RateLimited("0"), openaitest.Text("ok"),
		openaitest.BadRequest("Invalid 'input[0]': nope."), openaitest.BadRequest("Invalid 'input[0]': nope.")))
	m, sl := newModel(t, srv, Config{Model: "gpt-5", API: APIResponses})
	resp, err := m.Generate(testCtx(t), userReq("hi"))
	if err != nil || resp.Message.Content != "ok" || len(sl.Waits()) != 1 {
		t.Fatalf("%v %+v waits %v", err, resp, sl.Waits())
	}
	for _, stream := range []bool{false, true} {
		_, _, err = call(testCtx(t), m, userReq("hi"), stream)
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.Kind != llm.ErrKindBadRequest || ae.StatusCode != 400 || ae.Message != "Invalid 'input[0]': nope." {
			t.Fatalf("stream %v: %v", stream, err)
		}
	}
}
