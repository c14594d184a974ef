package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/deepagents-go/deepagents/approve"
)

// This file serves approval modes per thread. Each thread has its own
// session (approve.Session): its mode, its row of denials, its record in
// the thread's checkpoints. A run chooses the mode with
// config.configurable.approval_mode, as LangGraph passes a run's settings;
// the thread's metadata key approval_mode holds the mode in force, and a
// PATCH of the thread that sets it switches the thread's session, a run
// going on included (from its next gated call).

// ModeKey is the key of a thread's metadata, and of a run's
// config.configurable, that names the thread's approval mode.
const ModeKey = "approval_mode"

// ApprovalModes lets clients choose each thread's approval mode.
type ApprovalModes struct {
	// New makes a thread's session in mode; it refuses a mode the agent
	// does not allow (yolo without a sandbox, auto without a classifier).
	New func(mode approve.Mode) (*approve.Session, error)
	// Default is the mode of a thread no client chose one for ("":
	// manual).
	Default approve.Mode
}

// threadModes are the sessions of the threads that ran with modes served.
type threadModes struct {
	mu sync.Mutex
	m  map[string]*approve.Session
}

// modeOf reads an approval mode from a map (a run's configurable, a
// thread's metadata): "" when it has none.
func modeOf(m map[string]any, where string) (approve.Mode, error) {
	v, ok := m[ModeKey]
	if !ok || v == nil {
		return "", nil
	}
	name, ok := v.(string)
	if !ok {
		return "", errf(http.StatusUnprocessableEntity, "%s.%s must be a string: manual, accept-edits, auto or yolo", where, ModeKey)
	}
	mode, err := approve.ParseMode(name)
	if err != nil {
		return "", errf(http.StatusUnprocessableEntity, "%s.%s: %v", where, ModeKey, err)
	}
	return mode, nil
}

// runMode reads the approval mode a run's config asks for ("" for none),
// refusing one the server cannot give.
func (s *Server) runMode(config map[string]any) (approve.Mode, error) {
	conf, _ := config["configurable"].(map[string]any)
	mode, err := modeOf(conf, "config.configurable")
	if err != nil || mode == "" {
		return mode, err
	}
	if err := s.modeAllowed(mode); err != nil {
		return "", err
	}
	return mode, nil
}

// modeAllowed refuses a mode the server does not serve or its agent does
// not allow.
func (s *Server) modeAllowed(mode approve.Mode) error {
	am := s.cfg.ApprovalModes
	if am == nil || am.New == nil {
		return errf(http.StatusUnprocessableEntity, "this server does not serve approval modes (%s %s): its agent decides on every call as configured", ModeKey, mode)
	}
	if s.cfg.Executor != nil {
		return errf(http.StatusUnprocessableEntity, "approval modes are not served by a fleet's executor; leave out %s", ModeKey)
	}
	if _, err := am.New(mode); err != nil {
		return errf(http.StatusUnprocessableEntity, "%s %s: %v", ModeKey, mode, err)
	}
	return nil
}

// threadSession returns the session of thread, made in the first of: the
// run's mode, the thread's metadata's, the server's default; a run's mode
// switches an existing one. nil when modes are not served.
func (s *Server) threadSession(thread string, runMode approve.Mode, meta map[string]any) (*approve.Session, error) {
	am := s.cfg.ApprovalModes
	if am == nil || am.New == nil || s.cfg.Executor != nil {
		return nil, nil
	}
	s.modes.mu.Lock()
	defer s.modes.mu.Unlock()
	if sess, ok := s.modes.m[thread]; ok {
		if runMode != "" && runMode != sess.Mode() {
			if err := sess.SetMode(runMode); err != nil {
				return nil, err
			}
		}
		return sess, nil
	}
	mode := runMode
	if mode == "" {
		mode, _ = modeOf(meta, "metadata")
	}
	if mode == "" {
		mode = am.Default
	}
	if mode == "" {
		mode = approve.Manual
	}
	sess, err := am.New(mode)
	if err != nil {
		return nil, err
	}
	if s.modes.m == nil {
		s.modes.m = map[string]*approve.Session{}
	}
	s.modes.m[thread] = sess
	return sess, nil
}

// withMode returns the context run lr runs with: its thread's session,
// told the run's decisions.
func (s *Server) withMode(ctx context.Context, lr *liveRun) (context.Context, error) {
	var meta map[string]any
	if th, err := s.store.GetThread(context.Background(), lr.rec.ThreadID); err == nil {
		meta = th.Metadata
	}
	sess, err := s.threadSession(lr.rec.ThreadID, lr.approvalMode, meta)
	if err != nil {
		return ctx, fmt.Errorf("approval mode: %w", err)
	}
	if sess == nil {
		return ctx, nil
	}
	sess.Decided(lr.decisions)
	return approve.WithSession(ctx, sess), nil
}

// noteMode writes the mode in force of thread's session into its
// metadata (when modes are served and it has one): a run's choice, or
// auto's fallback to manual, is what the thread's next run starts from.
func (s *Server) noteMode(thread string, meta map[string]any) {
	s.modes.mu.Lock()
	sess, ok := s.modes.m[thread]
	s.modes.mu.Unlock()
	if !ok || meta == nil {
		return
	}
	// A thread that never left manual keeps its metadata as it was.
	if _, set := meta[ModeKey]; set || sess.Records() {
		meta[ModeKey] = string(sess.Mode())
	}
}

// patchMode checks a metadata patch's approval mode and switches the
// thread's session to it, a run going on included.
func (s *Server) patchMode(thread string, patch map[string]any) error {
	mode, err := modeOf(patch, "metadata")
	if err != nil || mode == "" {
		return err
	}
	if err := s.modeAllowed(mode); err != nil {
		return err
	}
	s.modes.mu.Lock()
	sess, ok := s.modes.m[thread]
	s.modes.mu.Unlock()
	if ok {
		if err := sess.SetMode(mode); err != nil {
			return errf(http.StatusUnprocessableEntity, "%s: %v", ModeKey, err)
		}
	}
	return nil
}

// dropMode forgets a deleted thread's session.
func (s *Server) dropMode(thread string) {
	s.modes.mu.Lock()
	delete(s.modes.m, thread)
	s.modes.mu.Unlock()
}

// modeFlags tells clients (GET /info) whether threads' approval modes are
// served (approval_modes) and the mode of a new thread (approval_mode).
func (s *Server) modeFlags(flags map[string]any) {
	am := s.cfg.ApprovalModes
	if am == nil || am.New == nil || s.cfg.Executor != nil {
		return
	}
	mode := am.Default
	if mode == "" {
		mode = approve.Manual
	}
	flags["approval_modes"], flags[ModeKey] = true, string(mode)
}

// modeAssistant tells clients, in an assistant's config as LangGraph
// carries an assistant's settings, the mode of a new thread
// (configurable.approval_mode) and the modes there are
// (configurable.approval_modes), when modes are served.
func (s *Server) modeAssistant(as *assistant) {
	flags := map[string]any{}
	s.modeFlags(flags)
	if len(flags) == 0 {
		return
	}
	var ids []string
	for _, m := range approve.Modes() {
		ids = append(ids, string(m.ID))
	}
	as.view.Config["configurable"] = map[string]any{ModeKey: flags[ModeKey], "approval_modes": ids}
}
