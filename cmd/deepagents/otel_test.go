package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSink is an OTLP/HTTP trace endpoint that keeps the spans it is sent.
type otlpSink struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" {
		// Metrics are not looked at here; an empty body is an empty
		// protobuf response.
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 8<<20))
	req := &collectortrace.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(data, req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// collectTraces starts an OTLP/HTTP collector for the test and points the
// OTEL_* variables at it.
func collectTraces(t *testing.T) *otlpSink {
	sink := &otlpSink{}
	col := httptest.NewServer(sink)
	t.Cleanup(col.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	return sink
}

// deepagents run exports its spans to the collector named by
// OTEL_EXPORTER_OTLP_ENDPOINT before it exits, the subagent nested under
// the task call with the chat spans of its own model calls, and the thread
// id as the conversation id.
func TestRunExportsTraces(t *testing.T) {
	srv := delegationServer(t)
	runEnv(t, srv)
	sink := collectTraces(t)

	code, out, errs := runCLI(t, "run", "-p", "What is the answer?", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.ThreadID == "" {
		t.Fatalf("result %q: %v", out, err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range sink.spans {
		byName[s.GetName()] = s
		if got := spanAttr(s, "gen_ai.conversation.id"); got != res.ThreadID {
			t.Errorf("span %s: conversation id %q, want the thread %q", s.GetName(), got, res.ThreadID)
		}
	}
	task, child, chat := byName["execute_tool task"], byName["invoke_agent general-purpose"], byName["chat gpt-test"]
	if byName["invoke_agent parent"] == nil || task == nil || child == nil || chat == nil {
		names := []string{}
		for n := range byName {
			names = append(names, n)
		}
		t.Fatalf("spans received: %v", names)
	}
	if string(child.GetParentSpanId()) != string(task.GetSpanId()) {
		t.Error("the subagent's span is not under the task call")
	}
	childChat := false
	for _, s := range sink.spans {
		if strings.HasPrefix(s.GetName(), "chat ") && string(s.GetParentSpanId()) == string(child.GetSpanId()) {
			childChat = true
		}
	}
	if !childChat {
		t.Error("the subagent's model calls have no chat span under its run")
	}
	if got := spanAttr(chat, "gen_ai.provider.name"); got != "openai" {
		t.Errorf("provider %q", got)
	}
}

// Without OTEL_* variables nothing is traced, and an exporter deepagents
// does not have is a usage error that names it.
func TestRunTracingConfiguration(t *testing.T) {
	srv := delegationServer(t)
	runEnv(t, srv)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test")
	if code != 2 || !strings.Contains(errs, `OTEL_TRACES_EXPORTER names "zipkin"`) {
		t.Errorf("exit %d: %s", code, errs)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	code, _, errs = runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test")
	if code != 0 || !strings.Contains(errs, `"Name":"invoke_agent parent"`) {
		t.Errorf("console exporter: exit %d: %s", code, errs)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	code, _, errs = runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test")
	if code != 0 || strings.Contains(errs, "invoke_agent") {
		t.Errorf("untraced run: exit %d: %s", code, errs)
	}
}
