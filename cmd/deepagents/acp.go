package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/acp"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/providers"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

const acpHelp = `usage: deepagents acp [flags]

Speaks the Agent Client Protocol (ACP) on stdin and stdout, for editors
that start agents as a process (Zed, JetBrains IDEs; see docs/ACP.md).
Stdout carries only the protocol; everything else goes to stderr.

Each session is a thread of the thread database (--db): the editor's
session id is the thread id, so a session can be loaded again after a
restart, and 'deepagents threads show ID' shows it. The directory the
editor gives a session is its root, confined as --root is. The agent is
built as for 'deepagents run' (flags, then the config files); without
interrupt_on or --interrupt-on, write_file, edit_file and delete wait for
approval, which the editor asks the person for. The session modes are the
approval modes; --models lists the models the editor may pick from.
--demo runs a scripted agent instead, for trying an editor without an API
key.

Exit status: 0 when the editor closed the connection, 1 when serving
failed, 2 bad usage.
`

type acpFlags struct {
	runFlags
	demo   bool
	models string
}

func cmdACP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f acpFlags
	fs := flag.NewFlagSet("acp", flag.ContinueOnError)
	fs.BoolVar(&f.demo, "demo", false, "run the built-in scripted agent (a plan, an edit that asks for approval, a slow tool for prompts that say \"slow\") instead of a real model")
	fs.StringVar(&f.models, "models", "", "REF[,REF]: the models the editor may pick from (provider:model or a [models] alias; default: the one model of --model or the config)")
	all := flag.NewFlagSet("agent", flag.ContinueOnError)
	agentFlags(all, &f.runFlags)
	modeFlag(all, &f.runFlags)
	all.VisitAll(func(fl *flag.Flag) {
		switch fl.Name {
		case "output", "quiet", "thread-dir", "root":
		default:
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	operands, code, ok := parseFlags(fs, args, acpHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) > 0 {
		return usageError(stderr, "acp", fmt.Sprintf("takes no arguments, got %q", operands[0]))
	}
	if err := f.check(fs); err != nil {
		fmt.Fprintf(stderr, "deepagents acp: %v\n", err)
		return exitUsage
	}
	f.quiet = true // stderr is the editor's log, not a person's terminal
	cfg := acp.Config{NewThread: newThreadID, Name: "deepagents", Version: buildVersion(),
		Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if f.demo {
		cwd, _ := os.Getwd()
		home, _ := os.UserHomeDir()
		db, err := chooseDatabase(f.db, f.set["db"], nil, cwd, home)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents acp: %v\n", err)
			return exitUsage
		}
		saver, err := openDatabase(ctx, db)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents acp: %v\n", err)
			return exitFailed
		}
		defer saver.Close()
		def := approve.Manual
		if f.set["approval-mode"] {
			def = f.approvalMode
		}
		if _, err := demoACPRuntime(saver, cwd, "demo", def); err != nil {
			fmt.Fprintf(stderr, "deepagents acp: --approval-mode: %v\n", err)
			return exitUsage
		}
		cfg.Models = []acp.Model{{ID: "demo", Name: "Demo", Description: "scripted: plans, edits, answers"},
			{ID: "demo-brief", Name: "Demo (brief)", Description: "scripted: the same, with a shorter answer"}}
		cfg.Open = func(ctx context.Context, cwd, model, thread string, resumed bool) (*acp.Runtime, error) {
			return demoACPRuntime(saver, cwd, model, def)
		}
		fmt.Fprintf(stderr, "deepagents acp: demo agent, threads in %s\n", db)
	} else {
		if !f.set["interrupt-on"] {
			// An editor's person expects to see edits before they land.
			f.interruptOn = "write_file,edit_file,delete"
			g, err := config.ParseInterruptOnFlag(f.interruptOn)
			if err != nil {
				fmt.Fprintf(stderr, "deepagents acp: %v\n", err)
				return exitFailed
			}
			f.gates = g
		}
		models, err := acpModels(f.models, f.model)
		if err != nil {
			fmt.Fprintf(stderr, "deepagents acp: --models: %v\n", err)
			return exitUsage
		}
		cfg.Models = models
		cfg.Open = func(ctx context.Context, cwd, model, thread string, resumed bool) (*acp.Runtime, error) {
			g := f.runFlags
			g.root = cwd
			if model != "" {
				g.model = model
			}
			if resumed {
				g.thread = thread
			}
			s, err := assemble(ctx, g, stderr)
			if err != nil {
				var missing *providers.MissingKeyError
				if errors.Is(err, providers.ErrNoModel) || errors.As(err, &missing) {
					err = fmt.Errorf("%w (to try an editor without a key, start `deepagents acp --demo`)", err)
				}
				return nil, err
			}
			return &acp.Runtime{Agent: s.agent, Saver: s.saver, Mode: s.mode, Close: s.close,
				Run: func(ctx context.Context, thread string, in agent.Input, opts ...agent.RunOption) iter.Seq2[agent.Event, error] {
					return s.run(ctx, thread, in, opts...)
				}}, nil
		}
	}
	if err := acp.Serve(ctx, cfg, stdin, stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "deepagents acp: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// buildVersion is the module version this binary was built from (go
// install ...@vX), else "dev".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// acpModels are the editor's choices of model: --models, else the one
// model of --model ("" leaves it to the config).
func acpModels(list, model string) ([]acp.Model, error) {
	var out []acp.Model
	seen := map[string]bool{}
	for _, ref := range strings.Split(list, ",") {
		ref = strings.TrimSpace(ref)
		if ref == "" || seen[ref] {
			continue
		}
		if strings.ContainsFunc(ref, unicode.IsSpace) {
			return nil, fmt.Errorf("%q: a model reference has no spaces", ref)
		}
		seen[ref] = true
		out = append(out, acp.Model{ID: ref, Name: ref})
	}
	if model = strings.TrimSpace(model); len(out) == 0 && model != "" {
		if strings.ContainsFunc(model, unicode.IsSpace) || strings.Contains(model, ",") {
			return nil, fmt.Errorf("--model %q: a model reference has no spaces or commas (list several with --models)", model)
		}
		out = append(out, acp.Model{ID: model, Name: model})
	}
	return out, nil
}

// demoACPRuntime is the scripted agent of acp --demo on directory cwd:
// the file tools confined to it, write_file, edit_file and delete waiting
// for approval under the session's mode, the plan tool, and a slow tool.
func demoACPRuntime(saver checkpoint.Saver, cwd, model string, def approve.Mode) (*acp.Runtime, error) {
	sess, err := approve.NewSession(def, approve.SessionOptions{IsEdit: editInRoot})
	if err != nil {
		return nil, err
	}
	root, err := osfs.New(cwd)
	if err != nil {
		return nil, fmt.Errorf("cwd %s: %w", cwd, err)
	}
	gates := approve.WithMode(map[string]approve.Policy{"write_file": {}, "edit_file": {}, "delete": {}}, sess)
	a, err := deepagents.New(deepagents.Config{Name: "agent", Model: demoACPModel(model), Stream: true, Backend: root,
		Todos: true, InterruptOn: gates, Tools: []tool.Tool{demoWaitTool}, Middleware: []agent.Middleware{sess.Middleware()}})
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	var once sync.Once
	return &acp.Runtime{Agent: a, Saver: saver, Mode: sess, Close: func() { once.Do(func() { _ = root.Close() }) }}, nil
}

// demoWaitTool sleeps for the seconds asked (at most a minute), or until
// the run is cancelled: the slow tool of acp --demo.
var demoWaitTool = func() tool.Tool {
	t, err := tool.Func("wait", "Wait for a number of seconds (at most 60).",
		func(ctx context.Context, _ *tool.Env, in struct {
			Seconds float64 `json:"seconds"`
		}) (string, error) {
			d := time.Duration(min(max(in.Seconds, 0), 60) * float64(time.Second))
			select {
			case <-time.After(d):
				return fmt.Sprintf("waited %gs", d.Seconds()), nil
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		})
	if err != nil {
		panic(err)
	}
	return t
}()

// demoACPModel is the script of acp --demo. Each turn follows from the
// thread so far: a prompt saying "slow" waits a minute in the wait tool;
// any other plans with write_todos (thinking aloud first), then edits
// /notes.md (edit_file when the prompt says "edit", else write_file), then
// answers, naming the turn.
func demoACPModel(model string) llm.Model {
	return scripted.New(nil, scripted.Options{Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		var st scripted.Step
		msgs := req.Messages
		if len(msgs) == 0 {
			return scripted.Step{Content: "Nothing to do."}, nil
		}
		turn, prompt := 0, ""
		for _, m := range msgs {
			if m.Role == llm.RoleUser {
				turn++
				prompt = m.Content
			}
		}
		last := msgs[len(msgs)-1]
		call := func(id, name string, args any) {
			b, _ := json.Marshal(args)
			st.ToolCalls = []scripted.StepCall{{ID: fmt.Sprintf("%s_%d", id, turn), Name: name, Args: b}}
		}
		type item struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		}
		switch {
		case last.Role == llm.RoleUser && strings.Contains(prompt, "slow"):
			call("wait", "wait", map[string]float64{"seconds": 60})
		case last.Role == llm.RoleUser:
			st.Reasoning = "The user wants /notes.md changed; a short plan first."
			call("plan", "write_todos", map[string][]item{"todos": {{"Change /notes.md", "in_progress"}, {"Report back", "pending"}}})
		case last.Role == llm.RoleTool && last.Name == "write_todos" && strings.HasPrefix(last.ToolCallID, "plan_"):
			if strings.Contains(prompt, "edit") {
				call("edit", "edit_file", map[string]string{"file_path": "/notes.md", "old_string": "hello", "new_string": "hello, editor"})
			} else {
				call("write", "write_file", map[string]string{"file_path": "/notes.md", "content": fmt.Sprintf("# Notes\n\nWritten in turn %d.\n", turn)})
			}
		case last.Role == llm.RoleTool && (last.Name == "edit_file" || last.Name == "write_file"):
			if last.IsError {
				st.Content = fmt.Sprintf("Turn %d: /notes.md is unchanged (%s).", turn, oneLine(last.Content, 120))
				break
			}
			call("done", "write_todos", map[string][]item{"todos": {{"Change /notes.md", "completed"}, {"Report back", "completed"}}})
		case last.Role == llm.RoleTool && last.Name == "wait":
			st.Content = fmt.Sprintf("Turn %d: waited.", turn)
		default:
			st.Content = fmt.Sprintf("Turn %d: done, /notes.md is changed.", turn)
			if model != "demo-brief" {
				st.Content += " The plan is complete."
			}
		}
		return st, nil
	}})
}
