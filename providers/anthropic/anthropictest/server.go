package anthropictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
)

// Request is one request the server received.
type Request struct {
	// N is the request's position in arrival order, from 0.
	N      int
	Header http.Header
	// Raw is the body as received.
	Raw []byte
	// MessagesRequest is the decoded body.
	MessagesRequest
	// Invalid is why Validate rejected the request (the server then
	// answered 400 without consulting the handler), or nil.
	Invalid error
}

// Server is a fake Messages API. Point a client's base URL at URL.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234".
	URL string

	wire    *fakewire.Server
	h       Handler
	apiKey  string
	lenient bool

	log fakewire.Log[*Request]
	ids atomic.Int64

	mu       sync.Mutex
	signed   map[string]string      // signature → the thinking text it signs
	redacted map[string]bool        // redacted_thinking data handed out
	byCall   map[string][]wireBlock // tool_use id → thinking blocks of its reply
}

// Option configures a Server.
type Option func(*Server)

// WithAPIKey makes the server accept only this key (as x-api-key or as an
// Authorization bearer token) and answer anything else with 401.
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// Lenient turns off request validation.
func Lenient() Option { return func(s *Server) { s.lenient = true } }

// New starts a server answering from h; it is closed when the test ends.
// The test fails with every goroutine's stack if it is still running after
// fakewire.TestTimeout (3 minutes).
func New(tb testing.TB, h Handler, opts ...Option) *Server {
	tb.Helper()
	fakewire.Watchdog(tb, fakewire.TestTimeout)
	s := NewServer(h, opts...)
	tb.Cleanup(s.Close)
	return s
}

// NewServer starts a server answering from h, for use outside tests; call
// Close when done.
func NewServer(h Handler, opts ...Option) *Server {
	s := &Server{h: h, signed: map[string]string{}, redacted: map[string]bool{}, byCall: map[string][]wireBlock{}}
	for _, o := range opts {
		o(s)
	}
	s.wire = fakewire.Start(http.HandlerFunc(s.serve))
	s.URL = s.wire.URL
	return s
}

// Close stops the server, releasing hung replies.
func (s *Server) Close() { s.wire.Close() }

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []*Request { return s.log.All() }

// Count is the number of requests received so far.
func (s *Server) Count() int { return s.log.Count() }

// Last returns the latest request, or nil.
func (s *Server) Last() *Request {
	r, _ := s.log.Last()
	return r
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || strings.TrimSuffix(r.URL.Path, "/") != "/v1/messages" {
		writeError(w, &Error{Status: http.StatusNotFound, Message: "Not found: " + r.Method + " " + r.URL.Path})
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Message: "could not read the body: " + err.Error()})
		return
	}
	req := &Request{Header: r.Header.Clone(), Raw: raw}
	decErr := json.Unmarshal(raw, &req.MessagesRequest)
	req.N = s.log.Add(req)
	if s.apiKey != "" && r.Header.Get("X-Api-Key") != s.apiKey && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, &Error{Status: http.StatusUnauthorized, Type: "authentication_error", Message: "invalid x-api-key"})
		return
	}
	if decErr != nil {
		req.Invalid = decErr
		writeError(w, &Error{Status: http.StatusBadRequest, Message: "invalid request body: " + decErr.Error()})
		return
	}
	if !s.lenient {
		err := Validate(&req.MessagesRequest)
		if err == nil {
			err = s.checkThinking(&req.MessagesRequest)
		}
		if err != nil {
			req.Invalid = err
			writeError(w, &Error{Status: http.StatusBadRequest, Message: err.Error()})
			return
		}
	}

	rep := s.h.Reply(req)
	if f := rep.Fault; f != nil && (f.Drop || f.Hang) && (f.After == 0 || !req.Stream) {
		s.interrupt(r, f)
		return
	}
	if rep.Error != nil {
		writeError(w, rep.Error)
		return
	}
	msg := s.render(req, rep)
	s.remember(msg)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", fmt.Sprintf("req_fake_%d", req.N))
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	s.stream(w, r, req, rep, msg)
}

// interrupt drops the connection or hangs until the client goes away.
func (s *Server) interrupt(r *http.Request, f *Fault) {
	if f.Hang {
		fakewire.Hang(r, s.wire.Done())
	}
	fakewire.Drop() // closes the connection without finishing the response
}

// wire types of a response

type wireMessage struct {
	ID           string       `json:"id"`
	Type         string       `json:"type"`
	Role         string       `json:"role"`
	Model        string       `json:"model"`
	Content      []wireBlock  `json:"content"`
	StopReason   *string      `json:"stop_reason"`
	StopSequence *string      `json:"stop_sequence"`
	StopDetails  *wireDetails `json:"stop_details"`
	Usage        *wireUsage   `json:"usage,omitempty"`
}

type wireDetails struct {
	Type        string  `json:"type"`
	Category    *string `json:"category"`
	Explanation *string `json:"explanation"`
}

type wireBlock struct {
	Type      string           `json:"type"`
	Text      *string          `json:"text,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     *json.RawMessage `json:"input,omitempty"`
	Thinking  *string          `json:"thinking,omitempty"`
	Signature *string          `json:"signature,omitempty"`
	Data      string           `json:"data,omitempty"`
}

type wireUsage struct {
	InputTokens              int                `json:"input_tokens"`
	CacheCreationInputTokens int                `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int                `json:"cache_read_input_tokens"`
	OutputTokens             int                `json:"output_tokens"`
	OutputTokensDetails      *wireOutputDetails `json:"output_tokens_details,omitempty"`
}

type wireOutputDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

func ptr[T any](v T) *T { return &v }

// render builds the complete message of a reply, filling ids and defaults.
func (s *Server) render(req *Request, rep Reply) wireMessage {
	msg := wireMessage{
		ID:    fmt.Sprintf("msg_fake_%d", req.N),
		Type:  "message",
		Role:  "assistant",
		Model: rep.Model,
	}
	if msg.Model == "" {
		msg.Model = req.Model
	}
	out, thought := 0, 0
	for _, th := range rep.Thinking {
		if th.Redacted != "" {
			msg.Content = append(msg.Content, wireBlock{Type: "redacted_thinking", Data: th.Redacted})
			thought += len(th.Redacted)
			continue
		}
		sig := th.Signature
		if sig == "" {
			sig = Sign(th.Text)
		}
		msg.Content = append(msg.Content, wireBlock{Type: "thinking", Thinking: ptr(th.Text), Signature: ptr(sig)})
		thought += len(th.Text)
	}
	out += thought
	if rep.Text != "" {
		msg.Content = append(msg.Content, wireBlock{Type: "text", Text: ptr(rep.Text)})
		out += len(rep.Text)
	}
	for _, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake_%03d", s.ids.Add(1))
		}
		in := c.Input
		if len(bytes.TrimSpace(in)) == 0 {
			in = json.RawMessage(`{}`)
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, in) == nil {
				in = buf.Bytes()
			}
		}
		msg.Content = append(msg.Content, wireBlock{Type: "tool_use", ID: id, Name: c.Name, Input: ptr(in)})
		out += len(in)
	}
	if msg.Content == nil {
		msg.Content = []wireBlock{}
	}
	stop := rep.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(rep.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	if rf := rep.Refusal; rf != nil {
		if rep.StopReason == "" {
			stop = "refusal"
		}
		msg.StopDetails = &wireDetails{Type: "refusal"}
		if rf.Category != "" {
			msg.StopDetails.Category = ptr(rf.Category)
		}
		if rf.Explanation != "" {
			msg.StopDetails.Explanation = ptr(rf.Explanation)
		}
	}
	msg.StopReason = &stop
	switch u := rep.Usage; {
	case rep.NoUsage:
	case u != nil:
		msg.Usage = &wireUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens}
		if u.ThinkingTokens > 0 {
			msg.Usage.OutputTokensDetails = &wireOutputDetails{ThinkingTokens: u.ThinkingTokens}
		}
	default:
		msg.Usage = &wireUsage{InputTokens: len(req.Raw)/4 + 1, OutputTokens: out/4 + 1}
		if thought > 0 {
			msg.Usage.OutputTokensDetails = &wireOutputDetails{ThinkingTokens: thought/4 + 1}
		}
	}
	return msg
}

// Sign is the signature the server gives a thinking block of this text
// when the script names none; the server accepts it back for that text.
func Sign(text string) string {
	sum := sha256.Sum256([]byte("anthropictest thinking\x00" + text))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// remember records the thinking a reply hands out, so checkThinking can
// tell it comes back unaltered.
func (s *Server) remember(msg wireMessage) {
	var thinking []wireBlock
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range msg.Content {
		switch b.Type {
		case "thinking":
			s.signed[*b.Signature] = *b.Thinking
			thinking = append(thinking, b)
		case "redacted_thinking":
			s.redacted[b.Data] = true
			thinking = append(thinking, b)
		case "tool_use":
			if len(thinking) > 0 {
				s.byCall[b.ID] = append([]wireBlock(nil), thinking...)
			}
		}
	}
}

// checkThinking rejects what the real API rejects about thinking sent back:
// a thinking block whose signature does not match its text, redacted data
// the server never handed out, and, while thinking is on, an assistant
// message of the tool loop in progress that lacks the thinking blocks its
// reply carried before a tool call (missing, altered or reordered).
func (s *Server) checkThinking(r *MessagesRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for j, b := range m.Content {
			switch b.Type {
			case "thinking":
				text, issued := s.signed[b.Signature]
				if (!issued || text != b.Thinking) && b.Signature != Sign(b.Thinking) {
					return fmt.Errorf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
			case "redacted_thinking":
				if !s.redacted[b.Data] {
					return fmt.Errorf("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", i, j)
				}
			}
		}
	}
	start := r.TurnStart()
	if start < 0 || (r.ThinkingType() != "enabled" && r.ThinkingType() != "adaptive") {
		return nil
	}
	for i := start; i < len(r.Messages); i++ {
		m := r.Messages[i]
		if m.Role != "assistant" {
			continue
		}
		var sent []wireBlock
		for _, b := range m.Content {
			switch b.Type {
			case "thinking":
				sent = append(sent, wireBlock{Type: b.Type, Thinking: ptr(b.Thinking), Signature: ptr(b.Signature)})
			case "redacted_thinking":
				sent = append(sent, wireBlock{Type: b.Type, Data: b.Data})
			case "tool_use":
				want, ok := s.byCall[b.ID]
				if ok && !sameThinking(sent, want) {
					return fmt.Errorf("messages.%d: the thinking blocks that preceded `tool_use` %s in the response must be passed back unmodified, in their original order, with the tool results (got %d of the %d blocks)", i, b.ID, len(sent), len(want))
				}
			}
		}
	}
	return nil
}

func sameThinking(got, want []wireBlock) bool {
	if len(got) != len(want) {
		return false
	}
	for k := range got {
		g, w := got[k], want[k]
		if g.Type != w.Type || g.Data != w.Data || deref(g.Thinking) != deref(w.Thinking) || deref(g.Signature) != deref(w.Signature) {
			return false
		}
	}
	return true
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

type sseEvent struct {
	name string
	data any
}

// events renders msg as the event stream the API sends.
func events(msg wireMessage, chunk int) []sseEvent {
	if chunk <= 0 {
		chunk = 4
	}
	start := msg
	start.Content = []wireBlock{}
	start.StopReason = nil
	start.StopDetails = nil
	if msg.Usage != nil {
		u := *msg.Usage
		u.OutputTokens = 1
		u.OutputTokensDetails = nil
		start.Usage = &u
	}
	evs := []sseEvent{
		{"message_start", map[string]any{"type": "message_start", "message": start}},
		{"ping", map[string]any{"type": "ping"}},
	}
	delta := func(i int, d map[string]any) {
		evs = append(evs, sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}})
	}
	for i, b := range msg.Content {
		var head wireBlock
		switch b.Type {
		case "text":
			head = wireBlock{Type: "text", Text: ptr("")}
		case "thinking":
			head = wireBlock{Type: "thinking", Thinking: ptr("")}
		case "tool_use":
			head = wireBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: ptr(json.RawMessage(`{}`))}
		default:
			head = b
		}
		evs = append(evs, sseEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": head}})
		switch b.Type {
		case "text":
			for _, p := range split(*b.Text, chunk) {
				delta(i, map[string]any{"type": "text_delta", "text": p})
			}
		case "thinking":
			for _, p := range split(*b.Thinking, chunk) {
				delta(i, map[string]any{"type": "thinking_delta", "thinking": p})
			}
			delta(i, map[string]any{"type": "signature_delta", "signature": *b.Signature})
		case "tool_use":
			if s := string(*b.Input); s != "{}" {
				for _, p := range split(s, chunk) {
					delta(i, map[string]any{"type": "input_json_delta", "partial_json": p})
				}
			}
		}
		evs = append(evs, sseEvent{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
	}
	md := map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil, "stop_details": msg.StopDetails}}
	if u := msg.Usage; u != nil {
		usage := map[string]any{"output_tokens": u.OutputTokens}
		if u.OutputTokensDetails != nil {
			usage["output_tokens_details"] = u.OutputTokensDetails
		}
		md["usage"] = usage
	}
	evs = append(evs,
		sseEvent{"message_delta", md},
		sseEvent{"message_stop", map[string]any{"type": "message_stop"}},
	)
	return evs
}

// split cuts s into pieces of at most n runes.
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *Request, rep Reply, msg wireMessage) {
	sse := fakewire.StartSSE(w, http.Header{"Request-Id": {fmt.Sprintf("req_fake_%d", req.N)}}, "\n")
	write := func(ev sseEvent) { _ = sse.JSON(ev.name, ev.data) }
	evs := events(msg, rep.Chunk)
	for i, ev := range evs {
		if f := rep.Fault; f != nil && i == f.After {
			if f.Error != nil {
				write(sseEvent{"error", errorBody(f.Error)})
				return
			}
			if f.Drop || f.Hang {
				s.interrupt(r, f)
			}
		}
		select {
		case <-r.Context().Done():
			return
		default:
		}
		write(ev)
	}
}

var statusOfType = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

func errorBody(e *Error) map[string]any {
	typ := e.Type
	if typ == "" {
		typ = "api_error"
		for t, st := range statusOfType {
			if st == e.Status {
				typ = t
			}
		}
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": e.Message}}
}

func writeError(w http.ResponseWriter, e *Error) {
	status := e.Status
	if status == 0 {
		status = statusOfType[e.Type]
		if status == 0 {
			status = http.StatusInternalServerError
		}
	}
	body := errorBody(&Error{Status: status, Type: e.Type, Message: e.Message})
	body["request_id"] = "req_fake_error"
	fakewire.WriteJSON(w, status, e.Header, body)
}
