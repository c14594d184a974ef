package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
)

// checkContents asserts what every converted conversation must satisfy,
// whatever the history: known roles, no empty turns, alternating roles, and
// every model turn with calls answered by the next user turn with exactly
// one response per call, same names, same order.
func checkContents(contents []*genai.Content) error {
	count := func(c *genai.Content) (calls []string, responses []string) {
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.Name)
			}
			if p.FunctionResponse != nil {
				responses = append(responses, p.FunctionResponse.Name)
			}
		}
		return
	}
	for i, c := range contents {
		if c == nil || (c.Role != genai.RoleUser && c.Role != genai.RoleModel) {
			return fmt.Errorf("content %d has role %v", i, c)
		}
		if len(c.Parts) == 0 {
			return fmt.Errorf("content %d is empty", i)
		}
		for j, p := range c.Parts {
			if p == nil {
				return fmt.Errorf("content %d part %d is nil", i, j)
			}
		}
		if i > 0 && contents[i-1].Role == c.Role {
			return fmt.Errorf("contents %d and %d are both %s", i-1, i, c.Role)
		}
		calls, responses := count(c)
		if c.Role == genai.RoleModel && len(responses) > 0 {
			return fmt.Errorf("model content %d holds function responses", i)
		}
		if c.Role == genai.RoleUser && len(calls) > 0 {
			return fmt.Errorf("user content %d holds function calls", i)
		}
		if len(responses) > 0 {
			if i == 0 {
				return fmt.Errorf("content 0 holds function responses")
			}
			prev, _ := count(contents[i-1])
			if strings.Join(prev, "\x00") != strings.Join(responses, "\x00") {
				return fmt.Errorf("content %d answers %q, the calls were %q", i, responses, prev)
			}
		}
		if len(calls) > 0 {
			if i+1 >= len(contents) {
				return fmt.Errorf("the calls of content %d are not answered", i)
			}
			if _, next := count(contents[i+1]); len(next) != len(calls) {
				return fmt.Errorf("content %d has %d calls, %d responses follow", i, len(calls), len(next))
			}
		}
	}
	return nil
}

var messageSeeds = []string{
	`[{"role":"user","content":"hi"}]`,
	`[{"role":"user","content":"a"},{"role":"assistant","content":"b","tool_calls":[{"id":"1","name":"ls","args":{}},{"id":"2","name":"cat","args":{"p":1}}]},{"role":"tool","tool_call_id":"2","name":"cat","content":"x"},{"role":"tool","tool_call_id":"1","name":"ls","content":"y","is_error":true},{"role":"user","content":"c"}]`,
	`[{"role":"tool","tool_call_id":"9","content":"orphan"},{"role":"assistant","tool_calls":[{"id":"","name":"a","args":"not json"}]},{"role":"assistant","tool_calls":[{"id":"x","name":"a","args":null}]},{"role":"system","content":"s"}]`,
	`[{"role":"user","content":"q"},{"role":"assistant","content":"t","tool_calls":[{"id":"fc1","name":"ls","args":{}}],"extra":{"gemini":{"parts":[{"text":"t"},{"functionCall":{"id":"fc1","name":"ls"},"thoughtSignature":"c2ln"}]}}},{"role":"tool","tool_call_id":"fc1","name":"ls","content":"r"}]`,
	`[{"role":"assistant","content":"","extra":{"gemini":{"parts":[{"thought":true,"text":"hm"},{"functionResponse":{"name":"x"}},null]}}},{"role":"assistant","content":"z","extra":{"gemini":"garbage"}}]`,
	// Gemini reasoning parts: a streamed thought cut in pieces, signed text,
	// a signed empty part, a signed call; then images in a user message and
	// a tool result.
	`[{"role":"user","content":"look","parts":[{"type":"text","text":"look"},{"type":"image","image":{"media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"image","image":{"media_type":"image/gif","url":"https://x/y.gif"}}]},` +
		`{"role":"assistant","content":"ab","parts":[{"type":"reasoning","text":"thinking hard","reasoning":{"provider":"gemini","signature":"dA==","extra":{"split":[9]}}},{"type":"text","text":"a"},{"type":"reasoning","reasoning":{"provider":"gemini","signature":"eA==","extra":{"on":"text"}}},{"type":"text","text":"b"},{"type":"reasoning","reasoning":{"provider":"gemini","signature":"eQ==","extra":{"on":"empty"}}},{"type":"reasoning","reasoning":{"provider":"gemini","signature":"eg==","extra":{"on":"call","call_id":"fc1","name":"read_file"}}}],"tool_calls":[{"id":"fc1","name":"read_file","args":{"path":"/a.png"}}],"extra":{"gemini":{"call_ids":["fc1"]}}},` +
		`{"role":"tool","tool_call_id":"fc1","name":"read_file","content":"an image","parts":[{"type":"text","text":"an image"},{"type":"image","image":{"media_type":"image/jpeg","data":"/9j/"}}]}]`,
	// Another provider's reasoning, and reasoning parts with bad data.
	`[{"role":"user","content":"q"},{"role":"assistant","content":"t","parts":[{"type":"reasoning","text":"claude thinks","reasoning":{"provider":"anthropic","signature":"c2ln"}},{"type":"reasoning","text":"shown only"},{"type":"text","text":"t"}],"tool_calls":[{"id":"toolu_1","name":"ls","args":{}}]},` +
		`{"role":"tool","tool_call_id":"toolu_1","name":"ls","content":"r"},{"role":"assistant","content":"x","parts":[{"type":"reasoning","text":"?","reasoning":{"provider":"gemini","signature":"!!","extra":{"split":[5,2]}}},{"type":"reasoning","reasoning":{"provider":"gemini","extra":"bad"}},{"type":"text","text":"y"}]}]`,
}

func FuzzToContents(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var msgs []llm.Message
		if json.Unmarshal(data, &msgs) != nil {
			return
		}
		// What may reach the wire as reasoning: Gemini's own signatures and
		// thought text (of old checkpoints too).
		sigs, thoughts := map[string]bool{}, map[string]bool{}
		for _, m := range msgs {
			for _, p := range upgradeLegacy(m).ReasoningFor(Provider) {
				sigs[string(decodeSignature(p.Reasoning.Signature))] = true
				thoughts[p.Text] = true
			}
		}
		for _, opt := range []wireOptions{{}, {imagesInResponses: true, signCalls: true}} {
			contents, _ := toContents(llm.Clone(msgs), opt)
			if err := checkContents(contents); err != nil {
				t.Fatalf("%v\nmessages: %s\ncontents: %s", err, data, mustJSON(t, contents))
			}
			// The SDK must be able to encode what we built.
			if _, err := json.Marshal(contents); err != nil {
				t.Fatal(err)
			}
			for _, c := range contents {
				firstCall := true
				for _, p := range c.Parts {
					if len(p.ThoughtSignature) > 0 && !sigs[string(p.ThoughtSignature)] && !bytes.Equal(p.ThoughtSignature, sentinelBytes) {
						t.Fatalf("signature %q was not Gemini's: %s", p.ThoughtSignature, data)
					}
					if p.Thought && !thoughtFrom(p.Text, thoughts) {
						t.Fatalf("thought %q was not Gemini's: %s", p.Text, data)
					}
					if p.FunctionCall != nil {
						if firstCall && opt.signCalls && len(p.ThoughtSignature) == 0 {
							t.Fatalf("unsigned first call: %s", mustJSON(t, c))
						}
						firstCall = false
					}
				}
			}
		}
	})
}

// thoughtFrom reports whether text is (a piece of) one of the thoughts.
func thoughtFrom(text string, thoughts map[string]bool) bool {
	for th := range thoughts {
		if strings.Contains(th, text) {
			return true
		}
	}
	return false
}

var responseSeeds = []string{
	`[{"candidates":[{"content":{"role":"model","parts":[{"text":"hello"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}}]`,
	`[{"candidates":[{"content":{"parts":[{"text":"a "}]}}]},{"candidates":[{"content":{"parts":[{"text":"b","thoughtSignature":"c2ln"},{"text":"","thoughtSignature":"dA=="}]}}]},{"candidates":[{"content":{"parts":[{"functionCall":{"name":"ls"}},{"functionCall":{"id":"q","name":"cat","args":{"p":"x"}},"thoughtSignature":"eA=="}]},"finishReason":"STOP"}]}]`,
	`[{"candidates":[{"content":{"parts":[{"thought":true,"text":"hmm"},{"executableCode":{"code":"print(1)","language":"PYTHON"}},{"text":"1"}]},"finishReason":"MAX_TOKENS"}],"modelVersion":"gemini-x"}]`,
	`[{"promptFeedback":{"blockReason":"SAFETY"}}]`,
	`[null,{"candidates":[null]},{"candidates":[{}]}]`,
	`[{"candidates":[{"content":{"parts":[{"thought":true,"text":"first "}]}}]},{"candidates":[{"content":{"parts":[{"thought":true,"text":"second","thoughtSignature":"dA=="}]}}]},{"candidates":[{"content":{"parts":[{"thought":true,"text":"again"},{"text":"ans"},{"text":"wer","thoughtSignature":"eA=="}]}}]},{"candidates":[{"content":{"parts":[{"functionCall":{"id":"a","name":"ls"},"thoughtSignature":"eQ=="},{"functionCall":{"id":"a","name":"ls"},"thoughtSignature":"eg=="},{"functionCall":{"name":"ls"}}]},"finishReason":"SAFETY"}],"promptFeedback":{"blockReason":"OTHER"}}]`,
}

// FuzzCollectorRoundTrip: whatever Gemini sends, the collected message, its
// stream events and the turn sent back agree with each other.
func FuzzCollectorRoundTrip(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, prior int) {
		var chunks []*genai.GenerateContentResponse
		if json.Unmarshal(data, &chunks) != nil {
			return
		}
		var history []llm.Message
		for i := range prior % 8 {
			history = append(history, llm.Assistant("", llm.ToolCall{ID: fmt.Sprintf("call_%d", i*2), Name: "x"}))
		}
		c := newCollector(newIDGen(history), testModel, llm.ResponseLimits{})
		var acc llm.Accumulator
		for _, ch := range chunks {
			c.addResponse(ch, func(ev llm.StreamEvent) { acc.Add(ev) })
		}
		resp := c.response()
		msg := resp.Message
		partial := acc.Partial().Message
		var reasoning strings.Builder
		for _, p := range msg.Parts {
			if p.Type == llm.PartReasoning {
				reasoning.WriteString(p.Text)
			}
		}
		if partial.Content != msg.Content || partial.ReasoningText() != reasoning.String() || len(partial.ToolCalls) != len(msg.ToolCalls) {
			t.Fatalf("events rebuild %+v, response is %+v", partial, msg)
		}
		seen := map[string]bool{}
		for _, h := range history {
			seen[h.ToolCalls[0].ID] = true
		}
		for i, tc := range msg.ToolCalls {
			if tc.ID == "" || !json.Valid(tc.Args) || string(partial.ToolCalls[i].Args) != string(tc.Args) {
				t.Fatalf("call %d = %+v", i, tc)
			}
			// Generated ids never clash with the history or each other.
			if strings.HasPrefix(tc.ID, "call_") && seen[tc.ID] {
				t.Fatalf("id %q is reused", tc.ID)
			}
			seen[tc.ID] = true
		}
		// Sending the message back reproduces what Gemini sent: its text and
		// thoughts in order with their signatures, its calls in order with
		// their ids and signatures, and its server-side parts.
		back := checkpoint(t, msg)
		parts, wireIDs := modelParts(back)
		if len(wireIDs) != len(msg.ToolCalls) {
			t.Fatalf("%d wire ids for %d calls", len(wireIDs), len(msg.ToolCalls))
		}
		if got, want := shapes(t, parts), shapes(t, c.parts); got != want {
			t.Fatalf("parts sent back %s\nreceived %s", got, want)
		}
		for _, p := range back.Parts {
			if p.Type == llm.PartReasoning && (p.Reasoning == nil || p.Reasoning.Provider != Provider) {
				t.Fatalf("reasoning part without Gemini as its provider: %+v", p)
			}
		}
		contents, _ := toContents(append([]llm.Message{llm.User("q"), back}, toolResults(back)...), wireOptions{})
		if err := checkContents(contents); err != nil {
			t.Fatal(err)
		}
	})
}

func toolResults(m llm.Message) []llm.Message {
	var out []llm.Message
	for _, c := range m.ToolCalls {
		out = append(out, llm.ToolResult(c, "ok", false))
	}
	return out
}

func FuzzErrorDetails(f *testing.F) {
	f.Add(400, "INVALID_ARGUMENT", "The input token count (5) exceeds the maximum number of tokens allowed (4).", `[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"31s"}]`, "7")
	f.Add(429, "RESOURCE_EXHAUSTED", "quota", `[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":1e300,"nanos":-5}}]`, "Fri, 02 Jan 2026 03:04:15 GMT")
	f.Add(0, "", "", `[{"@type":5},{}]`, "-1e309")
	f.Fuzz(func(t *testing.T, code int, status, message, details, retryAfter string) {
		var d []map[string]any
		_ = json.Unmarshal([]byte(details), &d)
		ge := genai.APIError{Code: code, Status: status, Message: message, Details: d}
		switch errorKind(code, ge) {
		case llm.ErrKindAuth, llm.ErrKindRateLimit, llm.ErrKindContextLength, llm.ErrKindBadRequest, llm.ErrKindNotFound, llm.ErrKindServer, llm.ErrKindNetwork:
		default:
			t.Fatalf("unexpected kind for %+v", ge)
		}
		if r := retryInfoDelay(d); r < 0 {
			t.Fatalf("negative retry delay %v", r)
		}
		if r := kit.RetryAfter(http.Header{"Retry-After": {retryAfter}}, time.Now()); r < 0 {
			t.Fatalf("negative Retry-After %v", r)
		}
	})
}

// shapes describes wire parts as three sequences: text and thoughts (text,
// thought flag, signature), function calls (id, name, arguments, signature)
// and the other parts (function responses excepted: a model turn has none).
func shapes(t *testing.T, parts []*genai.Part) string {
	var text, calls, other []string
	for _, p := range parts {
		switch {
		case p.FunctionCall != nil:
			args := "{}"
			if len(p.FunctionCall.Args) > 0 {
				args = mustJSON(t, p.FunctionCall.Args)
			}
			calls = append(calls, fmt.Sprintf("%q %q %s %x", p.FunctionCall.ID, p.FunctionCall.Name, args, p.ThoughtSignature))
		case p.FunctionResponse != nil:
		case textLike(p):
			if p.Text != "" || len(p.ThoughtSignature) > 0 {
				text = append(text, fmt.Sprintf("%q %v %x", p.Text, p.Thought, p.ThoughtSignature))
			}
		default:
			other = append(other, mustJSON(t, p))
		}
	}
	return fmt.Sprintf("text %v\ncalls %v\nother %v", text, calls, other)
}
