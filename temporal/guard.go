package temporal

import (
	"fmt"

	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/deepagents-go/deepagents/agent"
)

// Defaults of Registry.MaxHistorySize and MaxHistoryLength: well below
// Temporal's limits (50 MB and 51,200 events, at which it terminates the
// workflow), so that the step that crosses them still fits.
const (
	DefaultMaxHistorySize   = 40 << 20
	DefaultMaxHistoryLength = 40_000
)

// payloadType is the type of the application error of an activity whose
// output is over MaxPayload.
const payloadType = "deepagents.Payload"

// PayloadError is a model or tool call whose input, or whose output, is
// too large to be an activity's.
type PayloadError struct {
	Activity string `json:"activity"`
	Size     int    `json:"size"`
	// Output is set when the activity's output (the model's response, the
	// tool's result) was too large, not its input.
	Output bool `json:"output,omitempty"`
}

func (e *PayloadError) Error() string {
	what := "input"
	if e.Output {
		what = "output"
	}
	return fmt.Sprintf("the %s activity's %s is %d bytes compressed, over the %d a payload may have (Temporal refuses 2 MB)", e.Activity, what, e.Size, MaxPayload)
}

// payloadSize is the size of v as it is sent: encoded and compressed by
// the registry's data converter.
func (g *Registry) payloadSize(v any) (int, error) {
	p, err := g.dc.ToPayload(v)
	if err != nil {
		return 0, err
	}
	return proto.Size(p), nil
}

// toolOutputError is the tool's error that replaces a result of n bytes
// over MaxPayload: the model reads it and may ask for less.
func toolOutputError(tool string, n int) string {
	return fmt.Sprintf("the result of %s is %d bytes compressed, over the %d a Temporal activity may return; ask for less at once (a part, a range, a summary)", tool, n, MaxPayload)
}

// HistoryError ends a run whose workflow history nears Temporal's limits,
// before Temporal terminates the workflow: the model and tool calls it would
// schedule fail with it, and the run stops unfinished, as when its store is
// unavailable (it matches agent.ErrRecorderUnavailable), so that a new
// workflow can resume its thread.
type HistoryError struct {
	Size, Length       int // the history's now
	MaxSize, MaxLength int // the registry's thresholds
}

func (e *HistoryError) Error() string {
	return fmt.Sprintf("the workflow's history is %d bytes and %d events, at the worker's limit of %d bytes or %d events (Temporal ends a workflow at 50 MB or 51,200 events): the run stops here unfinished; resume its thread in a new workflow",
		e.Size, e.Length, e.MaxSize, e.MaxLength)
}

// Is makes a HistoryError stop the run unfinished.
func (e *HistoryError) Is(target error) bool { return target == agent.ErrRecorderUnavailable }

// historyLimits are the registry's thresholds, defaults filled in; a
// negative one is no limit.
func (g *Registry) historyLimits() (size, length int) {
	size, length = g.MaxHistorySize, g.MaxHistoryLength
	if size == 0 {
		size = DefaultMaxHistorySize
	}
	if length == 0 {
		length = DefaultMaxHistoryLength
	}
	return size, length
}

// checkHistory refuses to schedule more work in a workflow whose history
// is at the registry's thresholds. The history's size and length are
// those of its last workflow task, the same when it replays.
func (g *Registry) checkHistory(ctx workflow.Context) error {
	info := workflow.GetInfo(ctx)
	size, length := info.GetCurrentHistorySize(), info.GetCurrentHistoryLength()
	maxSize, maxLength := g.historyLimits()
	if (maxSize > 0 && size >= maxSize) || (maxLength > 0 && length >= maxLength) {
		return &HistoryError{Size: size, Length: length, MaxSize: maxSize, MaxLength: maxLength}
	}
	return nil
}

// rawArgsChange names the change that sends a tool call's arguments that
// are not valid JSON to the tool as they are; before it, encoding them
// failed the call without an activity.
const rawArgsChange = "deepagents.raw-args"

// rawArgs reports whether this workflow sends invalid arguments to the
// tool (a workflow that started before the change fails such a call as it
// did). Called only for such a call, so other histories are unchanged.
func (r *Runtime) rawArgs() bool {
	return workflow.GetVersion(r.cur, rawArgsChange, workflow.DefaultVersion, 1) >= 1
}

// Replaying reports whether the workflow is replaying its history (see
// agent.Replayer): middleware that report to the outside, such as the otel
// package's, then stay quiet, since the first execution reported.
func (r *Runtime) Replaying() bool { return workflow.IsReplaying(r.wf) }

var _ agent.Replayer = (*Runtime)(nil)
