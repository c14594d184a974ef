package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
)

// This file is one step of the loop: build the request, run the BeforeModel
// hooks, call the model through the WrapModel chain, and take in its response.

// steps runs steps until the run ends and says how it ended. pending is a
// step to finish first: one whose model call was made before the run was
// resumed.
func (r *run) steps(ctx context.Context, pending *StepState) (Status, error) {
	a := r.a
	// Every model the run calls, its own and those hooks and tools call
	// (a summariser, say), is bound by the agent's response limits.
	ctx = llm.WithResponseLimits(ctx, a.cfg.ResponseLimits)
	// Every hook of the run, WrapTool included, can tell which run it
	// serves (RunFrom).
	ctx = context.WithValue(ctx, runKey{}, &r.state)
	// Background subagent runs go on under the run's context; those saved
	// before the run stopped start again.
	r.bg = newBackground(r, ctx)
	ctx = withBackground(ctx, r.bg)
	for _, saved := range r.rs.Loop.Background {
		r.restartBackground(ctx, saved)
	}
	for {
		if err := ctx.Err(); err != nil {
			return StatusCancelled, context.Cause(ctx)
		}
		if pending != nil {
			n := len(r.state.Messages) - 1
			req := &llm.Request{System: r.system, Messages: r.state.Messages[:n:n], Tools: a.specs, Settings: a.settings}
			r.addStepTools(ctx, req)
			status, err, done := r.toolPhase(ctx, req, pending.Calls, pending)
			pending = nil
			if done {
				return status, err
			}
			continue
		}
		if status, err, done := r.backgroundTurn(ctx); done {
			return status, err
		}
		if r.rs.Loop.Rounds-r.rs.Loop.TurnStart >= r.maxSteps {
			calls := "model calls"
			if r.maxSteps == 1 {
				calls = "model call"
			}
			return StatusLimit, fmt.Errorf("stopped after %d %s (the step limit)", r.maxSteps, calls)
		}
		n := len(r.state.Messages)
		req := &llm.Request{System: r.system, Messages: r.state.Messages[:n:n], Tools: a.specs, Settings: a.settings}
		r.addStepTools(ctx, req)
		r.claims = nil
		for _, m := range a.cfg.Middleware {
			if m.BeforeModel != nil {
				sys, tail := req.System, req.SystemTail
				if err := m.BeforeModel(ctx, r.stepInfo(), req); err != nil {
					if errors.Is(err, ErrLimit) {
						// A budget a middleware keeps is used up: the run
						// stops cleanly, before the call, as at its step
						// limit, and the error says which budget.
						return StatusLimit, err
					}
					return StatusError, fmt.Errorf("middleware %s: %w", m.Name, err)
				}
				if m.SystemPart != "" {
					if r.claims == nil {
						r.claims = &claims{}
					}
					r.claims.claim(m.SystemPart, sys, tail, req)
				}
			}
		}
		if len(r.inherited) > 0 && strings.HasPrefix(req.System, r.system) {
			// A fork's prompt is its parent's as sent, its tagged parts
			// included.
			if r.claims == nil {
				r.claims = &claims{}
			}
			for part, n := range r.inherited {
				r.claims.add(part, n, n)
			}
		}
		if r.claims != nil {
			// The prompt as sent: later hooks may have added to it.
			r.claims.system, r.claims.tail = req.System, req.SystemTail
		}
		reqInfo := &RequestInfo{Round: r.rs.Loop.Rounds, MessageCount: len(req.Messages), SystemChars: tokens.Chars(req.System),
			Tools: r.toolNames(req), ToolTokens: r.toolTokens(req)}
		if report, ok := r.report(req); ok {
			r.ledger.Add(report)
			reqInfo.Context = &report
		}
		r.emit(Event{Type: ModelRequest, Request: reqInfo})
		start := r.rt.Now()
		round := r.rs.Loop.Rounds
		mctx := llm.WithCallInfo(ctx, llm.CallInfo{Agent: a.name, Instance: r.instance, Path: r.where, Task: r.task, Round: round,
			OnRetry: func(rt llm.Retry) { r.emit(retryEvent(round, rt)) }})
		resp, err := r.callModel(withStep(mctx, r.stepInfo()), req)
		r.rs.Loop.Rounds++
		if err != nil {
			if ctx.Err() != nil {
				return StatusCancelled, context.Cause(ctx)
			}
			return StatusError, fmt.Errorf("model call %d of %s failed: %w", r.rs.Loop.Rounds, r.where, err)
		}
		msg := resp.Message
		msg.Role = llm.RoleAssistant
		// A refusal is its stop reason or its text: either one ends the run.
		refused := resp.StopReason == llm.StopRefusal || resp.Refusal != ""
		if refused {
			// Nothing the model asked for runs, and the history keeps what it
			// said: its text, or else the refusal itself.
			msg.ToolCalls = nil
			if !msg.HasText() && resp.Refusal != "" {
				msg.SetParts(append(slices.Clone(msg.AllParts()), llm.TextPart(resp.Refusal)))
			}
		}
		if len(msg.ToolCalls) > 0 {
			msg.ToolCalls = slices.Clone(msg.ToolCalls)
			for i := range msg.ToolCalls {
				if msg.ToolCalls[i].ID == "" || r.reusedNestedID(msg.ToolCalls, i) {
					msg.ToolCalls[i].ID = r.rt.CallID(r.rs.Loop.Rounds-1, i)
				}
				if len(msg.ToolCalls[i].Args) == 0 {
					msg.ToolCalls[i].Args = []byte("{}")
				} else if args := msg.ToolCalls[i].Args; json.Valid(args) {
					// One spelling of the arguments from here on: what is
					// saved and read back (JSON compacts them) is what later
					// requests send, so a resumed run's requests are the
					// uncrashed run's, byte for byte.
					var b bytes.Buffer
					if json.Compact(&b, args) == nil && b.Len() != len(args) {
						msg.ToolCalls[i].Args = b.Bytes()
					}
				}
			}
		}
		r.rs.Loop.Usage = r.rs.Loop.Usage.Add(resp.Usage)
		if r.rec != nil {
			r.rec.usage = r.rec.usage.Add(resp.Usage)
		}
		r.state.Messages = append(r.state.Messages, msg)
		info := &ResponseInfo{Round: r.rs.Loop.Rounds - 1, Usage: resp.Usage, StopReason: resp.StopReason, Text: msg.Content,
			Refusal: resp.Refusal, DurationMS: ms(r.rt.Now().Sub(start)), Message: &r.state.Messages[len(r.state.Messages)-1]}
		for _, c := range msg.ToolCalls {
			info.ToolCalls = append(info.ToolCalls, c.Name)
		}
		respEv := Event{Type: ModelResponse, Response: info}
		if refused {
			text := resp.Refusal
			if text == "" {
				text = strings.TrimSpace(msg.Content)
			}
			return r.endWith(ctx, respEv, StatusRefused, &refusalError{text: text})
		}

		if len(msg.ToolCalls) == 0 {
			if (a.respTool == nil || r.rs.Loop.Output != nil) && r.bg.active() > 0 {
				// Background tasks go on: the run waits for them and calls
				// the model again with their receipts (backgroundTurn).
				if r.rec != nil {
					if err := r.save(ctx, RecordStep, "", nil); err != nil {
						r.emit(respEv)
						return StatusError, err
					}
				}
				r.emit(respEv)
				continue
			}
			if a.respTool == nil || r.rs.Loop.Output != nil {
				return r.endWith(ctx, respEv, StatusOK, nil)
			}
			r.emit(respEv)
			if r.rs.Loop.RespRepaired {
				return StatusError, fmt.Errorf("%w: it answered in text instead of calling %s", ErrNoStructuredResponse, a.respTool.spec.Name)
			}
			r.rs.Loop.RespRepaired = true
			r.state.Messages = append(r.state.Messages, llm.User(fmt.Sprintf(
				"Your final answer must be a call of the %s tool with arguments matching its schema; plain text is not accepted. Call %s now.",
				a.respTool.spec.Name, a.respTool.spec.Name)))
			continue
		}
		// The response is saved before any of its calls starts, and before
		// anyone sees it, so that a crash from here on never repeats the
		// model call: what a consumer was shown is what a resumed run has.
		if r.rec != nil {
			r.rs.Loop.StepInProgress = stepID(r.rs.Step + 1)
			if err := r.save(ctx, RecordStep, "", nil); err != nil {
				r.emit(respEv)
				return StatusError, err
			}
		}
		r.emit(respEv)
		status, err, done := r.toolPhase(ctx, req, msg.ToolCalls, nil)
		if done {
			return status, err
		}
	}
}

// toolPhase runs a step's calls and says whether the run ends there.
func (r *run) toolPhase(ctx context.Context, req *llm.Request, calls []llm.ToolCall, pending *StepState) (Status, error, bool) {
	stop, err := r.runTools(ctx, req, calls, pending)
	if err != nil {
		if ctx.Err() != nil {
			return StatusCancelled, context.Cause(ctx), true
		}
		return StatusError, err, true
	}
	if len(r.rs.Loop.Interrupts) > 0 {
		return StatusInterrupted, errWaiting{len(r.rs.Loop.Interrupts)}, true
	}
	if r.rec != nil {
		r.rs.Loop.StepInProgress = ""
	}
	if stop {
		// A response that ends the run (a structured response, a tool's
		// Stop) waits for the background runs still going, so that their
		// receipts and files are not lost.
		if err := r.finishBackground(ctx); err != nil {
			return StatusCancelled, err, true
		}
		return StatusOK, nil, true
	}
	if r.rs.Loop.RespFailures >= 2 {
		return StatusError, fmt.Errorf("%w: %s", ErrNoStructuredResponse, r.rs.Loop.LastRespError), true
	}
	return "", nil, false
}

// reusedNestedID says whether calls[i] is a call of a nested tool (the
// task tool) whose id an earlier call of the run, or of this response, has:
// a nested tool's run is named by its call's id (its thread namespace, its
// background task), so the model's reuse of one would have the second run
// refused, or resume the first's; such an id is replaced as an empty one
// is. Done before the message is saved, so a resumed run sees the same.
func (r *run) reusedNestedID(calls []llm.ToolCall, i int) bool {
	if _, nested := r.a.byName[calls[i].Name].(Nested); !nested {
		return false
	}
	id := calls[i].ID
	for _, c := range calls[:i] {
		if c.ID == id {
			return true
		}
	}
	for _, m := range r.state.Messages {
		if m.Role == llm.RoleAssistant && slices.ContainsFunc(m.ToolCalls, func(c llm.ToolCall) bool { return c.ID == id }) {
			return true
		}
	}
	return false
}

type stepKey struct{}

type runKey struct{}

// RunFrom returns the state of the run whose hook was given ctx (or whose
// tool call ctx belongs to): the pointer every StepInfo of that run has in
// State. Middleware that keep data per run, keyed by it, find the run with
// it in hooks that get no StepInfo, such as WrapTool; a subagent's hooks get
// the subagent's own run.
func RunFrom(ctx context.Context) (*State, bool) {
	s, ok := ctx.Value(runKey{}).(*State)
	return s, ok && s != nil
}

func withStep(ctx context.Context, st StepInfo) context.Context {
	return context.WithValue(ctx, stepKey{}, st)
}

// StepFrom returns the step a model call belongs to, from the context the
// loop gives WrapModel and Admit hooks, so that a hook can read and set the
// run's state values (StepInfo.SetValue) and emit events while the call is
// made or admitted (on the loop's goroutine, like BeforeModel).
func StepFrom(ctx context.Context) (StepInfo, bool) {
	st, ok := ctx.Value(stepKey{}).(StepInfo)
	return st, ok
}

// stepInfo describes the run to middleware hooks.
func (r *run) stepInfo() StepInfo {
	info := StepInfo{Path: r.path, Round: r.rs.Loop.Rounds, TurnStart: r.rs.Loop.TurnStart, State: &r.state, Files: r.backend, Emit: r.emit,
		SetValue: r.setValue, AddUsage: r.addUsage, Keep: r.keep, Kept: r.keptValue, Now: r.rt.Now, Streaming: r.a.cfg.Stream, measure: r.measure}
	if rp, ok := r.rt.(Replayer); ok {
		info.Replaying = rp.Replaying
	}
	info.Request = r.rs.Loop.Request
	info.RejectedCall = func(name string, args json.RawMessage) bool { return r.rs.Loop.RejectedCall(name, args) }
	return info
}

// setValue stores a middleware value in the run's state.
func (r *run) setValue(name string, v any) error {
	if name == "" || ReservedValue(name) {
		return fmt.Errorf("state value name %q is empty or reserved", name)
	}
	var raw json.RawMessage
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("state value %q: %w", name, err)
		}
		raw = b
	}
	r.setRaw(name, raw)
	return nil
}

// setRaw stores a state value as JSON (nil or JSON null removes it) and
// marks it for the next step record.
func (r *run) setRaw(name string, raw json.RawMessage) {
	if isJSONNull(raw) {
		raw = nil
	}
	if r.state.Values == nil {
		r.state.Values = map[string]json.RawMessage{}
	}
	if raw == nil {
		delete(r.state.Values, name)
	} else {
		r.state.Values[name] = raw
	}
	if r.rec != nil {
		if r.rec.values == nil {
			r.rec.values = map[string]json.RawMessage{}
		}
		r.rec.values[name] = raw
	}
}

// addStepTools binds the tools middleware add for this step only.
func (r *run) addStepTools(ctx context.Context, req *llm.Request) {
	r.stepTools = nil
	for _, m := range r.a.cfg.Middleware {
		if m.StepTools == nil {
			continue
		}
		for _, t := range m.StepTools(ctx, r.stepInfo()) {
			if t == nil {
				continue
			}
			spec := t.Spec()
			if _, own := r.a.byName[spec.Name]; own || spec.Name == "" {
				continue
			}
			if _, dup := r.stepTools[spec.Name]; dup {
				continue
			}
			if r.stepTools == nil {
				r.stepTools = map[string]tool.Tool{}
				req.Tools = slices.Clone(req.Tools)
			}
			r.stepTools[spec.Name] = t
			req.Tools = append(req.Tools, spec)
		}
	}
	r.addBackgroundTools(req)
}

func (r *run) toolNames(req *llm.Request) []string {
	if sameSpecs(req.Tools, r.a.specs) {
		return r.a.names
	}
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
	}
	return names
}

func (r *run) toolTokens(req *llm.Request) int {
	if sameSpecs(req.Tools, r.a.specs) {
		return r.a.toolTokens()
	}
	return tokens.ToolsO200k(req.Tools)
}

func sameSpecs(a, b []llm.ToolSpec) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (a *Agent) toolTokens() int {
	a.tokOnce.Do(func() { a.tokTotal = tokens.ToolsO200k(a.specs) })
	return a.tokTotal
}

func retryEvent(round int, rt llm.Retry) Event {
	info := &RetryInfo{Round: round, Attempt: rt.Attempt, WaitMS: ms(rt.Wait)}
	if rt.Err != nil {
		info.Error = rt.Err.Error()
	}
	var ae *llm.APIError
	if errors.As(rt.Err, &ae) {
		info.Kind = ae.Kind
	}
	return Event{Type: ModelRetry, Retry: info}
}
