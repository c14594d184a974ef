package deepagents_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/anthropic"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/providers/gemini"
	gt "github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	"github.com/deepagents-go/deepagents/providers/openai"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/vfs"
)

// An image that read_file finds in the agent's files reaches each provider's
// wire in that provider's own image format, inside (or right after) the
// tool result that carries it.

const imageSeen = "A red square."

func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := range 4 {
		for y := range 4 {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readImage runs an agent whose model reads /chart.png and then answers, and
// returns the PNG it put in the files.
func readImage(t *testing.T, model llm.Model, stream bool) []byte {
	t.Helper()
	pic := tinyPNG(t)
	a, err := deepagents.New(deepagents.Config{Model: model, Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	in := agent.Prompt("What does /chart.png show?")
	in.Files = map[string]vfs.File{"/chart.png": {Content: string(pic)}}
	res, err := a.Invoke(t.Context(), in)
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if res.FinalText() != imageSeen {
		t.Fatalf("final answer %q", res.FinalText())
	}
	tool := res.State.Messages[2]
	if tool.Role != llm.RoleTool || !tool.HasParts(llm.PartImage) {
		t.Fatalf("the read_file result carries no image: %+v", tool)
	}
	return pic
}

// wireHas fails unless the request body holds every fragment.
func wireHas(t *testing.T, what string, body []byte, fragments ...string) {
	t.Helper()
	compact := strings.NewReplacer(" ", "", "\n", "").Replace(string(body))
	for _, f := range fragments {
		if !strings.Contains(compact, f) {
			t.Errorf("%s: the request lacks %s", what, f)
		}
	}
}

func TestImageFromReadFileOnTheAnthropicWire(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := at.New(t, at.Conversation(
			at.Calls(at.Call("read_file", map[string]string{"file_path": "/chart.png"})),
			at.Text(imageSeen),
		))
		m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		pic := readImage(t, m, stream)
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		wireHas(t, "anthropic", reqs[1].Raw, `"type":"tool_result"`, `"type":"image"`,
			`"media_type":"image/png"`, `"data":"`+base64.StdEncoding.EncodeToString(pic)+`"`)
	}
}

func TestImageFromReadFileOnTheGeminiWire(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := gt.NewServer(t, gt.Turns(
			gt.Calls(gt.Call{Name: "read_file", Args: map[string]any{"file_path": "/chart.png"}}),
			gt.Text(imageSeen),
		))
		m, err := gemini.New(t.Context(), gemini.Config{Model: "gemini-2.5-flash", APIKey: "k", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		pic := readImage(t, m, stream)
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		wireHas(t, "gemini", reqs[1].Raw, `"functionResponse"`, `"inlineData"`,
			`"mimeType":"image/png"`, `"data":"`+base64.StdEncoding.EncodeToString(pic)+`"`)
	}
}

func TestImageFromReadFileOnTheOpenAIWire(t *testing.T) {
	for _, api := range []string{openai.APIChat, openai.APIResponses} {
		for _, stream := range []bool{false, true} {
			srv := ot.NewServer(t, ot.Script(ot.Conversation{Replies: []ot.Reply{
				ot.Tools(ot.Call{Name: "read_file", Args: `{"file_path":"/chart.png"}`}),
				ot.Text(imageSeen),
			}}))
			m, err := openai.New(openai.Config{Model: "gpt-4.1", APIKey: "k", BaseURL: srv.URL, API: api})
			if err != nil {
				t.Fatal(err)
			}
			pic := readImage(t, m, stream)
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%s: %d requests", api, len(reqs))
			}
			dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)
			if api == openai.APIChat {
				wireHas(t, "chat", reqs[1].Body, `"role":"tool"`, `"type":"image_url"`, `"url":"`+dataURL+`"`)
			} else {
				wireHas(t, "responses", reqs[1].Body, `"type":"function_call_output"`, `"type":"input_image"`, `"image_url":"`+dataURL+`"`)
			}
		}
	}
}
