package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMessageJSONRoundTrip(t *testing.T) {
	msgs := []Message{
		User("hi"),
		Assistant("calling", ToolCall{ID: "c1", Name: "ls", Args: json.RawMessage(`{"path":"/"}`)}),
		ToolResult(ToolCall{ID: "c1", Name: "ls"}, "nope", true),
		{Role: RoleAssistant, Content: "done", Extra: map[string]json.RawMessage{"x": json.RawMessage(`{"sig":"a"}`)}},
		NewMessage(RoleAssistant, ReasoningPart("because", &Reasoning{Provider: "p", Signature: "sig"}), TextPart("done")),
		NewMessage(RoleUser, TextPart("look: "), ImagePart("image/png", []byte{0x89, 'P', 'N', 'G'})),
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var back []Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msgs, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	clone := Clone(msgs)
	clone[1].ToolCalls[0].Args[2] = 'X'
	clone[3].Extra["x"][0] = '['
	clone[4].Parts[0].Reasoning.Signature = "forged"
	clone[5].Parts[1].Image.Data[0] = 0
	if string(msgs[1].ToolCalls[0].Args) != `{"path":"/"}` || string(msgs[3].Extra["x"]) != `{"sig":"a"}` ||
		msgs[4].Parts[0].Reasoning.Signature != "sig" || msgs[5].Parts[1].Image.Data[0] != 0x89 {
		t.Error("Clone shares memory with the original")
	}
	if !msgs[0].HasText() || (Message{Content: " \n"}).HasText() {
		t.Error("HasText")
	}
}

func TestAccumulatorAndCollect(t *testing.T) {
	events := []StreamEvent{
		{Type: EventTextDelta, Text: "Hel"}, {Type: EventTextDelta, Text: "lo"},
		{Type: EventToolCallStart, Index: 1, ToolCall: &ToolCall{ID: "b", Name: "grep"}},
		{Type: EventToolCallStart, Index: 0, ToolCall: &ToolCall{ID: "a", Name: "ls"}},
		{Type: EventToolCallDelta, Index: 1, ArgsDelta: `{"pat`}, {Type: EventToolCallDelta, Index: 1, ArgsDelta: `tern":"x"}`},
		{Type: EventDone, Response: &Response{Usage: Usage{InputTokens: 5, OutputTokens: 2}, StopReason: StopToolCalls}},
	}
	seq := func(evs []StreamEvent, fail error) iter.Seq2[StreamEvent, error] {
		return func(yield func(StreamEvent, error) bool) {
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if fail != nil {
				yield(StreamEvent{}, fail)
			}
		}
	}
	resp, err := Collect(seq(events, nil))
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Message
	if m.Content != "Hello" || len(m.ToolCalls) != 2 || m.ToolCalls[0].Name != "ls" || string(m.ToolCalls[0].Args) != "{}" ||
		string(m.ToolCalls[1].Args) != `{"pattern":"x"}` || resp.Usage.InputTokens != 5 {
		t.Errorf("collected %+v", resp)
	}
	partial, err := Collect(seq(events[:3], nil))
	if !errors.Is(err, ErrStreamIncomplete) || partial.Message.Content != "Hello" {
		t.Errorf("incomplete stream: %v %+v", err, partial)
	}
	boom := errors.New("boom")
	if _, err := Collect(seq(events[:2], boom)); !errors.Is(err, boom) {
		t.Errorf("stream error: %v", err)
	}
	gen := func(context.Context, *Request) (*Response, error) {
		return &Response{Message: Assistant("hi", ToolCall{ID: "1", Name: "ls", Args: []byte(`{}`)})}, nil
	}
	again, err := Collect(StreamOf(context.Background(), &Request{}, gen))
	if err != nil || again.Message.Content != "hi" || again.Message.ToolCalls[0].ID != "1" {
		t.Errorf("StreamOf: %v %+v", err, again)
	}
}

func TestAPIErrorKinds(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &APIError{Kind: ErrKindRateLimit, Provider: "openai", StatusCode: 429, Message: "slow down", RetryAfter: time.Second})
	if !errors.Is(err, ErrRateLimit) || errors.Is(err, ErrAuth) || !Retryable(err) {
		t.Errorf("rate limit classification: %v", err)
	}
	if Retryable(&APIError{Kind: ErrKindAuth}) || Retryable(errors.New("plain")) || !Retryable(&APIError{Kind: ErrKindNetwork}) {
		t.Error("Retryable")
	}
	if got := err.Error(); got != "wrapped: openai: rate_limit error (HTTP 429): slow down" {
		t.Errorf("message %q", got)
	}
	u := Usage{InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3}.Add(Usage{InputTokens: 10, CacheWriteTokens: 1})
	if u.InputTokens != 11 || u.CachedInputTokens != 3 || u.CacheWriteTokens != 1 || u.Total() != 13 {
		t.Errorf("Usage.Add = %+v", u)
	}
	ctx := WithCallInfo(context.Background(), CallInfo{Agent: "a", Round: 2})
	if ci, ok := CallInfoFrom(ctx); !ok || ci.Agent != "a" || ci.Round != 2 {
		t.Error("CallInfo")
	}
}
