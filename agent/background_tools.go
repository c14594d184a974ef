package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// This file holds the three tools through which a model sees and steers its
// background tasks: task_status, task_wait and task_cancel. The loop binds
// them for a step once the run has started a background task, so an agent
// that never does sees no change in its tools.

// Names of the tools that steer background tasks.
const (
	TaskStatusTool = "task_status"
	TaskWaitTool   = "task_wait"
	TaskCancelTool = "task_cancel"
)

// Bounds on what the steering tools take and say.
const (
	// DefaultTaskWait is how long task_wait waits when not told.
	DefaultTaskWait = 60 * time.Second
	// MaxTaskWait is the longest task_wait waits.
	MaxTaskWait = 30 * time.Minute
	// maxStatusText bounds the text of one task that task_status shows.
	maxStatusText = 4000
)

type steeringTool struct {
	spec   llm.ToolSpec
	schema *tool.Schema
	run    func(ctx context.Context, b *Background, args taskToolArgs) tool.Result
}

// taskToolArgs are the arguments of the steering tools.
type taskToolArgs struct {
	TaskID         string   `json:"task_id"`
	TimeoutSeconds *float64 `json:"timeout_seconds"`
}

func (t *steeringTool) Spec() llm.ToolSpec { return t.spec }

func (t *steeringTool) Run(ctx context.Context, _ *tool.Env, raw json.RawMessage) (tool.Result, error) {
	var args taskToolArgs
	if err := decodeTaskToolArgs(t.schema, raw, &args); err != nil {
		return tool.ArgumentError(t.spec.Name, err), nil
	}
	b := BackgroundOf(ctx)
	if b == nil {
		return tool.Errorf("Error: %s works only inside an agent run that has background tasks.", t.spec.Name), nil
	}
	return t.run(ctx, b, args), nil
}

// decodeTaskToolArgs validates and decodes the arguments of a steering
// tool: an optional task id (at most 200 characters) and, for task_wait, an
// optional timeout in seconds (0 to MaxTaskWait).
func decodeTaskToolArgs(s *tool.Schema, raw json.RawMessage, dst *taskToolArgs) error {
	if err := tool.DecodeArgs(s, raw, dst); err != nil {
		return err
	}
	dst.TaskID = strings.TrimSpace(dst.TaskID)
	if len(dst.TaskID) > 200 || !utf8.ValidString(dst.TaskID) {
		return fmt.Errorf("task_id is not a task id: give the id the task call returned")
	}
	if s := dst.TimeoutSeconds; s != nil && (*s < 0 || *s > MaxTaskWait.Seconds() || *s != *s) {
		return fmt.Errorf("timeout_seconds is %v; it must be between 0 and %d", *s, int(MaxTaskWait.Seconds()))
	}
	return nil
}

func mustSteering(name, desc, params string, run func(context.Context, *Background, taskToolArgs) tool.Result) *steeringTool {
	s, err := tool.CompileSchema([]byte(params))
	if err != nil {
		panic(err)
	}
	return &steeringTool{spec: llm.ToolSpec{Name: name, Description: desc, Parameters: s.Raw()}, schema: s, run: run}
}

const (
	idParam = `"task_id":{"type":"string","description":"The id the task call returned when it started the task."}`

	statusParams = `{"type":"object","properties":{` + idParam + `},"additionalProperties":false}`
	waitParams   = `{"type":"object","properties":{` + idParam + `,` +
		`"timeout_seconds":{"type":"number","description":"How long to wait at most (default 60, at most 1800)."}},"additionalProperties":false}`
	cancelParams = `{"type":"object","properties":{` + idParam + `},"required":["task_id"],"additionalProperties":false}`
)

var steeringTools = []*steeringTool{
	mustSteering(TaskStatusTool,
		"Show your background tasks: each one's subagent, whether it still runs, its model calls and tokens so far, and what it wrote last (its report once it ended). Give task_id to see one task.",
		statusParams, taskStatus),
	mustSteering(TaskWaitTool,
		"Wait until a background task ends (give task_id), or until any running one does (no task_id), for timeout_seconds at most. Its report then arrives as a message right after this result.",
		waitParams, taskWait),
	mustSteering(TaskCancelTool,
		"Stop a background task. Its report (status cancelled, with what it did so far) arrives as a message; files it changed are kept.",
		cancelParams, taskCancel),
}

func taskStatus(_ context.Context, b *Background, args taskToolArgs) tool.Result {
	var tasks []TaskInfo
	if args.TaskID != "" {
		t, ok := b.Task(args.TaskID)
		if !ok {
			return tool.Errorf("There is no background task %q. %s", args.TaskID, knownTasks(b))
		}
		tasks = []TaskInfo{t}
	} else {
		tasks = b.Tasks()
	}
	if len(tasks) == 0 {
		return tool.Text("No background tasks.")
	}
	var sb strings.Builder
	for i, t := range tasks {
		if i > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(statusLine(t))
		if text := clipText(t.Text, maxStatusText); text != "" {
			if t.Running {
				sb.WriteString("\nLast message so far: ")
			} else {
				sb.WriteString("\nReport: ")
			}
			sb.WriteString(text)
		}
	}
	return tool.Text(sb.String())
}

func statusLine(t TaskInfo) string {
	state := "running"
	if !t.Running {
		state = "ended: " + string(t.Status)
	} else if t.Cancelled {
		state = "running, cancellation asked"
	}
	return fmt.Sprintf("Task %s (subagent %s): %s; %d model call(s), %d tokens in, %d out. Brief: %s",
		t.ID, t.Name, state, t.Rounds, t.Usage.InputTokens, t.Usage.OutputTokens, clipText(t.Brief, 200))
}

func taskWait(ctx context.Context, b *Background, args taskToolArgs) tool.Result {
	d := DefaultTaskWait
	if args.TimeoutSeconds != nil {
		d = time.Duration(*args.TimeoutSeconds * float64(time.Second))
	}
	if d <= 0 {
		d = time.Millisecond
	}
	info, ended, err := b.Wait(ctx, args.TaskID, d)
	switch {
	case err != nil:
		return tool.Errorf("Error: %v. %s", err, knownTasks(b))
	case ended:
		return tool.Text(fmt.Sprintf("Task %s (subagent %s) has ended (%s). Its report arrives as the next message.", info.ID, info.Name, info.Status))
	case ctx.Err() != nil:
		return tool.Errorf("Error: the wait was cut short: %v", context.Cause(ctx))
	case args.TaskID != "":
		return tool.Text(fmt.Sprintf("Task %s is still running after %s. %s", info.ID, d.Round(time.Second), statusLine(info)))
	}
	return tool.Text(fmt.Sprintf("No background task ended within %s; %d still running.", d.Round(time.Second), b.Running()))
}

func taskCancel(_ context.Context, b *Background, args taskToolArgs) tool.Result {
	info, err := b.Cancel(args.TaskID)
	if err != nil {
		return tool.Errorf("Error: %v. %s", err, knownTasks(b))
	}
	if !info.Running {
		return tool.Text(fmt.Sprintf("Task %s had ended already (%s); nothing to cancel.", info.ID, info.Status))
	}
	return tool.Text(fmt.Sprintf("Task %s (subagent %s) is being cancelled; its report arrives as a message when it has stopped.", info.ID, info.Name))
}

func knownTasks(b *Background) string {
	tasks := b.Tasks()
	if len(tasks) == 0 {
		return "There are no background tasks."
	}
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return "The background tasks are: " + strings.Join(ids, ", ") + "."
}

func clipText(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
