// Package compact keeps an agent's requests inside its model's context
// window by summarising older messages.
//
// Nothing in the thread is rewritten: the run keeps every message, and the
// middleware stores where the summarised part ends (a cutoff into the run's
// messages) and the summary as a run state value. Every request is then sent
// as one summary message followed by the messages from the cutoff on. The
// summarised messages are appended, in full, to a markdown file under
// /conversation_history in the run's files, and the summary message names it
// so the model can read details back.
//
// Compaction fires when a request's estimated size reaches the trigger
// (0.85 of the window, or 170,000 tokens when the window is unknown), when
// the provider answers that a request is too long (then the call is retried
// once), or when the model calls the opt-in compact_conversation tool.
package compact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

// Name is the middleware's name, used in events and errors.
const Name = "compaction"

// StateKey is the name of the run state value holding the compaction State.
const StateKey = "compaction"

// HistoryDir is the directory of the files summarised messages are saved to.
const HistoryDir = "/conversation_history"

// Defaults used when a Config field is zero.
const (
	// DefaultTrigger is the trigger when the window is unknown.
	DefaultTrigger = 170_000
	// DefaultKeepMessages is how many messages are kept when the window is
	// unknown.
	DefaultKeepMessages = 6
	// maxChunkTokens caps one summariser input whatever its window.
	maxChunkTokens = 100_000
	// defaultSummarizerWindow is assumed for the summariser when neither
	// its window nor the agent's is known.
	defaultSummarizerWindow = 200_000
	// maxFailures consecutive summariser failures end the run.
	maxFailures = 3
	// maxHistoryFile caps the history file read back before appending.
	maxHistoryFile = 64 << 20
	// maxOffloaded is how many offloaded files the summary message lists.
	maxOffloaded = 20
)

// ErrCompactionFailed ends a run whose summariser failed three times in a
// row. The thread keeps every message.
var ErrCompactionFailed = errors.New("compaction failed")

// Config sets when and how compaction happens. The zero value works: the
// trigger is 170,000 tokens, the last 6 messages are kept, and the agent's
// own model writes the summaries.
type Config struct {
	// Window is the agent's context window in tokens; 0 means unknown.
	Window int
	// TriggerTokens overrides the threshold (estimated request tokens) at
	// which compaction fires; 0 means 0.85 × Window, or 170,000.
	TriggerTokens int
	// KeepMessages, when positive, keeps exactly the newest that many
	// messages (moved back so a tool call keeps its results); 0 keeps the
	// newest tenth of the window, or the last 6 messages when the window is
	// unknown.
	KeepMessages int
	// Model writes the summaries. It is called with llm.CallInfo{Agent:
	// "summarizer"}. Nil uses the agent's own model: compaction then happens
	// inside the model call, just before the request is sent.
	Model llm.Model
	// SummarizerWindow is the summariser's context window; 0 uses Window
	// (or 200,000). Each summariser input is at most half of it, and at
	// most 100,000 tokens.
	SummarizerWindow int
	// Tool binds the compact_conversation tool, which lets the model
	// compact when the request is at least half the trigger.
	Tool bool
	// NoCalibration compares the trigger with the plain estimate of each
	// request instead of one scaled by the input tokens the provider
	// reported for earlier calls (replays use it, so that a threshold
	// matches the estimate their transcript shows).
	NoCalibration bool
	// Now stamps the sections of the history file; nil is time.Now.
	Now func() time.Time
	// TodosInTail says the todo list is shown after the cached part of
	// every request already (todos.Middleware), so a summary does not
	// carry a copy of it.
	TodosInTail bool

	// PreCompact, when set, is called with what a compaction is about to
	// summarise, before the summariser runs. Text it returns is added to
	// the instructions for the summary (after a person's focus). An error
	// vetoes this compaction: nothing is summarised and the compaction.end
	// event gives the error; an automatic compaction is asked again at the
	// next request over the threshold, an overflow's error stands, and a
	// veto never counts as a summariser failure.
	PreCompact func(ctx context.Context, cut Cut) (focus string, err error)
	// PostCompact, when set, is called after each compaction with the
	// summary made and the compaction's numbers. For Compact it is called
	// when the summary is made, before a run records it.
	PostCompact func(ctx context.Context, done Compacted)
}

// Trigger returns the request size, in estimated tokens, at which
// compaction fires.
func (c Config) Trigger() int {
	switch {
	case c.TriggerTokens > 0:
		return c.TriggerTokens
	case c.Window > 0:
		return c.Window * 85 / 100
	}
	return DefaultTrigger
}

func (c Config) chunkTokens() int {
	w := c.SummarizerWindow
	if w <= 0 {
		w = c.Window
	}
	if w <= 0 {
		w = defaultSummarizerWindow
	}
	return max(min(w/2, maxChunkTokens), 256)
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// State is what the middleware keeps in the run's state (StateKey).
type State struct {
	// Summary is the latest summary; empty before the first compaction.
	Summary string `json:"summary,omitempty"`
	// Cutoff is the index into the run's messages of the first message
	// still sent as it is.
	Cutoff int `json:"cutoff,omitempty"`
	// Session names the history file: /conversation_history/<Session>.md.
	Session string `json:"session,omitempty"`
	// File is the history file, empty when it could not be written.
	File string `json:"file,omitempty"`
	// Count is how many compactions happened; Evicted how many messages
	// they summarised in all.
	Count   int `json:"count,omitempty"`
	Evicted int `json:"evicted,omitempty"`
	// Failures counts the summariser's consecutive failures.
	Failures int `json:"failures,omitempty"`
	// Offloaded are the offloaded files seen in summarised messages.
	Offloaded []string `json:"offloaded,omitempty"`
	// Todos is the todo list as it was at the last compaction, as text,
	// re-injected with the summary.
	Todos string `json:"todos,omitempty"`

	// Announce is a compaction the compact_conversation tool made (or
	// tried), whose events the next model call emits: a tool cannot emit
	// events itself.
	Announce *Info `json:"announce,omitempty"`

	// kept is, right after a compaction, the index into the request it
	// compacted of the first message kept as it is (not saved).
	kept int
}

// compactor is one middleware instance. It keeps no run data: everything a
// run needs is in its state, so one instance serves concurrent runs.
type compactor struct {
	cfg Config
}

// New returns the compaction middleware.
func New(cfg Config) (agent.Middleware, error) {
	if cfg.Window < 0 || cfg.TriggerTokens < 0 || cfg.KeepMessages < 0 || cfg.SummarizerWindow < 0 {
		return agent.Middleware{}, errors.New("compaction: window, trigger, keep and summariser window must not be negative")
	}
	c := &compactor{cfg: cfg}
	m := agent.Middleware{Name: Name, BeforeModel: c.beforeModel, WrapStream: c.wrapStream, AfterRun: c.afterRun}
	if cfg.Tool {
		m.Tools = append(m.Tools, c.tool())
	}
	return m, nil
}

// estimate is req's size in tokens as the loop measures it
// (StepInfo.Measure): calibrated by the agent's own ratio of reported to
// estimated input tokens when the agent has a ledger (package ledger),
// unless NoCalibration asks for the plain estimate.
func (c *compactor) estimate(step agent.StepInfo, req *llm.Request) int {
	rep := step.Measure(req)
	if c.cfg.NoCalibration {
		return rep.Estimated
	}
	return rep.Calibrated
}

func loadState(st *agent.State) (State, error) {
	if st == nil {
		return State{}, nil
	}
	s, _, err := agent.GetValue[State](st, StateKey)
	return s, err
}

// apply rewrites req to the summary message plus the messages from the
// cutoff on, balancing any tool call in them that has no result.
func apply(s State, req *llm.Request) {
	if s.Summary == "" || s.Cutoff > len(req.Messages) {
		return
	}
	sm := summaryMessage(s)
	if len(req.Messages) > 0 && req.Messages[0].Content == sm.Content {
		return // already applied (the middleware is bound twice, e.g. in a fork)
	}
	out := make([]llm.Message, 0, len(req.Messages)-s.Cutoff+1)
	out = append(out, sm)
	out = append(out, req.Messages[s.Cutoff:]...)
	req.Messages = balance(out)
}

func (c *compactor) beforeModel(ctx context.Context, step agent.StepInfo, req *llm.Request) error {
	s, err := loadState(step.State)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCompactionFailed, err)
	}
	if s.Announce != nil {
		announce(step, s.Announce)
		s.Announce = nil
		if step.SetValue != nil {
			if err := step.SetValue(StateKey, s); err != nil {
				return err
			}
		}
	}
	if s, err = c.takeManual(ctx, step, s); err != nil {
		return err
	}
	apply(s, req)
	if c.cfg.Model == nil {
		return nil // compacted in wrapModel, with the agent's own model
	}
	est := c.estimate(step, req)
	if est < c.cfg.Trigger() {
		return nil
	}
	_, err = c.run(ctx, step, req, "auto", est, limited(c.cfg.Model))
	return err
}

// afterRun emits the events of a compaction the tool made in the run's
// last step, which no model call followed (the step limit, say), so that
// its summariser usage still counts in the run's.
func (c *compactor) afterRun(_ context.Context, step agent.StepInfo, _ agent.Status) {
	s, err := loadState(step.State)
	if err != nil || s.Announce == nil {
		return
	}
	announce(step, s.Announce)
	s.Announce = nil
	if step.SetValue != nil {
		_ = step.SetValue(StateKey, s)
	}
}

// wrapStream compacts with the agent's own model just before the request is
// sent when it reaches the trigger, and compacts and sends it again when the
// provider answers that it is too long. The model's events pass on as they
// come. A provider refuses a request that is too long before it answers
// it; an overflow error that comes after some of the answer was passed on
// is not retried, since the run has shown that answer already: a retry
// would show two answers to one request.
func (c *compactor) wrapStream(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		step, hasStep := agent.StepFrom(ctx)
		summarise := agent.ModelFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
			// Read to its answer, under the limits the loop set: none of
			// the summary's events is the agent's answer.
			return llm.CollectLimited(next(ctx, req), llm.ResponseLimitsFrom(ctx))
		})
		if c.cfg.Model != nil {
			summarise = limited(c.cfg.Model)
		}
		if c.cfg.Model == nil && hasStep {
			if est := c.estimate(step, req); est >= c.cfg.Trigger() {
				r := *req
				if _, err := c.run(ctx, step, &r, "auto", est, summarise); err != nil {
					yield(llm.StreamEvent{}, err)
					return
				}
				req = &r
			}
		}
		shown, err := pass(next(ctx, req), yield)
		if err == nil {
			return
		}
		if shown || !IsOverflow(err) || !hasStep || ctx.Err() != nil {
			yield(llm.StreamEvent{}, err)
			return
		}
		// The provider says the request is too long: compact once and try
		// once more. A second overflow is the run's error.
		r := *req
		done, cerr := c.run(ctx, step, &r, "overflow", c.estimate(step, req), summarise)
		if cerr != nil {
			yield(llm.StreamEvent{}, errors.Join(err, cerr))
			return
		}
		if !done {
			yield(llm.StreamEvent{}, err)
			return
		}
		rctx := ctx
		if ci, ok := llm.CallInfoFrom(ctx); ok {
			ci.Attempt++
			rctx = llm.WithCallInfo(ctx, ci)
		}
		if _, err := pass(next(rctx, &r), yield); err != nil {
			yield(llm.StreamEvent{}, err)
		}
	}
}

// pass yields the events of stream until it ends, the consumer stops or
// the stream fails. It reports whether any event was yielded, and returns
// the stream's error without yielding it.
func pass(stream iter.Seq2[llm.StreamEvent, error], yield func(llm.StreamEvent, error) bool) (shown bool, err error) {
	for ev, err := range stream {
		if err != nil {
			return shown, err
		}
		shown = true
		if !yield(ev, nil) {
			return shown, nil
		}
	}
	return shown, nil
}

// IsOverflow reports whether err says a request did not fit the model's
// context: an llm.APIError of kind context_length, an HTTP 400 or 413 whose
// text speaks of the context, a length exceeded or a prompt too long, or
// another error whose text names the context length or window.
func IsOverflow(err error) bool {
	if err == nil {
		return false
	}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		if ae.Kind == llm.ErrKindContextLength {
			return true
		}
		if ae.StatusCode == 400 || ae.StatusCode == 413 {
			t := strings.ToLower(ae.Error())
			return strings.Contains(t, "context") || strings.Contains(t, "too long") || strings.Contains(t, "exceed")
		}
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	t := strings.ToLower(err.Error())
	return strings.Contains(t, "context length") || strings.Contains(t, "context_length") ||
		strings.Contains(t, "context window") || strings.Contains(t, "maximum context") ||
		strings.Contains(t, "prompt is too long")
}

// announce records a compaction made outside the run's steps (by the tool,
// or by Compact): its events, and its summariser's usage.
func announce(step agent.StepInfo, info *Info) {
	now := time.Now()
	if step.Emit != nil {
		ev := event(EventStart, &Info{Trigger: info.Trigger, TokensBefore: info.TokensBefore})
		ev.Time = now
		step.Emit(ev)
	}
	ended(step, now, info)
}

// ended counts what a compaction's summariser used in the agent's usage and
// emits the compaction's end.
func ended(step agent.StepInfo, at time.Time, info *Info) {
	if step.AddUsage != nil {
		step.AddUsage(info.SummarizerCalls, info.Usage)
	}
	if step.Emit != nil {
		ev := event(EventEnd, info)
		ev.Time = at
		step.Emit(ev)
	}
}

// outcome of one attempt, for the manual tool's answer.
type outcome int

const (
	compacted outcome = iota
	notNeeded
	failed
	vetoed
)

// run compacts req (already rewritten by apply) and records the new state.
// It reports whether it compacted. A summariser failure leaves everything
// as it was and counts; the third in a row is ErrCompactionFailed.
func (c *compactor) run(ctx context.Context, step agent.StepInfo, req *llm.Request, trigger string, before int, gen agent.ModelFunc) (bool, error) {
	prior, err := loadState(step.State)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrCompactionFailed, err)
	}
	var raw []llm.Message
	if step.State != nil {
		raw = step.State.Messages
	}
	emit := func(e agent.Event) {
		if step.Emit != nil {
			e.Time = time.Now()
			step.Emit(e)
		}
	}
	eff := aligned(prior, req.Messages, raw)
	next, info, res, cerr := c.compact(ctx, compactInput{prior: prior, eff: eff, raw: raw, agent: step.Path.String(),
		files: step.Files, gen: gen, trigger: trigger, before: before, emit: emit, state: step.State})
	switch res {
	case notNeeded:
		return false, nil
	case vetoed:
		ended(step, time.Now(), info)
		return false, nil
	case failed:
		ended(step, time.Now(), info)
		prior.Failures++
		if step.SetValue != nil {
			if err := step.SetValue(StateKey, prior); err != nil {
				return false, err
			}
		}
		if prior.Failures >= maxFailures {
			return false, fmt.Errorf("%w: the summariser failed %d times in a row (last: %v); no message was lost", ErrCompactionFailed, prior.Failures, cerr)
		}
		return false, nil
	}
	if step.SetValue != nil {
		if err := step.SetValue(StateKey, next); err != nil {
			return false, err
		}
	}
	req.Messages = rewrite(next, eff)
	info.TokensAfter = c.estimate(step, req)
	ended(step, time.Now(), info)
	c.postCompact(ctx, step.Path.String(), next, info, summarised(prior, eff, next))
	return true, nil
}

// aligned returns the request's messages when they line up with the run's
// (the summary, then the run's messages from the cutoff on; or the run's
// own), so that an index into them maps to the run's messages. When they do
// not (a call without its result was balanced, or a middleware added or
// dropped a message) it returns that view built from the run's messages.
func aligned(prior State, eff, raw []llm.Message) []llm.Message {
	if raw == nil {
		return eff
	}
	base, start := 0, 0
	if prior.Summary != "" && len(eff) > 0 && IsSummary(eff[0]) {
		base, start = prior.Cutoff, 1
	}
	if base <= len(raw) && len(eff)-start == len(raw)-base {
		return eff
	}
	if prior.Summary == "" || prior.Cutoff > len(raw) {
		return raw
	}
	return append([]llm.Message{summaryMessage(prior)}, raw[prior.Cutoff:]...)
}

// rewrite builds the compacted message list: the new summary message plus
// the part of eff that is kept.
func rewrite(next State, eff []llm.Message) []llm.Message {
	kept := min(max(next.kept, 0), len(eff))
	out := make([]llm.Message, 0, len(eff)-kept+1)
	out = append(out, summaryMessage(next))
	out = append(out, eff[kept:]...)
	return balance(out)
}

// sessionID names the history file of one agent instance: stable for the
// same agent path and first message, so a resumed run appends to the same
// file.
func sessionID(agentPath string, raw []llm.Message) string {
	h := sha256.New()
	h.Write([]byte(agentPath))
	h.Write([]byte{0})
	for _, m := range raw {
		if m.Role == llm.RoleUser {
			h.Write([]byte(m.Content))
			break
		}
	}
	return "session_" + hex.EncodeToString(h.Sum(nil))[:32]
}

// IsSummary reports whether m is a summary message this package wrote.
func IsSummary(m llm.Message) bool {
	return m.Role == llm.RoleUser && strings.HasPrefix(m.Content, summaryLead)
}

const summaryLead = "[Conversation summary] "

// summaryMessage is the user-role message that stands for the summarised
// messages.
func summaryMessage(s State) llm.Message {
	var b strings.Builder
	b.WriteString(summaryLead)
	b.WriteString("The earlier part of this conversation was summarised to keep it within the context window.")
	if s.File != "" {
		fmt.Fprintf(&b, " The summarised messages are saved in full in %s; read that file when you need a detail the summary leaves out.", s.File)
	}
	b.WriteString("\n\n<summary>\n")
	b.WriteString(strings.TrimSpace(s.Summary))
	b.WriteString("\n</summary>")
	if s.Todos != "" {
		b.WriteString("\n\n<current_todos>\n")
		b.WriteString(s.Todos)
		b.WriteString("\n</current_todos>")
	}
	if len(s.Offloaded) > 0 {
		b.WriteString("\n\n<offloaded_files>\n")
		for _, p := range s.Offloaded {
			b.WriteString(p)
			b.WriteByte('\n')
		}
		b.WriteString("</offloaded_files>")
	}
	return llm.User(b.String())
}

// cloneState copies s so that later edits do not share slices.
func cloneState(s State) State {
	s.Offloaded = slices.Clone(s.Offloaded)
	return s
}

// summarised returns the messages of eff that next summarised: after the
// prior summary, if any, up to the first message kept.
func summarised(prior State, eff []llm.Message, next State) []llm.Message {
	start := 0
	if prior.Summary != "" && len(eff) > 0 && IsSummary(eff[0]) {
		start = 1
	}
	end := min(max(next.kept, start), len(eff))
	return eff[start:end]
}

// limited calls m as the loop calls its own model: under the response
// limits ctx carries (the agent's, or the defaults), so that a summariser
// whose answer never ends is cut off too.
func limited(m llm.Model) agent.ModelFunc {
	return func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		lim := llm.ResponseLimitsFrom(ctx)
		resp, err := m.Generate(llm.WithResponseLimits(ctx, lim), req)
		if err != nil {
			return nil, err
		}
		if err := lim.Check(resp); err != nil {
			return nil, err
		}
		return resp, nil
	}
}
