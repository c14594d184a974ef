package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Default timeouts of a Manager.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 120 * time.Second
	// terminateAfter is how long closing a stdio server waits for it to exit
	// after its stdin is closed before it is sent SIGTERM.
	terminateAfter = 5 * time.Second
	// maxToolPages bounds the pages of one tools/list, so a server whose
	// cursor never ends cannot keep us listing forever.
	maxToolPages = 1000
)

// MaxReplyBytes bounds one message from a server, the reply to a tool call
// included: a stdio line, an HTTP response body or a server-sent event. A
// larger reply fails the call it answers (an error result, never repeated)
// instead of being read without bound.
const MaxReplyBytes = 16 << 20

// Options configure a Manager. The zero value works.
type Options struct {
	// ConnectTimeout bounds connecting to a server and listing its tools
	// (DefaultConnectTimeout when 0).
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call (DefaultCallTimeout when 0).
	CallTimeout time.Duration
	// Getenv looks up variables for ${VAR} in the servers' configs
	// (os.LookupEnv when nil).
	Getenv func(string) (string, bool)
	// Stderr receives what stdio servers write on their stderr (discarded
	// when nil).
	Stderr io.Writer
	// OnListChanged, when set, is called after a server's tools were
	// listed again because it said they changed.
	OnListChanged func(server string)
	// Transport, when set, makes the transport for a server instead of the
	// one its config describes (tests use in-memory transports).
	Transport func(s Server) (sdk.Transport, error)
}

// Status of a server.
type Status string

// Statuses.
const (
	StatusConnected Status = "connected"
	StatusFailed    Status = "failed"
	StatusUntrusted Status = "untrusted"
	StatusPending   Status = "not started"
)

// Manager holds one long-lived session per MCP server. Sessions are opened
// by Start (all servers at once, before the agent is assembled, so the
// tools are known up front) and closed by Close.
type Manager struct {
	opts    Options
	servers []*conn
}

// NewManager prepares the servers; nothing is started before Start.
// Untrusted servers are listed (see Untrusted) but never started.
func NewManager(servers []Server, opts Options) *Manager {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	m := &Manager{opts: opts}
	for _, s := range servers {
		m.servers = append(m.servers, &conn{m: m, srv: s, status: StatusPending})
	}
	return m
}

// MarkUntrusted records that the named servers were not started because
// their project was not trusted, so that status listings can say so.
func (m *Manager) MarkUntrusted(servers []Server) {
	for _, s := range servers {
		m.servers = append(m.servers, &conn{m: m, srv: s, status: StatusUntrusted})
	}
}

// Start connects to every server at once and lists its tools. A server
// that cannot be reached is marked failed, with the reason, and its tools
// are absent; Start itself never fails. ctx bounds the whole start.
func (m *Manager) Start(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range m.servers {
		if c.status != StatusPending {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.start(ctx); err != nil {
				c.fail(err)
			}
		}()
	}
	wg.Wait()
}

// Close ends every session (a stdio server gets its stdin closed, then
// SIGTERM after 5 s) and returns the first error.
func (m *Manager) Close() error {
	var first error
	for _, c := range m.servers {
		c.mu.Lock()
		sess, stops := c.sess, c.stops
		c.sess, c.stops = nil, nil
		c.closed = true
		c.mu.Unlock()
		if sess != nil {
			if err := sess.Close(); err != nil && first == nil && !errors.Is(err, sdk.ErrConnectionClosed) {
				first = fmt.Errorf("closing MCP server %s: %w", c.srv.Name, err)
			}
		}
		for _, stop := range stops {
			stop()
		}
	}
	return first
}

// ServerStatus describes one server for listings.
type ServerStatus struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Scope  Scope  `json:"scope"`
	Kind   string `json:"transport"`
	Status Status `json:"status"`
	// Error says why a failed server failed.
	Error string `json:"error,omitempty"`
	// Tools are the names of the tools bound, as the model sees them.
	Tools []string `json:"tools"`
	// Tokens is what the tools' definitions cost in the model's context.
	Tokens int `json:"tokens"`
}

// Statuses lists the servers in name order.
func (m *Manager) Statuses() []ServerStatus {
	var out []ServerStatus
	for _, c := range m.servers {
		c.mu.Lock()
		st := ServerStatus{Name: c.srv.Name, Source: c.srv.Source, Scope: c.srv.Scope, Kind: c.srv.Config.Kind(), Status: c.status, Tools: []string{}}
		if c.err != nil {
			st.Error = c.err.Error()
		}
		tools := c.tools
		c.mu.Unlock()
		for _, t := range tools {
			st.Tools = append(st.Tools, t.spec.Name)
		}
		st.Tokens = specTokens(tools)
		out = append(out, st)
	}
	slices.SortStableFunc(out, func(a, b ServerStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// conn is one server and its session.
type conn struct {
	m   *Manager
	srv Server

	mu     sync.Mutex
	sess   *sdk.ClientSession
	cmd    *exec.Cmd // the running stdio server, for tests
	status Status
	err    error
	tools  []*Tool // in the server's order
	closed bool
	// reconnects counts the sessions opened after the first.
	reconnects int
	// reconnectMu lets one call at a time replace a broken session.
	reconnectMu sync.Mutex
	// sending says how the session tells whether a call's request was
	// written (set by connect).
	sending sendTracking
	// stops end the contexts the sessions were connected with.
	stops []func()
	// tail keeps the end of a stdio server's stderr, for failure reasons.
	tail *tailBuffer
}

// stderrTail is how much of a stdio server's stderr is kept.
const stderrTail = 2048

// stderrNote is the end of the server's stderr as a note for an error, or
// "" when it wrote nothing.
func (c *conn) stderrNote() string {
	c.mu.Lock()
	t := c.tail
	c.mu.Unlock()
	if t == nil {
		return ""
	}
	text := strings.TrimSpace(t.String())
	if text == "" {
		return ""
	}
	return "; its stderr ends with: " + text
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "")
}

func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status = StatusFailed
	c.err = err
	if c.sess != nil {
		go c.sess.Close()
		c.sess = nil
	}
}

// failed returns the reason the server failed, or nil.
func (c *conn) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == StatusFailed {
		return c.err
	}
	if c.closed {
		return errors.New("its session is closed")
	}
	return nil
}

func (c *conn) start(ctx context.Context) error {
	sess, err := c.connect(ctx)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, c.m.opts.ConnectTimeout)
	defer cancel()
	tools, err := listTools(lctx, sess)
	if err != nil {
		sess.Close()
		return fmt.Errorf("listing its tools: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		sess.Close()
		return errors.New("closed while starting")
	}
	c.sess = sess
	c.status = StatusConnected
	c.tools = c.wrap(tools)
	return nil
}

// connect opens a session within the connect timeout.
func (c *conn) connect(ctx context.Context) (*sdk.ClientSession, error) {
	cfg, err := c.srv.Config.Expand(c.srv.Name, c.m.opts.Getenv)
	if err != nil {
		return nil, err
	}
	var tr sdk.Transport
	var cmd *exec.Cmd
	if c.m.opts.Transport != nil {
		tr, err = c.m.opts.Transport(c.srv)
		if err != nil {
			return nil, err
		}
	} else {
		var errw io.Writer
		if cfg.Kind() == KindStdio {
			tail := &tailBuffer{max: stderrTail} // this process's own
			c.mu.Lock()
			c.tail = tail
			c.mu.Unlock()
			errw = tail
			if c.m.opts.Stderr != nil {
				errw = io.MultiWriter(c.m.opts.Stderr, tail)
			}
		}
		tr, cmd = transportFor(cfg, errw)
	}
	tr, sending := trackSends(tr)
	client := sdk.NewClient(&sdk.Implementation{Name: "deepagents", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			go c.relist()
		},
	})
	// Some transports (SSE) keep using the context they were connected
	// with for the life of the session, so it must outlive the connect:
	// the timeout and the caller's cancellation end it only until then.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	timedOut := make(chan struct{})
	timer := time.AfterFunc(c.m.opts.ConnectTimeout, func() { close(timedOut); stop() })
	unhook := context.AfterFunc(ctx, stop)
	sess, err := client.Connect(sctx, tr, nil)
	timer.Stop()
	unhook()
	if err != nil {
		stop()
		select {
		case <-timedOut:
			if ctx.Err() == nil {
				return nil, fmt.Errorf("no answer within %s (the connect timeout)", c.m.opts.ConnectTimeout)
			}
		default:
		}
		return nil, fmt.Errorf("cannot connect: %w%s", err, c.stderrNote())
	}
	c.mu.Lock()
	c.stops = append(c.stops, stop)
	c.sending = sending
	if cmd != nil {
		c.cmd = cmd
	}
	c.mu.Unlock()
	return sess, nil
}

// transportFor builds the SDK transport a config describes.
func transportFor(cfg ServerConfig, stderr io.Writer) (sdk.Transport, *exec.Cmd) {
	switch cfg.Kind() {
	case KindStdio:
		cmd := exec.Command(cfg.Command, cfg.Args...)
		cmd.Env = os.Environ()
		for k, v := range cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if stderr != nil {
			cmd.Stderr = stderr
		}
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, cmd
	case KindSSE:
		return &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: httpClient(cfg.Headers), MaxEventSize: MaxReplyBytes}, nil
	}
	return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: httpClient(cfg.Headers), MaxRetries: 5, MaxEventSize: MaxReplyBytes}, nil
}

// httpClient sends the configured headers with every request and caps every
// response body but an event stream (whose events the SDK caps) at
// MaxReplyBytes. It has no overall timeout, since the event stream of a
// session is long-lived: each request is bounded by its context (connect
// and call timeouts).
func httpClient(headers map[string]string) *http.Client {
	return &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: headers}}
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.Body != nil && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxReplyBytes}
	}
	return resp, err
}

// errReplyTooLarge is the read error of a reply past MaxReplyBytes.
var errReplyTooLarge = fmt.Errorf("the server's reply is larger than %d MiB", MaxReplyBytes>>20)

// cappedBody fails a read once more than left bytes have come.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errReplyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errReplyTooLarge
	}
	return n, err
}

// sendTracking says how a session tells whether a call's request was
// written.
type sendTracking int

const (
	// trackNone: the transport is unknown; only the SDK's refusal to send on
	// a closed connection proves a request unsent.
	trackNone sendTracking = iota
	// trackWrites: the connection writes one message per Write (stdio, a
	// pipe), which sendTracker observes.
	trackWrites
	// trackHTTP: each message is an HTTP request, whose writing an
	// httptrace hook observes.
	trackHTTP
)

// trackSends wraps tr, when it is a transport whose connections write one
// message per Write, so that a call's request is marked written once its
// Write returns; HTTP transports are observed through the request's trace
// instead (see callOnce). Other transports are returned as they are.
func trackSends(tr sdk.Transport) (sdk.Transport, sendTracking) {
	switch tr.(type) {
	case *sdk.CommandTransport, *sdk.InMemoryTransport, *sdk.IOTransport, *sdk.StdioTransport:
		return sendTracker{tr}, trackWrites
	case *sdk.StreamableClientTransport, *sdk.SSEClientTransport:
		return tr, trackHTTP
	}
	return tr, trackNone
}

// sent is the record of one tools/call attempt, carried in its context.
type sent struct{ wrote atomic.Bool }

type sentKey struct{}

type sendTracker struct{ sdk.Transport }

func (t sendTracker) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return sendTrackerConn{c}, nil
}

type sendTrackerConn struct{ sdk.Connection }

func (c sendTrackerConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.IsCall() && req.Method == "tools/call" {
		if s, ok := ctx.Value(sentKey{}).(*sent); ok {
			s.wrote.Store(true)
		}
	}
	return err
}

// listTools reads every page of tools/list.
func listTools(ctx context.Context, sess *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	params := &sdk.ListToolsParams{}
	for range maxToolPages {
		res, err := sess.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Tools...)
		if res.NextCursor == "" {
			return out, nil
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, fmt.Errorf("the server sent more than %d pages of tools", maxToolPages)
}

// relist lists the tools again after the server said they changed. Tools
// keep their wrappers (and so their names) when they stay; the new list
// replaces the old one.
func (c *conn) relist() {
	c.mu.Lock()
	sess := c.sess
	c.mu.Unlock()
	if sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.ConnectTimeout)
	defer cancel()
	tools, err := listTools(ctx, sess)
	if err != nil {
		return // the next call finds out whether the session is gone
	}
	c.mu.Lock()
	if c.sess == sess {
		c.tools = c.wrap(tools)
	}
	c.mu.Unlock()
	if f := c.m.opts.OnListChanged; f != nil {
		f(c.srv.Name)
	}
}

// session returns the live session, or why there is none.
func (c *conn) session() (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.status == StatusFailed:
		return nil, c.err
	case c.closed:
		return nil, errors.New("its session is closed")
	case c.sess == nil:
		return nil, errors.New("it is not connected")
	}
	return c.sess, nil
}

// errTimeout is a call that got no answer within the call timeout.
var errTimeout = errors.New("call timeout")

// call makes one tools/call. A call is never sent twice: only when the
// connection broke before the request was written (or an HTTP server
// answered that it no longer knows the session, so it ran nothing) is the
// session opened again, once, and the call sent on it; if that fails too
// the server is marked failed, and every later call fails at once. A call
// whose request was written and that got no usable reply — the connection
// broke, the reply was malformed or too large — fails, and the session is
// replaced by the next call that finds it broken.
func (c *conn) call(ctx context.Context, name string, args json.RawMessage) (*sdk.CallToolResult, error) {
	sess, err := c.session()
	if err != nil {
		return nil, &serverDownError{server: c.srv.Name, err: err}
	}
	res, again, err := c.callOnce(ctx, sess, name, args)
	if err == nil || !again {
		return res, err
	}
	sess, rerr := c.reconnect(ctx, sess)
	if rerr != nil {
		c.fail(fmt.Errorf("the connection broke (%v) and reconnecting failed: %w", err, rerr))
		return nil, &serverDownError{server: c.srv.Name, err: c.failed()}
	}
	res, again, err = c.callOnce(ctx, sess, name, args)
	if err != nil && again {
		c.fail(fmt.Errorf("the connection broke again after a reconnect: %w", err))
		return nil, &serverDownError{server: c.srv.Name, err: c.failed()}
	}
	return res, err
}

// callOnce sends one tools/call on sess. When it fails, again says whether
// the call may be sent once more on a new session: whether its request
// never reached the server.
func (c *conn) callOnce(ctx context.Context, sess *sdk.ClientSession, name string, args json.RawMessage) (_ *sdk.CallToolResult, again bool, _ error) {
	c.mu.Lock()
	tracking := c.sending
	c.mu.Unlock()
	st := &sent{}
	cctx, cancel := context.WithTimeoutCause(context.WithValue(ctx, sentKey{}, st), c.m.opts.CallTimeout, errTimeout)
	defer cancel()
	if tracking == trackHTTP {
		cctx = httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
			if w.Err == nil {
				st.wrote.Store(true)
			}
		}})
	}
	res, err := sess.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	switch {
	case err == nil:
		return res, false, nil
	case ctx.Err() != nil:
		return nil, false, err
	case errors.Is(context.Cause(cctx), errTimeout):
		return nil, false, fmt.Errorf("%w: no answer within %s", errTimeout, c.m.opts.CallTimeout)
	case !isTransportError(ctx, err):
		return nil, false, err // the server's own error answer
	case errors.Is(err, sdk.ErrConnectionClosed):
		// The SDK refused to send on a connection it knew was closed.
		return nil, true, err
	case tracking != trackNone && !st.wrote.Load():
		return nil, true, err
	case tracking == trackHTTP && errors.Is(err, sdk.ErrSessionMissing):
		// The server answered that it does not know the session: it ran
		// nothing.
		return nil, true, err
	}
	return nil, false, &notRepeatedError{err: err}
}

// notRepeatedError is a call whose request reached the server but that got
// no usable answer.
type notRepeatedError struct{ err error }

func (e *notRepeatedError) Error() string {
	return fmt.Sprintf("no usable reply after the call was sent (%v); the call may have run on the server, so it was not repeated", e.err)
}

func (e *notRepeatedError) Unwrap() error { return e.err }

// reconnect replaces the broken session old with a new one (unless another
// call did so already) and lists the tools again.
func (c *conn) reconnect(ctx context.Context, old *sdk.ClientSession) (*sdk.ClientSession, error) {
	c.reconnectMu.Lock()
	defer c.reconnectMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status == StatusFailed {
		return nil, c.err
	}
	if c.closed {
		return nil, errors.New("its session is closed")
	}
	if c.sess != old && c.sess != nil {
		return c.sess, nil // another call reconnected already
	}
	old.Close()
	c.sess = nil
	c.mu.Unlock()
	sess, err := c.connect(ctx)
	var tools []*sdk.Tool
	if err == nil {
		lctx, cancel := context.WithTimeout(ctx, c.m.opts.ConnectTimeout)
		tools, err = listTools(lctx, sess)
		cancel()
		if err != nil {
			sess.Close()
		}
	}
	c.mu.Lock()
	if err != nil {
		return nil, err
	}
	if c.closed {
		sess.Close()
		return nil, errors.New("its session is closed")
	}
	c.reconnects++
	c.sess = sess
	c.tools = c.wrap(tools)
	return sess, nil
}

// isTransportError tells a broken connection from an answer: an error
// response of the server (a JSON-RPC error), a timeout or the caller's
// cancellation is not a transport error. The SDK reports a request its
// transport could not send (a refused connection, a session the HTTP server
// no longer knows) as a JSON-RPC error of its own, which is one.
func isTransportError(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, errTimeout) {
		return false
	}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		return true
	}
	switch werr.Code {
	case codeServerClosing, codeClientClosing:
		return true
	case codeRejected:
		var ne net.Error
		var ue *url.Error
		return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing)
	}
	return false
}

// JSON-RPC error codes the SDK uses for its own transport failures.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// serverDownError is a call to a server that failed.
type serverDownError struct {
	server string
	err    error
}

func (e *serverDownError) Error() string {
	return fmt.Sprintf("MCP server %s is unavailable: %v. Its tools cannot be used in this session; do not call them again.", e.server, e.err)
}
