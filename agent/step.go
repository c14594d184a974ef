package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// This file is one step of the loop: build the request, run the BeforeModel
// hooks, call the model through the WrapModel chain, and take in its response.

// steps runs steps until the run ends and says how it ended.
func (r *run) steps(ctx context.Context) (Status, error) {
	a := r.a
	for {
		if err := ctx.Err(); err != nil {
			return StatusCancelled, context.Cause(ctx)
		}
		if r.rounds >= r.maxSteps {
			calls := "model calls"
			if r.maxSteps == 1 {
				calls = "model call"
			}
			return StatusLimit, fmt.Errorf("stopped after %d %s (the step limit)", r.maxSteps, calls)
		}
		n := len(r.state.Messages)
		req := &llm.Request{System: r.system, Messages: r.state.Messages[:n:n], Tools: a.specs, Settings: a.settings}
		for _, m := range a.cfg.Middleware {
			if m.BeforeModel != nil {
				if err := m.BeforeModel(ctx, StepInfo{Agent: r.where, Path: r.path, Round: r.rounds, State: &r.state, Files: r.backend, Emit: r.emit}, req); err != nil {
					return StatusError, fmt.Errorf("middleware %s: %w", m.Name, err)
				}
			}
		}
		r.emit(Event{Type: ModelRequest, Request: &RequestInfo{
			Round: r.rounds, MessageCount: len(req.Messages), SystemChars: tokens.Chars(req.System),
			Tools: r.toolNames(req), ToolTokens: r.toolTokens(req),
		}})
		start := r.rt.Now()
		round := r.rounds
		mctx := llm.WithCallInfo(ctx, llm.CallInfo{Agent: a.name, Instance: r.instance, Path: r.where, Task: r.task, Round: round,
			OnRetry: func(rt llm.Retry) { r.emit(retryEvent(round, rt)) }})
		resp, err := r.callModel(mctx, req)
		r.rounds++
		if err != nil {
			if ctx.Err() != nil {
				return StatusCancelled, context.Cause(ctx)
			}
			return StatusError, fmt.Errorf("model call %d of %s failed: %w", r.rounds, r.where, err)
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
				if msg.ToolCalls[i].ID == "" {
					msg.ToolCalls[i].ID = r.rt.CallID(r.rounds-1, i)
				}
				if len(msg.ToolCalls[i].Args) == 0 {
					msg.ToolCalls[i].Args = []byte("{}")
				}
			}
		}
		r.usage = r.usage.Add(resp.Usage)
		r.state.Messages = append(r.state.Messages, msg)
		info := &ResponseInfo{Round: r.rounds - 1, Usage: resp.Usage, StopReason: resp.StopReason, Text: msg.Content,
			Refusal: resp.Refusal, DurationMS: ms(r.rt.Now().Sub(start)), Message: &r.state.Messages[len(r.state.Messages)-1]}
		for _, c := range msg.ToolCalls {
			info.ToolCalls = append(info.ToolCalls, c.Name)
		}
		r.emit(Event{Type: ModelResponse, Response: info})
		if refused {
			text := resp.Refusal
			if text == "" {
				text = strings.TrimSpace(msg.Content)
			}
			return StatusRefused, &refusalError{text: text}
		}

		if len(msg.ToolCalls) == 0 {
			if a.respTool == nil || r.output != nil {
				return StatusOK, nil
			}
			if r.respRepaired {
				return StatusError, fmt.Errorf("%w: it answered in text instead of calling %s", ErrNoStructuredResponse, a.respTool.spec.Name)
			}
			r.respRepaired = true
			r.state.Messages = append(r.state.Messages, llm.User(fmt.Sprintf(
				"Your final answer must be a call of the %s tool with arguments matching its schema; plain text is not accepted. Call %s now.",
				a.respTool.spec.Name, a.respTool.spec.Name)))
			continue
		}
		stop, err := r.runTools(ctx, req, msg.ToolCalls)
		if err != nil {
			if ctx.Err() != nil {
				return StatusCancelled, context.Cause(ctx)
			}
			return StatusError, err
		}
		if stop {
			return StatusOK, nil
		}
		if r.respFailures >= 2 {
			return StatusError, fmt.Errorf("%w: %s", ErrNoStructuredResponse, r.lastRespError)
		}
	}
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

func (r *run) callModel(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	model := r.a.cfg.Model
	next := ModelFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if !r.a.cfg.Stream {
			return model.Generate(ctx, req)
		}
		var acc llm.Accumulator
		for ev, err := range model.Stream(ctx, req) {
			if err != nil {
				return nil, err
			}
			if resp := acc.Add(ev); resp != nil {
				return resp, nil
			}
			d := ev
			r.emit(Event{Type: ModelDelta, Delta: &d})
		}
		return nil, llm.ErrStreamIncomplete
	})
	mws := r.a.cfg.Middleware
	for i := len(mws) - 1; i >= 0; i-- {
		if w := mws[i].WrapModel; w != nil {
			inner := next
			next = func(ctx context.Context, req *llm.Request) (*llm.Response, error) { return w(ctx, req, inner) }
		}
	}
	resp, err := next(ctx, req)
	if err == nil && resp == nil {
		err = errors.New("the model returned no response")
	}
	return resp, err
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
