package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// ExecuteName is the name of the shell tool.
const ExecuteName = "execute"

// MaxCommandBytes is the longest command execute accepts.
const MaxCommandBytes = 64 << 10

// maxTimeoutArg is the largest timeout argument taken as given, in seconds
// (a year); larger ones are lowered to it before the executor's own cap, so
// that no conversion overflows.
const maxTimeoutArg = 365 * 24 * 3600

// The execute tool's description is put together from these parts, to
// match how commands run.
const (
	executeIntro = "Run a shell command (sh -c) in the root directory of the files and get back what it printed " +
		"(stdout and stderr together, in order) followed by its exit code. Use it to build, test, run programs and use " +
		"version control; use the file tools to read, search and edit files. Files the command writes are seen by the " +
		"file tools at once. "
	executeSandboxed   = "Commands run in a sandbox: files can be written only below the root, and %s. "
	executeUnsandboxed = "Commands run directly on the user's machine, NOT in a sandbox: stay inside the root and do " +
		"nothing you were not asked to. "
	executeLimits = "A command still running after its timeout (default 120 seconds; pass timeout in seconds for a " +
		"longer one, up to the configured maximum) is killed with everything it started. Very long output is cut in " +
		"the middle: redirect it to a file and read that with read_file when you need all of it. Nothing is read from " +
		"stdin, so interactive programs get end-of-file."
)

const executeSchema = `{"type":"object","properties":{` +
	`"command":{"type":"string","description":"The shell command to run, in the root directory."},` +
	`"timeout":{"type":"integer","description":"Seconds to wait before killing the command (0 or absent: the default)."}` +
	`},"required":["command"],"additionalProperties":false}`

var executeSchemaCompiled = func() *tool.Schema {
	s, err := tool.CompileSchema(json.RawMessage(executeSchema))
	if err != nil {
		panic(err)
	}
	return s
}()

// ExecuteArgs are the arguments of an execute call.
type ExecuteArgs struct {
	Command string `json:"command"`
	// Timeout in seconds; 0 means the executor's default.
	Timeout int64 `json:"timeout"`
}

// DecodeExecuteArgs validates and decodes the raw arguments of an execute
// call. The command must not be blank, hold a NUL byte or be longer than
// MaxCommandBytes; the timeout must not be negative, and one over a year
// is lowered to a year (the executor caps it further).
func DecodeExecuteArgs(raw json.RawMessage) (ExecuteArgs, error) {
	var in ExecuteArgs
	if err := tool.DecodeArgs(executeSchemaCompiled, raw, &in); err != nil {
		return ExecuteArgs{}, err
	}
	switch {
	case strings.TrimSpace(in.Command) == "":
		return ExecuteArgs{}, errors.New("command is empty; give the shell command to run")
	case strings.IndexByte(in.Command, 0) >= 0:
		return ExecuteArgs{}, errors.New("command contains a NUL byte, which no shell command can hold")
	case len(in.Command) > MaxCommandBytes:
		return ExecuteArgs{}, fmt.Errorf("command is %d bytes long, over the limit of %d; write a longer script to a file with write_file and run that", len(in.Command), MaxCommandBytes)
	case in.Timeout < 0:
		return ExecuteArgs{}, fmt.Errorf("timeout is %d; give a number of seconds, or 0 for the default", in.Timeout)
	}
	in.Timeout = min(in.Timeout, maxTimeoutArg)
	return in, nil
}

// ExecuteOptions tune the execute tool's description to how its commands
// run, so the model knows what to expect. The zero value describes a
// sandbox without network.
type ExecuteOptions struct {
	// Network says the sandbox lets commands use the network.
	Network bool
	// Unsandboxed says commands run without a sandbox.
	Unsandboxed bool
	// Description replaces the whole description.
	Description string
}

func (o ExecuteOptions) description() string {
	switch {
	case o.Description != "":
		return o.Description
	case o.Unsandboxed:
		return executeIntro + executeUnsandboxed + executeLimits
	case o.Network:
		return executeIntro + fmt.Sprintf(executeSandboxed, "the network is available") + executeLimits
	}
	return executeIntro + fmt.Sprintf(executeSandboxed, "there is no network") + executeLimits
}

// Execute returns the execute tool: it runs a shell command through the
// call's filesystem when that backend is a vfs.Executor (a real directory
// with a runner, such as osfs.Shell) and answers an error otherwise. The
// result is the command's output followed by "[exit code N]"; a non-zero
// exit is a normal result the model reads, a timeout an error result
// saying the command was killed, and so is one whose Notice says part of
// what the command did was refused (protected paths). Large results are left to the offload
// middleware, like any tool's.
func Execute(opts ExecuteOptions) tool.Tool {
	return &executeTool{spec: llm.ToolSpec{Name: ExecuteName, Description: opts.description(), Parameters: executeSchemaCompiled.Raw()}}
}

type executeTool struct{ spec llm.ToolSpec }

func (t *executeTool) Spec() llm.ToolSpec { return t.spec }

func (t *executeTool) Run(ctx context.Context, env *tool.Env, raw json.RawMessage) (tool.Result, error) {
	in, err := DecodeExecuteArgs(raw)
	if err != nil {
		return tool.ArgumentError(ExecuteName, err), nil
	}
	var ex vfs.Executor
	ok := false
	if env != nil {
		ex, ok = vfs.AsExecutor(env.Files)
	}
	if !ok {
		return tool.Errorf("Error: this agent's files are not in a directory where commands can run, so execute is unavailable. Use the file tools instead."), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, context.Cause(ctx)
	}
	asked := time.Duration(in.Timeout) * time.Second
	res, err := ex.Execute(ctx, vfs.ExecRequest{Command: in.Command, Timeout: asked})
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return tool.Errorf("Error: the command could not run: %v.", err), nil
	}
	return tool.Result{Content: FormatExecResult(res, asked), IsError: res.TimedOut || res.Notice != ""}, nil
}

// FormatExecResult renders a command's result as the model reads it: the
// output, then a line with the exit code, or with the timeout that killed
// it; asked is the timeout the call asked for, named when it was capped.
func FormatExecResult(res vfs.ExecResult, asked time.Duration) string {
	var b strings.Builder
	b.WriteString(res.Output)
	if res.Output == "" {
		b.WriteString("(no output)")
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	if res.OmittedBytes > 0 {
		fmt.Fprintf(&b, "[output cut: %d bytes left out in the middle; redirect the output to a file and read it with read_file to see all of it]\n", res.OmittedBytes)
	}
	if asked > 0 && res.Timeout > 0 && res.Timeout < asked {
		fmt.Fprintf(&b, "[the timeout asked for, %s, is over the maximum; the command ran with %s]\n", seconds(asked), seconds(res.Timeout))
	}
	if res.Notice != "" {
		fmt.Fprintf(&b, "[%s]\n", res.Notice)
	}
	if res.TimedOut {
		fmt.Fprintf(&b, "[killed after %s: the command was still running at its timeout, so it and every process it started were stopped]", seconds(res.Timeout))
	} else {
		fmt.Fprintf(&b, "[exit code %d]", res.ExitCode)
	}
	return b.String()
}

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", int64(d/time.Second))
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// IsExecute reports whether t is the execute tool Execute returned: a tool
// that does nothing but run a command through the call's files
// (tool.Env.Files, when they are a vfs.Executor). An engine that replays a
// run's code may run it where every executor the run can reach does its
// work elsewhere (a workflow engine's activities).
func IsExecute(t tool.Tool) bool {
	_, ok := t.(*executeTool)
	return ok
}
