package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/vfs"
)

// Thread statuses.
const (
	threadIdle        = "idle"
	threadBusy        = "busy"
	threadInterrupted = "interrupted"
	threadError       = "error"
)

func now() time.Time { return time.Now().UTC() }

func (s *Server) createThread(w http.ResponseWriter, r *http.Request) {
	var req ThreadCreate
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if req.ThreadID == "" {
		req.ThreadID = uuid.NewString()
	}
	if err := checkpoint.ValidateThreadID(req.ThreadID); err != nil {
		s.fail(w, errf(http.StatusUnprocessableEntity, "%v", err))
		return
	}
	if req.Metadata == nil {
		req.Metadata = map[string]any{}
	}
	switch req.IfExists {
	case "", "raise", "do_nothing":
	default:
		s.fail(w, errf(http.StatusUnprocessableEntity, "if_exists %q is not one of raise, do_nothing", req.IfExists))
		return
	}
	t := now()
	rec := ThreadRecord{ID: req.ThreadID, CreatedAt: t, UpdatedAt: t, Metadata: req.Metadata, Status: threadIdle}
	err := s.store.CreateThread(r.Context(), rec)
	if errors.Is(err, ErrExists) {
		if req.IfExists == "do_nothing" {
			rec, err = s.store.GetThread(r.Context(), req.ThreadID)
		} else {
			err = errf(http.StatusConflict, "thread %q already exists", req.ThreadID)
		}
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeThread(w, r, rec)
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request) {
	var q ThreadSearch
	if err := decode(r, &q); err != nil {
		s.fail(w, err)
		return
	}
	if err := checkThreadSearch(q); err != nil {
		s.fail(w, err)
		return
	}
	limit := 10
	if q.Limit != nil {
		limit = min(*q.Limit, maxThreadSearch)
	}
	recs, total, err := s.store.SearchThreads(r.Context(), ThreadQuery{Metadata: q.Metadata, Status: q.Status,
		Limit: limit, Offset: q.Offset, SortBy: q.SortBy, SortOrder: q.SortOrder})
	if err != nil {
		s.fail(w, err)
		return
	}
	out := []Thread{}
	for _, rec := range recs {
		th, err := s.threadView(r.Context(), rec)
		if err != nil {
			s.fail(w, err)
			return
		}
		out = append(out, th)
	}
	w.Header().Set("X-Pagination-Total", fmt.Sprint(total))
	writeJSON(w, 200, out)
}

// maxThreadSearch caps the threads of one search; a larger limit returns
// this many.
const maxThreadSearch = 1000

// checkThreadSearch refuses a search with a value outside its field's
// choices, rather than search by it (a status no thread has) or ignore it.
func checkThreadSearch(q ThreadSearch) error {
	switch q.Status {
	case "", threadIdle, threadBusy, threadInterrupted, threadError:
	default:
		return errf(http.StatusUnprocessableEntity, "status %q is not one of idle, busy, interrupted, error", q.Status)
	}
	switch q.SortBy {
	case "", "created_at", "updated_at", "thread_id":
	default:
		return errf(http.StatusUnprocessableEntity, "sort_by %q is not one of created_at, updated_at, thread_id", q.SortBy)
	}
	switch q.SortOrder {
	case "", "asc", "desc":
	default:
		return errf(http.StatusUnprocessableEntity, "sort_order %q is not one of asc, desc", q.SortOrder)
	}
	return checkPage(q.Limit, q.Offset)
}

// checkPage refuses a list's limit below 1 (nil is absent) or a negative
// offset.
func checkPage(limit *int, offset int) error {
	if limit != nil && *limit < 1 {
		return errf(http.StatusUnprocessableEntity, "limit must be at least 1, not %d", *limit)
	}
	if offset < 0 {
		return errf(http.StatusUnprocessableEntity, "offset must not be negative, not %d", offset)
	}
	return nil
}

// queryInt reads a whole-number query parameter; nil when it is absent or
// empty.
func queryInt(q url.Values, name string) (*int, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, errf(http.StatusUnprocessableEntity, "%s %q is not a whole number", name, v)
	}
	return &n, nil
}

// thread reads the record of the request's thread.
func (s *Server) thread(r *http.Request) (ThreadRecord, error) {
	id := r.PathValue("thread")
	rec, err := s.store.GetThread(r.Context(), id)
	if errors.Is(err, ErrNotFound) {
		return rec, errf(http.StatusNotFound, "thread %q not found", id)
	}
	return rec, err
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	rec, err := s.thread(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeThread(w, r, rec)
}

func (s *Server) patchThread(w http.ResponseWriter, r *http.Request) {
	var req ThreadPatch
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	unlock := s.lockThread(r.PathValue("thread"))
	rec, err := s.thread(r)
	if err == nil {
		// approval_mode switches the thread's session (modes.go).
		err = s.patchMode(rec.ID, req.Metadata)
	}
	if err == nil {
		for k, v := range req.Metadata {
			rec.Metadata[k] = v
		}
		rec.UpdatedAt = now()
		err = s.store.UpdateThread(r.Context(), rec)
	}
	unlock()
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeThread(w, r, rec)
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("thread")
	if _, err := s.thread(r); err != nil {
		s.fail(w, err)
		return
	}
	// From here until the records are gone no run starts on the thread: one
	// started in between would write its run and events back under a
	// deleted thread, and checkpoints under a thread being removed.
	s.mu.Lock()
	if s.deleting[id] {
		s.mu.Unlock()
		s.fail(w, errf(http.StatusConflict, "thread %q is already being deleted", id))
		return
	}
	if err := s.checkFleetFree(r.Context(), id); err != nil {
		s.mu.Unlock()
		s.fail(w, err)
		return
	}
	s.deleting[id] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.deleting, id)
		s.mu.Unlock()
	}()
	s.cancelThreadRuns(id, "thread deleted")
	s.retireFleetRun(r.Context(), id)
	if err := s.store.DeleteThread(r.Context(), id); err != nil && !errors.Is(err, ErrNotFound) {
		s.fail(w, err)
		return
	}
	if err := s.cfg.Saver.DeleteThread(r.Context(), id); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		s.fail(w, err)
		return
	}
	s.dropMode(id)
	w.WriteHeader(http.StatusNoContent)
}

// values is the thread's state as LangGraph clients read it: messages in
// LangChain's shape, files, todos and the other middleware values by name.
func values(rs *agent.RunState) map[string]any { return valuesAt(rs, "") }

// valuesAt is values for the agent whose task path is task ("" for the
// top level): its messages' ids carry the path, as in its streamed events.
func valuesAt(rs *agent.RunState, task string) map[string]any {
	msgs := lcMessages(rs.Messages, task)
	markRejected(msgs, rs.Messages, rs.Loop)
	v := map[string]any{"messages": msgs}
	if rs.Files != nil {
		v["files"] = rs.Files
	}
	for k, raw := range rs.Values {
		if !agent.ReservedValue(k) {
			v[k] = raw
		}
	}
	if c, ok := costOf(rs); ok && task == "" {
		v["cost"] = c // what the run's model calls cost (cost.go)
	}
	return v
}

func lcMessages(ms []llm.Message, prefix string) []LCMessage {
	out := make([]LCMessage, 0, len(ms))
	for i, m := range ms {
		out = append(out, toLC(m, messageID(prefix, i)))
	}
	return out
}

// markRejected marks the tool messages of out (converted from ms) that
// answer a call a person rejected, as the agent's loop remembers them.
func markRejected(out []LCMessage, ms []llm.Message, loop agent.LoopState) {
	if len(loop.Rejected) == 0 {
		return
	}
	calls := map[string]llm.ToolCall{}
	for i, m := range ms {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
		if m.Role != llm.RoleTool || !m.IsError {
			continue
		}
		if c, ok := calls[m.ToolCallID]; ok && loop.RejectedCall(c.Name, c.Args) {
			out[i].AdditionalKwargs = &MessageKwargs{Rejected: true}
		}
	}
}

// messageID is a message's stable id: its position in its agent's history.
func messageID(prefix string, i int) string {
	if prefix == "" {
		return fmt.Sprintf("msg-%d", i)
	}
	return fmt.Sprintf("%s-msg-%d", prefix, i)
}

// loadState reads the thread's latest top-level state; nil when the thread
// has no checkpoint yet.
func (s *Server) loadState(ctx context.Context, thread string) (*agent.RunState, error) {
	rs, err := runner.LoadRunState(ctx, s.cfg.Saver, thread, agent.RootPath("agent"), false)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, nil
	}
	return rs, err
}

func interruptsOf(rs *agent.RunState) []InterruptRecord {
	if rs == nil || rs.Status != agent.StatusInterrupted || len(rs.Loop.Interrupts) == 0 {
		return []InterruptRecord{}
	}
	return []InterruptRecord{{ID: rs.StepID, Value: hitl.RequestFor(rs.Loop.Interrupts)}}
}

func (s *Server) threadView(ctx context.Context, rec ThreadRecord) (Thread, error) {
	th := Thread{ThreadID: rec.ID, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt, StateUpdatedAt: rec.UpdatedAt,
		Metadata: rec.Metadata, Status: rec.Status, Error: rec.Error, Interrupts: map[string][]InterruptRecord{}}
	if th.Metadata == nil {
		th.Metadata = map[string]any{}
	}
	if th.Status == threadBusy {
		s.mu.Lock()
		if s.active[rec.ID] == nil {
			// Busy with a run the server stopped during (see current).
			th.Status = threadError
			th.Error = errOrphan
		}
		s.mu.Unlock()
	}
	rs, err := s.loadState(ctx, rec.ID)
	if err != nil {
		return th, err
	}
	if rs == nil {
		th.Values = json.RawMessage("{}")
		return th, nil
	}
	th.Values, err = json.Marshal(values(rs))
	if err != nil {
		return th, err
	}
	if in := interruptsOf(rs); len(in) > 0 {
		th.Interrupts[rs.StepID] = in
	}
	return th, nil
}

func (s *Server) stateView(thread string, cp *checkpoint.Checkpoint) (ThreadState, error) {
	rs := &agent.RunState{Messages: cp.State.Messages, Files: cp.State.Files, Values: map[string]json.RawMessage{}, StepID: cp.ID}
	for k, v := range cp.State.Values {
		if k == "agent.loop" {
			if err := json.Unmarshal(v, &rs.Loop); err != nil {
				return ThreadState{}, fmt.Errorf("checkpoint %s: %w", cp.ID, err)
			}
			rs.Status = rs.Loop.Status
			continue
		}
		if agent.ReservedValue(k) {
			continue
		}
		rs.Values[k] = v
	}
	task := taskPath(cp.NS)
	vals, err := json.Marshal(valuesAt(rs, task))
	if err != nil {
		return ThreadState{}, err
	}
	t := cp.Time.UTC()
	st := ThreadState{Values: vals, Next: []string{}, Tasks: []StateTask{}, Interrupts: interruptsOf(rs),
		Checkpoint: CheckpointRef{ThreadID: thread, CheckpointNS: task, CheckpointID: cp.ID}, CreatedAt: &t,
		Metadata: map[string]any{"source": cp.Metadata["source"]}} // "" when the saver kept none
	for k, v := range cp.Metadata {
		st.Metadata[k] = v
	}
	st.Metadata["step"] = cp.Step
	if cp.ParentID != "" {
		st.ParentCheckpoint = &CheckpointRef{ThreadID: thread, CheckpointNS: task, CheckpointID: cp.ParentID}
	}
	if len(st.Interrupts) > 0 {
		st.Next = []string{"tools"}
		st.Tasks = []StateTask{{ID: cp.ID, Name: "tools", Interrupts: st.Interrupts}}
	}
	return st, nil
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	rec, err := s.thread(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	ns, err := s.resolveNS(r.Context(), rec.ID, r.URL.Query().Get("checkpoint_ns"))
	if err != nil {
		s.fail(w, err)
		return
	}
	cp, err := s.cfg.Saver.Get(r.Context(), checkpoint.Ref{ThreadID: rec.ID, NS: ns, ID: r.PathValue("checkpoint")})
	if errors.Is(err, checkpoint.ErrNotFound) {
		if r.PathValue("checkpoint") != "" || ns != "" {
			s.fail(w, errf(http.StatusNotFound, "checkpoint %q of thread %q not found", r.PathValue("checkpoint"), rec.ID))
			return
		}
		writeJSON(w, 200, ThreadState{Values: json.RawMessage("{}"), Next: []string{}, Tasks: []StateTask{},
			Interrupts: []InterruptRecord{}, Metadata: map[string]any{}, Checkpoint: CheckpointRef{ThreadID: rec.ID}})
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	st, err := s.stateView(rec.ID, cp)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, st)
}

// maxHistory caps the checkpoints of one history request.
const maxHistory = 1000

// history is GET and POST /threads/{id}/history: the thread's checkpoints,
// newest first, paged by limit and before and filtered by metadata. POST
// takes them in its body as LangGraph's SDKs send them; GET as the query
// parameters limit, before (a checkpoint id) and checkpoint_ns.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	rec, err := s.thread(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	var req HistoryRequest
	if r.Method == http.MethodPost {
		if err := decode(r, &req); err != nil {
			s.fail(w, err)
			return
		}
	} else {
		if req.Limit, err = queryInt(q, "limit"); err != nil {
			s.fail(w, err)
			return
		}
		if b := q.Get("before"); b != "" {
			req.Before, _ = json.Marshal(b)
		}
	}
	if err := checkPage(req.Limit, 0); err != nil {
		s.fail(w, err)
		return
	}
	limit := 10
	if req.Limit != nil {
		limit = min(*req.Limit, maxHistory)
	}
	before, beforeNS, err := parseBefore(req.Before, rec.ID)
	if err != nil {
		s.fail(w, errf(http.StatusUnprocessableEntity, "%v", err))
		return
	}
	task := q.Get("checkpoint_ns")
	if req.Checkpoint != nil && req.Checkpoint.CheckpointNS != "" {
		task = req.Checkpoint.CheckpointNS
	}
	switch {
	case task == "":
		// Paging on from a subagent's checkpoint continues its history.
		task = beforeNS
	case beforeNS != "" && beforeNS != task:
		s.fail(w, errf(http.StatusUnprocessableEntity, "before names a checkpoint of namespace %q, but the history asked for is of %q", beforeNS, task))
		return
	}
	ns, err := s.resolveNS(r.Context(), rec.ID, task)
	if err != nil {
		s.fail(w, err)
		return
	}
	opts := checkpoint.ListOptions{ThreadID: rec.ID, NS: ns, Before: before, Limit: limit}
	// The saver filters by the string pairs; the others (step, a number)
	// are checked here, on all the checkpoints the saver returns.
	exact := true
	for k, v := range req.Metadata {
		if str, ok := v.(string); ok && k != "step" && str != "" {
			if opts.Metadata == nil {
				opts.Metadata = map[string]string{}
			}
			opts.Metadata[k] = str
		} else {
			exact = false
		}
	}
	if !exact {
		opts.Limit = 0
	}
	list, err := s.cfg.Saver.List(r.Context(), opts)
	if errors.Is(err, checkpoint.ErrNotFound) && before != "" {
		s.fail(w, errf(http.StatusNotFound, "checkpoint %q (before) of thread %q not found", before, rec.ID))
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	out := []ThreadState{}
	for _, c := range list {
		if len(out) == limit {
			break
		}
		if !exact && !metadataMatches(historyMetadata(&c), req.Metadata) {
			continue
		}
		cp, err := s.cfg.Saver.Get(r.Context(), c.Ref())
		if err != nil {
			s.fail(w, err)
			return
		}
		st, err := s.stateView(rec.ID, cp)
		if err != nil {
			s.fail(w, err)
			return
		}
		out = append(out, st)
	}
	writeJSON(w, 200, out)
}

// parseBefore reads a history request's before: a checkpoint id, a
// checkpoint ({"checkpoint_id", "checkpoint_ns", "thread_id"}) or a config
// holding one under "configurable", as the JS and Python SDKs send it. It
// returns the checkpoint id and its namespace ("" when not given).
func parseBefore(raw json.RawMessage, thread string) (id, ns string, err error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &id); err != nil || id == "" {
			return "", "", fmt.Errorf("before must name a checkpoint: its id, {\"checkpoint_id\": ...} or {\"configurable\": {\"checkpoint_id\": ...}}")
		}
		return id, "", nil
	}
	var ref struct {
		CheckpointRef
		Configurable *CheckpointRef `json:"configurable"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		return "", "", fmt.Errorf("before must be a checkpoint id, a checkpoint or a config with configurable.checkpoint_id: %v", err)
	}
	c := ref.CheckpointRef
	if ref.Configurable != nil {
		if c.CheckpointID != "" && ref.Configurable.CheckpointID != "" && c.CheckpointID != ref.Configurable.CheckpointID {
			return "", "", fmt.Errorf("before names two checkpoints, %q and %q", c.CheckpointID, ref.Configurable.CheckpointID)
		}
		if ref.Configurable.CheckpointID != "" {
			c = *ref.Configurable
		}
	}
	if c.CheckpointID == "" {
		return "", "", fmt.Errorf("before has no checkpoint_id (directly or under configurable)")
	}
	if c.ThreadID != "" && c.ThreadID != thread {
		return "", "", fmt.Errorf("before names a checkpoint of thread %q, not of %q", c.ThreadID, thread)
	}
	return c.CheckpointID, c.CheckpointNS, nil
}

// historyMetadata is a checkpoint's metadata as stateView shows it.
func historyMetadata(c *checkpoint.Checkpoint) map[string]any {
	m := map[string]any{"source": c.Metadata["source"]}
	for k, v := range c.Metadata {
		m[k] = v
	}
	m["step"] = c.Step
	return m
}

// metadataMatches says whether md has every pair of want (as JSON values).
func metadataMatches(md, want map[string]any) bool {
	for k, v := range want {
		got, ok := md[k]
		if !ok || !jsonEqual(got, v) {
			return false
		}
	}
	return true
}

// taskPath is the task path of an agent path: "task:<call_id>" per level
// below the top ("" for the top level), as subagent events are named.
func taskPath(path string) string {
	p, err := agent.ParsePath(path)
	if err != nil || len(p) < 2 {
		return ""
	}
	parts := make([]string, 0, len(p)-1)
	for _, seg := range p[1:] {
		parts = append(parts, "task:"+seg.CallID)
	}
	return strings.Join(parts, "|")
}

// resolveNS turns a checkpoint_ns as clients send it into a namespace of
// the thread: "" is the top level; a task path ("task:call_1|task:call_7")
// names a subagent run by its calls; an agent path is taken as it is.
func (s *Server) resolveNS(ctx context.Context, thread, ns string) (string, error) {
	if ns == "" {
		return "", nil
	}
	if !strings.HasPrefix(ns, "task:") {
		if _, err := agent.ParsePath(ns); err != nil {
			return "", errf(http.StatusUnprocessableEntity, "checkpoint_ns %q is neither a task path (task:CALL_ID) nor an agent path", ns)
		}
		return ns, nil
	}
	list, err := s.cfg.Saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
	if err != nil {
		return "", err
	}
	for _, c := range list {
		if c.NS != "" && taskPath(c.NS) == ns {
			return c.NS, nil
		}
	}
	return "", errf(http.StatusNotFound, "thread %q has no subagent run at %q", thread, ns)
}

// updateState is POST /threads/{id}/state: it changes the thread's files
// (the UI's file editor) in a new checkpoint, so the next run sees them.
// values.files maps a path to its new content (a string, or an object with
// "content") or to null to delete it. Only files may be changed this way,
// and only while no run is going on or waiting for approval.
func (s *Server) updateState(w http.ResponseWriter, r *http.Request) {
	var req StateUpdate
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	delta, err := parseFileUpdate(req.Values)
	if err != nil {
		s.fail(w, errf(http.StatusUnprocessableEntity, "%v", err))
		return
	}
	rec, err := s.thread(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	// s.mu keeps a run from starting on the thread meanwhile.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active[rec.ID] != nil {
		s.fail(w, errf(http.StatusConflict, "thread %q is busy with a run; change its files when the run is over", rec.ID))
		return
	}
	if s.deleting[rec.ID] {
		s.fail(w, errf(http.StatusConflict, "thread %q is being deleted", rec.ID))
		return
	}
	ctx := r.Context()
	cp, err := s.cfg.Saver.Get(ctx, checkpoint.Ref{ThreadID: rec.ID})
	if errors.Is(err, checkpoint.ErrNotFound) {
		s.fail(w, errf(http.StatusConflict, "thread %q has no state yet; start a run first", rec.ID))
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	if cp.Status != checkpoint.StatusDone && cp.Status != checkpoint.StatusError {
		s.fail(w, errf(http.StatusConflict, "thread %q has a run that is not finished (%s); answer or cancel it first", rec.ID, cp.Status))
		return
	}
	step := checkpoint.Step{ThreadID: rec.ID, ID: fmt.Sprintf("%08d", cp.Step+1), ParentID: cp.ID, Step: cp.Step + 1,
		Metadata: map[string]string{"source": "update"}, Files: delta, Status: cp.Status, Time: now()}
	if err := s.cfg.Saver.Put(ctx, step); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]CheckpointRef{"checkpoint": {ThreadID: rec.ID, CheckpointID: step.ID}})
}

// maxFileUpdate caps the content of one state update.
const maxFileUpdate = 4 << 20

// parseFileUpdate reads {"files": {path: content|{"content": ...}|null}}.
func parseFileUpdate(raw json.RawMessage) (vfs.Delta, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return nil, fmt.Errorf(`values must be an object like {"files": {"/path": "content"}}`)
	}
	for k := range v {
		if k != "files" {
			return nil, fmt.Errorf("only files can be changed this way, not %q; the conversation changes through runs", k)
		}
	}
	var files map[string]json.RawMessage
	if err := json.Unmarshal(v["files"], &files); err != nil || len(files) == 0 {
		return nil, fmt.Errorf(`values.files must be an object mapping paths to contents (or null to delete)`)
	}
	var delta vfs.Delta
	total := 0
	t := now()
	for p, c := range files {
		clean, err := vfs.Clean(p)
		if err != nil {
			return nil, fmt.Errorf("file %q: %v", p, err)
		}
		if string(c) == "null" {
			delta = append(delta, vfs.Change{Path: clean})
			continue
		}
		var content string
		if err := json.Unmarshal(c, &content); err != nil {
			var f struct {
				Content *string `json:"content"`
			}
			if err := json.Unmarshal(c, &f); err != nil || f.Content == nil {
				return nil, fmt.Errorf(`file %q: the new content must be a string, {"content": "..."} or null`, p)
			}
			content = *f.Content
		}
		total += len(content)
		if total > maxFileUpdate {
			return nil, fmt.Errorf("the files sent are larger than %d bytes together", maxFileUpdate)
		}
		delta = append(delta, vfs.Change{Path: clean, File: &vfs.File{Content: content, CreatedAt: t, ModifiedAt: t}})
	}
	slices.SortFunc(delta, func(a, b vfs.Change) int { return strings.Compare(a.Path, b.Path) })
	if len(delta) > 1 {
		for i := 1; i < len(delta); i++ {
			if delta[i].Path == delta[i-1].Path {
				return nil, fmt.Errorf("two entries name the file %s", delta[i].Path)
			}
		}
	}
	return delta, nil
}

// writeThread answers with rec's thread as the API shows it.
func (s *Server) writeThread(w http.ResponseWriter, r *http.Request, rec ThreadRecord) {
	th, err := s.threadView(r.Context(), rec)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, th)
}
