package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/runner"
)

// A thread remembers how each turn was started: the agent's flags of
// 'run' (--root, --interrupt-on, --model, …) are saved with the turn's input
// checkpoint, and 'resume' and the next 'run --thread' take those they are
// not given themselves. Without them they would build another agent: its
// files in memory instead of the directory, no gate on calls the person
// had gated. A turn's flags are those it took from the turn before and its
// own, so that they carry on from turn to turn.

// settingsKey is the checkpoint metadata key of a turn's flags: a JSON list
// of [name, value] pairs in the order given; dirKey's is the directory the
// turn was started in, whose project files (deepagents.toml, agent files,
// skills, AGENTS.md) shaped its agent.
const (
	settingsKey = runner.FlagsKey
	dirKey      = "deepagents.dir"
)

// notRemembered are the agent flags that say how this one command shows
// its outcome or reaches the thread, not how the agent is built; and the
// trust flags, which are consent given for one command.
var notRemembered = map[string]bool{
	"db": true, "output": true, "quiet": true, "trust-project": true, "trust-project-mcp": true,
}

// pathFlags hold paths, saved absolute so that a resume from another
// directory finds the same files.
var pathFlags = map[string]bool{"root": true, "subagents": true, "thread-dir": true, "mcp-config": true}

// rememberedNames are the names of the flags a thread remembers.
var rememberedNames = func() map[string]bool {
	var f runFlags
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	agentFlags(fs, &f)
	names := map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) {
		if !notRemembered[fl.Name] {
			names[fl.Name] = true
		}
	})
	return names
}()

// givenFlags returns, in order, the remembered flags args set on fs (which
// has parsed args without error), with path values made absolute.
func givenFlags(fs *flag.FlagSet, args []string) [][2]string {
	var out [][2]string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue // an operand; parsing goes on after it
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		value, hasValue := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = k, v, true
		}
		fl := fs.Lookup(name)
		if fl == nil {
			continue
		}
		if !hasValue {
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				value = "true"
			} else if i+1 < len(args) {
				i++
				value = args[i]
			}
		}
		if !rememberedNames[name] {
			continue
		}
		out = append(out, [2]string{name, absFlag(name, value)})
	}
	return out
}

// absFlag makes a path flag's value absolute (--system's @FILE too).
func absFlag(name, value string) string {
	at := ""
	if name == "system" {
		p, ok := strings.CutPrefix(value, "@")
		if !ok {
			return value
		}
		at, value = "@", p
	} else if !pathFlags[name] || value == "" {
		return value
	}
	if abs, err := filepath.Abs(value); err == nil {
		value = abs
	}
	return at + value
}

// noticesKey is the checkpoint metadata key of the notices that applied
// to a turn (noticeLog): a JSON list of their digests.
const noticesKey = "deepagents.notices"

// settingsMetadata is the metadata that saves flags, and the working
// directory, with a turn's input of thread; and the notices that applied
// to it; signed with the user's key (turnkey.go), so that a later command
// takes them only from a record the user's own deepagents wrote. When no
// key can be had, the metadata is unsigned and err says why.
func settingsMetadata(thread string, flags [][2]string, notices []string) (md map[string]string, err error) {
	if flags == nil {
		flags = [][2]string{}
	}
	b, _ := json.Marshal(flags)
	md = map[string]string{settingsKey: string(b)}
	if wd, err := os.Getwd(); err == nil {
		md[dirKey] = wd
	}
	if len(notices) > 0 {
		b, _ := json.Marshal(notices)
		md[noticesKey] = string(b)
	}
	home, _ := os.UserHomeDir()
	return md, signTurn(home, thread, md)
}

// turnRecord is what a thread remembers of how its current turn was
// started.
type turnRecord struct {
	// flags are the turn's flags; nil when the thread was started before
	// threads remembered them.
	flags [][2]string
	// dir is the directory the turn was started in ("" when unknown).
	dir string
	// notices are the notices that applied to the turn.
	notices []string
	// signed says the user's own deepagents wrote the record (it is
	// signed with their key): only then are its flags, directory and
	// notices taken.
	signed bool
}

// turnSettings reads the flags the thread's current turn was started with:
// those of its newest input checkpoint. ok is false when the thread has no
// such record (unknown, or started before threads remembered flags).
func turnSettings(ctx context.Context, saver checkpoint.Saver, thread string) (rec turnRecord, ok bool, err error) {
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, Metadata: map[string]string{"source": "input"}, Limit: 1})
	if err != nil || len(cps) == 0 {
		return rec, false, err
	}
	md := cps[0].Metadata
	home, _ := os.UserHomeDir()
	rec.signed = signedByUser(home, thread, md)
	if raw, ok := md[noticesKey]; ok {
		// Unreadable notices are shown again: nothing is lost.
		_ = json.Unmarshal([]byte(raw), &rec.notices)
	}
	raw, ok := md[settingsKey]
	if !ok {
		return rec, true, nil // started before threads remembered flags
	}
	if err := json.Unmarshal([]byte(raw), &rec.flags); err != nil {
		return rec, false, fmt.Errorf("the flags thread %q was started with are unreadable: %w", thread, err)
	}
	if rec.flags == nil {
		rec.flags = [][2]string{}
	}
	rec.dir = md[dirKey]
	return rec, true, nil
}

// applyTurnSettings builds a command on an existing thread as its turn was
// built: for 'resume', and for 'run --thread ID' (cmd names the command in
// messages). It gives fs the flags the thread's turn was started with
// that the command line does not set itself, telling the user which
// (unless quiet) and, in a warning, which the command line changes; and it
// moves to the directory the turn was started in, so that the same project
// files apply. It returns the flags the command's own turn is built with,
// the remembered ones and then its own, to be remembered in their turn.
//
// A thread unknown to the database is left to the command, except for
// run, which refuses it, naming the nearest ids, unless f.newThread; and
// run refuses f.newThread for a thread that exists.
func applyTurnSettings(ctx context.Context, cmd string, fs *flag.FlagSet, args []string, f *runFlags, stderr io.Writer) (effective [][2]string, err error) {
	given := givenFlags(fs, args) // the command's own, read where it was typed
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(cwd, home)
	if err != nil {
		return nil, err
	}
	d, err := chooseDatabase(f.db, f.set["db"], cfg, cwd, home)
	if err != nil {
		return nil, err
	}
	if d.Kind == config.SQLite {
		if _, err := os.Stat(d.Path); errors.Is(err, os.ErrNotExist) {
			// No database yet: no thread to resume (resume says so), or a
			// new one.
			if cmd == "run" && !f.newThread {
				return nil, &unknownThreadError{thread: f.thread, db: d, canMake: true}
			}
			return given, nil
		}
	}
	saver, err := openDatabase(ctx, d)
	if err != nil {
		return nil, err
	}
	defer func() {
		if c, ok := saver.(io.Closer); ok {
			c.Close()
		}
	}()
	rec, found, err := turnSettings(ctx, saver, f.thread)
	if err != nil {
		return nil, err
	}
	if cmd == "run" || cmd == "resume" {
		exists := found
		if !exists {
			cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: f.thread, AllNamespaces: true, Limit: 1})
			if err != nil {
				return nil, err
			}
			exists = len(cps) > 0
		}
		switch {
		case exists && f.newThread:
			return nil, fmt.Errorf("--new-thread: thread %q exists already in %s; leave out --new-thread to send the prompt as a new turn of it, or choose another id", f.thread, d)
		case !exists && !f.newThread && !heldByAnother(ctx, saver, f.thread):
			return nil, unknownThread(ctx, saver, f.thread, d, cmd == "run")
		}
	}
	if !found {
		return given, nil
	}
	if rec.flags == nil {
		fmt.Fprintf(stderr, "deepagents %s: warning: thread %s was started before threads remembered their flags; give the flags it was started with (--root, --model, --interrupt-on, …)\n", cmd, f.thread)
		return given, nil
	}
	if !rec.signed {
		// Not the user's record: a database from a cloned project or
		// another machine, or forged. Its flags (--no-sandbox, --allow
		// execute, --root …) and directory would be consent the user
		// never gave; its notices would hide what this command does.
		fmt.Fprintf(stderr, "deepagents %s: warning: %s\n", cmd, untakenText(fs, f.thread, d, rec))
		return given, nil
	}
	f.notices.remember(rec.notices)
	if rec.dir != "" && rec.dir != cwd {
		if err := moveToTurnDir(cmd, fs, f, d, rec.dir, stderr); err != nil {
			return nil, err
		}
	}
	mine := map[string][]string{}
	for _, p := range given {
		mine[p[0]] = append(mine[p[0]], p[1])
	}
	was := map[string][]string{}
	for _, p := range rec.flags {
		was[p[0]] = append(was[p[0]], p[1])
	}
	var taken, changed []string
	for _, name := range slices.Sorted(maps.Keys(mine)) {
		if old, ok := was[name]; ok && !slices.Equal(old, mine[name]) {
			fl := fs.Lookup(name)
			changed = append(changed, fmt.Sprintf("%s (was %s)", flagsText(fl, mine[name]), flagsText(fl, old)))
		}
	}
	for _, p := range rec.flags {
		name, value := p[0], p[1]
		fl := fs.Lookup(name)
		if !rememberedNames[name] || fl == nil {
			continue // a flag this version no longer has
		}
		if f.set[name] {
			continue // the command's own replaces it (all of a repeated flag's)
		}
		if err := fs.Set(name, value); err != nil {
			return nil, fmt.Errorf("the flag --%s=%s thread %q was started with: %w", name, value, f.thread, err)
		}
		taken = append(taken, flagText(fl, value))
		effective = append(effective, p)
	}
	effective = append(effective, given...)
	if len(taken) > 0 && !f.quiet {
		fmt.Fprintf(stderr, "deepagents %s: as thread %s was started: %s\n", cmd, f.thread, strings.Join(taken, " "))
	}
	if len(changed) > 0 {
		fmt.Fprintf(stderr, "deepagents %s: warning: thread %s was started otherwise; now %s\n", cmd, f.thread, strings.Join(changed, ", "))
	}
	return effective, nil
}

// untakenText says that the record of how thread's turn was started is
// not the user's own, and what it would have set.
func untakenText(fs *flag.FlagSet, thread string, d config.Database, rec turnRecord) string {
	var flags []string
	for _, p := range rec.flags {
		if fl := fs.Lookup(p[0]); fl != nil && rememberedNames[p[0]] {
			flags = append(flags, flagText(fl, p[1]))
		}
	}
	what := "nothing"
	if len(flags) > 0 {
		what = strings.Join(flags, " ")
	}
	if rec.dir != "" {
		what += fmt.Sprintf(", working in %q", rec.dir)
	}
	return fmt.Sprintf("thread %s in %s was not started by you here (its record is not signed with your key, ~/.deepagents/%s: "+
		"the database comes from elsewhere, such as a cloned project or another machine, or from a release before threads were signed), "+
		"so the flags it was started with are not taken (%s); give again those you want", thread, d, turnKeyFile, what)
}

// flagsText writes the values of one flag as they would be typed.
func flagsText(fl *flag.Flag, values []string) string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = flagText(fl, v)
	}
	return strings.Join(out, " ")
}

// flagText writes a flag as it would be typed.
func flagText(fl *flag.Flag, value string) string {
	if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && value == "true" {
		return "--" + fl.Name
	}
	if value == "" || strings.ContainsAny(value, " \t'\"") {
		return fmt.Sprintf("--%s %q", fl.Name, value)
	}
	return "--" + fl.Name + " " + value
}

// moveToTurnDir makes a command on a thread run in dir, the directory its
// turn was started in, so that the same project files shape its agent (a
// project's permission rules among them). The command's own path flags,
// and the database the thread was found in, are pinned first, as they were
// meant from where the command was typed.
func moveToTurnDir(cmd string, fs *flag.FlagSet, f *runFlags, d config.Database, dir string, stderr io.Writer) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "deepagents %s: warning: thread %s was started in %s, which is gone; the project files here apply\n", cmd, f.thread, dir)
		return nil
	}
	if d.Kind == config.SQLite {
		if err := fs.Set("db", "sqlite:"+d.Path); err != nil {
			return err
		}
	}
	for _, name := range []string{"root", "subagents", "thread-dir", "system"} {
		if f.set[name] {
			if err := fs.Set(name, absFlag(name, fs.Lookup(name).Value.String())); err != nil {
				return err
			}
		}
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("moving to %s, where thread %s was started: %w", dir, f.thread, err)
	}
	if !f.quiet {
		fmt.Fprintf(stderr, "deepagents %s: working in %s, where thread %s was started (its project files apply)\n", cmd, dir, f.thread)
	}
	return nil
}
