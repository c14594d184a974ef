package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/budget"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/subagent"
)

const threadsHelp = `usage: deepagents threads [--limit N] [--json]
       deepagents threads show ID [--json]
       deepagents threads rm ID

Lists the threads of the thread database, most recently updated first: id,
title (the first line of the first message), when it was last updated, its
status (its last run's, as 'show' prints it: ok, error, limit, refused,
interrupted, or unfinished: running, cut off or stopped), its steps and its
tokens. 'show' prints a thread's transcript, each subagent's
conversation nested under the task call that started it, with the files
changed and any calls waiting for approval. 'rm' deletes a thread, all
its checkpoints and its transcript file (in --thread-dir), without asking.

The database is chosen as for 'deepagents run': --db, the db key of the
config files, or the default.

Exit status:
  0  done
  1  no such thread, the thread is being run, or the database failed
  2  bad usage or configuration
`

type threadsFlags struct {
	limit        int
	json         bool
	db           string
	trustProject bool
	threadDir    string
}

func cmdThreads(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f threadsFlags
	fs := flag.NewFlagSet("threads", flag.ContinueOnError)
	fs.IntVar(&f.limit, "limit", 50, "list at most N threads (0: all)")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	fs.StringVar(&f.db, "db", "", "the thread database: sqlite:PATH or postgres://USER@HOST/DB (default as for run)")
	fs.BoolVar(&f.trustProject, "trust-project", false, "trust the project's deepagents.toml to name a PostgreSQL db; remembered for the file as it is now")
	fs.StringVar(&f.threadDir, "thread-dir", "", "where run saves the transcripts, for rm to remove the thread's (default ~/.deepagents/threads)")
	operands, code, ok := parseFlags(fs, args, threadsHelp, stdout, stderr)
	if !ok {
		return code
	}
	if f.limit < 0 {
		return usageError(stderr, "threads", "--limit must not be negative")
	}
	sub := ""
	if len(operands) > 0 {
		sub = operands[0]
	}
	var id string
	switch sub {
	case "":
	case "show", "rm":
		if len(operands) != 2 {
			return usageError(stderr, "threads", fmt.Sprintf("%s takes one thread id, got %d arguments", sub, len(operands)-1))
		}
		id = operands[1]
		if err := checkpoint.ValidateThreadID(id); err != nil {
			return usageError(stderr, "threads", err.Error())
		}
	case "ls", "list":
		if len(operands) > 1 {
			return usageError(stderr, "threads", fmt.Sprintf("unexpected argument %q", operands[1]))
		}
	default:
		return usageError(stderr, "threads", fmt.Sprintf("unknown subcommand %q: use show ID or rm ID, or no subcommand to list threads", sub))
	}
	if len(operands) > 2 || (sub == "" && len(operands) > 1) {
		return usageError(stderr, "threads", "too many arguments")
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["db"] {
		if _, err := config.ParseDatabase(f.db, ""); err != nil {
			return usageError(stderr, "threads", "--db: "+err.Error())
		}
	}
	var confirm func(string) bool
	if isTerminal(stdin) && isTerminal(stderr) {
		confirm = askOnTerminal(stdin, stderr)
	}
	saver, db, err := threadsDatabase(ctx, f, set["db"], confirm, stderr)
	if errors.Is(err, errNoDatabase) {
		if sub == "" {
			if f.json {
				fmt.Fprintln(stdout, "[]")
			} else {
				what, makes := "no database at "+db.Path, "one"
				if fi, err := os.Stat(db.Path); err == nil && fi.Size() == 0 {
					what = "the database " + db.Path + " is empty" // how a new one starts
				}
				if db.Kind == config.Postgres {
					what, makes = "no thread tables in "+db.String(), "them"
				}
				fmt.Fprintf(stderr, "no threads yet (%s): 'deepagents run' makes %s\n", what, makes)
			}
			return exitOK
		}
		fmt.Fprintf(stderr, "deepagents threads %s: no thread %q: %s\n", sub, id, noDatabaseText(db))
		return exitFailed
	}
	if err != nil {
		fmt.Fprintf(stderr, "deepagents threads: %v\n", err)
		var ue usageErr
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFailed
	}
	defer saver.Close()
	switch sub {
	case "show":
		return threadsShow(ctx, saver, db, id, f.json, stdout, stderr)
	case "rm":
		return threadsRemove(ctx, saver, db, id, f.threadDir, stdout, stderr)
	}
	return threadsList(ctx, saver, f, stdout, stderr)
}

// threadsDatabase opens the database run would use.
func threadsDatabase(ctx context.Context, f threadsFlags, flagSet bool, confirm func(string) bool, stderr io.Writer) (checkpoint.Saver, config.Database, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, config.Database{}, err
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(cwd, home)
	if err != nil {
		return nil, config.Database{}, usageErr{err}
	}
	db, err := chooseDatabase(f.db, flagSet, cfg, cwd, home)
	if err != nil {
		return nil, db, err
	}
	// Only a project's db needs trust here: threads sends nothing to a
	// model provider.
	if !flagSet && slices.ContainsFunc(cfg.ProjectCredentials(), func(s config.CredentialSetting) bool { return s.Key == "db" && s.Provider == "" }) {
		if err := checkTrust(cfg, home, runFlags{trustProject: f.trustProject, confirm: confirm}, stderr); err != nil {
			return nil, db, usageErr{err}
		}
	}
	s, err := openExistingDatabase(ctx, db) // listing makes no database
	return s, db, err
}

// threadEntry is a thread as listed with --json.
type threadEntry struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Updated time.Time `json:"updated"`
	Status  string    `json:"status"`
	Steps   int       `json:"steps"`
	Tokens  int       `json:"tokens"`
}

func threadsList(ctx context.Context, saver checkpoint.Saver, f threadsFlags, stdout, stderr io.Writer) int {
	ts, err := saver.Threads(ctx, checkpoint.ThreadsOptions{Limit: f.limit})
	if err != nil {
		fmt.Fprintf(stderr, "deepagents threads: %v\n", err)
		return exitFailed
	}
	if err := countTokens(ctx, saver, ts); err != nil {
		fmt.Fprintf(stderr, "deepagents threads: %v\n", err)
		return exitFailed
	}
	if err := runStatuses(ctx, saver, ts); err != nil {
		fmt.Fprintf(stderr, "deepagents threads: %v\n", err)
		return exitFailed
	}
	if f.json {
		out := make([]threadEntry, 0, len(ts))
		for _, t := range ts {
			out = append(out, threadEntry{t.ID, t.Title, t.Updated.UTC(), string(t.Status), t.Steps, t.Tokens})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
		return exitOK
	}
	if len(ts) == 0 {
		fmt.Fprintln(stderr, "no threads yet: 'deepagents run' makes one")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tSTEPS\tTOKENS\tTITLE")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", printableID(t.ID), t.Updated.Local().Format("2006-01-02 15:04"), t.Status, t.Steps, short(t.Tokens), oneLine(t.Title, 60))
	}
	_ = tw.Flush()
	return exitOK
}

// shownRun is one agent run of a thread as 'threads show --json' prints
// it: its conversation, with each subagent run nested in the task call
// that started it.
type shownRun struct {
	Path         string            `json:"path"`
	Status       string            `json:"status"`
	Rounds       int               `json:"rounds"`
	Usage        llm.Usage         `json:"usage"`
	Messages     []shownMessage    `json:"messages"`
	FilesChanged []string          `json:"files_changed"`
	Interrupts   []agent.Interrupt `json:"interrupts,omitempty"`
	// UnfinishedStepFiles are the paths in FilesChanged that calls of the
	// step in progress changed: an unfinished run merges them into its
	// files only when the step completes.
	UnfinishedStepFiles []string `json:"unfinished_step_files_changed,omitempty"`
	// ApprovalMode is the run's record of its approval mode and the
	// decisions taken under it (modes.go); nil for a run that stayed in
	// manual.
	ApprovalMode *approve.ModeRecord `json:"approval_mode,omitempty"`
}

type shownMessage struct {
	Role       string      `json:"role"`
	Content    string      `json:"content,omitempty"`
	ToolCalls  []shownCall `json:"tool_calls,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
	Name       string      `json:"name,omitempty"`
	IsError    bool        `json:"is_error,omitempty"`
	// UnfinishedStep marks the result of a call that finished in the step
	// still in progress of an unfinished or interrupted run: saved, but
	// not yet part of the conversation the model reads.
	UnfinishedStep bool `json:"unfinished_step,omitempty"`
	// Notification marks the message that brought a background subagent's
	// report to the model.
	Notification bool `json:"notification,omitempty"`
}

type shownCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Subagent is the run the call started, when it started one;
	// Background says it ran in the background.
	Subagent   *shownRun `json:"subagent,omitempty"`
	Background bool      `json:"background,omitempty"`
}

type shownThread struct {
	ID      string    `json:"thread_id"`
	Title   string    `json:"title"`
	Updated time.Time `json:"updated"`
	Steps   int       `json:"steps"`
	// ThreadUsage is what every run of the thread used, its subagents'
	// included (Usage is the last top-level run's own), and Tokens its
	// input and output tokens, as 'threads' lists them.
	ThreadUsage llm.Usage `json:"thread_usage"`
	Tokens      int       `json:"tokens"`
	// The last top-level run's cost (cost.go), and ThreadCostUSD the
	// whole thread's (null when unknown or not counted), a lower bound when
	// ThreadCostLowerBound says so (an earlier turn may have had unpriced
	// calls when the last had none).
	costFields
	ThreadCostUSD        *float64 `json:"thread_cost_usd"`
	ThreadCostLowerBound bool     `json:"thread_cost_lower_bound,omitempty"`
	shownRun
}

// threadTree reads a thread's runs: the top-level run and, by agent path,
// every subagent run saved under it.
type threadTree struct {
	ctx   context.Context
	saver checkpoint.Saver
	id    string
	paths []agent.Path // the subagent namespaces
}

func threadsShow(ctx context.Context, saver checkpoint.Saver, db config.Database, id string, asJSON bool, stdout, stderr io.Writer) int {
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: id, AllNamespaces: true})
	if err != nil {
		fmt.Fprintf(stderr, "deepagents threads show: %v\n", err)
		return exitFailed
	}
	if len(cps) == 0 {
		fmt.Fprintf(stderr, "deepagents threads show: no thread %q in %s (list them with 'deepagents threads')\n", id, db)
		return exitFailed
	}
	tree := &threadTree{ctx: ctx, saver: saver, id: id}
	seen := map[string]bool{}
	var updated time.Time
	steps := 0
	for _, cp := range cps {
		if cp.Time.After(updated) {
			updated = cp.Time
		}
		if cp.NS == "" {
			steps++
		}
		if cp.NS == "" || seen[cp.NS] {
			continue
		}
		seen[cp.NS] = true
		if p, err := agent.ParsePath(cp.NS); err == nil && len(p) >= 2 {
			tree.paths = append(tree.paths, p)
		}
	}
	top, err := tree.load(nil, 0)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents threads show: %v\n", err)
		return exitFailed
	}
	usage := threadUsage(cps)
	th := shownThread{ID: id, Updated: updated.UTC(), Steps: steps, ThreadUsage: usage, Tokens: usage.Total(), shownRun: *top}
	if len(top.Messages) > 0 {
		for _, m := range top.Messages {
			if m.Role == string(llm.RoleUser) {
				th.Title = oneLine(m.Content, checkpoint.MaxTitleLen)
				break
			}
		}
	}
	spent, priced := savedSpent(ctx, saver, id)
	if priced {
		th.costFields = costFieldsOf(spent)
		if whole := costFieldsOf(budget.Spent{Amount: spent.Thread()}); whole.CostUSD != nil {
			th.ThreadCostUSD, th.ThreadCostLowerBound = whole.CostUSD, whole.CostLowerBound
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(th)
		return exitOK
	}
	fmt.Fprintf(stdout, "thread %s: %q\n", id, th.Title)
	fmt.Fprintf(stdout, "status %s · %s · %s in the whole thread · updated %s\n", top.Status, count(steps, "step"), tokensText(usage), updated.Local().Format("2006-01-02 15:04:05"))
	if priced {
		writeCost(stdout, spent, 0)
	}
	fmt.Fprintln(stdout)
	printRun(stdout, top, "")
	return exitOK
}

// tokenReaders bounds the threads whose checkpoints countTokens reads at
// once.
const tokenReaders = 8

// countTokens sets each thread's Tokens to the input and output tokens of
// the whole thread, subagent runs included: the database's count is the
// top-level run's alone. Threads are read a few at a time, so that a long
// listing stays quick.
func countTokens(ctx context.Context, saver checkpoint.Saver, ts []checkpoint.ThreadInfo) error {
	errs := make([]error, len(ts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(tokenReaders, len(ts)) {
		wg.Go(func() {
			for i := range next {
				cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: ts[i].ID, AllNamespaces: true})
				if err != nil {
					errs[i] = fmt.Errorf("thread %q: %w", ts[i].ID, err)
					continue
				}
				ts[i].Tokens = threadUsage(cps).Total()
			}
		})
	}
	for i := range ts {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// threadUsage is what a thread's runs used, subagents included, from its
// checkpoints (cps, of every namespace, as List gives them): each
// checkpoint carries the usage of its history, so the sum over the latest
// checkpoint of each history (one no other checkpoint continues) counts
// every step once.
func threadUsage(cps []checkpoint.Checkpoint) llm.Usage {
	type key struct{ ns, id string }
	continued := make(map[key]bool, len(cps))
	for _, cp := range cps {
		if cp.ParentID != "" {
			continued[key{cp.NS, cp.ParentID}] = true
		}
	}
	var u llm.Usage
	for _, cp := range cps {
		if !continued[key{cp.NS, cp.ID}] {
			u = u.Add(cp.Usage)
		}
	}
	return u
}

// maxDepth bounds how deep 'threads show' follows subagents.
const maxDepth = 32

// load reads the run at path (nil for the top level) with its subagent
// runs.
func (t *threadTree) load(path agent.Path, depth int) (*shownRun, error) {
	rs, err := runner.LoadRunState(t.ctx, t.saver, t.id, path, false)
	if err != nil {
		if errors.Is(err, checkpoint.ErrNotFound) && path != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s of thread %q: %w", runName(path), t.id, err)
	}
	status := string(rs.Status)
	if status == "" {
		status = statusUnfinished
	}
	run := &shownRun{Path: path.String(), Status: status, Rounds: rs.Loop.Rounds, Usage: rs.Loop.Usage,
		FilesChanged: slices.Clone(rs.Loop.Changed), Interrupts: rs.Loop.Interrupts}
	if run.FilesChanged == nil && rs.Status == "" {
		// A run cut off saves no list of its changes: the changes saved
		// with its calls' results say what its finished steps changed.
		if run.FilesChanged, err = t.changedSinceInput(rs); err != nil {
			return nil, fmt.Errorf("reading %s of thread %q: %w", runName(path), t.id, err)
		}
	}
	started := backgroundStarts(rs.Messages)
	for _, m := range rs.Messages {
		sm := shownMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name, IsError: m.IsError,
			Notification: m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "[Background task ")}
		for _, c := range m.ToolCalls {
			sc := shownCall{ID: c.ID, Name: c.Name, Args: c.Args, Background: started[c.ID]}
			if child := t.child(path, c.ID); child != nil && depth < maxDepth {
				if sc.Subagent, err = t.load(child, depth+1); err != nil {
					return nil, err
				}
			}
			sm.ToolCalls = append(sm.ToolCalls, sc)
		}
		run.Messages = append(run.Messages, sm)
	}
	if st := rs.InProgress; st != nil {
		// The calls of the step in progress that finished have their results
		// and file changes saved beside the step, not yet in its messages.
		for _, c := range st.Calls {
			done, ok := st.Done[c.ID]
			if !ok {
				continue
			}
			run.Messages = append(run.Messages, shownMessage{Role: string(llm.RoleTool), Content: done.Content, ToolCallID: c.ID,
				Name: c.Name, IsError: done.IsError, UnfinishedStep: true})
			for _, ch := range done.Files {
				if !slices.Contains(run.UnfinishedStepFiles, ch.Path) {
					run.UnfinishedStepFiles = append(run.UnfinishedStepFiles, ch.Path)
				}
			}
		}
		slices.Sort(run.UnfinishedStepFiles)
		for _, p := range run.UnfinishedStepFiles {
			if !slices.Contains(run.FilesChanged, p) {
				run.FilesChanged = append(run.FilesChanged, p)
			}
		}
		slices.Sort(run.FilesChanged)
	}
	if run.FilesChanged == nil {
		run.FilesChanged = []string{}
	}
	if rec, ok := approve.ModeRecordOf(rs.Values); ok {
		run.ApprovalMode = &rec
	}
	return run, nil
}

// changedSinceInput lists what the finished steps of a run cut off
// changed: the paths in the file changes saved with their calls' results
// and, when the run keeps its files in its state, those whose files differ
// between its latest checkpoint and the checkpoint of its input (a
// subagent's input has no checkpoint of its own). A run on a real directory
// keeps no files in its state: the saved changes are all there is.
func (t *threadTree) changedSinceInput(rs *agent.RunState) ([]string, error) {
	changed, err := runner.ChangedByFinishedSteps(t.ctx, t.saver, rs)
	if err != nil {
		return nil, err
	}
	if rs.Loop.Input == "" || rs.Files == nil {
		return changed, nil
	}
	in, err := t.saver.Get(t.ctx, checkpoint.Ref{ThreadID: t.id, NS: rs.Path.String(), ID: rs.Loop.Input})
	if err != nil || in.NS != rs.Path.String() {
		return changed, nil
	}
	add := func(p string) {
		if !slices.Contains(changed, p) {
			changed = append(changed, p)
		}
	}
	for p, f := range rs.Files {
		if old, ok := in.State.Files[p]; !ok || old.Content != f.Content {
			add(p)
		}
	}
	for p := range in.State.Files {
		if _, ok := rs.Files[p]; !ok {
			add(p)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// child finds the subagent run that the call callID of the run at parent
// started.
func (t *threadTree) child(parent agent.Path, callID string) agent.Path {
	for _, p := range t.paths {
		if p.Last().CallID != callID {
			continue
		}
		if parent == nil && len(p) == 2 || parent != nil && p.Parent().Equal(parent) {
			return p
		}
	}
	return nil
}

// backgroundStarts are the task calls of msgs that started a background
// subagent, by call id: those whose result says so.
func backgroundStarts(msgs []llm.Message) map[string]bool {
	out := map[string]bool{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool && m.Name == subagent.TaskToolName && !m.IsError &&
			strings.HasPrefix(m.Content, "Started subagent ") && strings.Contains(m.Content, " in the background as task "+m.ToolCallID+".") {
			out[m.ToolCallID] = true
		}
	}
	return out
}

func runName(p agent.Path) string {
	if p == nil {
		return "the top-level run"
	}
	return "subagent run " + p.String()
}

// printRun writes a run's transcript, each line after indent.
func printRun(w io.Writer, r *shownRun, indent string) {
	line := func(head, text string) {
		if r := []rune(text); len(r) > 2000 {
			text = string(r[:1999]) + "…"
		}
		head, text = termText(head), termText(text) // what tools read, shown, never acted on
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		fmt.Fprintf(w, "%s%s%s\n", indent, head, lines[0])
		pad := strings.Repeat(" ", len([]rune(head)))
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%s%s%s\n", indent, pad, l)
		}
	}
	for _, m := range r.Messages {
		switch m.Role {
		case string(llm.RoleTool):
			mark := ""
			if m.IsError {
				mark = " (error)"
			}
			if m.UnfinishedStep {
				mark += " (finished in the unfinished step)"
			}
			line(fmt.Sprintf("tool %s [%s]%s: ", m.Name, m.ToolCallID, mark), m.Content)
		default:
			if m.Notification {
				line("notification: ", m.Content)
				continue
			}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				line(m.Role+": ", m.Content)
			}
			for _, c := range m.ToolCalls {
				line(fmt.Sprintf("%s → %s [%s] ", m.Role, c.Name, c.ID), clip(compactJSON(c.Args), 300))
				if sa := c.Subagent; sa != nil {
					name := sa.Path
					if p, err := agent.ParsePath(sa.Path); err == nil {
						name = p.Last().Name
					}
					bg := ""
					if c.Background {
						bg = " · in the background"
					}
					fmt.Fprintf(w, "%s  ┃ subagent %s (%s)%s · %s · %s\n", indent, name, c.ID, bg, sa.Status, count(sa.Rounds, "round"))
					printRun(w, sa, indent+"  ┃ ")
				}
			}
		}
	}
	if len(r.FilesChanged) > 0 {
		files := make([]string, len(r.FilesChanged))
		for i, p := range r.FilesChanged {
			files[i] = p
			if slices.Contains(r.UnfinishedStepFiles, p) {
				files[i] += " (by the unfinished step)"
			}
		}
		fmt.Fprintf(w, "%sfiles changed: %s\n", indent, strings.Join(files, ", "))
	}
	if r.ApprovalMode != nil && r.Path == "" {
		for _, l := range modeLines(*r.ApprovalMode) {
			fmt.Fprintf(w, "%s%s\n", indent, termText(l))
		}
	}
	if r.Path == "" {
		for _, in := range r.Interrupts {
			fmt.Fprintf(w, "%swaiting for approval: %s %s [%s] in %s (allowed: %s)\n", indent, in.Tool, listedArgs(in.Args, ""), in.CallID, in.Path, decisionList(in.Allowed))
		}
	}
}

// threadsRemove deletes thread id from the database and its transcript
// file from threadDir ("" for the default): the file holds the whole
// conversation too.
func threadsRemove(ctx context.Context, saver checkpoint.Saver, db config.Database, id, threadDir string, stdout, stderr io.Writer) int {
	dir, err := transcriptDir(threadDir)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents threads rm: the transcript directory: %v; give it with --thread-dir\n", err)
		return exitFailed
	}
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: id, AllNamespaces: true})
	if err != nil {
		fmt.Fprintf(stderr, "deepagents threads rm: %v\n", err)
		return exitFailed
	}
	if len(cps) == 0 {
		fmt.Fprintf(stderr, "deepagents threads rm: no thread %q in %s (list them with 'deepagents threads')\n", id, db)
		return exitFailed
	}
	// Hold the thread while it is removed, so that a run using it is not
	// pulled from under it.
	// Named as runs name their holders, so that a dead rm's hold is known
	// for dead; a dead run's hold is taken over, as resume does.
	holder := runner.LeaseHolder()
	if _, err = runner.TakeLease(ctx, saver, id, holder, time.Now(), time.Minute); err != nil {
		var le *checkpoint.LeasedError
		if errors.As(err, &le) {
			fmt.Fprintf(stderr, "deepagents threads rm: thread %q is being run by %s (until %s); let that run finish first\n",
				id, le.Holder, le.Expires.UTC().Format(time.RFC3339))
		} else {
			fmt.Fprintf(stderr, "deepagents threads rm: %v\n", err)
		}
		return exitFailed
	}
	runs := map[string]bool{}
	for _, cp := range cps {
		runs[cp.NS] = true
	}
	if err := saver.DeleteThread(ctx, id); err != nil {
		_ = saver.Release(context.WithoutCancel(ctx), id, holder)
		fmt.Fprintf(stderr, "deepagents threads rm: %v\n", err)
		return exitFailed
	}
	subs := len(runs)
	if runs[""] {
		subs--
	}
	transcript := "no transcript file"
	path := transcriptPath(dir, id)
	switch err := os.Remove(path); {
	case err == nil:
		transcript = "transcript " + path
	case !errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stdout, "removed thread %s: %d checkpoints, %d subagent run(s)\n", id, len(cps), subs)
		fmt.Fprintf(stderr, "deepagents threads rm: could not remove the transcript: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "removed thread %s: %d checkpoints, %d subagent run(s), %s\n", id, len(cps), subs, transcript)
	return exitOK
}

// oneLine is the first line of s, shortened to n runes.
func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return clip(s, n)
}

// transcriptDir is the directory of the thread transcripts: dir when one
// is given (--thread-dir), else ~/.deepagents/threads.
func transcriptDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".deepagents", "threads"), nil
}

// transcriptPath is the file that holds the transcript of thread id in dir.
func transcriptPath(dir, id string) string {
	return filepath.Join(dir, fileName(id)+".json")
}

// Limits of transcript file names (without ".json"): an id that is a plain
// name of at most maxPlainName bytes is its own file name; a longer name
// is cut to keptOfLongName bytes and given the hash of the whole id.
const (
	maxPlainName   = 120
	keptOfLongName = 50
)

// fileName turns a thread id into a file name that stays in the
// transcript directory and belongs to that id alone, so that two threads
// never share a transcript. An id made of letters, digits, ".", "_" and
// "-" that does not start with "." and fits maxPlainName bytes is kept as
// it is (the ids the CLI makes are such). Any other id has each other byte,
// and a leading ".", written as %XX; names made so always hold a "%",
// which plain ids never do. When that is too long, the name is its first
// bytes, "~" and the SHA-256 of the id: only such names hold a "~".
func fileName(id string) string {
	if plainName(id) {
		return id
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if safeNameByte(c) && !(i == 0 && c == '.') {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	name := b.String()
	if name == "" {
		return "%" // no id is empty; a name all the same, that no other id has
	}
	if len(name) <= maxPlainName {
		return name
	}
	head := name[:keptOfLongName]
	if i := strings.LastIndexByte(head, '%'); i >= len(head)-2 {
		head = head[:i] // not half an escape
	}
	sum := sha256.Sum256([]byte(id))
	return head + "~" + hex.EncodeToString(sum[:])
}

// plainName reports whether id is its own transcript file name.
func plainName(id string) bool {
	if id == "" || len(id) > maxPlainName || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !safeNameByte(id[i]) {
			return false
		}
	}
	return true
}

func safeNameByte(c byte) bool {
	return c == '.' || c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// runWatch is the thread database as one run of the session sees it. It
// notes whether the run saved anything (a checkpoint or a finished call's
// result), the latest top-level checkpoint the run knew (read at its start
// or put by it), and whether the run lost its lease to another process.
// The transcript file is written only from what it notes (saveTranscript):
// a run refused because another process holds the thread, or that had
// nothing to resume, saved nothing and must not replace the transcript of
// the runs that did.
type runWatch struct {
	checkpoint.Saver
	thread string

	mu    sync.Mutex
	saved bool
	lost  bool
	last  string
}

func (w *runWatch) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Checkpoint, error) {
	cp, err := w.Saver.Get(ctx, ref)
	if err == nil && ref.ThreadID == w.thread && ref.NS == "" && ref.ID == "" {
		w.mu.Lock()
		w.last = cp.ID
		w.mu.Unlock()
	}
	return cp, err
}

func (w *runWatch) Put(ctx context.Context, st checkpoint.Step) error {
	err := w.Saver.Put(ctx, st)
	if err == nil && st.ThreadID == w.thread {
		w.mu.Lock()
		w.saved = true
		if st.NS == "" {
			w.last = st.ID
		}
		w.mu.Unlock()
	}
	return err
}

func (w *runWatch) PutWrite(ctx context.Context, ref checkpoint.Ref, wr checkpoint.Write) error {
	err := w.Saver.PutWrite(ctx, ref, wr)
	if err == nil && ref.ThreadID == w.thread {
		w.mu.Lock()
		w.saved = true
		w.mu.Unlock()
	}
	return err
}

func (w *runWatch) Renew(ctx context.Context, thread, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	l, err := w.Saver.Renew(ctx, thread, holder, now, ttl)
	if errors.Is(err, checkpoint.ErrNotHeld) && thread == w.thread {
		w.mu.Lock()
		w.lost = true
		w.mu.Unlock()
	}
	return l, err
}

// PendingWrites passes checkpoint.PendingReader on to the watched saver, so
// that a run resumed after a crash reads its finished steps' writes at once.
func (w *runWatch) PendingWrites(ctx context.Context, thread, ns string) (map[string][]checkpoint.Write, error) {
	if pr, ok := w.Saver.(checkpoint.PendingReader); ok {
		return pr.PendingWrites(ctx, thread, ns)
	}
	return nil, fmt.Errorf("checkpoint saver %T: %w", w.Saver, errors.ErrUnsupported)
}

// errStaleTranscript says that a run's transcript was not written because
// the thread went on without it.
var errStaleTranscript = errors.New("the thread went on in another run since this one saved its work, so its transcript is not replaced")

// saveTranscript writes the transcript of the run w watched (the whole
// result, children included) to dir and returns its path; "" when the run
// saved nothing in the thread, so has no transcript of its own. Writing
// holds the thread's lease, and happens only when the thread's latest
// top-level checkpoint is still the one the run knew last: a run that lost
// its thread to another process (errStaleTranscript) or whose thread
// another run holds now must not replace a newer transcript.
func saveTranscript(ctx context.Context, w *runWatch, dir, model string, res *agent.Result) (string, error) {
	w.mu.Lock()
	saved, lost, last := w.saved, w.lost, w.last
	w.mu.Unlock()
	if !saved {
		return "", nil
	}
	if lost {
		return "", errStaleTranscript
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	holder := transcriptHolder()
	if _, err := w.Saver.Acquire(ctx, w.thread, holder, time.Now(), time.Minute); err != nil {
		if errors.Is(err, checkpoint.ErrLeased) {
			return "", fmt.Errorf("%w (another run holds the thread now)", errStaleTranscript)
		}
		return "", err
	}
	defer func() { _ = w.Saver.Release(context.WithoutCancel(ctx), w.thread, holder) }()
	latest, err := w.Saver.List(ctx, checkpoint.ListOptions{ThreadID: w.thread, Limit: 1})
	if err != nil {
		return "", err
	}
	if len(latest) == 0 || latest[0].ID != last {
		return "", errStaleTranscript
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(struct {
		Thread string        `json:"thread"`
		Model  string        `json:"model"`
		Saved  time.Time     `json:"saved"`
		Result *agent.Result `json:"result"`
	}{w.thread, model, time.Now().UTC(), res}, "", "  ")
	if err != nil {
		return "", err
	}
	path := transcriptPath(dir, w.thread)
	tmp, err := os.CreateTemp(dir, ".transcript-*.tmp")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// transcriptHolder names this process in the lease it holds while it
// writes a transcript, as the agent names its runs (runner.LeaseHolder), so
// that the lease of a process that died holding it is taken over at once.
func transcriptHolder() string { return runner.LeaseHolder() }

// printableID is a thread id as a listing shows it: quoted when it holds
// control characters (a thread made before 'run' refused them, or by
// another client), so that it cannot garble the terminal or the table.
func printableID(id string) string {
	if strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return strconv.Quote(id)
	}
	return id
}

// runStatuses puts each thread's status in the words 'threads show' uses:
// its top-level run's status (ok, error, limit, refused, interrupted), or
// unfinished for a run still going, cut off or stopped with Ctrl-C. The
// database knows done, running, interrupted and error: an error is read
// from the run to tell a limit or a refusal, and an interrupted thread
// whose waiting calls were all answered by a resume that was then cut off
// waits for nothing, as 'threads show' and resume see it.
func runStatuses(ctx context.Context, saver checkpoint.Saver, ts []checkpoint.ThreadInfo) error {
	for i := range ts {
		switch ts[i].Status {
		case checkpoint.StatusDone:
			ts[i].Status = checkpoint.Status(agent.StatusOK)
			continue
		case checkpoint.StatusInterrupted, checkpoint.StatusError:
		default:
			ts[i].Status = statusUnfinished
			continue
		}
		rs, err := runner.LoadRunState(ctx, saver, ts[i].ID, agent.RootPath("agent"), false)
		if err != nil {
			return fmt.Errorf("thread %q: %w", ts[i].ID, err)
		}
		ts[i].Status = checkpoint.Status(rs.Status)
		if rs.Status == "" {
			ts[i].Status = statusUnfinished
		}
	}
	return nil
}

// statusUnfinished is the status of a run that has not ended: still
// running, cut off, or stopped with Ctrl-C.
const statusUnfinished = "unfinished"
