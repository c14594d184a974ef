// Package tool defines what an agent can call: the Tool interface, the
// per-call Env a tool runs in, and typed constructors that derive a tool's
// JSON schema from a Go struct and validate every call against it.
//
// Error policy: a tool's Go error is answered to the model as an error result
// and the run goes on. Only an error wrapping ErrFatal (or the context's
// cancellation) stops the run.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// Tool is something a model can call. Implementations must be safe for
// concurrent use; the agent loop never mutates a tool.
type Tool interface {
	// Spec is the definition sent to the model. It must not change between
	// calls.
	Spec() llm.ToolSpec
	// Run executes one call. args is the raw JSON the model produced.
	Run(ctx context.Context, env *Env, args json.RawMessage) (Result, error)
}

// Inline is implemented by tools whose calls may run on the agent loop's
// own goroutine: a call returns promptly once its context ends, because
// nothing in it waits without watching that context, and it reports
// progress (Env.Progress) only from the goroutine it was called on. The
// agent then runs a step's lone call of such a tool itself instead of
// handing it to a worker goroutine and waiting, which costs more than many
// calls do.
type Inline interface {
	Inline() bool
}

// Env is what the agent loop hands a tool for one call.
type Env struct {
	// CallID is the model's id for this call.
	CallID string
	// Agent is the path of the agent making the call, e.g. "parent" or
	// "parent / researcher#call_1".
	Agent string
	// Files is this call's view of the filesystem. With the default in-state
	// backend each call of a batch writes to its own layer, merged into the
	// run's files in call order when the batch ends.
	Files vfs.Backend
	// Request is the model request whose response asked for this call. It is
	// shared and must be treated as read-only.
	Request *llm.Request
	// SystemParts are the estimated tokens of the parts of Request.System
	// that the context report counts apart ("memory", "skills"), for a
	// tool that runs an agent under the same prompt (a fork). Read-only.
	SystemParts map[string]int
	// Progress reports a line of progress; it becomes a tool.progress event.
	// Nil outside an agent run.
	Progress func(text string)
	// Capabilities say what the calling agent's model accepts beyond text,
	// so a tool can answer with an image only to a model that reads one.
	Capabilities llm.Capabilities
	// Calls are all the calls of the model message this call belongs to, in
	// order (this one included), for tools that must know their siblings.
	// Shared: read-only.
	Calls []llm.ToolCall
	// State holds the run's state values (JSON by name) as of the start of
	// the step. Shared: read-only; a tool changes a value through
	// Result.State.
	State map[string]json.RawMessage
}

// Report sends a progress line if the environment accepts one.
func (e *Env) Report(text string) {
	if e != nil && e.Progress != nil {
		e.Progress(text)
	}
}

// Result is what a tool answers.
type Result struct {
	// Content is the text the model reads.
	Content string
	// IsError marks the result as a failure the model should react to.
	IsError bool
	// Structured is a machine-readable form of the result, if any.
	Structured json.RawMessage
	// Stop ends the agent's run once the current batch of tool calls is done
	// (used by structured-response tools).
	Stop bool
	// State sets run state values (JSON by name; nil removes one), applied
	// by the loop after the step's calls finish, in call order, like file
	// changes: a tool keeps its own data in the run's state this way, where
	// it is checkpointed with the step and belongs to the calling agent's
	// run only.
	State map[string]json.RawMessage
	// Parts is the ordered content of a result that carries more than text,
	// such as an image; nil for a text result. Content is then the text of
	// its text parts (see WithParts), which is what events show and what a
	// middleware that rewrites Content changes: the tool message keeps the
	// other parts in place around the new text.
	Parts []llm.Part
}

// WithParts returns a successful result made of parts, in order, with
// Content set to the text of its text parts.
func WithParts(parts ...llm.Part) Result {
	m := llm.NewMessage(llm.RoleTool, parts...)
	return Result{Content: m.Content, Parts: m.Parts}
}

// Message returns the tool message that answers call with r: a plain text
// message, or one with r's parts. When Content no longer equals the text of
// the parts (a middleware replaced or extended it), the text parts give way
// to one text part holding Content, where the first of them was, so no image
// is lost and no stale text is sent.
func (r Result) Message(call llm.ToolCall) llm.Message {
	m := llm.ToolResult(call, r.Content, r.IsError)
	if len(r.Parts) == 0 {
		return m
	}
	var text strings.Builder
	for _, p := range r.Parts {
		if p.Type == llm.PartText {
			text.WriteString(p.Text)
		}
	}
	parts := r.Parts
	if text.String() != r.Content {
		parts = make([]llm.Part, 0, len(r.Parts)+1)
		placed := false
		for _, p := range r.Parts {
			if p.Type != llm.PartText {
				parts = append(parts, p)
				continue
			}
			if !placed && r.Content != "" {
				parts = append(parts, llm.TextPart(r.Content))
			}
			placed = true
		}
		if !placed && r.Content != "" {
			parts = append([]llm.Part{llm.TextPart(r.Content)}, parts...)
		}
	}
	m.SetParts(parts)
	return m
}

// Text returns a successful result.
func Text(s string) Result { return Result{Content: s} }

// Errorf returns an error result answered to the model.
func Errorf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// ErrFatal marks a tool error that must stop the whole run instead of being
// answered to the model. Wrap it: fmt.Errorf("db gone: %w", tool.ErrFatal).
var ErrFatal = errors.New("fatal tool error")

// Fatal wraps err so that it stops the run.
func Fatal(err error) error { return fmt.Errorf("%w: %w", ErrFatal, err) }
