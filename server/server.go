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
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
)

// AgentSpec is one agent the server offers, as an assistant whose graph_id
// is Name.
type AgentSpec struct {
	Name        string
	Description string
	Agent       *agent.Agent
}

// CORS says which browser origins may call the API. Empty AllowOrigins
// sends no CORS headers (same-origin only); "*" allows any origin.
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
	// CORS configures cross-origin access.
	CORS CORS
	// UI, when set, is mounted at "/" for every path the API does not
	// serve (the web UI's assets).
	UI http.Handler
	// Heartbeat is how often a stream with no event gets a comment line
	// (10 s when 0).
	Heartbeat time.Duration
	// Logger receives errors that cannot be sent to a client; nil discards.
	Logger *slog.Logger
	// Run starts one run of agent a on thread; nil means a.Run. Set it to
	// wrap every run, e.g. to trace it (package otel's Run).
	Run func(ctx context.Context, thread string, a *agent.Agent, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error]
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
	// deleting marks the threads being deleted: no run starts on one
	// until its records (and checkpoints) are gone.
	deleting map[string]bool

	heartbeat time.Duration

	ctx    context.Context // cancelled by Shutdown: ends streams and runs
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New checks cfg and returns the server. It first marks failed, in the
// store, the runs and threads a server stopped during left unfinished (see
// recoverStopped): one server uses a store at a time.
func New(cfg Config) (*Server, error) {
	if len(cfg.Agents) == 0 {
		return nil, errors.New("server: no agents configured")
	}
	if cfg.Saver == nil {
		return nil, errors.New("server: no checkpoint saver configured")
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
	rctx, rcancel := context.WithTimeout(s.ctx, recoverTimeout)
	if err := s.recoverStopped(rctx); err != nil {
		s.log.Error("recovering the runs a stopped server left", "err", err)
	}
	rcancel()
	s.routes()
	if cfg.UI != nil {
		s.mux.Handle("/", cfg.UI)
	}
	return s, nil
}

// ServeHTTP applies CORS and authentication, then serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		return
	}
	if s.cfg.Token != "" && r.URL.Path != "/ok" && s.isAPI(r) && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="deepagents"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// isAPI says whether a request is for the API rather than the UI's static
// assets, which load without a token (the UI asks for it).
func (s *Server) isAPI(r *http.Request) bool {
	if s.cfg.UI == nil {
		return true
	}
	_, pattern := s.mux.Handler(r)
	return pattern != "/"
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		// The SDK also sends the key as x-api-key.
		tok = r.Header.Get("X-Api-Key")
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

// cors writes CORS headers and answers preflight requests; true means the
// request was answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cfg.CORS.AllowOrigins) == 0 {
		return false
	}
	allowed := false
	for _, o := range s.cfg.CORS.AllowOrigins {
		if o == "*" || o == origin {
			allowed = true
			break
		}
	}
	if !allowed {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Content-Location, X-Pagination-Total, Location")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, X-Api-Key")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
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
