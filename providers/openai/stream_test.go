package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
	"github.com/deepagents-go/deepagents/providers/openai/openaitest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

func TestStreamCutMidwayIsNotRetried(t *testing.T) {
	for _, clean := range []bool{false, true} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Sequence(
				openaitest.Reply{Content: "a long answer that will not arrive whole", CutAfter: 5, CleanCut: clean},
				openaitest.Text("a second attempt must not happen"),
			))
			m, sl := newModel(t, srv, Config{})
			evs, err := collect(m.Stream(testCtx(t), userReq("hi")))
			if len(evs) == 0 {
				t.Fatal("no events before the cut")
			}
			for _, ev := range evs {
				if ev.Type == llm.EventDone {
					t.Fatal("EventDone from a cut stream")
				}
			}
			if !errors.Is(err, llm.ErrNetwork) {
				t.Fatalf("error %v, want a network error", err)
			}
			if srv.Count() != 1 || len(sl.Waits()) != 0 {
				t.Fatalf("the server saw %d requests (waits %v); a stream that yielded events must not be retried", srv.Count(), sl.Waits())
			}
		})
	}
}

func TestStreamCutAfterFinishReason(t *testing.T) {
	// Events: role, "ok", finish_reason, usage. Losing only the usage chunk
	// still leaves a complete answer, whose usage is unknown.
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{Content: "ok", CutAfter: 3}))
	m, _ := newModel(t, srv, Config{})
	resp, err := llm.Collect(m.Stream(testCtx(t), userReq("hi")))
	if err != nil || resp.Message.Content != "ok" || resp.StopReason != llm.StopEnd || resp.Usage != (llm.Usage{Unknown: true}) {
		t.Fatalf("%v %+v", err, resp)
	}
	if srv.Count() != 1 {
		t.Fatalf("%d requests", srv.Count())
	}
}

func TestStreamCutBeforeFirstByteIsRetried(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(
		openaitest.Reply{Hangup: true},
		openaitest.Reply{Content: "never seen", CutAfter: 1}, // only the role chunk: nothing reached the caller
		openaitest.Text("third time lucky"),
	))
	m, sl := newModel(t, srv, Config{})
	evs, err := collect(m.Stream(testCtx(t), userReq("hi")))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, ev := range evs {
		text.WriteString(ev.Text)
	}
	if text.String() != "third time lucky" {
		t.Fatalf("text %q: events were duplicated or lost", text.String())
	}
	if last := evs[len(evs)-1]; last.Type != llm.EventDone || last.Response.Message.Content != "third time lucky" {
		t.Fatalf("last event %+v", last)
	}
	if srv.Count() != 3 || len(sl.Waits()) != 2 {
		t.Fatalf("%d requests, waits %v", srv.Count(), sl.Waits())
	}
}

func TestStreamCancellation(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{Content: "tick tock tick tock", StallAfter: 3}))
	m, sl := newModel(t, srv, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var got int
	var err error
	for ev, e := range m.Stream(ctx, userReq("hi")) {
		if e != nil {
			err = e
			break
		}
		if ev.Type == llm.EventTextDelta {
			got++
			cancel() // the server now stalls; the stream must end promptly
		}
	}
	if got == 0 {
		t.Fatal("no text before cancelling")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if errors.Is(err, llm.ErrNetwork) {
		t.Fatal("cancellation reported as a network error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the stream took %v to stop", d)
	}
	if srv.Count() != 1 || len(sl.Waits()) != 0 {
		t.Fatal("retried after cancellation")
	}
}

func TestGenerateCancellation(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Reply{Content: "late", Delay: time.Minute}))
	m, sl := newModel(t, srv, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Generate(ctx, userReq("hi"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		t.Fatalf("cancellation reported as %v", ae)
	}
	if time.Since(start) > 5*time.Second || srv.Count() != 1 || len(sl.Waits()) != 0 {
		t.Fatal("not prompt, or retried")
	}
}

func TestStreamConsumerStopsEarly(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("one two three four five six")))
	m, _ := newModel(t, srv, Config{})
	n := 0
	for ev, err := range m.Stream(testCtx(t), userReq("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == llm.EventTextDelta {
			n++
			break
		}
	}
	if n != 1 {
		t.Fatal("no event")
	}
}

// sseServer serves one fixed body to every request.
func sseServer(t *testing.T, contentType, body string) (*Model, *atomic.Int64) {
	t.Helper()
	fakewire.Watchdog(t, fakewire.TestTimeout)
	count := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		w.Header().Set("Content-Type", contentType)
		_, _ = fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	sl := &retry.Recorder{}
	m, err := New(Config{Model: "m", BaseURL: srv.URL + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	m.cfg.Retry.Sleep = sl.Sleep
	return m, count
}

func TestStreamErrorEvent(t *testing.T) {
	m, count := sseServer(t, "text/event-stream",
		"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"error\":{\"message\":\"The model is overloaded.\",\"type\":\"server_error\",\"code\":null}}\n\n")
	evs, err := collect(m.Stream(testCtx(t), userReq("hi")))
	if len(evs) != 1 || evs[0].Text != "par" {
		t.Fatalf("events %+v", evs)
	}
	if !errors.Is(err, llm.ErrServer) || apiError(t, err).Message != "The model is overloaded." {
		t.Fatalf("error %v", err)
	}
	if count.Load() != 1 {
		t.Fatalf("%d requests", count.Load())
	}
}

func TestStreamWithoutFinishButWithDone(t *testing.T) {
	// Some servers never send finish_reason; [DONE] still ends the stream.
	m, _ := sseServer(t, "text/event-stream",
		": keep-alive comment\n\n"+
			"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"+
			"data: [DONE]\n\n")
	resp, err := llm.Collect(m.Stream(testCtx(t), userReq("hi")))
	if err != nil || resp.Message.Content != "hi" || resp.StopReason != llm.StopEnd {
		t.Fatalf("%v %+v", err, resp)
	}
}

func TestStreamAnsweredWithJSON(t *testing.T) {
	// A server that ignores stream:true and answers with a whole completion.
	m, _ := sseServer(t, "application/json", `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
	evs, err := collect(m.Stream(testCtx(t), userReq("hi")))
	if err != nil {
		t.Fatal(err)
	}
	types := []llm.StreamEventType{}
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	want := []llm.StreamEventType{llm.EventTextDelta, llm.EventToolCallStart, llm.EventToolCallDelta, llm.EventDone}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("events %v", types)
	}
	resp := evs[len(evs)-1].Response
	if resp.Message.Content != "whole" || string(resp.Message.ToolCalls[0].Args) != `{"a":1}` || resp.Usage.InputTokens != 3 {
		t.Fatalf("%+v", resp)
	}
}

func TestMalformedChunk(t *testing.T) {
	m, count := sseServer(t, "text/event-stream", "data: {not json\n\n")
	_, err := collect(m.Stream(testCtx(t), userReq("hi")))
	if !errors.Is(err, llm.ErrServer) {
		t.Fatalf("error %v", err)
	}
	if count.Load() != 4 { // nothing was yielded, so the default policy retried 3 times
		t.Fatalf("%d requests", count.Load())
	}
}

func TestNoStreamToolCalls(t *testing.T) {
	// Rejected requests never reach the handler, so they use up no reply.
	script := openaitest.Sequence(
		openaitest.Reply{Content: "calling", ToolCalls: []openaitest.Call{{ID: "call_1", Name: "f", Args: `{"x":1}`}}},
		openaitest.Text("plain"),
	)
	srv := openaitest.NewServer(t, script, openaitest.RejectStreamedTools())
	req := userReq("hi")
	req.Tools = []llm.ToolSpec{{Name: "f"}}

	plain, _ := newModel(t, srv, Config{})
	if _, err := llm.Collect(plain.Stream(testCtx(t), req)); !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("without the switch: %v", err)
	}

	m, _ := newModel(t, srv, Config{NoStreamToolCalls: true})
	evs, err := collect(m.Stream(testCtx(t), req))
	if err != nil {
		t.Fatal(err)
	}
	var types []llm.StreamEventType
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	want := []llm.StreamEventType{llm.EventTextDelta, llm.EventToolCallStart, llm.EventToolCallDelta, llm.EventDone}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("events %v", types)
	}
	if evs[1].ToolCall.ID != "call_1" || evs[1].ToolCall.Name != "f" || evs[2].ArgsDelta != `{"x":1}` {
		t.Fatalf("tool events %+v %+v", evs[1], evs[2])
	}
	done := evs[3].Response
	if done.Message.Content != "calling" || len(done.Message.ToolCalls) != 1 || done.StopReason != llm.StopToolCalls {
		t.Fatalf("done %+v", done)
	}
	// Without tools the same model still streams.
	resp, err := llm.Collect(m.Stream(testCtx(t), userReq("no tools")))
	if err != nil || resp.Message.Content != "plain" {
		t.Fatalf("%v %+v", err, resp)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !reqs[0].Stream || reqs[1].Stream || !reqs[2].Stream {
		t.Fatalf("%d requests; stream flags: %v %v %v", len(reqs), reqs[0].Stream, reqs[1].Stream, reqs[2].Stream)
	}
}

func TestNoStreamUsage(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Sequence(openaitest.Text("a")), openaitest.RejectStreamOptions())
	plain, _ := newModel(t, srv, Config{})
	if _, err := llm.Collect(plain.Stream(testCtx(t), userReq("hi"))); !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("without the switch: %v", err)
	}
	m, _ := newModel(t, srv, Config{NoStreamUsage: true})
	resp, err := llm.Collect(m.Stream(testCtx(t), userReq("hi")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "a" || resp.Usage != (llm.Usage{Unknown: true}) {
		t.Fatalf("%+v", resp)
	}
	if r := srv.Requests()[1]; r.StreamOptions != nil || !r.Stream {
		t.Fatalf("sent %s", r.Body)
	}
}

func TestResponsesStreamAnsweredWithJSON(t *testing.T) {
	// The same on the Responses API: a whole response object instead of
	// events is turned into events, not mistaken for a broken stream.
	m, _ := sseServer(t, "application/json", `{"id":"resp_1","object":"response","status":"completed","model":"m",`+
		`"output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"whole","annotations":[]}]},`+
		`{"type":"function_call","id":"fc_1","call_id":"c1","name":"f","arguments":"{\"a\":1}","status":"completed"}],`+
		`"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}`)
	m.cfg.API = APIResponses
	evs, err := collect(m.Stream(testCtx(t), userReq("hi")))
	if err != nil {
		t.Fatal(err)
	}
	resp := evs[len(evs)-1].Response
	if resp == nil || resp.Message.Content != "whole" || len(resp.Message.ToolCalls) != 1 || string(resp.Message.ToolCalls[0].Args) != `{"a":1}` || resp.Usage.InputTokens != 3 {
		t.Fatalf("%+v", resp)
	}
}
