package llm

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
)

// The meter counts text, reasoning, tool-call ids, names and arguments,
// and each tool call once however many events it takes; it stops at the
// first byte or call past a limit.
func TestMeterCountsWhatAResponseHolds(t *testing.T) {
	m := NewMeter(ResponseLimits{MaxBytes: 20, MaxToolCalls: 2})
	steps := []struct {
		ev   StreamEvent
		fail string
	}{
		{StreamEvent{Type: EventTextDelta, Text: "hello"}, ""},                                          // 5
		{StreamEvent{Type: EventReasoningDelta, Text: "hmm"}, ""},                                       // 8
		{StreamEvent{Type: EventToolCallStart, Index: 0, ToolCall: &ToolCall{ID: "a", Name: "ls"}}, ""}, // 11, 1 call
		{StreamEvent{Type: EventToolCallDelta, Index: 0, ArgsDelta: "{}"}, ""},                          // 13
		{StreamEvent{Type: EventToolCallDelta, Index: 1, ArgsDelta: "{}"}, ""},                          // 15, 2 calls
		{StreamEvent{Type: EventDone, Response: &Response{Message: Assistant(strings.Repeat("z", 99))}}, ""},
		{StreamEvent{Type: EventTextDelta, Text: "abcde"}, ""},     // 20
		{StreamEvent{Type: EventTextDelta, Text: "f"}, LimitBytes}, // 21
	}
	for i, s := range steps {
		err := m.Add(s.ev)
		var tl *ResponseTooLargeError
		switch {
		case s.fail == "" && err != nil:
			t.Fatalf("step %d: %v", i, err)
		case s.fail != "" && (!errors.As(err, &tl) || tl.Limit != s.fail || !errors.Is(err, ErrResponseTooLarge)):
			t.Fatalf("step %d: %v, want the %s limit", i, err, s.fail)
		}
	}
	m = NewMeter(ResponseLimits{MaxToolCalls: 2})
	err := m.Add(StreamEvent{Type: EventToolCallStart, Index: 2, ToolCall: &ToolCall{}})
	var tl *ResponseTooLargeError
	if !errors.As(err, &tl) || tl.Limit != LimitToolCalls || tl.Got != 3 || tl.Max != 2 {
		t.Errorf("a third call: %v", err)
	}
	if err := NewMeter(ResponseLimits{}).Add(StreamEvent{Type: EventToolCallDelta, Index: -1}); err == nil || errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("a negative index: %v", err)
	}
	if err := NewMeter(ResponseLimits{MaxBytes: -1, MaxToolCalls: -1}).Add(StreamEvent{Type: EventToolCallStart, Index: 5000, ToolCall: &ToolCall{Name: strings.Repeat("n", 1<<25)}}); err != nil {
		t.Errorf("no limits: %v", err)
	}
}

// Check measures every part of a complete response, what a stream never
// shows included (a refusal, signatures, encrypted reasoning).
func TestCheckMeasuresTheWholeResponse(t *testing.T) {
	under := func(n int64) ResponseLimits { return ResponseLimits{MaxBytes: n} }
	sig := &Response{Message: NewMessage(RoleAssistant, ReasoningPart("", &Reasoning{Provider: "p", Signature: strings.Repeat("s", 50)}))}
	ref := &Response{Message: Assistant(""), Refusal: strings.Repeat("r", 50)}
	call := &Response{Message: Assistant("", ToolCall{ID: "id", Name: "name", Args: json.RawMessage(strings.Repeat("1", 44))})}
	for name, r := range map[string]*Response{"signature": sig, "refusal": ref, "call": call} {
		if err := under(50).Check(r); err != nil {
			t.Errorf("%s at the limit: %v", name, err)
		}
		if err := under(49).Check(r); !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("%s over the limit: %v", name, err)
		}
	}
	if err := (ResponseLimits{}).Check(nil); err != nil {
		t.Error(err)
	}
}

func TestResponseTooLargeIsNeverRetried(t *testing.T) {
	tl := &ResponseTooLargeError{Limit: LimitBytes, Max: 16 << 20, Got: 16<<20 + 1}
	wrapped := &APIError{Kind: ErrKindNetwork, Provider: "p", Err: tl}
	if Retryable(tl) || Retryable(wrapped) {
		t.Error("a response cut off at its limit is retryable")
	}
	if want := "the model's response was cut off after 16777217 bytes of text, reasoning and tool-call arguments: its limit is 16 MiB (max_response_bytes)"; tl.Error() != want {
		t.Errorf("message %q\nwant    %q", tl.Error(), want)
	}
}

// CollectLimited cuts a stream off at the limits of the context's caller
// and stops it; Collect holds to the defaults.
func TestCollectStopsAnEndlessStream(t *testing.T) {
	stopped := false
	endless := func(yield func(StreamEvent, error) bool) {
		for {
			if !yield(StreamEvent{Type: EventTextDelta, Text: strings.Repeat("x", 1<<16)}, nil) {
				stopped = true
				return
			}
		}
	}
	var stream iter.Seq2[StreamEvent, error] = endless
	resp, err := CollectLimited(stream, ResponseLimitsFrom(WithResponseLimits(context.Background(), ResponseLimits{MaxBytes: 1 << 20})))
	var tl *ResponseTooLargeError
	if resp != nil || !errors.As(err, &tl) || tl.Max != 1<<20 || !stopped {
		t.Fatalf("%v, %v (stopped %v)", resp, err, stopped)
	}
	stopped = false
	if _, err := Collect(stream); !errors.As(err, &tl) || tl.Max != DefaultMaxResponseBytes || !stopped {
		t.Fatalf("Collect: %v (stopped %v)", err, stopped)
	}
	if got := ResponseLimitsFrom(context.Background()); got != (ResponseLimits{}) {
		t.Errorf("a bare context carries %+v", got)
	}
}

// Limited passes a stream on until it passes a limit, then yields the
// limit's error and stops the stream; a done response past the limits is
// cut off too.
func TestLimitedCutsOffAStreamItPassesOn(t *testing.T) {
	stopped := false
	var endless iter.Seq2[StreamEvent, error] = func(yield func(StreamEvent, error) bool) {
		for {
			if !yield(StreamEvent{Type: EventTextDelta, Text: strings.Repeat("x", 1024)}, nil) {
				stopped = true
				return
			}
		}
	}
	n := 0
	var last error
	for ev, err := range Limited(endless, ResponseLimits{MaxBytes: 4096}) {
		if err != nil {
			last = err
			continue
		}
		n += len(ev.Text)
	}
	if n != 4096 || !errors.Is(last, ErrResponseTooLarge) || !stopped {
		t.Errorf("passed %d bytes, then %v (stopped %v)", n, last, stopped)
	}
	big := &Response{Message: Message{Role: RoleAssistant, Content: strings.Repeat("y", 100)}}
	var done iter.Seq2[StreamEvent, error] = func(yield func(StreamEvent, error) bool) {
		yield(StreamEvent{Type: EventDone, Response: big}, nil)
	}
	for ev, err := range Limited(done, ResponseLimits{MaxBytes: 10}) {
		if !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("a done response past the limit: %+v, %v", ev, err)
		}
	}
}
