package approve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

// This file is the approval mode of a session: how the calls that the
// policies make wait are decided. The mode never lifts a wait that a
// Check marks Protected (a change of the agent's own configuration, say):
// those calls ask in every mode.

// Mode says who decides on the calls the policies make wait.
type Mode string

// The approval modes.
const (
	// Manual asks the person about every call the policies make wait:
	// the behaviour without a mode.
	Manual Mode = "manual"
	// AcceptEdits lets file edits (write_file, edit_file, delete) pass
	// without asking; every other gated call asks as in Manual.
	AcceptEdits Mode = "accept-edits"
	// Auto has a second model call judge each gated call: the calls it
	// finds safe run, the others ask. An error or a timeout of that call
	// asks; three denials in a row switch the session back to Manual.
	Auto Mode = "auto"
	// Yolo asks about nothing but protected places; a session allows it
	// only when the agent is confined (a sandbox, or files in memory).
	Yolo Mode = "yolo"
)

// ModeInfo names and describes a mode, for a picker in a user interface
// or a protocol that lists a session's modes.
type ModeInfo struct {
	ID          Mode   `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Modes lists the approval modes, the default first.
func Modes() []ModeInfo {
	return []ModeInfo{
		{Manual, "Manual", "Ask before every call that interrupt_on or the sandbox settings gate."},
		{AcceptEdits, "Accept edits", "File edits pass without asking; commands, network and MCP tools still ask."},
		{Auto, "Auto", "A second model call judges each gated call; the ones it finds unsafe ask."},
		{Yolo, "Yolo", "Nothing asks except changes of protected places; only inside a sandbox without network or MCP tools."},
	}
}

// ParseMode reads a mode's name: manual, accept-edits, auto or yolo, in
// any letter case, with "_" for "-" (and "default", "acceptEdits" and
// "bypassPermissions", the names some editors use).
func ParseMode(s string) (Mode, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	name = strings.ReplaceAll(name, "_", "-")
	switch name {
	case "manual", "default":
		return Manual, nil
	case "accept-edits", "acceptedits":
		return AcceptEdits, nil
	case "auto":
		return Auto, nil
	case "yolo", "bypasspermissions", "bypass-permissions":
		return Yolo, nil
	}
	return "", fmt.Errorf("approval mode %q is not one of manual, accept-edits, auto, yolo", clipText(s, 40))
}

// ErrYoloUnconfined refuses yolo for a session whose agent is not confined.
var ErrYoloUnconfined = errors.New("approval mode yolo needs a sandbox: use the in-memory files (no --root), or --root with the bubblewrap sandbox on (not --no-sandbox, not --sandbox-network), and no MCP servers; or choose accept-edits or auto")

// ErrNoClassifier refuses auto for a session that has no model to judge
// calls with.
var ErrNoClassifier = errors.New("approval mode auto needs a model to judge calls with")

// DefaultClassifierTimeout bounds one judgement of auto mode; past it the
// call asks.
const DefaultClassifierTimeout = 30 * time.Second

// MaxDenials is how many denials in a row, by the classifier or the
// person, switch an auto session back to manual.
const MaxDenials = 3

// ModeValue is the name of the state value in which a session records its
// mode and the decisions taken under it (a ModeRecord), in the run of each
// agent that decided on a call.
const ModeValue = "approval_mode"

// maxModeEntries caps the decisions a ModeRecord keeps: the latest ones.
const maxModeEntries = 200

// ModeRecord is what a session records in a thread: the mode in force,
// the denials in a row so far, and its latest decisions, oldest first.
type ModeRecord struct {
	Mode    Mode        `json:"mode"`
	Denials int         `json:"denials,omitempty"`
	Calls   []ModeEntry `json:"calls,omitempty"`
}

// ModeEntry is one decision on a gated call and the mode it was taken in.
type ModeEntry struct {
	// Path is the agent whose call it was ("" for the person's decisions
	// given without one).
	Path   string `json:"path,omitempty"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool,omitempty"`
	Mode   Mode   `json:"mode"`
	// Outcome is passed (ran without asking), asked (waits for the
	// person), or the person's decision: approve, edit, reject, respond.
	Outcome string `json:"outcome"`
	// By is who decided: mode (the mode lets it pass), classifier, policy
	// (manual asks), protected (a protected place asks in every mode),
	// person.
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	// Fallback marks the decision after which the session fell back to
	// manual.
	Fallback bool `json:"fallback,omitempty"`
}

// ModeRecordOf reads a session's record from a run's state values; false
// when there is none or it cannot be read.
func ModeRecordOf(values map[string]json.RawMessage) (ModeRecord, bool) {
	raw, ok := values[ModeValue]
	if !ok {
		return ModeRecord{}, false
	}
	var rec ModeRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return ModeRecord{}, false
	}
	if _, err := ParseMode(string(rec.Mode)); err != nil {
		return ModeRecord{}, false
	}
	return rec, true
}

// SessionOptions configure a Session.
type SessionOptions struct {
	// Confined says the agent cannot reach past its sandbox (its files are
	// in memory, or its commands run in a sandbox): only then is Yolo
	// allowed.
	Confined bool
	// Classifier is the model auto mode asks about each gated call (nil:
	// Auto is refused). It is called as the agent ClassifierAgent.
	Classifier llm.Model
	// ClassifierTimeout bounds each judgement (0: 30 s).
	ClassifierTimeout time.Duration
	// IsEdit says whether a call is a file edit that AcceptEdits lets
	// pass (nil: every call of write_file, edit_file and delete).
	IsEdit func(tool string, args json.RawMessage) bool
	// FromThread, when set, decides whether the mode a thread recorded
	// replaces the session's when a run of it finds one (a resume that
	// names no mode continuing in the mode the thread was left in). A
	// mode switched to (SetMode) before the thread is read stays: the
	// person's choice wins over the record. A thread's record is data:
	// take only what your trust in it allows.
	FromThread func(recorded Mode) bool
	// OnChange, when set, is told each change of mode, the fallback of
	// auto included, with the reason (from the goroutine that changed it).
	OnChange func(from, to Mode, why string)
}

// Session is the approval mode in force for one session (an interactive
// session, a thread on a server), switchable while it runs and safe for
// concurrent use. WithMode puts it in an agent's policies, WithSession in
// one run's context; Middleware records it in the thread.
type Session struct {
	mu      sync.Mutex
	mode    Mode
	denials int
	// touched: the session has been in a mode other than manual, so it
	// records (a session that stayed manual changes no thread).
	touched bool
	loaded  bool
	// chosen: the mode was switched (SetMode) since the session began, so
	// a thread's recorded mode no longer replaces it.
	chosen bool
	log    []ModeEntry
	opts   SessionOptions
	// asked maps the calls that waited (by path and id) to their tool and
	// arguments, and rejected holds those of the calls the person
	// rejected: the same call again waits (and the loop answers it with
	// the rejection) in every mode. The thread's own memory of rejections
	// (StepInfo.RejectedCall) covers those of earlier sessions.
	asked    map[string]string
	rejected map[string]bool
	// denied holds the calls (by path and id) already counted as a denial: a call
	// the classifier found unsafe and the person then rejected is one
	// denial, not two.
	denied map[string]bool
}

// maxRemembered bounds the calls a session remembers as asked or
// rejected; past it that memory starts afresh.
const maxRemembered = 1000

// callKey names a call by its tool and arguments.
func callKey(name string, args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return name + "\x00" + string(args)
	}
	return name + "\x00" + b.String()
}

// askedKey names a call that waited by its agent's path and its id: ids
// are the model's, and two agents of a thread may use the same one.
func askedKey(path, id string) string { return path + "\x00" + id }

// deniedBefore reports whether the call id at path was counted as a
// denial already: call ids are unique only within an agent, so the key is
// the path and the id; a person's decision that names no path matches the
// id at any path. s.mu is held.
func (s *Session) deniedBefore(path, id string) bool {
	if path != "" {
		return s.denied[askedKey(path, id)]
	}
	for k := range s.denied {
		if strings.HasSuffix(k, "\x00"+id) {
			return true
		}
	}
	return false
}

// askedAs returns the tool and arguments of the waiting calls a decision
// on call id at path names: the call at that path, or, for a decision
// that names no path, every waiting call with that id. s.mu is held.
func (s *Session) askedAs(path, id string) []string {
	if path != "" {
		if key, ok := s.asked[askedKey(path, id)]; ok {
			return []string{key}
		}
		return nil
	}
	var keys []string
	for k, key := range s.asked {
		if strings.HasSuffix(k, "\x00"+id) {
			keys = append(keys, key)
		}
	}
	return keys
}

// NewSession returns a session in mode m, refused when the options do not
// allow it (yolo unconfined, auto without a classifier).
func NewSession(m Mode, o SessionOptions) (*Session, error) {
	s := &Session{mode: Manual, opts: o}
	if err := s.allowed(m); err != nil {
		return nil, err
	}
	s.mode = m
	s.touched = m != Manual
	return s, nil
}

// Fresh returns a new session in mode m with s's options, for another
// thread of the same agent (a server makes one per thread).
func (s *Session) Fresh(m Mode) (*Session, error) { return NewSession(m, s.opts) }

func (s *Session) allowed(m Mode) error {
	if _, err := ParseMode(string(m)); err != nil || m == "" {
		return fmt.Errorf("approval mode %q is not one of manual, accept-edits, auto, yolo", m)
	}
	switch {
	case m == Yolo && !s.opts.Confined:
		return ErrYoloUnconfined
	case m == Auto && s.opts.Classifier == nil:
		return ErrNoClassifier
	}
	return nil
}

// Mode returns the mode in force.
func (s *Session) Mode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// SetMode switches the session to m for the calls admitted from now on;
// it refuses a mode the session does not allow. The denials in a row
// start again from zero.
func (s *Session) SetMode(m Mode) error {
	if err := s.allowed(m); err != nil {
		return err
	}
	s.mu.Lock()
	from := s.mode
	s.mode, s.denials = m, 0
	s.touched = s.touched || m != Manual
	s.chosen = true
	s.mu.Unlock()
	if from != m && s.opts.OnChange != nil {
		s.opts.OnChange(from, m, "switched")
	}
	return nil
}

// Records reports whether the session records itself in the threads it
// runs: once it has been in a mode other than manual (or a thread it read
// had a record).
func (s *Session) Records() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.touched
}

// Denials returns the denials in a row so far.
func (s *Session) Denials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denials
}

// Record returns what the session records in a thread.
func (s *Session) Record() ModeRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ModeRecord{Mode: s.mode, Denials: s.denials, Calls: slices.Clone(s.log)}
}

// Decided tells the session the person's rejections and answers
// (respond) of waiting calls, before the run that applies them starts:
// those calls never reach the gate again. Each rejection is a denial
// (three in a row switch an auto session to manual); each is recorded
// with the mode in force. Approvals and edits are recorded by the gate
// when the call is admitted, and end the row of denials there.
func (s *Session) Decided(ds []agent.Decision) {
	for _, d := range ds {
		e := ModeEntry{CallID: d.CallID, Outcome: string(d.Type), By: "person", Reason: d.Message}
		if len(d.Path) > 0 {
			e.Path = d.Path.String()
		}
		switch d.Type {
		case agent.Reject:
			s.mu.Lock()
			for _, key := range s.askedAs(e.Path, d.CallID) {
				if s.rejected == nil || len(s.rejected) >= maxRemembered {
					s.rejected = map[string]bool{}
				}
				s.rejected[key] = true
			}
			s.mu.Unlock()
			s.deny(e, denialsText)
		case agent.Respond:
			s.mu.Lock()
			s.add(e)
			s.mu.Unlock()
		}
	}
}

// denialsText says why an auto session fell back to manual.
const denialsText = "three gated calls in a row were denied (by the classifier or the person)"

// personDecided records the person's approval or edit of call, admitted
// again to run, and ends the row of denials.
func (s *Session) personDecided(ctx context.Context, call *agent.ToolCall, d agent.Decision) {
	st, hasStep := agent.StepFrom(ctx)
	if hasStep && st.State != nil {
		s.load(st.State.Values)
	}
	e := ModeEntry{CallID: call.Call.ID, Tool: call.Call.Name, Outcome: string(d.Type), By: "person"}
	if hasStep {
		e.Path = st.Path.String()
	}
	s.mu.Lock()
	s.denials = 0
	if n := len(s.log); n > 0 && s.log[n-1].CallID == e.CallID && s.log[n-1].Path == e.Path && s.log[n-1].Outcome == e.Outcome {
		s.mu.Unlock()
		return // an edit is admitted twice: with the model's arguments and the person's
	}
	s.add(e)
	s.mu.Unlock()
	if hasStep {
		s.save(st)
	}
}

// add appends e with the mode in force; s.mu is held.
func (s *Session) add(e ModeEntry) {
	if e.Mode == "" {
		e.Mode = s.mode
	}
	s.log = append(s.log, e)
	if len(s.log) > maxModeEntries {
		s.log = slices.Delete(s.log, 0, len(s.log)-maxModeEntries)
	}
}

// deny counts a denial and records e; the third in a row in auto mode
// switches the session to manual. A call counts once, however many
// denied it (the classifier, then the person). It reports the fallback's notice ("":
// none).
func (s *Session) deny(e ModeEntry, why string) string {
	s.mu.Lock()
	if s.deniedBefore(e.Path, e.CallID) {
		s.add(e)
		s.mu.Unlock()
		return ""
	}
	if s.denied == nil || len(s.denied) >= maxRemembered {
		s.denied = map[string]bool{}
	}
	s.denied[askedKey(e.Path, e.CallID)] = true
	s.denials++
	fell := s.mode == Auto && s.denials >= MaxDenials
	if fell {
		e.Fallback = true
	}
	s.add(e)
	if fell {
		s.mode, s.denials = Manual, 0
	}
	s.mu.Unlock()
	if !fell {
		return ""
	}
	text := fmt.Sprintf("approval mode: %s, so the session is back in manual mode: every gated call asks; switch again when you are ready", why)
	if s.opts.OnChange != nil {
		s.opts.OnChange(Auto, Manual, text)
	}
	return text
}

// load merges what a thread recorded into the session, once: the earlier
// decisions, the denials in a row and, with FromThread, the mode, unless
// the person switched the mode (SetMode) before the thread was read: the
// mode they chose stays.
func (s *Session) load(values map[string]json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded {
		return
	}
	s.loaded = true
	rec, ok := ModeRecordOf(values)
	if !ok {
		return
	}
	s.touched = true
	s.log = append(rec.Calls, s.log...)
	if len(s.log) > maxModeEntries {
		s.log = slices.Delete(s.log, 0, len(s.log)-maxModeEntries)
	}
	if !s.chosen && s.opts.FromThread != nil && s.opts.FromThread(rec.Mode) && s.allowed(rec.Mode) == nil {
		s.mode, s.denials = rec.Mode, rec.Denials
	} else if rec.Mode == s.mode {
		s.denials = rec.Denials
	}
}

// save records the session in the run of st, when it has been in a mode
// other than manual.
func (s *Session) save(st agent.StepInfo) {
	if st.SetValue == nil {
		return
	}
	s.mu.Lock()
	touched := s.touched
	s.mu.Unlock()
	if touched {
		_ = st.SetValue(ModeValue, s.Record())
	}
}

// sessionKey marks a run's context with the session that decides on its
// gated calls.
type sessionKey struct{}

// WithSession returns ctx carrying s: the gates of a run started with ctx
// (and of its subagents) decide by s's mode, in place of the session their
// policies name or none, and Middleware's hooks record s. A server that
// runs one agent for many threads gives each thread its own session so.
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFrom returns the session ctx carries (WithSession).
func SessionFrom(ctx context.Context) (*Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(*Session)
	return s, ok && s != nil
}

// sessionFor is the session that decides on the calls of policy p in a
// run with ctx: the run's own, else the policy's (nil: none).
func sessionFor(ctx context.Context, p Policy) *Session {
	if s, ok := SessionFrom(ctx); ok {
		return s
	}
	return p.Session
}

// Middleware returns the session's hooks for an agent and its subagents:
// it reads what a resumed thread recorded before the first call is
// decided, and records the session in each run when it ends, so that the
// person's decisions (Decided) reach the thread. Add it to the agent's
// middleware when a session's policies (WithMode) are in use.
// A run whose context carries a session (WithSession) records that one;
// s may be nil for an agent whose runs always carry one.
func (s *Session) Middleware() agent.Middleware {
	of := func(ctx context.Context) *Session {
		if cs, ok := SessionFrom(ctx); ok {
			return cs
		}
		return s
	}
	return agent.Middleware{Name: ModeValue,
		BeforeModel: func(ctx context.Context, st agent.StepInfo, _ *llm.Request) error {
			if sess := of(ctx); sess != nil && st.State != nil {
				sess.load(st.State.Values)
			}
			return nil
		},
		AfterRun: func(ctx context.Context, st agent.StepInfo, _ agent.Status) {
			if sess := of(ctx); sess != nil {
				sess.save(st)
			}
		},
	}
}

// WithMode returns a copy of policies whose calls the session's mode
// decides on: in manual a call waits as its policy says; in accept-edits
// a file edit passes; in auto the classifier judges; in yolo nothing
// waits. A call whose Check says Protected waits in every mode. policies
// is not changed; subagents that inherit the policies share the session.
func WithMode(policies map[string]Policy, s *Session) map[string]Policy {
	out := maps.Clone(policies)
	for name, p := range out {
		p.Session = s
		out[name] = p
	}
	return out
}

// decide is what the session makes of call, which its policy's verdict v
// makes wait (and which no person decided on yet): v itself, or v with
// Wait lifted, and an entry recorded with the mode.
func (s *Session) decide(ctx context.Context, call *agent.ToolCall, v Verdict) Verdict {
	st, hasStep := agent.StepFrom(ctx)
	if hasStep && st.State != nil {
		s.load(st.State.Values)
	}
	notice := func(text string) {
		if hasStep && text != "" && st.Emit != nil {
			st.Emit(agent.Event{Type: agent.Notice, Notice: &agent.NoticeInfo{Source: ModeValue, Text: text}})
		}
	}
	e := ModeEntry{CallID: call.Call.ID, Tool: call.Call.Name}
	if hasStep {
		e.Path = st.Path.String()
	}
	mode := s.Mode()
	e.Mode = mode
	key := callKey(call.Call.Name, call.Call.Args)
	s.mu.Lock()
	again := s.rejected[key]
	s.mu.Unlock()
	// The thread remembers the person's rejections across sessions and
	// processes: a fresh session after a resume that rejected the call
	// keeps it asking too.
	again = again || hasStep && st.RejectedCall != nil && st.RejectedCall(call.Call.Name, call.Call.Args)
	switch {
	case v.Protected:
		e.Outcome, e.By, e.Reason = "asked", "protected", v.Reason
	case again:
		// The person rejected this very call: no mode lets it pass.
		e.Outcome, e.By, e.Reason = "asked", "person", "the same call was rejected before"
	case mode == Yolo:
		v.Wait = false
		e.Outcome, e.By = "passed", "mode"
	case mode == AcceptEdits && s.isEdit(call.Call.Name, call.Call.Args):
		v.Wait = false
		e.Outcome, e.By = "passed", "mode"
	case mode == Auto:
		// judge records the entry.
		var text, fallback string
		v, text, fallback = s.judge(ctx, st, hasStep, call, v, e)
		notice(text)
		notice(fallback)
	default:
		e.Outcome, e.By = "asked", "policy"
	}
	s.mu.Lock()
	if mode != Auto || v.Protected || again {
		s.add(e)
	}
	if v.Wait {
		if s.asked == nil || len(s.asked) >= maxRemembered {
			s.asked = map[string]string{}
		}
		s.asked[askedKey(e.Path, call.Call.ID)] = key
	}
	s.mu.Unlock()
	if hasStep {
		s.save(st)
	}
	return v
}

// judge puts a call to the classifier: safe, it passes and ends the row of
// denials; unsafe, it asks and counts a denial; no verdict (an error, a
// timeout), it asks. text is the notice that tells the verdict, note the
// fallback's when this denial was the third.
func (s *Session) judge(ctx context.Context, st agent.StepInfo, hasStep bool, call *agent.ToolCall, v Verdict, e ModeEntry) (Verdict, string, string) {
	var request string
	switch {
	case hasStep && st.Request != "":
		request = st.Request
	case hasStep && st.State != nil:
		// A thread saved before the loop kept its turn's request.
		request = latestRequest(st.State.Messages)
	}
	jv, usage, err := Classify(ctx, s.opts.Classifier, s.timeout(), call.Call.Name, call.Call.Args, request)
	if hasStep && st.AddUsage != nil && (usage != llm.Usage{}) {
		st.AddUsage(1, usage)
	}
	e.By = "classifier"
	switch {
	case err != nil:
		e.Outcome, e.Reason = "asked", "no verdict: "+err.Error()
		s.mu.Lock()
		s.add(e)
		s.mu.Unlock()
		return v, fmt.Sprintf("approval mode auto: %s call %s asks: the classifier gave no verdict (%v)", call.Call.Name, call.Call.ID, err), ""
	case jv.Safe:
		v.Wait = false
		e.Outcome, e.Reason = "passed", jv.Reason
		s.mu.Lock()
		s.denials = 0
		s.add(e)
		s.mu.Unlock()
		return v, fmt.Sprintf("approval mode auto: %s call %s runs: the classifier judged it safe: %s", call.Call.Name, call.Call.ID, jv.Reason), ""
	}
	e.Outcome, e.Reason = "asked", jv.Reason
	text := fmt.Sprintf("approval mode auto: %s call %s asks: the classifier judged it unsafe: %s", call.Call.Name, call.Call.ID, jv.Reason)
	return v, text, s.deny(e, denialsText)
}

func (s *Session) timeout() time.Duration {
	if s.opts.ClassifierTimeout > 0 {
		return s.opts.ClassifierTimeout
	}
	return DefaultClassifierTimeout
}

func (s *Session) isEdit(name string, args json.RawMessage) bool {
	if s.opts.IsEdit != nil {
		return s.opts.IsEdit(name, args)
	}
	return slices.Contains(editTools, name)
}

// editTools are the file tools whose calls accept-edits lets pass by
// default.
var editTools = []string{"write_file", "edit_file", "delete"}

// latestRequest is the text of the last user message of a run, for a
// thread whose loop did not keep its turn's request (StepInfo.Request).
func latestRequest(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser && msgs[i].HasText() {
			return msgs[i].Content
		}
	}
	return ""
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
