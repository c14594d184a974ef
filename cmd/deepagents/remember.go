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
)

// A thread remembers how each turn was started: the agent's flags given to
// 'run' (--root, --interrupt-on, --model, …) are saved with the turn's input
// checkpoint, and 'resume' takes those it is not given itself. Without
// them a resume would build another agent: its files in memory instead of
// the directory, no gate on calls the person had gated.

// settingsKey is the checkpoint metadata key of a turn's flags: a JSON list
// of [name, value] pairs in the order given; dirKey's is the directory the
// turn was started in, whose project files (deepagents.toml, agent files,
// skills, AGENTS.md) shaped its agent.
const (
	settingsKey = "deepagents.flags"
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

// settingsMetadata is the metadata that saves flags, and the working
// directory, with a turn's input.
func settingsMetadata(flags [][2]string) map[string]string {
	if flags == nil {
		flags = [][2]string{}
	}
	b, _ := json.Marshal(flags)
	md := map[string]string{settingsKey: string(b)}
	if wd, err := os.Getwd(); err == nil {
		md[dirKey] = wd
	}
	return md
}

// turnSettings reads the flags the thread's current turn was started with:
// those of its newest input checkpoint. ok is false when the thread has no
// such record (unknown, or started before threads remembered flags).
func turnSettings(ctx context.Context, saver checkpoint.Saver, thread string) (flags [][2]string, dir string, ok bool, err error) {
	cps, err := saver.List(ctx, checkpoint.ListOptions{ThreadID: thread, Metadata: map[string]string{"source": "input"}, Limit: 1})
	if err != nil || len(cps) == 0 {
		return nil, "", false, err
	}
	raw, ok := cps[0].Metadata[settingsKey]
	if !ok {
		return nil, "", true, nil // started before threads remembered flags
	}
	if err := json.Unmarshal([]byte(raw), &flags); err != nil {
		return nil, "", false, fmt.Errorf("the flags thread %q was started with are unreadable: %w", thread, err)
	}
	if flags == nil {
		flags = [][2]string{}
	}
	return flags, cps[0].Metadata[dirKey], true, nil
}

// applyTurnSettings gives fs the flags the thread's turn was started with
// that the resume command line does not set itself, and tells the user
// which (unless quiet) and which the command line changes.
func applyTurnSettings(ctx context.Context, fs *flag.FlagSet, args []string, f *runFlags, stderr io.Writer) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	given := map[string][]string{} // the resume's own, read where it was typed
	for _, p := range givenFlags(fs, args) {
		given[p[0]] = append(given[p[0]], p[1])
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(cwd, home)
	if err != nil {
		return err
	}
	d, err := chooseDatabase(f.db, f.set["db"], cfg, cwd, home)
	if err != nil {
		return err
	}
	if d.Kind == config.SQLite {
		if _, err := os.Stat(d.Path); errors.Is(err, os.ErrNotExist) {
			return nil // nothing to resume; the resume itself says so
		}
	}
	saver, err := openDatabase(ctx, d)
	if err != nil {
		return err
	}
	flags, dir, found, err := turnSettings(ctx, saver, f.thread)
	if c, ok := saver.(io.Closer); ok {
		c.Close()
	}
	if err != nil || !found {
		return err
	}
	if flags == nil {
		fmt.Fprintf(stderr, "deepagents resume: warning: thread %s was started before threads remembered their flags; give the flags it was started with (--root, --model, --interrupt-on, …)\n", f.thread)
		return nil
	}
	if dir != "" && dir != cwd {
		if err := moveToTurnDir(fs, f, d, dir, stderr); err != nil {
			return err
		}
	}
	was := map[string][]string{}
	for _, p := range flags {
		was[p[0]] = append(was[p[0]], p[1])
	}
	var taken, changed []string
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if old, ok := was[name]; ok && !slices.Equal(old, given[name]) {
			fl := fs.Lookup(name)
			changed = append(changed, fmt.Sprintf("%s (was %s)", flagsText(fl, given[name]), flagsText(fl, old)))
		}
	}
	for _, p := range flags {
		name, value := p[0], p[1]
		fl := fs.Lookup(name)
		if !rememberedNames[name] || fl == nil {
			continue // a flag this version no longer has
		}
		if f.set[name] {
			continue // the resume's own replaces it (all of a repeated flag's)
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("the flag --%s=%s thread %q was started with: %w", name, value, f.thread, err)
		}
		taken = append(taken, flagText(fl, value))
	}
	if len(taken) > 0 && !f.quiet {
		fmt.Fprintf(stderr, "deepagents resume: as thread %s was started: %s\n", f.thread, strings.Join(taken, " "))
	}
	if len(changed) > 0 {
		fmt.Fprintf(stderr, "deepagents resume: warning: thread %s was started otherwise; now %s\n", f.thread, strings.Join(changed, ", "))
	}
	return nil
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

// moveToTurnDir makes a resume run in dir, the directory its turn was
// started in, so that the same project files shape its agent (a project's
// permission rules among them). The resume's own path flags, and the
// database the thread was found in, are pinned first, as they were meant
// from where the command was typed.
func moveToTurnDir(fs *flag.FlagSet, f *runFlags, d config.Database, dir string, stderr io.Writer) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "deepagents resume: warning: thread %s was started in %s, which is gone; the project files here apply\n", f.thread, dir)
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
		fmt.Fprintf(stderr, "deepagents resume: working in %s, where thread %s was started (its project files apply)\n", dir, f.thread)
	}
	return nil
}
