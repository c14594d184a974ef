package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	ID    int64
	Event string
	Data  json.RawMessage
}

// parseSSE reads a whole event stream.
func parseSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	var data []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" || len(data) > 0 {
				cur.Data = json.RawMessage(strings.Join(data, "\n"))
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				t.Fatalf("bad event id line %q", line)
			}
			cur.ID = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the event stream: %v", err)
	}
	return out
}

// testTimeout bounds every exchange a test has with a server, a stream
// included, so that none can hang until go test's own deadline.
const testTimeout = 2 * time.Minute

// testClient is the client of tests that talk to a server of their own.
var testClient = &http.Client{Timeout: testTimeout}

type harness struct {
	t     *testing.T
	srv   *Server
	http  *httptest.Server
	token string
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	if cfg.Agents == nil {
		a, err := DemoAgent("researcher", 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Agents = []AgentSpec{{Name: "researcher", Description: "demo", Agent: a}}
	}
	if cfg.Saver == nil {
		cfg.Saver = checkpoint.NewMemory(0)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	hs.Client().Timeout = testTimeout
	t.Cleanup(func() {
		hs.Close()
		_ = s.Close()
	})
	return &harness{t: t, srv: s, http: hs, token: cfg.Token}
}

// do sends a request and returns the response, its body read.
func (h *harness) do(method, path string, body any, hdr ...string) (*http.Response, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.http.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, b
}

// json sends a request, checks the status and decodes the body into out.
func (h *harness) json(method, path string, body any, status int, out any) http.Header {
	h.t.Helper()
	resp, b := h.do(method, path, body)
	if resp.StatusCode != status {
		h.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, resp.StatusCode, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			h.t.Fatalf("%s %s: decoding %s: %v", method, path, b, err)
		}
	}
	return resp.Header
}

func (h *harness) stream(method, path string, body any, hdr ...string) (*http.Response, []sseEvent) {
	h.t.Helper()
	resp, b := h.do(method, path, body, hdr...)
	if resp.StatusCode != 200 {
		h.t.Fatalf("%s %s: status %d; body %s", method, path, resp.StatusCode, b)
	}
	return resp, parseSSE(h.t, bytes.NewReader(b))
}

// subagentWriter is a scripted model whose parent starts one general-purpose
// subagent, which writes content to /sub.md and ends; then the parent ends.
func subagentWriter(content string) *scripted.Model {
	c, _ := json.Marshal(content)
	return scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case ci.Instance != "" && ci.Round == 0:
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "w", Name: "write_file", Args: json.RawMessage(`{"file_path":"/sub.md","content":` + string(c) + `}`)}}}, nil
		case ci.Instance != "":
			return scripted.Step{Content: "subagent done"}, nil
		case last.Role == llm.RoleUser:
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "t1", Name: "task", Args: json.RawMessage(`{"description":"write the file","subagent_type":"general-purpose"}`)}}}, nil
		default:
			return scripted.Step{Content: "parent done"}, nil
		}
	}})
}
