package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/kit"
)

// maxBodyMessage bounds how much of a non-JSON error body becomes the message.
const maxBodyMessage = 2000

// errStreamCut is the cause of a stream that ended before the server said it
// was finished.
var errStreamCut = errors.New("the response stream ended before the response was complete")

// mapError turns whatever the SDK returned into an *llm.APIError, keeping the
// provider's message verbatim. raw is the HTTP response of the call, when the
// SDK got one; it lets us read the status, headers and body even when the SDK
// could not decode the error body (servers that are only OpenAI-compatible
// often answer {"error": "text"} or {"detail": ...}). Context cancellation is
// returned as the context's cause, not as an API error, so it is never
// retried and the agent loop recognises it.
func (m *Model) mapError(ctx context.Context, err error, raw *http.Response) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A deadline of the HTTP client, not of the caller's context: treat it
		// as a network failure (the request timed out on the way).
		return &llm.APIError{Kind: llm.ErrKindNetwork, Provider: m.provider, Message: err.Error(), Err: err}
	}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		return err
	}

	var oe *sdk.Error
	if errors.As(err, &oe) {
		return m.statusError(oe.StatusCode, oe.Code, oe.Type, oe.Message, headerOf(oe.Response, raw), bodyOf(oe.Response), err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return m.streamError(se)
	}
	if raw != nil && raw.StatusCode >= 400 {
		// The SDK failed to decode the error body: classify from the raw
		// response instead.
		return m.statusError(raw.StatusCode, "", "", "", raw.Header, bodyOf(raw), err)
	}
	if isNetwork(err) {
		return &llm.APIError{Kind: llm.ErrKindNetwork, Provider: m.provider, Message: err.Error(), Err: err}
	}
	// A 200 response whose body was not the JSON we expected: the server is
	// at fault, and another attempt may well succeed.
	return &llm.APIError{Kind: llm.ErrKindServer, Provider: m.provider, Message: err.Error(), Err: err}
}

func headerOf(resps ...*http.Response) http.Header {
	for _, r := range resps {
		if r != nil && r.Header != nil {
			return r.Header
		}
	}
	return nil
}

// bodyOf reads an error response's body. The SDK leaves it re-readable.
func bodyOf(r *http.Response) []byte {
	if r == nil || r.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// statusError classifies an HTTP error response with the shared classifier
// of package kit.
func (m *Model) statusError(status int, code, typ, msg string, h http.Header, body []byte, err error) *llm.APIError {
	if msg == "" || code == "" || typ == "" {
		bmsg, bcode, btyp := parseErrorBody(body)
		if msg == "" {
			msg = bmsg
		}
		if code == "" {
			code = bcode
		}
		if typ == "" {
			typ = btyp
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &llm.APIError{Provider: m.provider, StatusCode: status, Message: msg, Err: err,
		RetryAfter: kit.RetryAfter(h, time.Now()),
		Kind:       kit.Classify(kit.Failure{Status: status, Tags: []string{typ, code}, Message: msg})}
}

// streamError classifies an error object that arrived inside an SSE stream
// (data: {"error": {...}}), which has no HTTP status of its own.
func (m *Model) streamError(se *ssestream.StreamError) *llm.APIError {
	msg, code, typ := parseErrorBody(se.Event.Data)
	if msg == "" {
		msg = se.Message
	}
	return &llm.APIError{Provider: m.provider, Message: msg, Err: se,
		Kind: kit.Classify(kit.Failure{Tags: []string{typ, code}, Message: msg})}
}

// parseErrorBody extracts message, code and type from an error body in any
// of the shapes OpenAI-compatible servers use:
//
//	{"error": {"message": ..., "code": ..., "type": ...}}   OpenAI, Ollama, llama.cpp
//	{"error": "text"}                                       some proxies
//	{"message": ..., "code": ..., "type": ...}              vLLM
//	{"detail": "text" | [...]}                              FastAPI servers
//
// Anything else that is not JSON becomes the message as text (trimmed and
// bounded).
func parseErrorBody(body []byte) (msg, code, typ string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return "", "", ""
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		if json.Valid(body) {
			var s string
			if json.Unmarshal(body, &s) == nil {
				return truncate(s), "", ""
			}
			return truncate(string(body)), "", ""
		}
		return truncate(strings.ToValidUTF8(string(body), "\uFFFD")), "", ""
	}
	if e, ok := doc["error"]; ok && string(e) != "null" {
		var s string
		if json.Unmarshal(e, &s) == nil {
			return s, "", ""
		}
		var inner map[string]json.RawMessage
		if json.Unmarshal(e, &inner) == nil {
			doc = inner
		}
	}
	msg = scalar(doc["message"])
	if msg == "" {
		msg = scalar(doc["detail"])
	}
	if msg == "" {
		if d, ok := doc["detail"]; ok {
			msg = truncate(string(d))
		}
	}
	return msg, scalar(doc["code"]), scalar(doc["type"])
}

// scalar renders a JSON string or number as text; other values as "".
func scalar(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxBodyMessage {
		return s
	}
	cut := maxBodyMessage
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// isNetwork reports whether err is a transport failure: refused or reset
// connections, timeouts, and bodies that ended early.
func isNetwork(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errStreamCut) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	s := strings.ToLower(err.Error())
	for _, p := range []string{"connection reset", "broken pipe", "connection refused", "unexpected eof",
		"server closed", "stream error", "http2:", "tls:", "no such host", "i/o timeout"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
