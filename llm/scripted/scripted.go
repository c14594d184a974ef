// Package scripted is a deterministic llm.Model that answers from a script
// instead of a model service: the way to test an agent configuration with no
// API key, and the model behind `deepagents replay` and `deepagents demo`.
//
// A script gives each agent (by name: "parent", or a subagent's name) a list
// of steps; the n-th model call of one agent instance gets the n-th step, so
// parallel subagents never race for replies. Per-instance scripts ("cases")
// are chosen by a substring of the instance's task text. Every request is
// recorded, so tests can assert exactly what a model saw.
package scripted

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// Script maps an agent name to its replies.
type Script map[string]AgentScript

// AgentScript is one agent's replies: either Steps for every instance, or
// Cases chosen per instance by its task text. In JSON it is either an array of
// steps or {"cases": [...]}.
type AgentScript struct {
	Steps []Step
	Cases []Case
}

// Case is the script of the instances whose task text contains Match (an
// empty Match matches any task).
type Case struct {
	Match string `json:"match,omitempty"`
	Steps []Step `json:"steps"`
}

// Step is one reply: an assistant message.
type Step struct {
	Content   string     `json:"content,omitempty"`
	ToolCalls []StepCall `json:"tool_calls,omitempty"`
	// DelayMS overrides the model's delay for this call.
	DelayMS *float64 `json:"delay_ms,omitempty"`
	// Error makes the call fail with this message instead of replying.
	Error string `json:"error,omitempty"`
	// Usage overrides the counted usage; {"unknown": true} is a call whose
	// provider reported none.
	Usage *llm.Usage `json:"usage,omitempty"`
	// Reasoning is the model's thinking before the reply: a reasoning part
	// ahead of the text, from provider "scripted", signed (see Signature).
	Reasoning string `json:"reasoning,omitempty"`
	// Refusal makes the model decline: the reply stops with reason refusal
	// and this explanation, and its tool calls are not made.
	Refusal string `json:"refusal,omitempty"`
}

// StepCall is one tool call of a step. ID is generated when empty.
type StepCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// UnmarshalJSON accepts an array of steps or {"cases": [...]}.
func (s *AgentScript) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		s.Cases = nil
		return json.Unmarshal(b, &s.Steps)
	}
	var obj struct {
		Cases []Case `json:"cases"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("an agent's script must be an array of steps or {\"cases\": [...]}: %w", err)
	}
	if obj.Cases == nil {
		return errors.New(`an agent's script must be an array of steps or {"cases": [...]}`)
	}
	s.Steps, s.Cases = nil, obj.Cases
	return nil
}

// MarshalJSON writes the form UnmarshalJSON reads.
func (s AgentScript) MarshalJSON() ([]byte, error) {
	if s.Cases != nil {
		return json.Marshal(struct {
			Cases []Case `json:"cases"`
		}{s.Cases})
	}
	if s.Steps == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.Steps)
}

// Options configure a Model. The zero value works: no delay, exact o200k
// usage counts.
type Options struct {
	// Delay is how long every call takes (a step's DelayMS overrides it).
	Delay time.Duration
	// NoUsage skips token counting; responses then report zero usage.
	NoUsage bool
	// Func, when set, answers instead of the script; for programmatic
	// scripts such as benchmarks.
	Func func(ci llm.CallInfo, req *llm.Request) (Step, error)
	// NoImages makes the model report that it does not read images (by
	// default it reports images and reasoning as capabilities).
	NoImages bool
	// NoReasoning makes the model report that it takes no reasoning
	// setting: CheckSettings then names "reasoning" as dropped when one is
	// set, and the model ignores it.
	NoReasoning bool
}

// Provider is the name the scripted model signs its reasoning parts with.
const Provider = "scripted"

// Capabilities implements llm.CapabilityReporter: the scripted model takes
// reasoning settings (unless Options.NoReasoning) and image parts (unless
// Options.NoImages).
func (m *Model) Capabilities() llm.Capabilities {
	return llm.Capabilities{Images: !m.opts.NoImages, Reasoning: !m.opts.NoReasoning}
}

// CheckSettings implements llm.SettingsChecker: the scripted model takes
// every setting, except a reasoning setting under Options.NoReasoning,
// which it drops.
func (m *Model) CheckSettings(s llm.Settings) ([]string, error) {
	if m.opts.NoReasoning && s.Reasoning != nil {
		return []string{"reasoning"}, nil
	}
	return nil, nil
}

// Signature is the signature the scripted model gives a reasoning text:
// stable across runs, so transcripts can be compared, and different for any
// other text. Like the real services, the model refuses a request whose
// history holds one of its reasoning parts with a signature that does not
// match its text.
func Signature(text string) string {
	h := sha256.Sum256([]byte("scripted reasoning\x00" + text))
	return "sig_" + hex.EncodeToString(h[:8])
}

// checkReasoning finds a scripted reasoning part of the history whose
// signature does not match its text.
func checkReasoning(req *llm.Request) error {
	// By index and part by part: a long history is walked on every call,
	// and copying each message (or its reasoning parts) would cost more
	// than the check.
	for i := range req.Messages {
		for j := range req.Messages[i].Parts {
			p := &req.Messages[i].Parts[j]
			if p.Type == llm.PartReasoning && p.Reasoning != nil && p.Reasoning.Provider == Provider && p.Reasoning.Signature != Signature(p.Text) {
				return fmt.Errorf("scripted model: the reasoning in message %d was altered (its signature does not match its text)", i)
			}
		}
	}
	return nil
}

// Record is one request the model received.
type Record struct {
	Seq      int    // global order in which calls started
	Who      string // agent name
	Instance string // subagent instance (the parent's tool-call id), "" at top level
	Path     string
	Case     int // index of the chosen case, -1 when the agent has plain steps
	Round    int // calls this instance made before this one
	Request  *llm.Request
	Start    time.Duration // since the model's epoch
	End      time.Duration
	Reply    llm.Message
	Err      string
}

// Model is the scripted model. It is safe for concurrent use.
type Model struct {
	script Script
	opts   Options

	mu        sync.Mutex
	epoch     time.Time
	seq       int
	instances map[string]*instance
	records   []Record
	inFlight  int
	maxFlight int
}

type instance struct {
	calls     int
	resent    int // calls that repeated a round (CallInfo.Attempt > 0): later rounds shift by this many steps
	caseIndex int
	usage     usageCache
}

type usageCache struct {
	counted int // messages already counted
	tokens  int // their tokens
	system  string
	sysTok  int
}

// New returns a model answering from script.
func New(script Script, opts Options) *Model {
	return &Model{script: script, opts: opts, epoch: time.Now(), instances: map[string]*instance{}}
}

// SetEpoch sets the time that Record.Start and End are measured from.
func (m *Model) SetEpoch(t time.Time) {
	m.mu.Lock()
	m.epoch = t
	m.mu.Unlock()
}

// Records returns every request received so far, in start order.
func (m *Model) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.records)
	slices.SortFunc(out, func(a, b Record) int { return a.Seq - b.Seq })
	return out
}

// MaxConcurrent returns the most calls that were in flight at once.
func (m *Model) MaxConcurrent() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxFlight
}

// Reset forgets records and instance progress, so the script can run again.
func (m *Model) Reset() {
	m.mu.Lock()
	m.seq, m.records, m.instances, m.maxFlight, m.epoch = 0, nil, map[string]*instance{}, 0, time.Now()
	m.mu.Unlock()
}

// Generate implements llm.Model.
func (m *Model) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ci, ok := llm.CallInfoFrom(ctx)
	fromLoop := ok && ci.Agent != "" && ci.Path != ""
	if !ok || ci.Agent == "" {
		ci.Agent = "parent"
	}
	if ci.Task == "" {
		for _, msg := range req.Messages {
			if msg.Role == llm.RoleUser {
				ci.Task = msg.Content
				break
			}
		}
	}
	key := ci.Agent + "#" + ci.Instance

	m.mu.Lock()
	inst := m.instances[key]
	if inst == nil {
		inst = &instance{caseIndex: -1}
		m.instances[key] = inst
	}
	// The step is the caller's round when the agent loop says which it is:
	// a run resumed from a checkpoint (in this process or another) then gets
	// the step it would have got had it never stopped.
	round := inst.calls
	if fromLoop {
		if ci.Attempt > 0 {
			inst.resent++
		}
		round = ci.Round + inst.resent
	}
	inst.calls = round + 1
	rec := Record{Seq: m.seq, Who: ci.Agent, Instance: ci.Instance, Path: ci.Path, Round: round, Request: snapshot(req), Start: time.Since(m.epoch)}
	m.seq++
	m.inFlight++
	m.maxFlight = max(m.maxFlight, m.inFlight)
	m.mu.Unlock()

	step, caseIndex, err := m.pick(ci, req, inst, round)
	rec.Case = caseIndex
	if err == nil {
		err = checkReasoning(req)
	}
	delay := m.opts.Delay
	if err == nil && step.DelayMS != nil {
		delay = time.Duration(*step.DelayMS * float64(time.Millisecond))
	}
	if err == nil && delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			err = context.Cause(ctx)
		}
	}
	var resp *llm.Response
	if err == nil && step.Error != "" {
		err = errors.New(step.Error)
	}
	if err == nil {
		resp = m.reply(ci, req, inst, round, caseIndex, step)
		rec.Reply = resp.Message
	}

	m.mu.Lock()
	m.inFlight--
	rec.End = time.Since(m.epoch)
	if err != nil {
		rec.Err = err.Error()
	}
	m.records = append(m.records, rec)
	m.mu.Unlock()
	return resp, err
}

func snapshot(req *llm.Request) *llm.Request {
	c := *req
	c.Messages = slices.Clip(req.Messages)
	c.Tools = slices.Clip(req.Tools)
	return &c
}

func (m *Model) pick(ci llm.CallInfo, req *llm.Request, inst *instance, round int) (Step, int, error) {
	if m.opts.Func != nil {
		s, err := m.opts.Func(llm.CallInfo{Agent: ci.Agent, Instance: ci.Instance, Path: ci.Path, Task: ci.Task, Round: round}, req)
		return s, -1, err
	}
	as, ok := m.script[ci.Agent]
	if !ok {
		return Step{}, -1, fmt.Errorf("scripted model: the script has no replies for agent %q (round %d)", ci.Agent, round)
	}
	steps, caseIndex := as.Steps, -1
	if as.Cases != nil {
		m.mu.Lock()
		if inst.caseIndex < 0 {
			for i, c := range as.Cases {
				if c.Match == "" || strings.Contains(ci.Task, c.Match) {
					inst.caseIndex = i
					break
				}
			}
		}
		caseIndex = inst.caseIndex
		m.mu.Unlock()
		if caseIndex < 0 {
			return Step{}, -1, fmt.Errorf("scripted model: no case of agent %q matches its task %q", ci.Agent, clip(ci.Task, 120))
		}
		steps = as.Cases[caseIndex].Steps
	}
	if round >= len(steps) {
		who := fmt.Sprintf("agent %q", ci.Agent)
		if ci.Instance != "" {
			who += fmt.Sprintf(" (instance %s)", ci.Instance)
		}
		if caseIndex >= 0 {
			who += fmt.Sprintf(" case %d", caseIndex)
		}
		return Step{}, caseIndex, fmt.Errorf("scripted model: the script ran out: %s has no step for round %d (it has %d)", who, round, len(steps))
	}
	return steps[round], caseIndex, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (m *Model) reply(ci llm.CallInfo, req *llm.Request, inst *instance, round, caseIndex int, step Step) *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: step.Content}
	if step.Reasoning != "" {
		parts := []llm.Part{llm.ReasoningPart(step.Reasoning,
			&llm.Reasoning{Provider: Provider, Signature: Signature(step.Reasoning)})}
		if step.Content != "" {
			parts = append(parts, llm.TextPart(step.Content))
		}
		msg.SetParts(parts)
	}
	for i, c := range step.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%s_%d_r%d_%d", ci.Agent, max(caseIndex, 0), round, i)
		}
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: c.Name, Args: args})
	}
	resp := &llm.Response{Message: msg, StopReason: llm.StopEnd, Model: "scripted"}
	switch {
	case step.Refusal != "":
		resp.StopReason, resp.Refusal = llm.StopRefusal, step.Refusal
	case len(msg.ToolCalls) > 0:
		resp.StopReason = llm.StopToolCalls
	}
	switch {
	case step.Usage != nil:
		resp.Usage = *step.Usage
	case !m.opts.NoUsage:
		resp.Usage = m.count(req, inst, msg)
		if step.Reasoning != "" {
			// Thinking is output the model spent; counted with the reply.
			r := tokens.Count(tokens.O200k, step.Reasoning)
			resp.Usage.ReasoningTokens = r
			resp.Usage.OutputTokens += r
		}
	}
	return resp
}

// count reports exact o200k usage: the request's prompt (system, messages and
// tool definitions) as input and the reply as output. Each instance's message
// tokens are counted incrementally, since its history only grows.
func (m *Model) count(req *llm.Request, inst *instance, reply llm.Message) llm.Usage {
	m.mu.Lock()
	uc := inst.usage
	m.mu.Unlock()
	if uc.counted > len(req.Messages) {
		uc = usageCache{}
	}
	// The system prompt as a provider sends it to a model without cache
	// breakpoints: the static part, then the changing tail.
	system := req.System
	if strings.TrimSpace(req.SystemTail) != "" {
		if system != "" {
			system += "\n\n"
		}
		system += req.SystemTail
	}
	if system != uc.system || uc.sysTok == 0 && system != "" {
		uc.system, uc.sysTok = system, 0
		if system != "" {
			uc.sysTok = tokens.SystemPrompt(tokens.O200k, system)
		}
	}
	for _, msg := range req.Messages[uc.counted:] {
		uc.tokens += tokens.Message(tokens.O200k, msg)
	}
	uc.counted = len(req.Messages)
	m.mu.Lock()
	inst.usage = uc
	m.mu.Unlock()
	_, tools := tokens.Tools(req.Tools)
	return llm.Usage{
		InputTokens:  uc.tokens + uc.sysTok + tools.O200k + 3,
		OutputTokens: tokens.Message(tokens.O200k, reply),
	}
}

// Stream implements llm.Model: the reply's reasoning and then its text
// arrive in small chunks and each tool call's arguments in two halves, then
// EventDone with the whole response (reasoning parts and signatures
// included).
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
	return func(yield func(llm.StreamEvent, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(llm.StreamEvent{}, err)
			return
		}
		chunks := func(typ llm.StreamEventType, text string) bool {
			for len(text) > 0 {
				n := min(16, len(text))
				for n < len(text) && !utf8Start(text[n]) {
					n++
				}
				if !yield(llm.StreamEvent{Type: typ, Text: text[:n]}, nil) {
					return false
				}
				text = text[n:]
			}
			return true
		}
		if !chunks(llm.EventReasoningDelta, resp.Message.ReasoningText()) || !chunks(llm.EventTextDelta, resp.Message.Content) {
			return
		}
		for i, c := range resp.Message.ToolCalls {
			if !yield(llm.StreamEvent{Type: llm.EventToolCallStart, Index: i, ToolCall: &llm.ToolCall{ID: c.ID, Name: c.Name}}, nil) {
				return
			}
			half := len(c.Args) / 2
			for half < len(c.Args) && !utf8Start(c.Args[half]) {
				half++
			}
			for _, part := range [][]byte{c.Args[:half], c.Args[half:]} {
				if len(part) > 0 && !yield(llm.StreamEvent{Type: llm.EventToolCallDelta, Index: i, ArgsDelta: string(part)}, nil) {
					return
				}
			}
		}
		yield(llm.StreamEvent{Type: llm.EventDone, Response: resp}, nil)
	}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
