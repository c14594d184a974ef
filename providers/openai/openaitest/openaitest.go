// Package openaitest is a fake OpenAI server for tests, speaking both the
// Chat Completions API (/v1/chat/completions) and the Responses API
// (/v1/responses). It decodes and records every request, checks it the way
// the real API does (every tool call answered by a tool message right after
// it, tools with object schemas, tool_choice only with tools, image parts
// with a supported media type and valid base64, text only in tool messages,
// no sampling settings on reasoning models and no reasoning effort on models
// that do not reason),
// and answers from a Handler in the real wire format: a chat.completion JSON
// body, or server-sent chat.completion.chunk events ending in
// "data: [DONE]" when the request streams; a response object, or the
// Responses API's typed events, on /v1/responses.
//
// On the Responses API a reply with Reasoning carries a reasoning item whose
// encrypted content (when the request includes "reasoning.encrypted_content")
// the server remembers: a later request that sends a function call of that
// reply without the reasoning item before it, or with its encrypted content
// altered, is refused with a 400 as the real API refuses it. A Responses
// request is also decoded into Messages (an assistant turn's items grouped
// into one assistant message), so Script, Round and ToolResult work the same
// on both APIs.
//
// Script routes requests to scripted conversations without any state: a
// conversation is picked by a predicate on the request (its first user
// message, its tools), and the reply by the number of assistant messages the
// request already holds. Parallel agents and subagents sharing one server
// therefore always get their own replies, in order.
package openaitest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
)

// Handler answers one request.
type Handler func(r *Request) Reply

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API base URL to configure clients with (it ends in /v1).
	URL string

	wire      *fakewire.Server
	handler   Handler
	opts      options
	log       fakewire.Log[*Request]
	callSeq   atomic.Int64
	created   int64
	requestNo atomic.Int64
	issued    issued // reasoning items handed out on the Responses API
}

// Option configures a Server.
type Option func(*options)

type options struct {
	noValidate      bool
	rejectToolsSSE  bool
	rejectParallel  bool
	rejectStreamUse bool
}

// WithoutValidation turns off the request checks, for tests that send
// malformed conversations on purpose.
func WithoutValidation() Option { return func(o *options) { o.noValidate = true } }

// RejectStreamedTools makes the server answer 400 to a streaming request
// that offers tools, like servers that cannot stream tool calls.
func RejectStreamedTools() Option { return func(o *options) { o.rejectToolsSSE = true } }

// RejectParallelToolCalls makes the server answer 400 unless a request with
// tools sends parallel_tool_calls=false.
func RejectParallelToolCalls() Option { return func(o *options) { o.rejectParallel = true } }

// RejectStreamOptions makes the server answer 400 to a request that sends
// stream_options, like servers that do not know it.
func RejectStreamOptions() Option { return func(o *options) { o.rejectStreamUse = true } }

// NewServer starts a fake server answering with h and closes it when the
// test ends. The test fails with every goroutine's stack if it is still
// running after fakewire.TestTimeout (3 minutes).
func NewServer(tb testing.TB, h Handler, opts ...Option) *Server {
	tb.Helper()
	s := &Server{handler: h, created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()}
	for _, o := range opts {
		o(&s.opts)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	mux.HandleFunc("POST /v1/responses", s.serveResponses)
	fakewire.Watchdog(tb, fakewire.TestTimeout)
	s.wire = fakewire.Start(mux)
	s.URL = s.wire.URL + "/v1"
	tb.Cleanup(s.Close)
	return s
}

// Close shuts the server down, releasing stalled replies. It is called
// automatically when the test ends.
func (s *Server) Close() { s.wire.Close() }

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []*Request { return s.log.All() }

// Count returns how many requests arrived.
func (s *Server) Count() int { return s.log.Count() }

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	var body bytes.Buffer
	if _, err := body.ReadFrom(hr.Body); err != nil {
		return
	}
	req, err := decodeRequest(body.Bytes())
	if err != nil {
		writeError(w, Reply{Status: 400, Error: &Error{Message: "We could not parse the JSON body of your request: " + err.Error(), Type: "invalid_request_error"}})
		return
	}
	req.API = "chat"
	s.answer(w, hr, req)
}

// answer logs, checks and answers a decoded request of either API.
func (s *Server) answer(w http.ResponseWriter, hr *http.Request, req *Request) {
	req.Header = hr.Header.Clone()
	req.Seq = int(s.requestNo.Add(1)) - 1
	s.log.Add(req)

	if !s.opts.noValidate {
		validate := Validate
		if req.API == "responses" {
			validate = s.validateResponses
		}
		if err := validate(req); err != nil {
			writeError(w, BadRequest(err.Error()))
			return
		}
	}
	switch {
	case s.opts.rejectToolsSSE && req.Stream && len(req.Tools) > 0:
		writeError(w, BadRequest("streaming is not supported with tools"))
		return
	case s.opts.rejectParallel && len(req.Tools) > 0 && (req.ParallelToolCalls == nil || *req.ParallelToolCalls):
		writeError(w, BadRequest("parallel tool calls are not supported; send parallel_tool_calls=false"))
		return
	case s.opts.rejectStreamUse && req.StreamOptions != nil:
		writeError(w, BadRequest("Unrecognized request argument supplied: stream_options"))
		return
	}

	rep := s.handler(req)
	if rep.Delay > 0 && !fakewire.Wait(hr, s.wire.Done(), rep.Delay) {
		return
	}
	if rep.Hangup {
		fakewire.Drop() // drop the connection before any byte
	}
	fakewire.AddHeader(w, rep.Header)
	if rep.Status >= 400 {
		writeError(w, rep)
		return
	}
	rep.ToolCalls = slices.Clone(rep.ToolCalls) // the script's reply is shared
	for i := range rep.ToolCalls {
		if rep.ToolCalls[i].ID == "" {
			rep.ToolCalls[i].ID = fmt.Sprintf("call_%d", s.callSeq.Add(1))
		}
	}
	if req.API == "responses" {
		out := s.responseObject(req, rep)
		if req.Stream {
			s.streamResponses(w, hr, rep, out)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	if req.Stream {
		s.stream(w, hr, req, rep)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.completion(req, rep))
}

// Reply is what the server answers to one request: an assistant message, an
// error, or a broken connection.
type Reply struct {
	Content   string
	Reasoning string // sent as reasoning_content
	Refusal   string
	ToolCalls []Call
	// FinishReason defaults to "tool_calls" when there are tool calls, else
	// "stop".
	FinishReason string
	// Usage defaults to counts derived from the sizes of request and reply.
	Usage *Usage
	// NoUsage leaves usage out of the answer altogether (no usage object, no
	// usage chunk), as some servers do.
	NoUsage bool
	// Model defaults to the requested model.
	Model string

	// Status, when 400 or more, answers an error with Error as the body's
	// error object (or Body verbatim when set).
	Status int
	Error  *Error
	Body   string
	// Header is added to the response (Retry-After, retry-after-ms, ...).
	Header http.Header

	// Delay waits this long before answering.
	Delay time.Duration
	// Hangup drops the connection without answering.
	Hangup bool
	// ChunkSize is the size in bytes of the text and argument fragments of a
	// streamed reply (default 3, so that everything spans several chunks).
	ChunkSize int
	// CutAfter > 0 drops the connection of a streamed reply after that many
	// data events (the first event is the role chunk).
	CutAfter int
	// CleanCut ends the body normally at CutAfter instead of dropping the
	// connection; either way no [DONE] is sent.
	CleanCut bool
	// StallAfter > 0 stops a streamed reply after that many data events and
	// waits until the client goes away.
	StallAfter int
}

// Call is one tool call of a reply. An empty ID is generated.
type Call struct {
	ID   string
	Name string
	Args string // raw JSON arguments
}

// Usage is a reply's token usage. Reasoning is the part of Completion spent
// thinking; Cached and CacheWrite are parts of Prompt.
type Usage struct {
	Prompt, Completion, Cached, CacheWrite, Reasoning int
}

// Error is an API error object.
type Error struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Text returns a plain text reply.
func Text(s string) Reply { return Reply{Content: s} }

// Tools returns a reply that calls tools.
func Tools(calls ...Call) Reply { return Reply{ToolCalls: calls} }

// ErrorReply returns an error response with OpenAI's error object.
func ErrorReply(status int, typ, code, message string) Reply {
	e := &Error{Message: message, Type: typ}
	if code != "" {
		e.Code = &code
	}
	return Reply{Status: status, Error: e}
}

// BadRequest is a 400 invalid_request_error.
func BadRequest(message string) Reply {
	return ErrorReply(400, "invalid_request_error", "", message)
}

// RateLimited is a 429 with the given Retry-After header value ("" for none).
func RateLimited(retryAfter string) Reply {
	r := ErrorReply(429, "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later.")
	if retryAfter != "" {
		r.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return r
}

// ServerError is a 500 server_error.
func ServerError() Reply {
	return ErrorReply(500, "server_error", "", "The server had an error while processing your request. Sorry about that!")
}

func writeError(w http.ResponseWriter, rep Reply) {
	status := rep.Status
	if status == 0 {
		status = 500
	}
	if rep.Body != "" {
		fakewire.WriteRaw(w, status, nil, "application/json", []byte(rep.Body))
		return
	}
	e := rep.Error
	if e == nil {
		e = &Error{Message: http.StatusText(status), Type: "server_error"}
	}
	fakewire.WriteJSON(w, status, nil, map[string]any{"error": e})
}

// Request is one decoded request.
type Request struct {
	Seq    int // arrival order, from 0
	Header http.Header
	Body   json.RawMessage // as received

	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Tools               []Tool          `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                json.RawMessage `json:"stop"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	// PromptCacheKey routes the request to a prompt cache.
	PromptCacheKey string `json:"prompt_cache_key"`

	// API is "chat" or "responses", the endpoint the request came to.
	API string `json:"-"`
	// Responses is the decoded body of a Responses API request (nil on Chat
	// Completions); Messages then holds its input grouped into messages.
	Responses *ResponsesBody `json:"-"`
}

// StreamOptions is the request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a request.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

// ContentPart is one part of a message's content array.
type ContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// Parts returns the content parts of a message whose content is an array
// (nil for a string).
func (m Message) Parts() []ContentPart {
	var parts []ContentPart
	if json.Unmarshal(m.Content, &parts) != nil {
		return nil
	}
	return parts
}

// Images returns the URLs of the message's image parts.
func (m Message) Images() []string {
	var out []string
	for _, p := range m.Parts() {
		if p.Type == "image_url" && p.ImageURL != nil {
			out = append(out, p.ImageURL.URL)
		}
	}
	return out
}

// Text returns the message content as text: the string, or its text parts
// joined.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// ToolCall is a tool call in an assistant message of a request.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a tool definition of a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

func decodeRequest(body []byte) (*Request, error) {
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	r.Body = append(json.RawMessage(nil), body...)
	return &r, nil
}

// FirstUser returns the text of the first user message.
func (r *Request) FirstUser() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Text()
		}
	}
	return ""
}

// System returns the text of the first system (or developer) message.
func (r *Request) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			return m.Text()
		}
	}
	return ""
}

// Round returns the number of assistant messages in the request: how many
// model calls of this conversation came before it.
func (r *Request) Round() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Last returns the last message.
func (r *Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// ToolNames lists the names of the offered tools.
func (r *Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// HasTool reports whether a tool of that name is offered.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// ToolResult returns the tool message answering callID.
func (r *Request) ToolResult(callID string) (Message, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m, true
		}
	}
	return Message{}, false
}

// Validate checks a request the way the Chat Completions API does and says
// what is wrong in the API's words.
func Validate(r *Request) error {
	if r.Model == "" {
		return fmt.Errorf("you must provide a model parameter")
	}
	if len(r.Messages) == 0 {
		return fmt.Errorf("'messages' must contain at least one message")
	}
	var pending map[string]bool // tool calls of the last assistant message not yet answered
	var pendingOrder []string
	for i, m := range r.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			return fmt.Errorf("an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", missing(pendingOrder, pending))
		}
		switch m.Role {
		case "system", "developer", "user":
			if len(m.Content) == 0 || string(m.Content) == "null" {
				return fmt.Errorf("invalid value for 'content' of messages[%d]: expected a string or an array of content parts", i)
			}
			if err := validateParts(m, i, m.Role == "user"); err != nil {
				return err
			}
		case "assistant":
			if len(m.ToolCalls) == 0 && (len(m.Content) == 0 || string(m.Content) == "null") {
				return fmt.Errorf("invalid message at messages[%d]: an assistant message needs 'content' or 'tool_calls'", i)
			}
			pending, pendingOrder = nil, nil
			for j, c := range m.ToolCalls {
				if c.ID == "" {
					return fmt.Errorf("missing required parameter: 'messages[%d].tool_calls[%d].id'", i, j)
				}
				if c.Type != "function" {
					return fmt.Errorf("invalid value for 'messages[%d].tool_calls[%d].type': %q", i, j, c.Type)
				}
				if c.Function.Name == "" {
					return fmt.Errorf("missing required parameter: 'messages[%d].tool_calls[%d].function.name'", i, j)
				}
				if pending == nil {
					pending = map[string]bool{}
				}
				if pending[c.ID] {
					return fmt.Errorf("duplicate tool_call_id %q in messages[%d]", c.ID, i)
				}
				pending[c.ID] = true
				pendingOrder = append(pendingOrder, c.ID)
			}
		case "tool":
			if err := validateParts(m, i, false); err != nil {
				return err
			}
			if !pending[m.ToolCallID] {
				return fmt.Errorf("invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'. messages[%d] answers %q", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		default:
			return fmt.Errorf("invalid value for 'messages[%d].role': %q", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", missing(pendingOrder, pending))
	}
	names := map[string]bool{}
	for i, t := range r.Tools {
		if t.Type != "function" {
			return fmt.Errorf("invalid value for 'tools[%d].type': %q", i, t.Type)
		}
		if t.Function.Name == "" {
			return fmt.Errorf("missing required parameter: 'tools[%d].function.name'", i)
		}
		if names[t.Function.Name] {
			return fmt.Errorf("duplicate tool name %q", t.Function.Name)
		}
		names[t.Function.Name] = true
		if len(t.Function.Parameters) > 0 {
			var obj map[string]any
			if json.Unmarshal(t.Function.Parameters, &obj) != nil {
				return fmt.Errorf("invalid schema for function %q: schema must be a JSON Schema of 'type: \"object\"'", t.Function.Name)
			}
			if typ, ok := obj["type"]; ok && typ != "object" {
				return fmt.Errorf("invalid schema for function %q: schema must be a JSON Schema of 'type: \"object\"', got 'type: %v'", t.Function.Name, typ)
			}
		}
	}
	if len(r.Tools) == 0 {
		if len(r.ToolChoice) > 0 {
			return fmt.Errorf("invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified")
		}
		if r.ParallelToolCalls != nil {
			return fmt.Errorf("invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified")
		}
	}
	if r.StreamOptions != nil && !r.Stream {
		return fmt.Errorf("the 'stream_options' parameter is only allowed when 'stream' is enabled")
	}
	return checkModelSettings(r.Model, r.Temperature, r.TopP, r.ReasoningEffort, "reasoning_effort")
}

// checkModelSettings refuses what OpenAI's models refuse: sampling settings
// other than the default on reasoning models (o1, o3, o4-mini, gpt-5 except
// its chat models), and a reasoning effort on models that do not reason
// (gpt-3.5, gpt-4, gpt-4o, gpt-4.1). Other model names accept everything.
func checkModelSettings(model string, temperature, topP *float64, effort, effortParam string) error {
	m := strings.ToLower(model)
	reasoning := !strings.Contains(m, "-chat") &&
		(len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9' || strings.HasPrefix(m, "gpt-5"))
	if reasoning {
		if temperature != nil && *temperature != 1 {
			return fmt.Errorf("Unsupported value: 'temperature' does not support %v with this model. Only the default (1) value is supported.", *temperature)
		}
		if topP != nil && *topP != 1 {
			return fmt.Errorf("Unsupported value: 'top_p' does not support %v with this model. Only the default (1) value is supported.", *topP)
		}
	}
	plain := strings.HasPrefix(m, "gpt-3.5") || strings.HasPrefix(m, "gpt-4")
	if plain && effort != "" {
		return fmt.Errorf("Unsupported parameter: '%s' is not supported with this model.", effortParam)
	}
	return nil
}

// validateParts checks the content array of message i, if it has one: text
// parts everywhere, image parts only where images is true (user messages).
func validateParts(m Message, i int, images bool) error {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return nil
	}
	var parts []ContentPart
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return fmt.Errorf("invalid type for 'messages[%d].content': expected one of a string or array of objects", i)
	}
	for j, p := range parts {
		switch {
		case p.Type == "text":
		case p.Type == "image_url" && images:
			if p.ImageURL == nil {
				return fmt.Errorf("missing required parameter: 'messages[%d].content[%d].image_url'", i, j)
			}
			if err := CheckImageURL(p.ImageURL.URL); err != nil {
				return fmt.Errorf("invalid 'messages[%d].content[%d].image_url.url': %v", i, j, err)
			}
		default:
			return fmt.Errorf("invalid value: '%s'. Supported values for 'messages[%d].content[%d].type' of a %s message are: %s", p.Type, i, j, m.Role, map[bool]string{true: "'text', 'image_url'", false: "'text'"}[images])
		}
	}
	return nil
}

// imageMIMEs are the image types the API reads.
var imageMIMEs = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// CheckImageURL checks an image URL the way the API does: http(s), or a
// base64 data URL of a supported image type whose payload decodes.
func CheckImageURL(u string) error {
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return nil
	}
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return fmt.Errorf("expected an http(s) URL or a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU=')")
	}
	mt, payload, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return fmt.Errorf("expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU=')")
	}
	if !imageMIMEs[mt] {
		return fmt.Errorf("expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got unsupported MIME type '%s'", mt)
	}
	if payload == "" {
		return fmt.Errorf("the image data is empty")
	}
	if _, err := base64.StdEncoding.DecodeString(payload); err != nil {
		return fmt.Errorf("you uploaded an unsupported image: the base64 data does not decode (%v)", err)
	}
	return nil
}

func missing(order []string, pending map[string]bool) string {
	var out []string
	for _, id := range order {
		if pending[id] {
			out = append(out, id)
		}
	}
	return strings.Join(out, ", ")
}

// replyUsage is the usage a reply reports.
func replyUsage(req *Request, rep Reply) Usage {
	u := Usage{Prompt: len(req.Body)/4 + 1, Completion: (len(rep.Content)+len(rep.Reasoning)+len(rep.Refusal))/4 + 1}
	for _, c := range rep.ToolCalls {
		u.Completion += (len(c.Name) + len(c.Args)) / 4
	}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	return u
}

func (s *Server) usage(req *Request, rep Reply) map[string]any {
	u := replyUsage(req, rep)
	pd := map[string]any{"cached_tokens": u.Cached, "audio_tokens": 0}
	if u.CacheWrite > 0 {
		pd["cache_write_tokens"] = u.CacheWrite
	}
	return map[string]any{
		"prompt_tokens":             u.Prompt,
		"completion_tokens":         u.Completion,
		"total_tokens":              u.Prompt + u.Completion,
		"prompt_tokens_details":     pd,
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning, "audio_tokens": 0},
	}
}

func finishReason(rep Reply) string {
	switch {
	case rep.FinishReason != "":
		return rep.FinishReason
	case len(rep.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func model(req *Request, rep Reply) string {
	if rep.Model != "" {
		return rep.Model
	}
	return req.Model
}

func (s *Server) completion(req *Request, rep Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if rep.Content != "" || (len(rep.ToolCalls) == 0 && rep.Refusal == "") {
		msg["content"] = rep.Content
	}
	if rep.Refusal != "" {
		msg["refusal"] = rep.Refusal
	}
	if rep.Reasoning != "" {
		msg["reasoning_content"] = rep.Reasoning
	}
	if len(rep.ToolCalls) > 0 {
		var calls []any
		for _, c := range rep.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-test%d", req.Seq),
		"object":  "chat.completion",
		"created": s.created,
		"model":   model(req, rep),
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(rep)}},
	}
	if !rep.NoUsage {
		out["usage"] = s.usage(req, rep)
	}
	return out
}

// chunks renders a reply as the data of its stream events.
func (s *Server) chunks(req *Request, rep Reply) [][]byte {
	size := rep.ChunkSize
	if size <= 0 {
		size = 3
	}
	withUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage && !rep.NoUsage
	id := fmt.Sprintf("chatcmpl-test%d", req.Seq)
	var out [][]byte
	add := func(delta map[string]any, finish any) {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": s.created, "model": model(req, rep),
			"system_fingerprint": "fp_test",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if withUsage {
			c["usage"] = nil
		}
		b, _ := json.Marshal(c)
		out = append(out, b)
	}
	add(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	for _, f := range split(rep.Reasoning, size) {
		add(map[string]any{"reasoning_content": f}, nil)
	}
	for _, f := range split(rep.Content, size) {
		add(map[string]any{"content": f}, nil)
	}
	for _, f := range split(rep.Refusal, size) {
		add(map[string]any{"refusal": f}, nil)
	}
	for i, c := range rep.ToolCalls {
		add(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, f := range split(c.Args, size) {
			add(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": f}}}}, nil)
		}
	}
	add(map[string]any{}, finishReason(rep))
	if withUsage {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": s.created, "model": model(req, rep),
			"choices": []any{}, "usage": s.usage(req, rep),
		})
		out = append(out, b)
	}
	return out
}

// split cuts s into pieces of about size bytes, never inside a UTF-8
// sequence.
func split(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, hr *http.Request, req *Request, rep Reply) {
	sse := fakewire.StartSSE(w, nil, "\n")
	events := s.chunks(req, rep)
	for i := 0; ; i++ {
		if rep.CutAfter > 0 && i == rep.CutAfter {
			if rep.CleanCut {
				return
			}
			fakewire.Drop()
		}
		if rep.StallAfter > 0 && i == rep.StallAfter {
			fakewire.Hang(hr, s.wire.Done())
			return
		}
		if i == len(events) {
			break
		}
		if err := sse.Event("", events[i]); err != nil {
			return
		}
	}
	_ = sse.Event("", []byte("[DONE]"))
}

// Conversation scripts one conversation. The reply to a matching request is
// Replies[round], round being the number of assistant messages the request
// already holds (see Request.Round).
type Conversation struct {
	// Match picks the requests of this conversation; nil matches all.
	Match func(r *Request) bool
	// Replies are the answers by round.
	Replies []Reply
	// Check, when set, inspects every request of the conversation; an error
	// is answered as a 400 carrying its message, which fails the caller.
	Check func(round int, r *Request) error
}

// Script answers from the first conversation that matches each request. A
// request no conversation matches, or whose round is past the end of its
// script, is answered with a 400 saying so.
func Script(convs ...Conversation) Handler {
	return func(r *Request) Reply {
		for _, c := range convs {
			if c.Match != nil && !c.Match(r) {
				continue
			}
			round := r.Round()
			if c.Check != nil {
				if err := c.Check(round, r); err != nil {
					return BadRequest("openaitest: check failed in round " + fmt.Sprint(round) + ": " + err.Error())
				}
			}
			if round >= len(c.Replies) {
				return BadRequest(fmt.Sprintf("openaitest: the script has %d replies, the request is round %d (first user message %q)", len(c.Replies), round, r.FirstUser()))
			}
			return c.Replies[round]
		}
		return BadRequest(fmt.Sprintf("openaitest: no conversation matches the request (first user message %q, tools %v)", r.FirstUser(), r.ToolNames()))
	}
}

// Sequence answers the n-th request it sees with replies[n], whatever the
// request; past the end it answers 400. For retry tests, where the same
// request is sent again.
func Sequence(replies ...Reply) Handler {
	var n atomic.Int64
	return func(r *Request) Reply {
		i := int(n.Add(1)) - 1
		if i >= len(replies) {
			return BadRequest(fmt.Sprintf("openaitest: the sequence has %d replies, this is request %d", len(replies), i))
		}
		return replies[i]
	}
}

// FirstUserContains matches requests whose first user message contains s.
func FirstUserContains(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.FirstUser(), s) }
}

// SystemContains matches requests whose system prompt contains s.
func SystemContains(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.System(), s) }
}

// HasTool matches requests that offer a tool of that name (a parent agent
// offers "task"; its subagents usually do not).
func HasTool(name string) func(*Request) bool {
	return func(r *Request) bool { return r.HasTool(name) }
}

// All matches requests every predicate matches.
func All(preds ...func(*Request) bool) func(*Request) bool {
	return func(r *Request) bool {
		for _, p := range preds {
			if !p(r) {
				return false
			}
		}
		return true
	}
}

// Not inverts a predicate.
func Not(pred func(*Request) bool) func(*Request) bool {
	return func(r *Request) bool { return !pred(r) }
}
