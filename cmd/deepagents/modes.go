package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file is the approval mode of a session of the command: chosen by
// --approval-mode, else the config's approval_mode, else manual; switched
// with /mode in an interactive session. The mode decides on the calls that
// interrupt_on, --interrupt-on and execute's gate make wait; changes of
// protected places (protect.go) ask in every mode.

// modeFlag adds --approval-mode. It is not among the flags a thread
// remembers (agentFlags): the thread records the mode itself, with every
// decision taken under it.
func modeFlag(fs *flag.FlagSet, f *runFlags) {
	fs.Func("approval-mode", "who decides on the calls that wait for approval: manual (you), accept-edits (file edits pass), auto (a second model call judges each call; unsafe ones ask), yolo (nothing asks; only with a sandbox) (default from the config, else manual)",
		func(s string) error {
			m, err := approve.ParseMode(s)
			if err != nil {
				return err
			}
			f.approvalMode = m
			return nil
		})
}

// isConfined reports whether the agent cannot reach past a sandbox: its
// files are in memory (no --root) or its commands run under bubblewrap
// without the network (not --sandbox-network), and no MCP server is
// configured (its tools run as processes of the host, outside any
// sandbox, so yolo would lift the gates the user put on them). backend
// and opts are what wireShell made of --root.
func isConfined(root string, backend vfs.Backend, opts fstools.ExecuteOptions, mcp bool) bool {
	if mcp {
		return false
	}
	if root == "" {
		return true
	}
	_, runs := vfs.AsExecutor(backend)
	return runs && !opts.Unsandboxed && !opts.Network
}

// modeSession makes the session's approval mode and puts it in the gates of
// the agent and of every subagent with gates of its own. The classifier of
// auto is the agent's own model. Yolo is said loudly on stderr, --quiet or
// not.
func modeSession(s *setup, f runFlags, cfg *config.Config, model llm.Model, confined bool, gates map[string]approve.Policy,
	specs []subagent.Spec, stderr io.Writer) (*approve.Session, map[string]approve.Policy, error) {
	mode, where := approve.Manual, ""
	switch {
	case f.set["approval-mode"]:
		mode, where = f.approvalMode, "--approval-mode: "
	case cfg.ApprovalMode != "":
		mode, where = cfg.ApprovalMode, "approval_mode in the config: "
	}
	opts := approve.SessionOptions{Confined: confined, Classifier: model,
		IsEdit: editInRoot,
		// A command that names no mode continues in the thread's: one
		// left in manual (auto fell back, or the person switched) stays
		// manual, and another mode is taken only from a thread whose turns
		// the user signed (a database a project ships could name any).
		FromThread: func(recorded approve.Mode) bool {
			if f.set["approval-mode"] {
				return false
			}
			return recorded == approve.Manual || f.thread != "" && s.saver != nil && signedThread(s.saver, f.thread)
		},
		OnChange: func(from, to approve.Mode, why string) {
			if f.quiet && from == approve.Auto && to == approve.Manual {
				fmt.Fprintf(stderr, "deepagents: %s\n", why)
			}
		}}
	sess, err := approve.NewSession(mode, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s%w", where, err)
	}
	if mode == approve.Yolo {
		fmt.Fprintln(stderr, yoloWarning)
	}
	if gates != nil {
		gates = approve.WithMode(gates, sess)
	}
	for i := range specs {
		if specs[i].InterruptOn != nil {
			specs[i].InterruptOn = approve.WithMode(specs[i].InterruptOn, sess)
		}
	}
	return sess, gates, nil
}

// yoloWarning is said when a session enters yolo.
const yoloWarning = "deepagents: WARNING: approval mode yolo: NO CALL ASKS FOR APPROVAL (interrupt_on and execute's gate are off); only changes of protected places still ask."

// editInRoot says whether a call is a file edit that accept-edits lets
// pass: write_file, edit_file or delete of a path outside /memories/, the
// store that outlives the thread.
func editInRoot(tool string, args json.RawMessage) bool {
	path, _, ok := fstools.ChangedPath(tool, args)
	if !ok {
		return false
	}
	return path != strings.TrimSuffix(MemoriesPrefix, "/") && !strings.HasPrefix(path, MemoriesPrefix)
}

// modeCommand handles /mode in an interactive session: without a name it
// says the mode in force and the modes there are; with one it switches.
// It reports whether line was a /mode command.
func (s *session) modeCommand(line string) bool {
	rest, ok := strings.CutPrefix(line, "/mode")
	if !ok || rest != "" && rest[0] != ' ' {
		return false
	}
	sess := s.setup.mode
	if sess == nil {
		fmt.Fprintln(s.stderr, "/mode: this session has no approval mode")
		return true
	}
	name := strings.TrimSpace(rest)
	if name == "" {
		fmt.Fprintf(s.stderr, "approval mode: %s. The modes:\n", sess.Mode())
		for _, m := range approve.Modes() {
			fmt.Fprintf(s.stderr, "  %-13s %s\n", m.ID, m.Description)
		}
		return true
	}
	m, err := approve.ParseMode(name)
	if err == nil {
		err = sess.SetMode(m)
	}
	if err != nil {
		fmt.Fprintf(s.stderr, "/mode: %v\n", err)
		return true
	}
	if m == approve.Yolo {
		fmt.Fprintln(s.stderr, yoloWarning)
	}
	fmt.Fprintf(s.stderr, "approval mode: %s, from the next call on.\n", m)
	return true
}

// noteDecisions tells the session's mode the person's decisions before the
// run that applies them.
func (s *setup) noteDecisions(ds []agent.Decision) {
	if s.mode != nil && len(ds) > 0 {
		s.mode.Decided(ds)
	}
}

// modeLines are the lines threads show gives a thread's approval mode
// record: the mode in force and each decision taken under a mode.
func modeLines(rec approve.ModeRecord) []string {
	out := []string{fmt.Sprintf("approval mode: %s", rec.Mode)}
	if rec.Denials > 0 {
		out[0] += fmt.Sprintf(" (%d denial(s) in a row)", rec.Denials)
	}
	for _, e := range rec.Calls {
		line := fmt.Sprintf("  %s %s %s: %s by %s", e.Mode, e.Tool, e.CallID, e.Outcome, e.By)
		if e.Tool == "" {
			line = fmt.Sprintf("  %s call %s: %s by %s", e.Mode, e.CallID, e.Outcome, e.By)
		}
		if e.Reason != "" {
			line += " (" + visible(clip(e.Reason, 200)) + ")"
		}
		if e.Fallback {
			line += "; fell back to manual"
		}
		out = append(out, line)
	}
	return out
}

// signedThread reports whether thread's last turn was recorded with the
// user's own signature (remember.go).
func signedThread(saver checkpoint.Saver, thread string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, ok, err := turnSettings(ctx, saver, thread)
	return err == nil && ok && rec.signed
}

// demoModes are the approval modes of serve --demo, new threads starting
// in def (--approval-mode; "": manual): its files are in memory, so yolo
// is allowed; its scripted model judges nothing, so auto is not.
func demoModes(def approve.Mode, stderr io.Writer) (*server.ApprovalModes, error) {
	am := &server.ApprovalModes{Default: def, New: func(m approve.Mode) (*approve.Session, error) {
		return approve.NewSession(m, approve.SessionOptions{Confined: true})
	}}
	if def != "" {
		if _, err := am.New(def); err != nil {
			return nil, err
		}
		if def == approve.Yolo {
			fmt.Fprintln(stderr, yoloWarning)
		}
	}
	return am, nil
}
