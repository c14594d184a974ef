package providers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// endlessBin is the program of testdata/endless, built once (without the
// race detector, whatever this test binary was built with, so that the
// memory it reports is its own).
var (
	endlessOnce sync.Once
	endlessDir  string
	endlessBin  string
	endlessErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if endlessDir != "" {
		os.RemoveAll(endlessDir)
	}
	os.Exit(code)
}

func buildEndless(t *testing.T, end time.Time) string {
	t.Helper()
	endlessOnce.Do(func() {
		endlessDir, endlessErr = os.MkdirTemp("", "endless")
		if endlessErr != nil {
			return
		}
		endlessBin = filepath.Join(endlessDir, "endless")
		ctx, cancel := context.WithDeadline(context.Background(), end)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", endlessBin, "./testdata/endless").CombinedOutput()
		if err != nil {
			endlessErr = fmt.Errorf("building testdata/endless: %v\n%s", err, out)
		}
	})
	if endlessErr != nil {
		t.Fatal(endlessErr)
	}
	return endlessBin
}

// endlessReport is what testdata/endless prints.
type endlessReport struct {
	FirstStatus string   `json:"first_status"`
	FirstError  string   `json:"first_error"`
	Status      string   `json:"status"`
	Error       string   `json:"error"`
	TooLarge    bool     `json:"too_large"`
	Limit       string   `json:"limit"`
	Wire        string   `json:"wire"`
	Saved       []string `json:"saved"`
	SavedStatus string   `json:"saved_status"`
	PeakKB      int64    `json:"peak_kb"`
}

// An answer that never ends, against the real adapters: the run's second
// turn fails with a clear error that matches llm.ErrResponseTooLarge, the
// model is asked once (the error is not retried), the thread keeps its
// first turn and the second's prompt (not the cut-off answer), and the
// process never holds more than 200 MB. Each case runs in a child process
// (testdata/endless) whose peak resident memory it reports; this process
// kills a child that passes 1 GiB or a minute.
//
// The shapes: text deltas without end; one tool call whose arguments never
// end; tool calls without end (the 1,001st passes the limit); what an
// adapter keeps without streaming it (a refusal, a thinking signature,
// thought signatures), without end; keep-alives
// that carry nothing (the stream's wire cap, 64 times the byte limit); one
// server-sent event that never ends (the event's wire cap, twice the byte
// limit); and a non-streamed answer whose body never ends (four times the
// byte limit). The last three run under a byte limit of 1 MiB.
//
// The whole test has 8 minutes, each child at most one of them.
func TestEndlessResponsesAreCutOff(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the child's peak memory from /proc (Linux only)")
	}
	end := time.Now().Add(8 * time.Minute)
	bin := buildEndless(t, end)
	const mib = 1 << 20
	cases := []struct {
		provider, shape string
		stream          bool
		maxBytes        int64
		limit, wire     string
	}{
		{"openai", "text", true, 0, "max_response_bytes", ""},
		{"openai", "args", true, 0, "max_response_bytes", ""},
		{"openai", "calls", true, 0, "max_tool_calls", ""},
		{"openai", "hidden", true, 0, "max_response_bytes", ""},
		{"openai", "pings", true, mib, "max_response_bytes", "the stream"},
		{"openai", "event", true, mib, "max_response_bytes", "one event of the stream"},
		{"openai", "line", true, 0, "max_response_bytes", "one line of the stream"},
		{"openai", "body", false, mib, "max_response_bytes", "the answer"},
		{"anthropic", "text", true, 0, "max_response_bytes", ""},
		{"anthropic", "args", true, 0, "max_response_bytes", ""},
		{"anthropic", "calls", true, 0, "max_tool_calls", ""},
		{"anthropic", "hidden", true, 0, "max_response_bytes", ""},
		{"anthropic", "pings", true, mib, "max_response_bytes", "the stream"},
		{"anthropic", "event", true, mib, "max_response_bytes", "one event of the stream"},
		{"anthropic", "line", true, 0, "max_response_bytes", "one line of the stream"},
		{"gemini", "text", true, 0, "max_response_bytes", ""},
		{"gemini", "args", true, 0, "max_response_bytes", ""},
		{"gemini", "calls", true, 0, "max_tool_calls", ""},
		{"gemini", "hidden", true, 0, "max_response_bytes", ""},
		{"gemini", "pings", true, mib, "max_response_bytes", "the stream"},
		{"gemini", "event", true, mib, "max_response_bytes", "one event of the stream"},
		{"gemini", "body", false, mib, "max_response_bytes", "the answer"},
	}
	for _, c := range cases {
		name := c.provider + "/" + c.shape
		t.Run(name, func(t *testing.T) {
			srv := &endlessServer{provider: c.provider, shape: c.shape}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			defer hs.CloseClientConnections()
			url := hs.URL
			if c.provider == "openai" {
				url += "/v1"
			}
			rep := runEndless(t, end, bin, "-provider", c.provider, "-url", url, "-stream="+strconv.FormatBool(c.stream),
				"-max-bytes", strconv.FormatInt(c.maxBytes, 10))
			if rep.FirstStatus != "ok" {
				t.Fatalf("the first turn ended %s: %s", rep.FirstStatus, rep.FirstError)
			}
			if rep.Status != "error" || !rep.TooLarge || rep.Limit != c.limit || rep.Wire != c.wire {
				t.Errorf("the endless turn ended %q with %q (too large %v, limit %q, wire %q); want error, limit %q, wire %q",
					rep.Status, rep.Error, rep.TooLarge, rep.Limit, rep.Wire, c.limit, c.wire)
			}
			if !strings.Contains(rep.Error, "the model's response was cut off") || !strings.Contains(rep.Error, c.limit) {
				t.Errorf("the error does not say what happened: %s", rep.Error)
			}
			want := []string{"user: hello (0 calls)", "assistant: hi (0 calls)", "user: go on (0 calls)"}
			if strings.Join(rep.Saved, "\n") != strings.Join(want, "\n") || rep.SavedStatus != "error" {
				t.Errorf("the thread saved %q (%s), want %q (error)", rep.Saved, rep.SavedStatus, want)
			}
			if n := srv.requests.Load(); n != 2 {
				t.Errorf("the server was asked %d times, want 2 (the cut-off answer is not retried)", n)
			}
			if rep.PeakKB <= 0 || rep.PeakKB > 200*1024 {
				t.Errorf("peak resident memory %d KiB, want under 200 MB", rep.PeakKB)
			}
			t.Logf("%s: peak %d MiB, %s", name, rep.PeakKB>>10, rep.Error)
		})
	}
}

// runEndless runs the program with args and decodes its report. It kills a
// child that passes 1 GiB of resident memory, runs for a minute, or is
// still running at end.
func runEndless(t *testing.T, end time.Time, bin string, args ...string) endlessReport {
	t.Helper()
	d := min(time.Until(end), time.Minute)
	if d <= 0 {
		t.Fatal("no time left: the cases before took the test's 8 minutes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var peak int64
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%v: %v (%s); stderr: %s; largest resident memory seen %d MiB", args, err, context.Cause(ctx), errOut.String(), peak>>10)
			}
			var rep endlessReport
			if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
				t.Fatalf("report %q: %v", out.String(), err)
			}
			return rep
		case <-tick.C:
			if kb := residentKB(cmd.Process.Pid); kb > peak {
				peak = kb
			}
			if peak > 1<<20 {
				cmd.Process.Kill()
				<-done
				t.Fatalf("%v: the child passed 1 GiB of resident memory (%d MiB) and was killed", args, peak>>10)
			}
		}
	}
}

// residentKB is a process's resident memory (VmRSS), 0 when unknown.
func residentKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// endlessServer answers the first request of a run normally ("hi") and
// every later one with an answer of the given shape that never ends, in
// the provider's wire format. It writes until the client goes.
type endlessServer struct {
	provider, shape string
	requests        atomic.Int64
}

func (s *endlessServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	n := s.requests.Add(1)
	stream := strings.Contains(r.URL.Path, "stream") || strings.Contains(string(body), `"stream":true`) || s.provider == "anthropic"
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	f := w.(http.Flusher)
	out := func(s string) bool {
		if _, err := bw.WriteString(s); err != nil {
			return false
		}
		if bw.Buffered() == 0 || r.Context().Err() != nil {
			f.Flush()
		}
		return r.Context().Err() == nil
	}
	defer func() { bw.Flush(); f.Flush() }()
	if n == 1 {
		out(s.hello(stream))
		return
	}
	s.endless(stream, out)
}

var filler = strings.Repeat("x", 4096)

func (s *endlessServer) hello(stream bool) string {
	switch s.provider {
	case "openai":
		if !stream {
			return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
		}
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
			"data: [DONE]\n\n"
	case "anthropic":
		return anthropicStart +
			sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`) +
			sse("content_block_stop", `{"type":"content_block_stop","index":0}`) +
			sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`) +
			sse("message_stop", `{"type":"message_stop"}`)
	}
	chunk := `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}`
	if !stream {
		return chunk
	}
	return "data: " + chunk + "\r\n\r\n"
}

const anthropicStart = "event: message_start\ndata: " +
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n"

func sse(event, data string) string { return "event: " + event + "\ndata: " + data + "\n\n" }

func openaiChunk(delta string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
}

func geminiChunk(parts string) string {
	return `data: {"candidates":[{"content":{"role":"model","parts":[` + parts + `]}}]}` + "\r\n\r\n"
}

// endless writes the never-ending answer until out reports the client gone.
func (s *endlessServer) endless(stream bool, out func(string) bool) {
	p, shape := s.provider, s.shape
	switch {
	case shape == "body" && p == "openai":
		if !out(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`) {
			return
		}
		for out(filler) {
		}
	case shape == "body":
		if !out(`{"candidates":[{"content":{"role":"model","parts":[{"text":"`) {
			return
		}
		for out(filler) {
		}
	case p == "openai" && shape == "text":
		for out(openaiChunk(`{"content":"` + filler + `"}`)) {
		}
	case p == "openai" && shape == "args":
		if !out(openaiChunk(`{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"t","arguments":"{\"a\":\""}}]}`)) {
			return
		}
		for out(openaiChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"` + filler + `"}}]}`)) {
		}
	case p == "openai" && shape == "calls":
		for i := 0; out(openaiChunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"t","arguments":"{}"}}]}`, i, i))); i++ {
		}
	case p == "openai" && shape == "hidden":
		for out(openaiChunk(`{"refusal":"` + filler + `"}`)) {
		}
	case p == "openai" && shape == "pings":
		for out(": keep-alive\n\n") {
		}
	case p == "openai" && shape == "event":
		for out("data: " + filler + "\n") {
		}
	case p == "anthropic" && shape == "text":
		if !out(anthropicStart + sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)) {
			return
		}
		for out(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+filler+`"}}`)) {
		}
	case p == "anthropic" && shape == "args":
		if !out(anthropicStart + sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_0","name":"t","input":{}}}`) +
			sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":\""}}`)) {
			return
		}
		for out(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"`+filler+`"}}`)) {
		}
	case p == "anthropic" && shape == "calls":
		if !out(anthropicStart) {
			return
		}
		for i := 0; out(sse("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":"toolu_%d","name":"t","input":{}}}`, i, i)) +
			sse("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))); i++ {
		}
	case p == "anthropic" && shape == "hidden":
		if !out(anthropicStart + sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)) {
			return
		}
		for out(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"`+filler+`"}}`)) {
		}
	case p == "anthropic" && shape == "pings":
		if !out(anthropicStart) {
			return
		}
		for out(sse("ping", `{"type":"ping"}`)) {
		}
	case p == "openai" && shape == "line":
		// One line without end, under the default limits: the client
		// library's reader gives up before the event's wire cap.
		if !out("data: ") {
			return
		}
		for out(filler) {
		}
	case p == "anthropic" && shape == "line":
		if !out(anthropicStart + "data: ") {
			return
		}
		for out(filler) {
		}
	case p == "anthropic" && shape == "event":
		if !out(anthropicStart + "event: content_block_delta\n") {
			return
		}
		for out("data: " + filler + "\n") {
		}
	case p == "gemini" && shape == "text":
		for out(geminiChunk(`{"text":"` + filler + `"}`)) {
		}
	case p == "gemini" && shape == "args":
		big := strings.Repeat(filler, 16)
		for out(geminiChunk(`{"functionCall":{"name":"t","args":{"a":"` + big + `"}}}`)) {
		}
	case p == "gemini" && shape == "calls":
		for out(geminiChunk(`{"functionCall":{"name":"t","args":{}}}`)) {
		}
	case p == "gemini" && shape == "hidden":
		for out(geminiChunk(`{"text":"","thoughtSignature":"` + filler + `"}`)) {
		}
	case p == "gemini" && shape == "pings":
		// Chunks with no candidate, padded so the test is quick.
		for out(`data: {"usageMetadata":{"promptTokenCount":1},"responseId":"` + filler + `"}` + "\r\n\r\n") {
		}
	case p == "gemini" && shape == "event":
		if !out(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"`) {
			return
		}
		for out(filler) {
		}
	}
}
