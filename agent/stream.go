package agent

import (
	"context"
	"errors"
	"iter"

	"github.com/deepagents-go/deepagents/llm"
)

// This file is the model call as a stream: the chain of the middleware's
// WrapStream and WrapModel hooks around the model, and the loop's reading
// of what the outermost of them yields.

// StreamFunc is one model call as a stream of events: deltas, then one
// llm.EventDone that carries the response. An error ends the stream.
type StreamFunc func(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error]

// errConsumerGone is what a WrapModel hook's next returns once the stream
// it feeds is no longer read.
var errConsumerGone = errors.New("the model call's stream is no longer read")

// modelStream is the model call through the agent's middleware, outermost
// first; for one middleware its WrapModel is outside its WrapStream. The
// innermost call reads the model (Stream, or Generate seen as a stream)
// under the response limits, so that a stream is cut off where it is read,
// whatever a wrapper does with it.
func (r *run) modelStream() StreamFunc {
	model := r.a.cfg.Model
	limits := r.a.cfg.ResponseLimits
	stream := r.a.cfg.Stream
	next := StreamFunc(func(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			// Providers read the limits from the context to bound what
			// they keep and read themselves.
			ctx := llm.WithResponseLimits(ctx, limits)
			var events iter.Seq2[llm.StreamEvent, error]
			if stream {
				events = model.Stream(ctx, req)
			} else {
				events = llm.StreamOf(ctx, req, generateAssistant(model))
			}
			for ev, err := range llm.Limited(events, limits) {
				if !yield(ev, err) || err != nil {
					return
				}
			}
		}
	})
	mws := r.a.cfg.Middleware
	for i := len(mws) - 1; i >= 0; i-- {
		if w := mws[i].WrapStream; w != nil {
			inner := next
			next = func(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
				return w(ctx, req, inner)
			}
		}
		if w := mws[i].WrapModel; w != nil {
			next = modelAsStream(w, next)
		}
	}
	return next
}

// generateAssistant is m.Generate with the response's message marked as the
// assistant's when the model left its role empty, so that the stream's
// EventDone carries the message as the model made it (an accumulator
// rebuilds a message without a role from the deltas, which drop reasoning).
// No response and no error is an error.
func generateAssistant(m llm.Model) func(context.Context, *llm.Request) (*llm.Response, error) {
	return func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		resp, err := m.Generate(ctx, req)
		if err == nil && resp == nil {
			return nil, errNoResponse
		}
		if err != nil {
			return resp, err
		}
		return asAssistant(resp), nil
	}
}

// asAssistant returns resp with its message's role set to assistant when a
// model or a hook left it empty; a stream's end takes a response without a
// role for the pieces streamed before it, which would lose its text.
func asAssistant(resp *llm.Response) *llm.Response {
	if resp.Message.Role != "" {
		return resp
	}
	c := *resp
	c.Message.Role = llm.RoleAssistant
	return &c
}

// modelAsStream puts a response-level hook on the stream chain. The events
// of each call the hook makes pass on as they come; its response ends the
// stream. A hook that calls next twice passes on both calls' events: a
// wrapper that retries should be a WrapStream, which can hold back or drop
// the events of an attempt it throws away.
func modelAsStream(w func(context.Context, *llm.Request, ModelFunc) (*llm.Response, error), next StreamFunc) StreamFunc {
	return func(ctx context.Context, req *llm.Request) iter.Seq2[llm.StreamEvent, error] {
		return func(yield func(llm.StreamEvent, error) bool) {
			gone := false
			inner := ModelFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
				if gone {
					return nil, errConsumerGone
				}
				var acc llm.Accumulator
				for ev, err := range next(ctx, req) {
					if err != nil {
						return nil, err
					}
					if resp := acc.Add(ev); resp != nil {
						return resp, nil
					}
					if !yield(ev, nil) {
						gone = true
						return nil, errConsumerGone
					}
				}
				return nil, llm.ErrStreamIncomplete
			})
			resp, err := w(ctx, req, inner)
			switch {
			case gone:
			case err != nil:
				yield(llm.StreamEvent{}, err)
			case resp == nil:
				yield(llm.StreamEvent{}, errNoResponse)
			default:
				yield(llm.StreamEvent{Type: llm.EventDone, Response: asAssistant(resp)}, nil)
			}
		}
	}
}

var errNoResponse = errors.New("the model returned no response")

// readStream reads the outermost wrapper's stream to the response. What it
// reads is what the run reports: each event before EventDone is a
// model.delta event when the agent streams. The limits are checked again,
// since a wrapper may add to what the model sent.
func (r *run) readStream(events iter.Seq2[llm.StreamEvent, error]) (*llm.Response, error) {
	limits := r.a.cfg.ResponseLimits
	var acc llm.Accumulator
	meter := llm.NewMeter(limits)
	for ev, err := range events {
		if err != nil {
			return nil, err
		}
		if err := meter.Add(ev); err != nil {
			return nil, err
		}
		if resp := acc.Add(ev); resp != nil {
			if err := limits.Check(resp); err != nil {
				return nil, err
			}
			return resp, nil
		}
		if r.a.cfg.Stream {
			d := ev
			r.emit(Event{Type: ModelDelta, Delta: &d})
		}
	}
	return nil, llm.ErrStreamIncomplete
}

// callModel makes the step's model call: through the runtime (which may
// record its outcome), the middleware chain and the model.
func (r *run) callModel(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	stream := r.modelStream()
	resp, err := r.rt.Model(ctx, req, func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return r.readStream(stream(ctx, req))
	})
	if err == nil && resp == nil {
		err = errNoResponse
	}
	return resp, err
}
