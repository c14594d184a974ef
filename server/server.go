// Package server serves agents over HTTP with the subset of the LangGraph
// Platform API that LangGraph's SDK clients and deep-agents-ui use:
// assistants (one per agent), threads (kept in a checkpoint saver), runs
// streamed as server-sent events whose events are stored so that a client
// can rejoin a stream where it left off, even after a restart.
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// AgentSpec is one agent the server offers, as an assistant whose graph_id
// is Name.
type AgentSpec struct {
	Name        string
	Description string
	Agent       *agent.Agent
}

// CORS says which browser origins, besides the server's own, may call the
// API. A request from any other origin is refused with 403, and gets no
// CORS header. "*" allows every origin, and needs a Token. No response
// allows credentials (cookies): clients send the token in a header.
type CORS struct {
	AllowOrigins []string
}

// Config configures a Server.
type Config struct {
	// Agents are the agents offered, one assistant each. At least one.
	Agents []AgentSpec
	// Saver keeps the threads' checkpoints. Required.
	Saver checkpoint.Saver
	// Store keeps the server's own records: threads' metadata, runs and
	// the events of every run. Nil keeps them in memory (lost on restart).
	Store Store
	// Token, when set, is the bearer token every request but GET /ok must
	// carry in its Authorization header.
	Token string
	// Hosts are the names, besides this machine's loopback ones
	// (localhost, 127.0.0.0/8, [::1]), that a request's Host header may
	// name when there is no Token ("*" for any; "name" or "name:port").
	// Without a token a request to any other name is refused with 403: a
	// web page that had its own name resolve to 127.0.0.1 (DNS rebinding)
	// would otherwise reach the server as if from its own origin. With a
	// Token, any Host is taken.
	Hosts []string
	// CORS configures cross-origin access.
	CORS CORS
	// MaxStreams caps the event streams open at once (runs/stream and
	// joined streams): one more is refused with 429 until one ends.
	// 0 means DefaultMaxStreams; negative, no cap.
	MaxStreams int
	// UI, when set, serves every request no API route takes (the web
	// UI's page and assets), without a token. A path the API serves with
	// other methods is a 405, not the UI's; the UI's own 404 and 405 are
	// answered as JSON errors.
	UI http.Handler
	// Heartbeat is how often a stream with no event gets a comment line
	// (10 s when 0).
	Heartbeat time.Duration
	// StreamWriteTimeout bounds how long one write of an event stream may
	// wait for the client to take it (1 minute when 0; negative, no
	// limit): a client that stops reading is cut off, and its stream slot
	// freed, instead of holding them until it goes.
	StreamWriteTimeout time.Duration
	// Logger receives errors that cannot be sent to a client; nil discards.
	Logger *slog.Logger
	// Run starts one run of agent a on thread; nil means a.Run. Set it to
	// wrap every run, e.g. to trace it (package otel's Run).
	Run func(ctx context.Context, thread string, a *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error]
	// Executor, when set, runs the runs instead of this process (Run is
	// then not used), and the server is one of a fleet that shares its
	// Store and Saver: it follows, joins and cancels runs another one
	// started, and does not take the runs it finds unfinished at start for
	// a stopped server's.
	//
	// The fleet's servers tell who runs a run by the Saver's leases (its
	// checkpoint.Leaser, under keys of their own, one per run): each holds
	// the lease of each run it accepted until the run ends, and adopts a
	// run going on whose lease is free. The Saver must therefore be one
	// database every server of the fleet reaches (as the Store must), not a
	// saver of its own process.
	//
	// Two servers may each accept a run of one thread at the same moment:
	// each checks the Store, and each orders only its own runs. The
	// Executor must run a thread's runs one at a time (the temporal one
	// runs each as a workflow that holds the thread's checkpoint lease, and
	// one workflow per thread run). Queues are each server's own: a run of
	// a thread whose run another server runs is refused with 409 whatever
	// its multitask_strategy (enqueue, interrupt and rollback included).
	Executor Executor
	// ApprovalModes, when set, lets clients choose each thread's approval
	// mode (modes.go); nil: a run that names one is refused.
	ApprovalModes *ApprovalModes
}

// Server is an http.Handler serving the API. Shutdown ends its open
// streams and waits for its runs to stop.
type Server struct {
	cfg    Config
	mux    *http.ServeMux
	log    *slog.Logger
	store  Store
	mem    *MemoryStore          // store, when it is one: events are stored as emitted
	agents map[string]*assistant // by assistant id and by graph id

	mu     sync.Mutex
	live   map[string]*liveRun   // runs accepted and not finished, by run id
	active map[string]*liveRun   // the running run of each busy thread
	queue  map[string][]*liveRun // runs waiting for their thread, in order
	// holder names this server in the leases of the fleet's runs it runs.
	holder string
	// deleting marks the threads being deleted: no run starts on one
	// until its records (and checkpoints) are gone.
	deleting map[string]bool

	modes     threadModes // each thread's approval mode (modes.go)
	heartbeat time.Duration
	table     []route      // the API's routes, for 405's Allow
	streams   atomic.Int64 // event streams open

	ctx    context.Context // cancelled by Shutdown: ends streams and runs
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New checks cfg and returns the server. Without an Executor, it first
// marks failed, in the store, the runs and threads a server stopped during
// left unfinished (see recoverStopped): one server uses a store at a time.
// With one, the store is a fleet's, whose other servers may be running
// the runs it finds unfinished: it adopts those going on whose server has
// let their lease go (stopped, or died and the lease expired), and marks
// failed those left pending that no server is going to start (see adopt).
func New(cfg Config) (*Server, error) {
	if len(cfg.Agents) == 0 {
		return nil, errors.New("server: no agents configured")
	}
	if cfg.Saver == nil {
		return nil, errors.New("server: no checkpoint saver configured")
	}
	if err := cfg.CORS.Check(cfg.Token != ""); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), log: cfg.Logger, store: cfg.Store,
		live: map[string]*liveRun{}, active: map[string]*liveRun{}, queue: map[string][]*liveRun{}, deleting: map[string]bool{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.heartbeat = cfg.Heartbeat
	if s.heartbeat <= 0 {
		s.heartbeat = defaultHeartbeat
	}
	if s.store == nil {
		s.store = NewMemoryStore()
	}
	s.mem, _ = s.store.(*MemoryStore)
	if s.cfg.Run == nil {
		s.cfg.Run = func(ctx context.Context, _ string, a *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
			return a.Run(ctx, in, opts...)
		}
	}
	s.agents = map[string]*assistant{}
	for _, a := range cfg.Agents {
		if a.Name == "" || a.Agent == nil {
			return nil, errors.New("server: an agent has no name or no agent")
		}
		as := newAssistant(a)
		s.modeAssistant(as)
		if _, dup := s.agents[a.Name]; dup {
			return nil, errors.New("server: two agents are named " + a.Name)
		}
		s.agents[a.Name] = as
		s.agents[as.ID] = as
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// What a server stopped during left unfinished is marked failed in the
	// store now, before any request. A failure is logged, not fatal: the
	// records are still reported failed as they are read (see current).
	// In a fleet, those are other servers' runs: only those whose server
	// stopped are adopted.
	if cfg.Executor != nil {
		s.holder = runner.LeaseHolder()
		s.adoptStopped()
	} else {
		rctx, rcancel := context.WithTimeout(s.ctx, recoverTimeout)
		if err := s.recoverStopped(rctx); err != nil {
			s.log.Error("recovering the runs a stopped server left", "err", err)
		}
		rcancel()
	}
	s.routes()
	return s, nil
}

// ServeHTTP refuses what a web page could send unasked (see guard),
// applies CORS and authentication, then serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.guard(w, r) {
		return
	}
	h, pattern := s.mux.Handler(r)
	var miss probe
	if pattern == "" {
		// No route: the mux's answer says whether the path is the API's
		// (405, with the methods it takes) or not (404).
		miss.header = http.Header{}
		h.ServeHTTP(&miss, r)
	} else if !s.serves(r.Method, r.URL.Path) {
		// A route took a word of the path as a run id that only names
		// another endpoint (GET /threads/t/runs/stream).
		pattern, miss.code = "", http.StatusMethodNotAllowed
	}
	// What no API route takes goes to the UI, if any: its page and assets
	// load without a token (the UI asks for it).
	ui := pattern == "" && s.cfg.UI != nil && miss.code != http.StatusMethodNotAllowed
	if s.cfg.Token != "" && r.URL.Path != "/ok" && !ui && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="deepagents"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	switch {
	case ui:
		// Its plain-text errors (no such file, a method it does not
		// take) are answered as JSON, as every API error is.
		s.cfg.UI.ServeHTTP(&jsonErrors{ResponseWriter: w, r: r}, r)
	case pattern == "":
		code, allow := miss.code, ""
		if code == http.StatusMethodNotAllowed {
			// Only the methods the path's routes take (the mux would also
			// list those of a route that takes "stream" as a run id).
			allow = strings.Join(s.allowed(r.URL.Path), ", ")
		}
		if allow == "" {
			code = http.StatusNotFound
		} else {
			w.Header().Set("Allow", allow)
		}
		writeError(w, code, errorDetail(code, r, allow))
	default:
		// Through the mux, which sets the request's path values.
		s.mux.ServeHTTP(w, r)
	}
}

// probe takes the answer of the mux's handler for a request no route
// matches: only its status and headers are kept.
type probe struct {
	header http.Header
	code   int
}

func (p *probe) Header() http.Header { return p.header }

func (p *probe) WriteHeader(code int) {
	if p.code == 0 {
		p.code = code
	}
}

func (p *probe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}

// errorDetail is the detail of a 404 (no route), a 405 (a method the
// route does not take; allow lists those it does) or another client error.
func errorDetail(code int, r *http.Request, allow string) string {
	switch code {
	case http.StatusNotFound:
		return fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)
	case http.StatusMethodNotAllowed:
	default:
		return fmt.Sprintf("%s: %s %s", http.StatusText(code), r.Method, r.URL.Path)
	}
	d := fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)
	if allow != "" {
		d += "; allowed: " + allow
	}
	return d
}

// jsonErrors turns a client error (4xx: no such file, a method the UI does
// not take, a bad path) the UI handler writes as anything but JSON into
// {"detail": ...}: a client of the API reads every error the same way.
// Other responses pass as they are.
type jsonErrors struct {
	http.ResponseWriter
	r       *http.Request
	started bool
	swallow bool // the handler's own error body is dropped
}

func (w *jsonErrors) WriteHeader(code int) {
	if w.started {
		w.ResponseWriter.WriteHeader(code) // logged as superfluous by net/http
		return
	}
	w.started = true
	h := w.Header()
	if code < 400 || code >= 500 || strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.swallow = true
	h.Del("Content-Length")
	writeError(w.ResponseWriter, code, errorDetail(code, w.r, h.Get("Allow")))
}

func (w *jsonErrors) Write(b []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *jsonErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// authorized says whether r carries the token: as "Authorization: Bearer
// TOKEN", the scheme in any case (RFC 7235), or as x-api-key, as the SDK
// also sends it.
func (s *Server) authorized(r *http.Request) bool {
	tok := ""
	scheme, cred, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		tok = strings.TrimSpace(cred)
	} else {
		tok = r.Header.Get("X-Api-Key")
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

// Shutdown ends open streams (each client sees its stream close after the
// events sent so far), cancels running runs and waits for them to stop or
// for ctx to end.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close is Shutdown without a deadline.
func (s *Server) Close() error { return s.Shutdown(context.Background()) }
