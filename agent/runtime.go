package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// Runtime is where a run takes the time, makes ids and fans a step's tool
// calls out. The loop uses nothing else for these, so another runtime can
// drive the same loop: a deterministic one for tests, a durable-execution
// engine later. Pass one with WithRuntime; subagent runs inherit it. Without
// one a run uses the in-process default: the wall clock, ids "call_R_I", and
// the agent's pool of worker goroutines.
//
// Timeouts (WithTimeout) and lease expiry still use the context's deadline
// and the wall clock.
type Runtime interface {
	// Now is the time events are stamped with and durations measured by.
	// It may be called from any goroutine.
	Now() time.Time
	// CallID names the index-th tool call of model call round (0-based)
	// when the model sent the call without an id.
	CallID(round, index int) string
	// Fanout runs a step's tool calls: each function once, none of them on
	// the caller's goroutine (the caller reads what they report while they
	// run). It may return before they finish.
	Fanout(calls []func())
	// Model makes one model call; next is the call through the agent's
	// middleware. A durable-execution runtime records its outcome here.
	Model(ctx context.Context, req *llm.Request, next ModelFunc) (*llm.Response, error)
	// Tool runs one tool call; next runs it through the agent's middleware.
	Tool(ctx context.Context, call *ToolCall, next ToolFunc) (tool.Result, error)
}

// Direct is embedded by runtimes that make model and tool calls in process:
// its Model and Tool call next.
type Direct struct{}

// Model calls next.
func (Direct) Model(ctx context.Context, req *llm.Request, next ModelFunc) (*llm.Response, error) {
	return next(ctx, req)
}

// Tool calls next.
func (Direct) Tool(ctx context.Context, call *ToolCall, next ToolFunc) (tool.Result, error) {
	return next(ctx, call)
}

// inProcess is the default runtime of a run of a.
type inProcess struct {
	Direct
	a *Agent
}

func (inProcess) Now() time.Time { return time.Now() }

func (inProcess) CallID(round, index int) string { return defaultCallID(round, index) }

func (p inProcess) Fanout(calls []func()) {
	for _, f := range calls {
		p.a.spawn(f)
	}
}

func defaultCallID(round, index int) string { return fmt.Sprintf("call_%d_%d", round, index) }

// Sequential is a deterministic Runtime for tests and replays: its clock
// stands still at the time it is set to (Advance moves it), ids are the
// default "call_R_I", and a step's tool calls run one after the other, in
// call order, on one goroutine per step. With a deterministic model, two
// runs under fresh Sequential runtimes set to the same time give the same
// event stream, byte for byte.
type Sequential struct {
	Direct
	mu  sync.Mutex
	now time.Time
}

// NewSequential returns a Sequential runtime whose clock reads start.
func NewSequential(start time.Time) *Sequential { return &Sequential{now: start} }

// Now returns the clock's time.
func (s *Sequential) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the clock forward by d.
func (s *Sequential) Advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

// CallID returns "call_R_I".
func (*Sequential) CallID(round, index int) string { return defaultCallID(round, index) }

// Fanout runs the calls one by one, in order, on a new goroutine.
func (*Sequential) Fanout(calls []func()) {
	go func() {
		for _, f := range calls {
			f()
		}
	}()
}
