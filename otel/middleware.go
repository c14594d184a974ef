package daotel

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/subagent"
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

// Middleware returns the agent middleware that makes the chat span of
// every model call of the agents it is installed on, from the call's
// stream (started when the request goes out, ended when the stream ends),
// and links a run to the thread's previous run — the run it resumed after
// an interrupt, or the turn before — for the Recorder found in the run's
// context (see WithRecorder). Without a recorder in the context it does
// nothing. Install it on the top-level agent (deepagents.Config
// Middleware), where forks inherit it, and on each isolated subagent whose
// model calls should be traced (its spec's Middleware, see Subagents): a
// model call made without it has no chat span. The other spans of
// subagents come from the parent's recorder.
func Middleware() agent.Middleware {
	return agent.Middleware{
		Name:       "otel",
		WrapStream: wrapStream,
		AfterRun:   afterRun,
	}
}

// Subagents returns specs with Middleware added to each isolated
// subagent, whose model calls it then traces; forks run their parent's
// middleware and are left as they are. Pass
// deepagents.WithGeneralPurpose(specs) to include the default
// general-purpose subagent.
func Subagents(specs []subagent.Spec) []subagent.Spec {
	out := slices.Clone(specs)
	for i := range out {
		if out[i].Mode != subagent.Fork {
			out[i].Middleware = append(slices.Clone(out[i].Middleware), Middleware())
		}
	}
	return out
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
