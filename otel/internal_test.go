package daotel

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

func TestTruncate(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is two bytes: not split
		{"日本語", 4, "日"},
		{"日本語", 6, "日本"},
		{"", 0, ""},
	}
	for _, c := range cases {
		if got := truncate(c.in, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestResumedFrom(t *testing.T) {
	cases := map[string]string{
		`resumed from checkpoint 00000007 of thread "t1"`:                                           "00000007",
		`resumed from checkpoint 0000000a of thread "x"; 1 of the step's 2 tool calls had finished`: "0000000a",
		`resumed from checkpoint`:            "",
		`something else`:                     "",
		`resumed from checkpoint  of thread`: "",
	}
	for in, want := range cases {
		if got := resumedFrom(in); got != want {
			t.Errorf("resumedFrom(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzResumedFrom(f *testing.F) {
	f.Add(`resumed from checkpoint 00000007 of thread "t1"`)
	f.Add("resumed from checkpoint \xff of thread")
	f.Fuzz(func(t *testing.T, s string) {
		id := resumedFrom(s)
		if id != "" && (!strings.Contains(s, id) || strings.ContainsAny(id, " ") || !utf8.ValidString(id)) {
			t.Fatalf("resumedFrom(%q) = %q", s, id)
		}
	})
}

func TestExporterNames(t *testing.T) {
	cases := []struct {
		env     map[string]string
		want    string
		wantErr string
	}{
		{map[string]string{}, "", ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, "otlp", ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x:4318/v1/traces"}, "otlp", ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, "", ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": " Console , otlp,console"}, "console,otlp", ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none,otlp"}, "", `OTEL_TRACES_EXPORTER: "none" cannot be combined with other exporters`},
	}
	for _, c := range cases {
		got, err := exporterNames(func(k string) string { return c.env[k] }, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if strings.Join(got, ",") != c.want || msg != c.wantErr {
			t.Errorf("%v: got %v, %q; want %q, %q", c.env, got, msg, c.want, c.wantErr)
		}
	}
}

func FuzzExporterNames(f *testing.F) {
	f.Add("otlp")
	f.Add("none, console")
	f.Add(" ,,OTLP ,")
	f.Fuzz(func(t *testing.T, s string) {
		names, err := exporterNames(func(k string) string {
			if k == "OTEL_TRACES_EXPORTER" {
				return s
			}
			return ""
		}, "OTEL_TRACES_EXPORTER")
		if err != nil && names != nil {
			t.Fatalf("names %v with error %v", names, err)
		}
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || n == "none" || seen[n] || n != strings.ToLower(strings.TrimSpace(n)) {
				t.Fatalf("exporterNames(%q) = %q", s, names)
			}
			seen[n] = true
		}
	})
}

func TestEnvResource(t *testing.T) {
	env := map[string]string{
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod, team=a%20b,broken,=x,service.name=from-attrs",
		"OTEL_SERVICE_NAME":        "from-name",
	}
	res := envResource(func(k string) string { return env[k] })
	got := map[string]string{}
	for _, kv := range res.Attributes() {
		got[string(kv.Key)] = kv.Value.AsString()
	}
	want := map[string]string{"deployment.environment": "prod", "team": "a b", "service.name": "from-name"}
	if len(got) != len(want) {
		t.Fatalf("attributes %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func FuzzEnvResource(f *testing.F) {
	f.Add("a=b,c=d%20e", "svc")
	f.Add("=,,%zz=%", "")
	f.Add("k=\xff%ff", "x")
	f.Fuzz(func(t *testing.T, attrs, name string) {
		res := envResource(func(k string) string {
			switch k {
			case "OTEL_RESOURCE_ATTRIBUTES":
				return attrs
			case "OTEL_SERVICE_NAME":
				return name
			}
			return ""
		})
		for _, kv := range res.Attributes() {
			if kv.Key == "" {
				t.Fatalf("an empty key from %q", attrs)
			}
		}
		if n := strings.TrimSpace(name); n != "" {
			v, ok := res.Set().Value("service.name")
			if !ok || v.AsString() != n {
				t.Fatalf("service.name %q, want %q", v.AsString(), n)
			}
		}
	})
}

// TestSetupRefusesOtherProtocols: the exporters speak OTLP over HTTP with
// protobuf; another protocol, for traces or metrics, in the signal's
// variable or the general one, is refused rather than silently ignored.
func TestSetupRefusesOtherProtocols(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"general":         {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"traces":          {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
		"metrics":         {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"},
		"metrics general": {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"accepted":        {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
	} {
		t.Run(name, func(t *testing.T) {
			tr, err := Setup(t.Context(), SetupOptions{Getenv: func(k string) string { return vars[k] }})
			if name == "accepted" {
				if err != nil || tr == nil {
					t.Fatalf("Setup = %v, %v; want tracing", tr, err)
				}
				// Nothing was recorded; a done context sends nothing on the way out.
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				_ = tr.Shutdown(ctx)
				return
			}
			if err == nil || !strings.Contains(err.Error(), "is not supported") || !strings.Contains(err.Error(), "http/protobuf") {
				t.Errorf("Setup error %v, want the protocol refused", err)
			}
			if tr != nil {
				t.Errorf("Setup returned tracing with a refused protocol")
			}
		})
	}
}

// A subagent's model call may end before the recorder sees the subagent's
// run.start (the child's events pass through its parent's loop): its chat
// span waits for the child's span and is made under it, with the call's
// own times.
func TestChatBeforeItsRunStart(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	r := NewRecorder(context.Background(), Config{TracerProvider: tp, Model: "m"})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const child = "parent / general-purpose#t1"
	parentPath, childPath := agent.RootPath("parent"), agent.RootPath("parent").Child("general-purpose", "t1")
	r.Record(agent.Event{Type: agent.RunStart, Agent: parentPath, Time: at(0), Run: &agent.RunInfo{}})
	r.chatEnded(&chatCall{path: child, start: at(2), end: at(3), resp: &llm.Response{StopReason: llm.StopEnd}})
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans ended before the child's run started", n)
	}
	r.Record(agent.Event{Type: agent.RunStart, Agent: childPath, TaskCall: "t1", Time: at(1), Run: &agent.RunInfo{}})
	r.Record(agent.Event{Type: agent.RunEnd, Agent: childPath, TaskCall: "t1", Time: at(4), Run: &agent.RunInfo{Status: agent.StatusOK}})
	r.Record(agent.Event{Type: agent.RunEnd, Agent: parentPath, Time: at(5), Run: &agent.RunInfo{Status: agent.StatusOK}})
	var chat, run tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "chat m":
			chat = s
		case "invoke_agent general-purpose":
			run = s
		}
	}
	if !chat.SpanContext.IsValid() || chat.Parent.SpanID() != run.SpanContext.SpanID() {
		t.Fatalf("the chat span %v is not under the child's run %v", chat.Parent.SpanID(), run.SpanContext.SpanID())
	}
	if !chat.StartTime.Equal(at(2)) || !chat.EndTime.Equal(at(3)) {
		t.Errorf("chat span %v..%v, want the call's times", chat.StartTime, chat.EndTime)
	}
	if len(r.early) != 0 {
		t.Errorf("calls still waiting: %v", r.early)
	}
}
