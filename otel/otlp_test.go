package daotel_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	daotel "github.com/deepagents-go/deepagents/otel"
	"github.com/deepagents-go/deepagents/runner"
)

// receiver is an OTLP/HTTP trace endpoint that keeps what it is sent.
type receiver struct {
	mu       sync.Mutex
	requests []*collectortrace.ExportTraceServiceRequest
	paths    []string
	types    []string
	metrics  []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = http.MaxBytesReader(w, r.Body, 8<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.paths = append(rc.paths, r.URL.Path)
	rc.types = append(rc.types, r.Header.Get("Content-Type"))
	var out []byte
	switch r.URL.Path {
	case "/v1/traces":
		req := &collectortrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(data, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.requests = append(rc.requests, req)
		out, _ = proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	case "/v1/metrics":
		req := &collectormetrics.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(data, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					rc.metrics = append(rc.metrics, m.GetName())
				}
			}
		}
		out, _ = proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *receiver) spans() (service string, spans []*tracepb.Span) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, req := range rc.requests {
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				spans = append(spans, ss.GetSpans()...)
			}
		}
	}
	return service, spans
}

func pbAttr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// A run traced through Setup's OTLP exporter reaches an OTLP/HTTP receiver
// as protobuf, with the span tree and attributes intact.
func TestOTLPHTTPExport(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "otlp-test")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")

	// The export has a deadline of its own, so a receiver that stops
	// answering fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := daotel.Setup(ctx, daotel.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr == nil || !slices.Equal(tr.Exporters, []string{"otlp"}) || tr.Meters == nil {
		t.Fatalf("tracing %+v: want the otlp exporter from OTEL_EXPORTER_OTLP_ENDPOINT", tr)
	}
	const script = `{"parent": [
	  {"tool_calls": [{"id": "w1", "name": "write_file", "args": {"file_path": "/a.md", "content": "A"}}], "usage": {"input_tokens": 50, "output_tokens": 9, "cached_input_tokens": 40}},
	  {"content": "written", "usage": {"input_tokens": 70, "output_tokens": 3}}]}`
	a := buildAgent(t, script, emptyConfig())
	rec := daotel.NewRecorder(ctx, daotel.Config{TracerProvider: tr.Provider, MeterProvider: tr.Meters, ConversationID: "thread-otlp", Model: "m1"})
	if _, err := agent.Drain(rec.Observe(a.Run(daotel.WithRecorder(ctx, rec), agent.Prompt("go"),
		runner.Checkpoints(checkpoint.NewMemory(0), "thread-otlp"))), nil); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	service, spans := rc.spans()
	if service != "otlp-test" {
		t.Errorf("service.name %q", service)
	}
	rc.mu.Lock()
	paths, types, metrics := slices.Clone(rc.paths), slices.Clone(rc.types), slices.Clone(rc.metrics)
	rc.mu.Unlock()
	slices.Sort(paths)
	if !slices.Equal(slices.Compact(paths), []string{"/v1/metrics", "/v1/traces"}) || types[0] != "application/x-protobuf" {
		t.Fatalf("requests to %v with types %v", paths, types)
	}
	slices.Sort(metrics)
	if !slices.Equal(metrics, []string{"gen_ai.client.operation.duration", "gen_ai.client.token.usage"}) {
		t.Errorf("metrics received %v", metrics)
	}
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byName[s.GetName()] = append(byName[s.GetName()], s)
	}
	if len(byName["invoke_agent parent"]) != 1 || len(byName["chat m1"]) != 2 || len(byName["execute_tool write_file"]) != 1 || len(spans) != 4 {
		names := []string{}
		for _, s := range spans {
			names = append(names, s.GetName())
		}
		t.Fatalf("received spans %v", names)
	}
	root := byName["invoke_agent parent"][0]
	tool := byName["execute_tool write_file"][0]
	if root.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL || byName["chat m1"][0].GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds %v %v", root.GetKind(), byName["chat m1"][0].GetKind())
	}
	if string(tool.GetParentSpanId()) != string(root.GetSpanId()) || string(tool.GetTraceId()) != string(root.GetTraceId()) {
		t.Error("the tool span is not a child of the run's span")
	}
	if v := pbAttr(root, "gen_ai.conversation.id"); v.GetStringValue() != "thread-otlp" {
		t.Errorf("conversation id %v", v)
	}
	if v := pbAttr(tool, "gen_ai.tool.call.id"); v.GetStringValue() != "w1" {
		t.Errorf("tool call id %v", v)
	}
	var cached, input int64
	for _, c := range byName["chat m1"] {
		cached += pbAttr(c, "gen_ai.usage.cache_read.input_tokens").GetIntValue()
		input += pbAttr(c, "gen_ai.usage.input_tokens").GetIntValue()
	}
	if cached != 40 || input != 120 {
		t.Errorf("cache read %d, input %d over the chat spans; want 40 and 120", cached, input)
	}
}
