package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	at "github.com/deepagents-go/deepagents/providers/anthropic/anthropictest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

// byteReader hands out fuzz bytes, then zeros.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) next() int {
	if r.i >= len(r.b) {
		r.i++
		return 0
	}
	r.i++
	return int(r.b[r.i-1])
}

func (r *byteReader) more() bool { return r.i < len(r.b) }

func (r *byteReader) pick(options []string) string { return options[r.next()%len(options)] }

// raw takes up to n bytes verbatim.
func (r *byteReader) raw(n int) []byte {
	end := min(r.i+n, len(r.b))
	if r.i >= end {
		return nil
	}
	out := r.b[r.i:end]
	r.i = end
	return out
}

var (
	fuzzIDs    = []string{"a", "b", "dup", "", "x y/z", "toolu_01", "ïd", "a"}
	fuzzNames  = []string{"read_file", "ls", "", "task", "write_file"}
	fuzzTexts  = []string{"", " \n", "hello", "multi\nline", "trailing  ", "ünïcödé", "Tool result of ls"}
	fuzzArgs   = []string{`{}`, `{"path":"/a"}`, `not json`, `[1]`, ``, `{"a":`, ` {"x": 1} `, `null`}
	fuzzExtras = []string{
		`{"content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text"},{"type":"tool_use","id":"a"}]}`,
		`{"content":[{"type":"redacted_thinking","data":"d"},{"type":"thinking","thinking":"u"}]}`,
		`{"content":[{"type":"tool_use","id":"zz"},{"type":"thinking","thinking":"","signature":"s2"}]}`,
		`{"content":7}`, `null`, `[]`,
	}
)

// fuzzPNG is a valid 1x1 PNG.
var fuzzPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

// fuzzImages are image parts of every shape; the first two reach the wire
// as image blocks, the others become notes.
var fuzzImages = []*llm.Image{
	{MediaType: "image/png", Data: fuzzPNG},
	{URL: "https://example.com/a.png"},
	{MediaType: "image/png", Data: []byte("not an image")},
	{MediaType: "image/bmp"},
	{URL: "ftp://example.com/a.png"},
	nil,
}

// fuzzReasoning are reasoning parts of every origin; the FOREIGN ones must
// never reach the wire.
var fuzzReasoning = []llm.Part{
	llm.ReasoningPart("mine", &llm.Reasoning{Provider: ProviderName, Signature: "sig"}),
	llm.ReasoningPart("", &llm.Reasoning{Provider: ProviderName, Encrypted: "redacted"}),
	llm.ReasoningPart("after a call", &llm.Reasoning{Provider: ProviderName, Signature: "sig2", Extra: json.RawMessage(`{"calls_before":1}`)}),
	llm.ReasoningPart("odd extra", &llm.Reasoning{Provider: ProviderName, Signature: "sig3", Extra: json.RawMessage(`{"calls_before":-4}`)}),
	llm.ReasoningPart("unsigned", &llm.Reasoning{Provider: ProviderName}),
	llm.ReasoningPart("FOREIGN openai", &llm.Reasoning{Provider: "openai", Encrypted: "FOREIGN-enc"}),
	llm.ReasoningPart("FOREIGN gemini", &llm.Reasoning{Provider: "gemini", Signature: "FOREIGN-sig"}),
	llm.ReasoningPart("FOREIGN readable only", nil),
}

func imageOK(img *llm.Image) bool {
	return img != nil && ((len(img.Data) > 0 && bytes.HasPrefix(img.Data, []byte("\x89PNG"))) || strings.HasPrefix(img.URL, "https://"))
}

// fuzzMessages decodes a conversation from fuzz bytes: each byte picks a
// kind of message, the following ones its details. It produces every shape
// the converter must survive: tool results without calls or out of order,
// calls without results, duplicate and invalid ids, broken arguments,
// system messages anywhere, empty text, odd Extra data.
func fuzzMessages(data []byte) []llm.Message {
	r := &byteReader{b: data}
	var msgs []llm.Message
	for r.more() && len(msgs) < 64 {
		switch r.next() % 12 {
		case 0, 1:
			msgs = append(msgs, llm.User(r.pick(fuzzTexts)))
		case 2:
			msgs = append(msgs, llm.Assistant(r.pick(fuzzTexts)))
		case 3, 4:
			m := llm.Assistant(r.pick(fuzzTexts))
			for n := r.next() % 4; n >= 0; n-- {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: r.pick(fuzzIDs), Name: r.pick(fuzzNames), Args: json.RawMessage(r.pick(fuzzArgs))})
			}
			msgs = append(msgs, m)
		case 5, 6:
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: r.pick(fuzzIDs), Name: r.pick(fuzzNames),
				Content: r.pick(fuzzTexts), IsError: r.next()%2 == 0})
		case 7:
			msgs = append(msgs, llm.System(r.pick(fuzzTexts)))
		case 8:
			m := llm.Assistant(r.pick(fuzzTexts))
			if r.next()%2 == 0 {
				m.ToolCalls = []llm.ToolCall{{ID: r.pick(fuzzIDs), Name: r.pick(fuzzNames), Args: json.RawMessage(`{}`)}}
			}
			extra := []byte(r.pick(fuzzExtras))
			if r.next()%3 == 0 {
				extra = r.raw(r.next() % 32)
			}
			m.Extra = map[string]json.RawMessage{ProviderName: extra}
			msgs = append(msgs, m)
		case 9:
			var parts []llm.Part
			for n := r.next() % 5; n >= 0; n-- {
				if r.next()%3 == 0 {
					parts = append(parts, llm.TextPart(r.pick(fuzzTexts)))
				} else {
					parts = append(parts, fuzzReasoning[r.next()%len(fuzzReasoning)])
				}
			}
			m := llm.NewMessage(llm.RoleAssistant, parts...)
			for n := r.next() % 3; n > 0; n-- {
				m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: r.pick(fuzzIDs), Name: r.pick(fuzzNames), Args: json.RawMessage(`{}`)})
			}
			if r.next()%4 == 0 {
				m.Content = r.pick(fuzzTexts) // edited after the parts were set
			}
			msgs = append(msgs, m)
		case 10, 11:
			var parts []llm.Part
			for n := r.next() % 4; n >= 0; n-- {
				if r.next()%2 == 0 {
					parts = append(parts, llm.TextPart(r.pick(fuzzTexts)))
				} else {
					parts = append(parts, llm.Part{Type: llm.PartImage, Image: fuzzImages[r.next()%len(fuzzImages)]})
				}
			}
			m := llm.NewMessage(llm.RoleUser, parts...)
			if r.next()%2 == 0 {
				m.Role, m.ToolCallID, m.Name, m.IsError = llm.RoleTool, r.pick(fuzzIDs), r.pick(fuzzNames), r.next()%2 == 0
			}
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// FuzzConvertMessages checks that any conversation converts without panic
// into a request the API accepts (at.Validate: alternation, tool_result
// pairing and ordering, no blank text, valid unique ids, at most four cache
// breakpoints, valid images, a tool loop that starts with thinking when
// thinking is on), that no user text, tool result or sendable image is
// lost, that a system prompt tail is the last system block, and that no
// other provider's reasoning reaches the wire. Inputs whose length is a
// multiple of three are sent with thinking on; the length modulo four picks
// the system prompt's shape.
func FuzzConvertMessages(f *testing.F) {
	f.Add([]byte{0, 2, 3, 1, 0, 0, 0, 5, 0, 0, 0, 1, 0})
	f.Add([]byte{3, 2, 2, 0, 0, 1, 1, 1, 5, 1, 0, 0, 5, 0, 0, 0, 0, 2})
	f.Add([]byte{2, 2, 7, 2, 5, 3, 0, 0, 8, 2, 0, 0, 0, 0})
	m, err := New(Config{Model: "claude-fuzz", APIKey: "k"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := fuzzMessages(data)
		req := &llm.Request{System: "sys", Messages: msgs, Tools: specs}
		// The system prompt's shape varies too: static, static and tail,
		// tail only, none.
		switch len(data) % 4 {
		case 1:
			req.SystemTail = "<current_todos>\n[ ] tail item\n</current_todos>"
		case 2:
			req.System, req.SystemTail = "", "<current_todos>\n[ ] tail item\n</current_todos>"
		case 3:
			req.System = ""
		}
		if len(data)%3 == 0 {
			req.Settings.Reasoning = &llm.ReasoningConfig{Effort: llm.EffortLow}
		}
		b, err := m.build(req)
		if err != nil {
			var ae *llm.APIError
			if !errors.As(err, &ae) || !strings.Contains(ae.Message, "no user or assistant messages") {
				t.Fatalf("build failed: %v", err)
			}
			return
		}
		raw, err := json.Marshal(b.params)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var wire at.MessagesRequest
		if err := json.Unmarshal(raw, &wire); err != nil {
			t.Fatalf("the request does not decode: %v\n%s", err, raw)
		}
		if err := at.Validate(&wire); err != nil {
			t.Fatalf("the API would reject it: %v\nmessages: %+v\nrequest: %s", err, msgs, raw)
		}
		var texts []string
		for _, w := range wire.Messages {
			for _, blk := range w.Content {
				texts = append(texts, blk.Text, blk.Content.Text())
			}
		}
		if req.SystemTail != "" {
			if last := wire.System[len(wire.System)-1]; last.Text != req.SystemTail {
				t.Fatalf("the tail is not the last system block: %+v", wire.System)
			}
		}
		all := strings.Join(texts, "\x00") + "\x00" + wire.SystemText()
		images := 0
		for _, msg := range msgs {
			if msg.Role == llm.RoleAssistant {
				continue
			}
			for _, p := range msg.AllParts() {
				if p.Type == llm.PartText && strings.TrimSpace(p.Text) != "" && !strings.Contains(all, strings.TrimSpace(p.Text)) {
					t.Fatalf("%s message text %q was lost", msg.Role, p.Text)
				}
				if p.Type == llm.PartImage && imageOK(p.Image) {
					images++
				}
			}
		}
		if got := len(wire.Images()); got != images {
			t.Fatalf("%d images on the wire, want %d\n%s", got, images, raw)
		}
		if bytes.Contains(raw, []byte("FOREIGN")) {
			t.Fatalf("another provider's reasoning reached the wire: %s", raw)
		}
	})
}

// bodyTransport answers every request with a fixed event-stream body.
type bodyTransport struct{ body []byte }

func (bt bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    io.NopCloser(bytes.NewReader(bt.body)),
		Request: req,
	}, nil
}

// FuzzStreamEvents feeds arbitrary event streams to Stream: it must never
// panic, and must end either with exactly one EventDone as the last event
// or with an error and no EventDone; tool-call deltas must follow the start
// of their call.
func FuzzStreamEvents(f *testing.F) {
	// Seeds: real streams rendered by the fake server.
	srv := at.NewServer(at.Sequence(
		at.Reply{Text: "Hello, world.", Chunk: 3},
		at.Reply{Text: "calling", ToolCalls: threeCalls, Chunk: 5},
		thinkingReply(),
		at.Reply{Text: "cut", Fault: &at.Fault{After: 4, Error: &at.Error{Type: "overloaded_error", Message: "Overloaded"}}},
		at.Reply{Text: "No.", Refusal: &at.Refusal{Category: "cyber", Explanation: "Not this."}},
		at.Reply{Text: "no usage", NoUsage: true},
		at.Reply{Thinking: []at.Thinking{{Text: "hmm"}}, Text: "ok", Usage: &at.Usage{InputTokens: 3, OutputTokens: 9, ThinkingTokens: 4, CacheReadInputTokens: 2}},
	), at.Lenient())
	for range 7 {
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json",
			strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			f.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f.Add(body)
	}
	srv.Close()
	f.Add([]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n"))

	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := New(Config{Model: "claude-fuzz", APIKey: "k", BaseURL: "http://fuzz.invalid",
			HTTPClient: &http.Client{Transport: bodyTransport{body}}, Retry: retry.Policy{MaxRetries: -1}})
		if err != nil {
			t.Fatal(err)
		}
		started := map[int]bool{}
		var evs []llm.StreamEvent
		var serr error
		for ev, err := range m.Stream(context.Background(), prompt("hi")) {
			if err != nil {
				serr = err
				break
			}
			evs = append(evs, ev)
			switch ev.Type {
			case llm.EventToolCallStart:
				if started[ev.Index] || ev.Index != len(started) {
					t.Fatalf("tool-call start %d out of order (%d started)", ev.Index, len(started))
				}
				started[ev.Index] = true
			case llm.EventToolCallDelta:
				if !started[ev.Index] {
					t.Fatalf("delta for call %d before its start", ev.Index)
				}
			}
		}
		dones := 0
		for _, ev := range evs {
			if ev.Type == llm.EventDone {
				dones++
			}
		}
		switch {
		case serr != nil && dones != 0:
			t.Fatalf("error %v after EventDone", serr)
		case serr == nil && (dones != 1 || evs[len(evs)-1].Type != llm.EventDone || evs[len(evs)-1].Response == nil):
			t.Fatalf("stream ended without error and with %d EventDone", dones)
		case serr == nil:
			resp := evs[len(evs)-1].Response
			if (resp.StopReason == llm.StopRefusal) != (resp.Refusal != "") {
				t.Fatalf("stop reason %s with refusal %q", resp.StopReason, resp.Refusal)
			}
			if u := resp.Usage; u.Unknown && (u.InputTokens != 0 || u.OutputTokens != 0) || u.ReasoningTokens < 0 {
				t.Fatalf("usage %+v", u)
			}
		}
		if serr != nil {
			var ae *llm.APIError
			if !errors.As(serr, &ae) {
				t.Fatalf("error is not an *llm.APIError: %v", serr)
			}
		}
	})
}
