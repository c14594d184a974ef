// Package fakewire is the shared core of the fake provider servers
// (openaitest, anthropictest, geminitest): an HTTP test server whose hung
// replies are released on Close, a log of decoded requests, JSON and
// server-sent-event writers, and the faults every fake can play (a delay, a
// hang until the client gives up, a dropped connection, a listener that
// accepts connections and never answers).
package fakewire

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// TestTimeout bounds every test that talks to a fake server (see Watchdog):
// far above what any of them takes, far below go test's ten minutes.
const TestTimeout = 3 * time.Minute

// Watchdog ends the test binary, with every goroutine's stack, when tb (its
// cleanups included) is still running after d, so that a test whose client
// or server hangs fails at once with the hang in view instead of after go
// test's ten minutes. The fakes' constructors install it with TestTimeout.
func Watchdog(tb testing.TB, d time.Duration) {
	name := tb.Name()
	timer := time.AfterFunc(d, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("%s still running after %s: a fake provider server or its client hangs", name, d))
	})
	tb.Cleanup(func() { timer.Stop() })
}

// Server is a running fake. Close releases every handler that hangs.
type Server struct {
	// URL is the server's root, e.g. "http://127.0.0.1:41234".
	URL string

	ts   *httptest.Server
	done chan struct{}
	once sync.Once
}

// Start serves h on a local port until Close.
func Start(h http.Handler) *Server {
	s := &Server{done: make(chan struct{})}
	s.ts = httptest.NewServer(h)
	s.URL = s.ts.URL
	return s
}

// Close releases hung handlers, drops client connections and stops the
// server. It may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
}

// Done is closed when Close starts.
func (s *Server) Done() <-chan struct{} { return s.done }

// Log keeps decoded requests in arrival order. Its methods are safe for
// concurrent use.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add appends v and returns its position, from 0.
func (l *Log[T]) Add(v T) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
	return len(l.items) - 1
}

// All returns a copy of the log.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...)
}

// Count is the number of entries.
func (l *Log[T]) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}

// Last returns the latest entry, if any.
func (l *Log[T]) Last() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var zero T
	if len(l.items) == 0 {
		return zero, false
	}
	return l.items[len(l.items)-1], true
}

// AddHeader copies h into the response headers.
func AddHeader(w http.ResponseWriter, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
}

// WriteJSON answers status with body encoded as JSON, after adding h.
func WriteJSON(w http.ResponseWriter, status int, h http.Header, body any) {
	AddHeader(w, h)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// WriteRaw answers status with body as is, after adding h.
func WriteRaw(w http.ResponseWriter, status int, h http.Header, contentType string, body []byte) {
	AddHeader(w, h)
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Wait waits d, or until the client goes away or the server closes (done
// may be nil). It reports whether the full d passed.
func Wait(r *http.Request, done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-done:
	}
	return false
}

// Hang waits until the client goes away or the server closes (done may be
// nil): a server that has stopped talking.
func Hang(r *http.Request, done <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-done:
	}
}

// Drop aborts the handler and closes the connection; the client sees a
// reset or an unexpected EOF, after whatever was already flushed.
func Drop() { panic(http.ErrAbortHandler) }

// Hijack takes the connection over and closes it at once, writing nothing
// more; unlike Drop it works after the handler has flushed a body.
func Hijack(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		Drop()
	}
	if conn, _, err := hj.Hijack(); err == nil {
		conn.Close()
	}
}

// SSE writes a server-sent event stream, flushing after every event.
type SSE struct {
	w     http.ResponseWriter
	f     http.Flusher
	end   string
	count int
}

// StartSSE sends the 200 status and event-stream headers (plus h). End is
// the line break the provider uses ("\n" or "\r\n").
func StartSSE(w http.ResponseWriter, h http.Header, end string) *SSE {
	AddHeader(w, h)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &SSE{w: w, f: f, end: end}
	s.flush()
	return s
}

func (s *SSE) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// Event writes one event with an optional name and one data line.
func (s *SSE) Event(name string, data []byte) error {
	var err error
	if name != "" {
		_, err = fmt.Fprintf(s.w, "event: %s%sdata: %s%s%s", name, s.end, data, s.end, s.end)
	} else {
		_, err = fmt.Fprintf(s.w, "data: %s%s%s", data, s.end, s.end)
	}
	s.flush()
	s.count++
	return err
}

// JSON writes one event whose data is v encoded as JSON.
func (s *SSE) JSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.Event(name, b)
}

// Count is the number of events written.
func (s *SSE) Count() int { return s.count }

// Silent starts a listener that accepts connections and never reads or
// writes a byte, and returns its URL ("http://127.0.0.1:PORT"). It stops
// when the test ends.
func Silent(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}
