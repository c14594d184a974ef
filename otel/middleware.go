package daotel

import (
	"context"
	"errors"
	"iter"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
)

type recorderKey struct{}

// WithRecorder returns ctx carrying r, for Middleware: pass the result to
// Agent.Run so the agent's hooks find the run's recorder.
func WithRecorder(ctx context.Context, r *Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

func recorderFrom(ctx context.Context) *Recorder {
	r, _ := ctx.Value(recorderKey{}).(*Recorder)
	return r
}

// StateKey is the run-state value in which Middleware keeps the span of the
// thread's last run, so that the next run links to it (also in another
// process: the value is checkpointed with the thread).
const StateKey = "otel.last_run"

// lastRun is the value under StateKey.
type lastRun struct {
	TraceID string       `json:"trace_id"`
	SpanID  string       `json:"span_id"`
	Status  agent.Status `json:"status"`
}

// Middleware returns the agent middleware that adds what events do not
// carry to the spans of the Recorder found in the run's context (see
// WithRecorder): the model a provider answered with, the error kind of a
// failed model call, the request's messages (when content capture is on),
// and the link from a run to the thread's previous run — the run it resumed
// after an interrupt, or the turn before. Without a recorder in the context
// it does nothing. Install it on the top-level agent (deepagents.Config
// Middleware); subagents are covered by their parent's recorder.
func Middleware() agent.Middleware {
	return agent.Middleware{
		Name:       "otel",
		WrapStream: wrapStream,
		AfterRun:   afterRun,
	}
}

// wrapStream notes, for the recorder's chat span of the call, the request
// as sent (when content is captured), the model that answered (from the
// stream's response) and the kind of error that ended the stream.
func wrapStream(ctx context.Context, req *llm.Request, next agent.StreamFunc) iter.Seq2[llm.StreamEvent, error] {
	r := recorderFrom(ctx)
	step, ok := agent.StepFrom(ctx)
	if r == nil || !ok {
		return next(ctx, req)
	}
	return func(yield func(llm.StreamEvent, error) bool) {
		if r.capture {
			input := inputMessages(req.Messages)
			system := systemInstructions(req.System, req.SystemTail)
			r.noteModel(step.Path.String(), step.Round, func(n *modelNote) { n.input, n.system = input, system })
		}
		for ev, err := range next(ctx, req) {
			switch {
			case err != nil:
				typ := errorType(err)
				r.noteModel(step.Path.String(), step.Round, func(n *modelNote) { n.errType = typ })
			case ev.Type == llm.EventDone && ev.Response != nil && ev.Response.Model != "":
				r.noteModel(step.Path.String(), step.Round, func(n *modelNote) { n.responseModel = ev.Response.Model })
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// errorType is the error.type of a failed model call.
func errorType(err error) string {
	var ae *llm.APIError
	switch {
	case errors.As(err, &ae) && ae.Kind != "":
		return string(ae.Kind)
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

// afterRun links the top-level span to the thread's previous run and
// leaves this run's span in the state for the next.
func afterRun(ctx context.Context, step agent.StepInfo, status agent.Status) {
	r := recorderFrom(ctx)
	if r == nil || step.Path.IsNested() || step.SetValue == nil {
		return
	}
	r.mu.Lock()
	a := r.agents[step.Path.String()]
	r.mu.Unlock()
	if a == nil {
		return
	}
	if step.State != nil {
		if prev, ok, err := agent.GetValue[lastRun](step.State, StateKey); err == nil && ok {
			if sc, ok := prev.spanContext(); ok && sc.SpanID() != a.span.SpanContext().SpanID() {
				kind := "previous_turn"
				if prev.Status == agent.StatusInterrupted {
					kind = "resume"
				}
				a.span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{LinkKindKey.String(kind)}})
			}
		}
	}
	sc := a.span.SpanContext()
	if !sc.IsValid() {
		return
	}
	_ = step.SetValue(StateKey, lastRun{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Status: status})
}

func (l lastRun) spanContext() (trace.SpanContext, bool) {
	tid, err := trace.TraceIDFromHex(l.TraceID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(l.SpanID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}
