package acp

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
)

// maxPromptBytes caps the text of one prompt (its blocks together).
const maxPromptBytes = 4 << 20

// Prompt runs one turn of the session: the prompt as a user message, the
// run streamed as session updates, each call that waits for approval put
// to the editor, until the run ends or the editor cancels.
func (s *Server) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(err.Error())
	}
	ss.mu.Lock()
	for ss.busy {
		// The connection cancelled the turn running when it took this
		// prompt: this one runs once that one has ended (and saved).
		idle := ss.idle
		ss.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		ss.mu.Lock()
	}
	rt := ss.rt
	if rt == nil {
		ss.mu.Unlock()
		return sdk.PromptResponse{}, sdk.NewInvalidParams("the session is closed")
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ss.mu.Unlock()
		return sdk.PromptResponse{}, sdk.NewInternalError("the agent is shutting down")
	}
	s.turns.Add(1)
	s.mu.Unlock()
	ss.busy, ss.idle = true, make(chan struct{})
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		ss.busy = false
		closeRT := ss.closeLater
		ss.closeLater = nil
		close(ss.idle)
		ss.mu.Unlock()
		if closeRT != nil {
			closeRT()
		}
		s.turns.Done()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()

	send := func(u sdk.SessionUpdate) {
		// A notification the editor cannot take (it went away) is lost;
		// the turn goes on and is saved in the thread.
		_ = s.conn.SessionUpdate(context.WithoutCancel(ctx), sdk.SessionNotification{SessionId: p.SessionId, Update: u})
	}
	mode := ""
	if rt.Mode != nil {
		mode = string(rt.Mode.Mode())
	}
	tr := newTranslator(ss.cwd, send)
	in := agent.Input{Messages: []llm.Message{llm.User(text)}}
	var decisions []agent.Decision
	for {
		opts := []agent.RunOption{runner.Checkpoints(rt.Saver, ss.id)}
		if len(decisions) > 0 {
			if rt.Mode != nil {
				rt.Mode.Decided(decisions)
			}
			opts = append(opts, agent.WithDecisions(decisions...))
		}
		var events iter.Seq2[agent.Event, error]
		if rt.Run != nil {
			events = rt.Run(ctx, ss.id, in, opts...)
		} else {
			events = rt.Agent.Run(ctx, in, opts...)
		}
		res, runErr := agent.Drain(events, tr.event)
		if rt.Mode != nil && string(rt.Mode.Mode()) != mode {
			// auto fell back to manual: the editor's picker follows.
			mode = string(rt.Mode.Mode())
			send(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeId: sdk.SessionModeId(mode)}})
		}
		if ctx.Err() != nil {
			tr.cancelAll()
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		if res == nil {
			if runErr == nil {
				runErr = errors.New("the run ended without a result")
			}
			return sdk.PromptResponse{}, sdk.NewInternalError(runErr.Error())
		}
		var de *agent.DecisionError
		if errors.As(runErr, &de) {
			return sdk.PromptResponse{}, sdk.NewInternalError(de.Msg)
		}
		switch res.Status {
		case agent.StatusInterrupted:
			if len(res.Interrupts) == 0 {
				return sdk.PromptResponse{}, sdk.NewInternalError("the run stopped for approval but names no call to decide on")
			}
			ds, cancelled, err := s.ask(ctx, p.SessionId, tr, res.Interrupts)
			if err != nil {
				if ctx.Err() != nil || cancelled {
					tr.cancelAll()
					return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
				}
				return sdk.PromptResponse{}, err
			}
			in, decisions = agent.Input{}, ds
			continue
		case agent.StatusOK:
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
		case agent.StatusLimit:
			return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests}, nil
		case agent.StatusRefused:
			return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
		case agent.StatusCancelled:
			tr.cancelAll()
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		msg := res.Error
		if msg == "" && runErr != nil {
			msg = runErr.Error()
		}
		tr.cancelAll()
		return sdk.PromptResponse{}, sdk.NewInternalError(fmt.Sprintf("the turn failed (%s): %s; the thread keeps what was done, send another prompt to go on", res.Status, msg))
	}
}

// promptText is the user message a prompt makes: its text blocks, then the
// text of each embedded resource and the address of each linked one,
// separated by blank lines. Images and audio are refused (not advertised).
func promptText(blocks []sdk.ContentBlock) (string, error) {
	var parts []string
	n := 0
	add := func(s string) error {
		n += len(s)
		if n > maxPromptBytes {
			return fmt.Errorf("the prompt is over %d MiB; send less, or name the files instead", maxPromptBytes>>20)
		}
		parts = append(parts, s)
		return nil
	}
	for _, b := range blocks {
		var err error
		switch {
		case b.Text != nil:
			err = add(b.Text.Text)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			err = add(fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", r.Uri, r.Text))
		case b.ResourceLink != nil:
			err = add(fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.Uri))
		default:
			return "", errors.New("this agent takes text, embedded text resources and resource links in prompts, not images, audio or binary resources")
		}
		if err != nil {
			return "", err
		}
	}
	text := strings.Join(parts, "\n\n")
	if strings.TrimSpace(text) == "" {
		return "", errors.New("the prompt is empty")
	}
	return text, nil
}

// The permission options put to the editor; their ids are the decisions.
const (
	optAllow  = "allow_once"
	optReject = "reject_once"
)

// ask puts each waiting call to the editor and returns the decisions.
// cancelled reports that the editor cancelled the question (the turn ends
// cancelled, the calls still waiting in the thread).
func (s *Server) ask(ctx context.Context, sid sdk.SessionId, tr *translator, waiting []agent.Interrupt) ([]agent.Decision, bool, error) {
	var out []agent.Decision
	for _, in := range waiting {
		tc := tr.waiting(in)
		allowed := in.Allowed
		if len(allowed) == 0 {
			allowed = agent.AllDecisions
		}
		var opts []sdk.PermissionOption
		if slices.Contains(allowed, agent.Approve) {
			opts = append(opts, sdk.PermissionOption{OptionId: optAllow, Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce})
		}
		if slices.Contains(allowed, agent.Reject) {
			opts = append(opts, sdk.PermissionOption{OptionId: optReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce})
		}
		if len(opts) == 0 {
			return nil, false, fmt.Errorf("call %s of %s waits for a decision an editor cannot give (%v); answer it with 'deepagents resume --thread %s'", in.CallID, in.Tool, in.Allowed, sid)
		}
		resp, err := s.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sid, ToolCall: tc, Options: opts})
		if err != nil {
			return nil, false, err
		}
		d, ok := decisionOf(resp.Outcome, in)
		if !ok {
			return nil, true, errors.New("the editor cancelled the permission request")
		}
		out = append(out, d)
	}
	return out, false, nil
}

// decisionOf is the decision an editor's answer makes for call in: false
// when the answer was cancelled (or names no option we gave).
func decisionOf(o sdk.RequestPermissionOutcome, in agent.Interrupt) (agent.Decision, bool) {
	if o.Selected == nil {
		return agent.Decision{}, false
	}
	d := agent.Decision{CallID: in.CallID, Path: in.Path}
	switch o.Selected.OptionId {
	case optAllow:
		d.Type = agent.Approve
	case optReject:
		d.Type = agent.Reject
		d.Message = "The user rejected this call in the editor."
	default:
		return agent.Decision{}, false
	}
	return d, true
}
