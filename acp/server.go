package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/runner"
)

// ProtocolVersion is the version of ACP this package speaks.
const ProtocolVersion = sdk.ProtocolVersionNumber

// ModelOption is the id of the session configuration option that picks the
// model.
const ModelOption = "model"

// Runtime is what a session runs on: the agent built for its directory,
// the thread database, and the approval mode the agent's gates follow.
type Runtime struct {
	Agent *agent.Agent
	// Saver is the thread database every turn is saved in.
	Saver checkpoint.Saver
	// Mode is the session's approval mode (put in the agent's policies
	// with approve.WithMode); nil when the session has no modes.
	Mode *approve.Session
	// Run, when set, runs the agent in place of Agent.Run (to add tracing,
	// say); thread is the session's id.
	Run func(ctx context.Context, thread string, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error]
	// Close releases what Open took (nil: nothing).
	Close func()
}

// Model is one choice of the model option.
type Model struct {
	ID, Name, Description string
}

// Config says how sessions are made.
type Config struct {
	// Open builds the runtime of a session whose working directory is cwd
	// (an absolute path to an existing directory) on model, one of Models
	// ("" when Models is empty). thread is the session's id; resumed is
	// set for session/load. It is called again when the editor picks
	// another model.
	Open func(ctx context.Context, cwd, model, thread string, resumed bool) (*Runtime, error)
	// Models are the choices of the model option, the default first; with
	// none the option is not offered.
	Models []Model
	// NewThread makes the id of a new session's thread.
	NewThread func() string
	// Name and Version describe the agent to the editor.
	Name, Version string
	// Logger gets what goes wrong outside a request (nil: discarded).
	Logger *slog.Logger
}

// Serve answers one editor on in and out until the editor closes its end
// or ctx ends. Nothing but the protocol is written to out.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if cfg.Open == nil || cfg.NewThread == nil {
		return errors.New("acp: Config.Open and Config.NewThread are required")
	}
	s := &Server{cfg: cfg, sessions: map[string]*session{}, ready: make(chan struct{})}
	// The connection reads from in as soon as it is made: its handlers
	// wait for ready before they use s.conn.
	conn := sdk.NewAgentSideConnection(s, out, in)
	if cfg.Logger != nil {
		conn.SetLogger(cfg.Logger)
	} else {
		conn.SetLogger(slog.New(slog.DiscardHandler))
	}
	s.conn = conn
	s.base = ctx
	close(s.ready)
	var err error
	select {
	case <-conn.Done():
	case <-ctx.Done():
		err = ctx.Err()
	}
	// The turns in flight are cancelled (by the connection's end, or by
	// ctx): let them save what they did before their runtimes close.
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	waitTimeout(&s.turns, shutdownWait)
	s.closeAll()
	return err
}

// shutdownWait bounds how long Serve waits for cancelled turns to end.
const shutdownWait = 30 * time.Second

// waitTimeout waits for wg, at most d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// Server is the agent side of one ACP connection.
type Server struct {
	cfg  Config
	conn *sdk.AgentSideConnection
	// ready is closed once conn is set.
	ready chan struct{}
	// base is Serve's context: its end cancels the turns.
	base context.Context
	// turns counts the prompts running; once closing is set (under mu)
	// no more start.
	turns   sync.WaitGroup
	closing bool

	mu       sync.Mutex
	sessions map[string]*session
}

// session is one open session: a thread, its directory and runtime.
type session struct {
	id  string
	cwd string

	mu    sync.Mutex
	rt    *Runtime
	model string
	// busy is set while a prompt runs; idle is closed when it ends. A
	// second prompt waits for it (the editor's connection cancels the
	// first when it sends the second).
	busy bool
	idle chan struct{}
	// closeLater is set when the session was closed during a turn: its
	// runtime is closed when the turn ends, not under it.
	closeLater func()
}

var _ sdk.Agent = (*Server)(nil)
var _ sdk.AgentLoader = (*Server)(nil)

// closeAll closes every session. It takes the sessions' locks only after
// the server's is released (Prompt takes them the other way round).
func (s *Server) closeAll() {
	s.mu.Lock()
	all := s.sessions
	s.sessions = map[string]*session{}
	s.mu.Unlock()
	for _, ss := range all {
		ss.close()
	}
}

// Initialize says what this agent supports.
func (s *Server) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	resp := sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession: true,
			// Prompts are text; a resource the editor embeds (a file's
			// text) is given to the model inline.
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true},
		},
		AuthMethods: []sdk.AuthMethod{},
	}
	if s.cfg.Name != "" {
		resp.AgentInfo = &sdk.Implementation{Name: s.cfg.Name, Version: s.cfg.Version}
	}
	return resp, nil
}

// Authenticate is not needed: the agent reads its keys from the
// environment it was started in.
func (s *Server) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// NewSession starts a session on a new thread.
func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	ss, err := s.open(ctx, p.Cwd, s.cfg.NewThread(), false)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(ss.id), Modes: ss.modes(), ConfigOptions: s.options(ss)}, nil
}

// LoadSession opens the thread p names and replays its messages.
func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	id := string(p.SessionId)
	if id == "" {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams("sessionId is empty")
	}
	<-s.ready
	if s.running(id) {
		// Loading replaces the session's runtime: not under a turn.
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams("a turn of this session is running: cancel it or wait for its end, then load it")
	}
	ss, err := s.open(ctx, p.Cwd, id, true)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	rs, err := runner.LoadRunState(ctx, ss.rt.Saver, id, agent.RootPath(ss.rt.Agent.Name()), false)
	if err != nil {
		s.drop(id)
		if errors.Is(err, checkpoint.ErrNotFound) {
			return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(fmt.Sprintf("no session %q in the thread database", id))
		}
		return sdk.LoadSessionResponse{}, err
	}
	if rt := ss.rt; rt.Mode != nil {
		// The session reads the mode the thread recorded now, by its own
		// rules (SessionOptions.FromThread), not at the next turn's first
		// model call: the editor's picker shows it from the start.
		if mw := rt.Mode.Middleware(); mw.BeforeModel != nil {
			_ = mw.BeforeModel(ctx, agent.StepInfo{State: &agent.State{Values: rs.Values}}, nil)
		}
	}
	for _, u := range replay(rs.Messages, ss.cwd) {
		if err := s.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: p.SessionId, Update: u}); err != nil {
			return sdk.LoadSessionResponse{}, err
		}
	}
	return sdk.LoadSessionResponse{Modes: ss.modes(), ConfigOptions: s.options(ss)}, nil
}

// open makes the session of thread id in cwd and registers it.
func (s *Server) open(ctx context.Context, cwd, id string, resumed bool) (*session, error) {
	dir, err := checkCwd(cwd)
	if err != nil {
		return nil, sdk.NewInvalidParams(err.Error())
	}
	model := ""
	if len(s.cfg.Models) > 0 {
		model = s.cfg.Models[0].ID
	}
	rt, err := s.cfg.Open(ctx, dir, model, id, resumed)
	if err != nil {
		return nil, err
	}
	ss := &session{id: id, cwd: dir, rt: rt, model: model}
	s.mu.Lock()
	old := s.sessions[id]
	s.mu.Unlock()
	if old != nil && !old.closeIdle() {
		// A turn started on the session meanwhile: two runtimes must never
		// run one thread, so the new one goes.
		if rt.Close != nil {
			rt.Close()
		}
		return nil, sdk.NewInvalidParams("a turn of this session is running: cancel it or wait for its end, then load it")
	}
	s.mu.Lock()
	prev := s.sessions[id]
	s.sessions[id] = ss
	s.mu.Unlock()
	if prev != nil && prev != old {
		prev.close()
	}
	return ss, nil
}

// closeIdle closes the session's runtime unless a turn runs on it, and
// reports whether it did (or it was closed already); no turn starts on it
// after.
func (ss *session) closeIdle() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.busy {
		return false
	}
	if ss.rt != nil && ss.rt.Close != nil {
		ss.rt.Close()
	}
	ss.rt = nil
	return true
}

func (s *Server) drop(id string) {
	s.mu.Lock()
	ss := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if ss != nil {
		ss.close()
	}
}

// close closes the session's runtime, or, while a turn runs on it, has the
// turn close it when it ends; no turn starts on the session after.
func (ss *session) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.rt != nil && ss.rt.Close != nil {
		if ss.busy {
			ss.closeLater = ss.rt.Close
		} else {
			ss.rt.Close()
		}
	}
	ss.rt = nil
}

// running reports whether a turn of thread id's open session is running.
func (s *Server) running(id string) bool {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.busy
}

// checkCwd says whether cwd is an absolute path to a directory, and
// returns it cleaned.
func checkCwd(cwd string) (string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("cwd %q: give the absolute path of the project's directory", cwd)
	}
	dir := filepath.Clean(cwd)
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("cwd %s: %v", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("cwd %s is not a directory", dir)
	}
	return dir, nil
}

func (s *Server) session(id sdk.SessionId) (*session, error) {
	<-s.ready
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[string(id)]
	if ss == nil {
		return nil, sdk.NewInvalidParams(fmt.Sprintf("no open session %q: call session/new or session/load first", id))
	}
	return ss, nil
}

// modes is the session's mode state: the approval modes its runtime
// allows, the one in force current.
func (ss *session) modes() *sdk.SessionModeState {
	ss.mu.Lock()
	rt := ss.rt
	ss.mu.Unlock()
	if rt == nil || rt.Mode == nil {
		return nil
	}
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(rt.Mode.Mode())}
	for _, m := range approve.Modes() {
		if _, err := rt.Mode.Fresh(m.ID); err != nil && m.ID != rt.Mode.Mode() {
			continue // not allowed here (yolo without a sandbox, auto without a classifier)
		}
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(m.ID), Name: m.Name, Description: sdk.Ptr(m.Description)})
	}
	return st
}

// options are the session's configuration options: the model, when there
// is a choice.
func (s *Server) options(ss *session) []sdk.SessionConfigOption {
	if len(s.cfg.Models) == 0 {
		return nil
	}
	ss.mu.Lock()
	cur := ss.model
	ss.mu.Unlock()
	var opts sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range s.cfg.Models {
		o := sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.ID), Name: m.Name}
		if o.Name == "" {
			o.Name = m.ID
		}
		if m.Description != "" {
			o.Description = sdk.Ptr(m.Description)
		}
		opts = append(opts, o)
	}
	opt := sdk.NewSessionConfigOptionSelect(sdk.SessionConfigValueId(cur), sdk.SessionConfigSelectOptions{Ungrouped: &opts})
	opt.Select.Id = ModelOption
	opt.Select.Name = "Model"
	cat := sdk.SessionConfigOptionCategoryModel
	opt.Select.Category = &cat
	return []sdk.SessionConfigOption{opt}
}

// SetSessionMode switches the session's approval mode, for the calls
// admitted from now on (a turn in flight included).
func (s *Server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	ss.mu.Lock()
	rt := ss.rt
	ss.mu.Unlock()
	if rt == nil || rt.Mode == nil {
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams("this session has no approval modes")
	}
	m, err := approve.ParseMode(string(p.ModeId))
	if err == nil {
		err = rt.Mode.SetMode(m)
	}
	if err != nil {
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(err.Error())
	}
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption picks the session's model: the runtime is built
// again on it, between turns.
func (s *Server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams("only the model option can be set, to one of its values")
	}
	ss, err := s.session(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	if v.ConfigId != ModelOption || !slices.ContainsFunc(s.cfg.Models, func(m Model) bool { return m.ID == string(v.Value) }) {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(fmt.Sprintf("option %q has no value %q", v.ConfigId, v.Value))
	}
	ss.mu.Lock()
	if ss.busy {
		ss.mu.Unlock()
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams("a turn is running: pick the model between turns")
	}
	if ss.model != string(v.Value) {
		rt, err := s.cfg.Open(ctx, ss.cwd, string(v.Value), ss.id, true)
		if err != nil {
			ss.mu.Unlock()
			return sdk.SetSessionConfigOptionResponse{}, err
		}
		old := ss.rt
		if old != nil && old.Mode != nil && rt.Mode != nil {
			_ = rt.Mode.SetMode(old.Mode.Mode()) // the mode stays as the person chose it
		}
		ss.rt, ss.model = rt, string(v.Value)
		if old != nil && old.Close != nil {
			old.Close()
		}
	}
	ss.mu.Unlock()
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.options(ss)}, nil
}

// Cancel needs nothing more: the connection cancels the context of the
// session's prompt, which stops the run.
func (s *Server) Cancel(ctx context.Context, p sdk.CancelNotification) error { return nil }

// CloseSession is not advertised; it forgets the session.
func (s *Server) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	s.drop(string(p.SessionId))
	return sdk.CloseSessionResponse{}, nil
}

// ListSessions is not advertised.
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound("session/list")
}

// ResumeSession is not advertised: session/load does it, with the history.
func (s *Server) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound("session/resume")
}
