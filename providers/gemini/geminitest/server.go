// Package geminitest is a fake Gemini Developer API for tests: an
// httptest server that speaks the generativelanguage v1beta REST wire format
// (models/{model}:generateContent and :streamGenerateContent?alt=sse),
// records every request, checks its structure the way the real API does,
// and answers from a Handler. Like the API, it refuses a thought signature
// it did not issue or that comes back on another part ("Corrupted thought
// signature."), and on Gemini 3 models a function call of the current turn
// without one (the documented placeholder signature passes); it checks image
// parts (MIME type, base64 data) and accepts images in function responses
// on Gemini 3 models only. Replies can think (Thought, ThoughtSignature),
// sign text and calls, refuse (BlockReason, a SAFETY FinishReason) and leave
// usage out (NoUsage). Point gemini.Config.BaseURL at Server.URL
// (any API key works unless WithAPIKey is given):
//
//	m, _ := gemini.New(ctx, gemini.Config{Model: "gemini-2.5-flash", APIKey: "test", BaseURL: srv.URL})
//
// Replies can be routed by inspecting the request, so one server can play a
// parent agent and its subagents at once:
//
//	srv := geminitest.NewServer(t, geminitest.Routes(
//		geminitest.Route{Match: geminitest.DeclaresFunction("task"), Handler: geminitest.Turns(parent...)},
//		geminitest.Route{Match: geminitest.FirstUserContains("research"), Handler: geminitest.Turns(child...)},
//	))
package geminitest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
)

// Request is one recorded API call.
type Request struct {
	// Model is the model id from the path, e.g. "gemini-2.5-flash".
	Model string
	// Stream is true for :streamGenerateContent.
	Stream bool
	// Query is the URL query (alt=sse for streams).
	Query string
	// APIKey is the x-goog-api-key header (or the key query parameter).
	APIKey string
	Header http.Header
	Raw    []byte
	Body   GenerateContentRequest
	// Invalid is Validate's verdict on the body (nil when it passed).
	Invalid error
}

// Turn is the number of model turns already in the conversation: 0 for the
// first call of a conversation, 1 after one model reply, and so on.
func (r *Request) Turn() int {
	n := 0
	for _, c := range r.Body.Contents {
		if c.Role == "model" {
			n++
		}
	}
	return n
}

// FirstUserText is the text of the first user turn (its text parts joined).
func (r *Request) FirstUserText() string {
	for _, c := range r.Body.Contents {
		if c.Role == "user" || c.Role == "" {
			if t := contentText(c); t != "" {
				return t
			}
		}
	}
	return ""
}

// LastUserText is the text of the last user turn that has text.
func (r *Request) LastUserText() string {
	for i := len(r.Body.Contents) - 1; i >= 0; i-- {
		c := r.Body.Contents[i]
		if c.Role == "user" || c.Role == "" {
			if t := contentText(c); t != "" {
				return t
			}
		}
	}
	return ""
}

// SystemText is the system instruction's text.
func (r *Request) SystemText() string {
	if r.Body.SystemInstruction == nil {
		return ""
	}
	return contentText(*r.Body.SystemInstruction)
}

// Functions lists the declared function names in order.
func (r *Request) Functions() []string {
	var names []string
	for _, t := range r.Body.Tools {
		for _, d := range t.FunctionDeclarations {
			names = append(names, d.Name)
		}
	}
	return names
}

// Declares reports whether a function with this name is declared.
func (r *Request) Declares(name string) bool {
	for _, n := range r.Functions() {
		if n == name {
			return true
		}
	}
	return false
}

// FunctionResponses returns the function responses of the last content (the
// results the model is being asked to react to), in order.
func (r *Request) FunctionResponses() []FunctionResponse {
	if len(r.Body.Contents) == 0 {
		return nil
	}
	var out []FunctionResponse
	for _, p := range r.Body.Contents[len(r.Body.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}

func contentText(c Content) string {
	var b strings.Builder
	for _, p := range c.Parts {
		if !p.Thought {
			b.WriteString(p.TextOf())
		}
	}
	return b.String()
}

// Reply is the server's answer to one request: a successful response built
// from Thought, Text and Calls (plus any raw Parts), or, when Status is set,
// an error; Hangup and CutAfter simulate broken connections.
type Reply struct {
	// Thought is a thought-summary part sent first.
	Thought string
	// ThoughtSignature is a thought signature sent on the thought part (in a
	// stream, on its last piece).
	ThoughtSignature []byte
	// Text is the answer text. Streams send it in several chunks.
	Text string
	// TextSignature is a thought signature sent on the answer text (in a
	// stream, on its last piece), or alone on an empty text part when Text is
	// empty.
	TextSignature []byte
	// Calls are the function calls, one part each, after the text.
	Calls []Call
	// Parts are extra raw parts appended after the above.
	Parts []Part
	// FinishReason defaults to "STOP".
	FinishReason string
	// NoFinish leaves the finish reason out: a stream then ends cleanly
	// without its final chunk, as when a proxy closes it early.
	NoFinish bool
	// BlockReason, when set, answers with promptFeedback.blockReason and no
	// candidates.
	BlockReason string
	// Usage overrides the counted usage.
	Usage *UsageMetadata
	// NoUsage leaves usageMetadata out of the response (every chunk).
	NoUsage bool
	// FinishMessage explains a finish reason such as SAFETY.
	FinishMessage string
	// BlockReasonMessage explains a BlockReason.
	BlockReasonMessage string
	// ModelVersion defaults to the request's model.
	ModelVersion string

	// Status, when not 0, makes the reply an error with this HTTP status and
	// a google.rpc.Status body of Message, ErrorStatus (derived from the code
	// when empty) and Details.
	Status      int
	Message     string
	ErrorStatus string
	Details     []map[string]any
	// Header is added to the HTTP response (e.g. Retry-After).
	Header http.Header
	// RawBody, when set, replaces the error body (e.g. plain text).
	RawBody string

	// Hangup closes the connection without writing a response.
	Hangup bool
	// CutAfter > 0 makes a stream drop the connection abruptly after that
	// many chunks (the client sees an unexpected EOF); when it equals the
	// number of chunks, the final chunk is sent first. Ignored by
	// generateContent.
	CutAfter int
	// StallAfter > 0 makes a stream stop after that many chunks, without
	// ending, and wait until the client goes away.
	StallAfter int
	// StreamError, when set, is sent as an SSE error event after the chunks
	// (a stream that fails mid-way with an API error).
	StreamError *ErrorStatus
	// Delay waits before answering, or until the client goes away.
	Delay time.Duration
}

// Call is one function call of a reply.
type Call struct {
	ID        string
	Name      string
	Args      map[string]any
	Signature []byte
}

// Text is a reply that answers with text.
func Text(s string) Reply { return Reply{Text: s} }

// Calls is a reply that calls functions.
func Calls(calls ...Call) Reply { return Reply{Calls: calls} }

// Fail is an error reply with an HTTP status and the API's message.
func Fail(status int, message string) Reply { return Reply{Status: status, Message: message} }

// Handler picks the reply to a request.
type Handler func(r *Request) Reply

// Sequence answers the n-th request with the n-th reply, whatever it is;
// for a single conversation. Past the end it fails with 400.
func Sequence(replies ...Reply) Handler {
	var n atomic.Int64
	return func(r *Request) Reply {
		i := int(n.Add(1)) - 1
		if i >= len(replies) {
			return exhausted(fmt.Sprintf("request %d", i+1))
		}
		return replies[i]
	}
}

// Turns answers by the conversation's turn (Request.Turn): reply i answers
// the request with i model turns in it. Stateless, so concurrent
// conversations (parallel subagents) never race for replies.
func Turns(replies ...Reply) Handler {
	return func(r *Request) Reply {
		i := r.Turn()
		if i >= len(replies) {
			return exhausted(fmt.Sprintf("turn %d", i))
		}
		return replies[i]
	}
}

func exhausted(what string) Reply {
	return Reply{Status: http.StatusBadRequest, Message: "geminitest: no reply scripted for " + what}
}

// Route sends the requests that Match accepts to Handler.
type Route struct {
	Name    string
	Match   func(r *Request) bool
	Handler Handler
}

// Routes answers with the first route whose Match accepts the request (a nil
// Match accepts all); with none, it fails with 400.
func Routes(routes ...Route) Handler {
	return func(r *Request) Reply {
		for _, rt := range routes {
			if rt.Match == nil || rt.Match(r) {
				return rt.Handler(r)
			}
		}
		return Reply{Status: http.StatusBadRequest, Message: fmt.Sprintf("geminitest: no route for the request (first user text %q)", r.FirstUserText())}
	}
}

// FirstUserContains matches conversations whose first user text contains s.
func FirstUserContains(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.FirstUserText(), s) }
}

// LastUserContains matches requests whose last user text contains s.
func LastUserContains(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.LastUserText(), s) }
}

// All matches requests that every matcher accepts.
func All(ms ...func(*Request) bool) func(*Request) bool {
	return func(r *Request) bool {
		for _, m := range ms {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// Not matches the requests m rejects.
func Not(m func(*Request) bool) func(*Request) bool {
	return func(r *Request) bool { return !m(r) }
}

// SystemContains matches requests whose system instruction contains s.
func SystemContains(s string) func(*Request) bool {
	return func(r *Request) bool { return strings.Contains(r.SystemText(), s) }
}

// DeclaresFunction matches requests that declare a function with this name.
func DeclaresFunction(name string) func(*Request) bool {
	return func(r *Request) bool { return r.Declares(name) }
}

// Server is a running fake API.
type Server struct {
	// URL is the base URL to use as gemini.Config.BaseURL.
	URL string

	wire    *fakewire.Server
	handler Handler
	apiKey  string
	lenient bool

	mu     sync.Mutex
	issued map[string]string // signature (standard base64) -> the part it was sent on

	log fakewire.Log[*Request]
}

// Option configures a Server.
type Option func(*Server)

// WithAPIKey makes the server reject requests that do not carry this key,
// the way the real API does (400 INVALID_ARGUMENT, reason API_KEY_INVALID).
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// Lenient answers requests that fail Validate instead of rejecting them with
// 400 (the verdict is still recorded in Request.Invalid).
func Lenient() Option { return func(s *Server) { s.lenient = true } }

// NewServer starts a server answering with h; it is closed when the test
// ends. The test fails with every goroutine's stack if it is still running
// after fakewire.TestTimeout (3 minutes).
func NewServer(t testing.TB, h Handler, opts ...Option) *Server {
	fakewire.Watchdog(t, fakewire.TestTimeout)
	s := &Server{handler: h}
	for _, o := range opts {
		o(s)
	}
	s.wire = fakewire.Start(http.HandlerFunc(s.serve))
	s.URL = s.wire.URL
	t.Cleanup(s.Close)
	return s
}

// Close shuts the server down, releasing delayed and stalled replies.
func (s *Server) Close() { s.wire.Close() }

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []*Request { return s.log.All() }

// Invalid returns the validation failures of all requests so far.
func (s *Server) Invalid() []error {
	var errs []error
	for _, r := range s.Requests() {
		if r.Invalid != nil {
			errs = append(errs, r.Invalid)
		}
	}
	return errs
}

var statusNames = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
	503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	raw, _ := io.ReadAll(hr.Body)
	// Paths look like /v1beta/models/gemini-2.5-flash:generateContent.
	path := strings.TrimPrefix(hr.URL.Path, "/")
	version, rest, _ := strings.Cut(path, "/")
	rest = strings.TrimPrefix(rest, "models/")
	model, method, ok := strings.Cut(rest, ":")
	if hr.Method != http.MethodPost || version != "v1beta" || !ok || (method != "generateContent" && method != "streamGenerateContent") {
		writeError(w, ErrorStatus{Code: 404, Status: "NOT_FOUND", Message: fmt.Sprintf("geminitest: unknown endpoint %s %s", hr.Method, hr.URL.Path)})
		return
	}
	req := &Request{Model: model, Stream: method == "streamGenerateContent", Query: hr.URL.RawQuery,
		APIKey: hr.Header.Get("x-goog-api-key"), Header: hr.Header.Clone(), Raw: raw}
	if req.APIKey == "" {
		req.APIKey = hr.URL.Query().Get("key")
	}
	body, err := DecodeRequest(raw)
	var sigErr error
	if err != nil {
		req.Invalid = err
	} else {
		req.Body = *body
		req.Invalid = Validate(body)
		if req.Invalid == nil {
			sigErr = s.checkSignatures(req)
			req.Invalid = sigErr
		}
	}
	if req.Stream && hr.URL.Query().Get("alt") != "sse" {
		req.Invalid = fmt.Errorf("streamGenerateContent without alt=sse (query %q)", hr.URL.RawQuery)
	}
	s.log.Add(req)

	switch {
	case s.apiKey != "" && req.APIKey != s.apiKey:
		writeError(w, ErrorStatus{Code: 400, Status: "INVALID_ARGUMENT", Message: "API key not valid. Please pass a valid API key.",
			Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}})
		return
	case sigErr != nil && !s.lenient:
		writeError(w, ErrorStatus{Code: 400, Status: "INVALID_ARGUMENT", Message: sigErr.Error()})
		return
	case req.Invalid != nil && !s.lenient:
		writeError(w, ErrorStatus{Code: 400, Status: "INVALID_ARGUMENT", Message: "geminitest: invalid request: " + req.Invalid.Error()})
		return
	}

	rep := s.handler(req)
	if rep.Delay > 0 && !fakewire.Wait(hr, s.wire.Done(), rep.Delay) {
		return
	}
	fakewire.AddHeader(w, rep.Header)
	switch {
	case rep.Hangup:
		fakewire.Hijack(w)
	case rep.Status != 0:
		if rep.RawBody != "" {
			fakewire.WriteRaw(w, rep.Status, nil, "text/plain", []byte(rep.RawBody))
			return
		}
		st := rep.ErrorStatus
		if st == "" {
			st = statusNames[rep.Status]
		}
		writeError(w, ErrorStatus{Code: rep.Status, Message: rep.Message, Status: st, Details: rep.Details})
	case req.Stream:
		s.stream(w, hr, req, rep)
	default:
		resp := whole(req, rep)
		s.issue(resp)
		fakewire.WriteJSON(w, http.StatusOK, nil, resp)
	}
}

func writeError(w http.ResponseWriter, st ErrorStatus) {
	fakewire.WriteJSON(w, st.Code, nil, ErrorBody{Error: st})
}

func str(s string) *string { return &s }

// parts builds the reply's parts in order: thought, text, calls, raw parts.
func (rep Reply) parts() []Part {
	var ps []Part
	if rep.Thought != "" {
		ps = append(ps, Part{Text: str(rep.Thought), Thought: true, ThoughtSignature: b64(rep.ThoughtSignature)})
	}
	if rep.Text != "" || len(rep.TextSignature) > 0 {
		ps = append(ps, Part{Text: str(rep.Text), ThoughtSignature: b64(rep.TextSignature)})
	}
	for _, c := range rep.Calls {
		ps = append(ps, Part{FunctionCall: &FunctionCall{ID: c.ID, Name: c.Name, Args: c.Args}, ThoughtSignature: b64(c.Signature)})
	}
	return append(ps, rep.Parts...)
}

func b64(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (rep Reply) usage(req *Request) *UsageMetadata {
	if rep.NoUsage {
		return nil
	}
	if rep.Usage != nil {
		return rep.Usage
	}
	out := (len(rep.Text) + len(rep.Thought)) / 4
	for _, c := range rep.Calls {
		b, _ := json.Marshal(c.Args)
		out += (len(c.Name) + len(b)) / 4
	}
	in := len(req.Raw)/4 + 1
	return &UsageMetadata{PromptTokenCount: in, CandidatesTokenCount: out + 1, TotalTokenCount: in + out + 1}
}

func (rep Reply) version(req *Request) string {
	if rep.ModelVersion != "" {
		return rep.ModelVersion
	}
	return req.Model
}

func (rep Reply) finish() string {
	if rep.NoFinish {
		return ""
	}
	if rep.FinishReason != "" {
		return rep.FinishReason
	}
	return "STOP"
}

func whole(req *Request, rep Reply) GenerateContentResponse {
	resp := GenerateContentResponse{UsageMetadata: rep.usage(req), ModelVersion: rep.version(req), ResponseID: "resp-1"}
	if rep.BlockReason != "" {
		resp.PromptFeedback = &PromptFeedback{BlockReason: rep.BlockReason, BlockReasonMessage: rep.BlockReasonMessage}
		return resp
	}
	resp.Candidates = []Candidate{{Content: &Content{Role: "model", Parts: rep.parts()}, FinishReason: rep.finish(), FinishMessage: rep.FinishMessage}}
	return resp
}

// chunks splits the reply the way the API streams: text in several pieces,
// each function call in a chunk of its own, the finish reason on the last.
func chunks(req *Request, rep Reply) []GenerateContentResponse {
	if rep.BlockReason != "" {
		return []GenerateContentResponse{whole(req, rep)}
	}
	var groups [][]Part
	if rep.Thought != "" {
		pieces := split(rep.Thought)
		for i, piece := range pieces {
			p := Part{Text: str(piece), Thought: true}
			if i == len(pieces)-1 {
				p.ThoughtSignature = b64(rep.ThoughtSignature)
			}
			groups = append(groups, []Part{p})
		}
	}
	if rep.Text != "" {
		pieces := split(rep.Text)
		for i, piece := range pieces {
			p := Part{Text: str(piece)}
			if i == len(pieces)-1 {
				p.ThoughtSignature = b64(rep.TextSignature)
			}
			groups = append(groups, []Part{p})
		}
	} else if len(rep.TextSignature) > 0 {
		groups = append(groups, []Part{{Text: str(""), ThoughtSignature: b64(rep.TextSignature)}})
	}
	for _, c := range rep.Calls {
		groups = append(groups, []Part{{FunctionCall: &FunctionCall{ID: c.ID, Name: c.Name, Args: c.Args}, ThoughtSignature: b64(c.Signature)}})
	}
	if len(rep.Parts) > 0 {
		groups = append(groups, rep.Parts)
	}
	if len(groups) == 0 {
		groups = append(groups, nil)
	}
	usage := rep.usage(req)
	out := make([]GenerateContentResponse, len(groups))
	for i, g := range groups {
		var up *UsageMetadata
		if usage != nil {
			u := *usage
			if i < len(groups)-1 {
				u.CandidatesTokenCount = usage.CandidatesTokenCount * (i + 1) / len(groups)
				u.TotalTokenCount = u.PromptTokenCount + u.CandidatesTokenCount
			}
			up = &u
		}
		c := Candidate{Content: &Content{Role: "model", Parts: g}}
		if g == nil {
			c.Content = nil
		}
		if i == len(groups)-1 {
			c.FinishReason = rep.finish()
			c.FinishMessage = rep.FinishMessage
		}
		out[i] = GenerateContentResponse{Candidates: []Candidate{c}, UsageMetadata: up, ModelVersion: rep.version(req), ResponseID: "resp-1"}
	}
	return out
}

// split cuts text into up to three pieces at spaces.
func split(s string) []string {
	words := strings.SplitAfter(s, " ")
	if len(words) < 3 {
		return []string{s}
	}
	n := (len(words) + 2) / 3
	var out []string
	for i := 0; i < len(words); i += n {
		out = append(out, strings.Join(words[i:min(i+n, len(words))], ""))
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, hr *http.Request, req *Request, rep Reply) {
	sse := fakewire.StartSSE(w, nil, "\r\n")
	chs := chunks(req, rep)
	for _, ch := range chs {
		s.issue(ch)
	}
	cut := rep.CutAfter > 0 && rep.CutAfter <= len(chs)
	if cut {
		chs = chs[:rep.CutAfter]
	}
	if n := len(chs); rep.StreamError != nil && n > 0 && len(chs[n-1].Candidates) > 0 {
		// The error takes the place of the finish.
		chs[n-1].Candidates[0].FinishReason = ""
	}
	for i, ch := range chs {
		if rep.StallAfter > 0 && i == rep.StallAfter {
			fakewire.Hang(hr, s.wire.Done())
			return
		}
		if err := sse.JSON("", ch); err != nil || hr.Context().Err() != nil {
			return
		}
	}
	switch {
	case rep.StreamError != nil:
		_ = sse.JSON("", ErrorBody{Error: *rep.StreamError})
	case cut:
		// Drop the connection mid-body: the client sees an unexpected EOF.
		fakewire.Hijack(w)
	}
}
