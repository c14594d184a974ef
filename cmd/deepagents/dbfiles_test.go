package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/internal/testkit"
	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// cliChild runs deepagents with args in a process of its own (this test
// binary, see TestBenchChildProcess), in the current directory and
// environment, and returns its exit status and output.
func cliChild(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestBenchChildProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "DEEPAGENTS_BENCH_CHILD=1")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("deepagents %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// oldJournalName is the name of an old-format journal beside state.db.
const oldJournalName = "state.db" + testkit.OldJournalSuffix

// projectThread runs a first turn in a new project (a .deepagents
// directory in the current one) and returns the thread database's path
// and the thread's id.
func projectThread(t *testing.T) (db, id string) {
	t.Helper()
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("answer to " + r.Last().Text()) })
	project, _ := runEnv(t, srv)
	if err := os.Mkdir(filepath.Join(project, ".deepagents"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "run", "-p", "first", "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	return filepath.Join(project, ".deepagents", "state.db"), decode(t, out).ThreadID
}

// A journal of an earlier release planted beside the thread database (by an
// agent's write_file, or a command it ran) is never run by deepagents:
// every command that opens the database fails, naming the file and how to
// recover, before the database is opened; no database is attached, no row
// deleted, the file not changed.
func TestForgedJournalIsNotRunByTheCLI(t *testing.T) {
	db, id := projectThread(t)
	rows := testkit.CheckpointRows(t, db)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(t.TempDir(), "pwned.db")
	journal := filepath.Join(filepath.Dir(db), oldJournalName)
	if err := os.WriteFile(journal, testkit.OldJournal(testkit.AttackSQL(pwned), false), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"threads"},
		{"threads", "--json"},
		{"threads", "show", id},
		{"run", "-p", "again", "--model", "openai:gpt-test", "--thread", id},
		{"run", "-p", "new", "--model", "openai:gpt-test"},
		{"resume", "--thread", id},
	} {
		code, out, errs := cliChild(t, args...)
		if code == 0 || !strings.Contains(errs, journal) || !strings.Contains(errs, "delete it") {
			t.Errorf("deepagents %s: exit %d, stdout %q, stderr %q; want a failure naming %s", strings.Join(args, " "), code, out, errs, journal)
		}
		if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("deepagents %s ran the journal's SQL: %s exists (%v)", strings.Join(args, " "), pwned, err)
		}
	}
	if after, err := os.ReadFile(db); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the thread database changed (%v)", err)
	}
	if n := testkit.CheckpointRows(t, db); n != rows {
		t.Errorf("%d checkpoints, want the %d stored before", n, rows)
	}
	// Deleted as the error says, the database opens with its threads.
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cliChild(t, "threads"); code != 0 || !strings.Contains(out, id) {
		t.Errorf("threads after deleting the journal: exit %d, %q, %q", code, out, errs)
	}
}

// An agent that writes a journal's name and bytes with write_file: with
// its files in memory nothing reaches the disk; with --root the project,
// the file is written (or refused), and is only ever a file: the next
// command refuses to open the database beside it, and its SQL never runs.
func TestAgentWrittenJournalIsJustAFile(t *testing.T) {
	for _, root := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-memory files", true: "--root"}[root], func(t *testing.T) {
			// The SQL attaches pwned.db in the current directory: the
			// project, where the commands run.
			content := testkit.OldJournal("COMMIT; ATTACH DATABASE 'pwned.db' AS x; CREATE TABLE x.t(a); BEGIN IMMEDIATE", true)
			args, _ := json.Marshal(map[string]string{"file_path": "/.deepagents/" + oldJournalName, "content": string(content)})
			srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
				if r.Round() == 0 {
					return ot.Tools(ot.Call{ID: "w1", Name: "write_file", Args: string(args)})
				}
				return ot.Text("written")
			})
			project, _ := runEnv(t, srv)
			if err := os.Mkdir(filepath.Join(project, ".deepagents"), 0o700); err != nil {
				t.Fatal(err)
			}
			run := []string{"run", "-p", "write it", "--model", "openai:gpt-test"}
			if root {
				run = append(run, "--root", project)
			}
			if code, _, errs := cliChild(t, run...); code != 0 {
				t.Fatalf("the run: exit %d: %s", code, errs)
			}
			journal := filepath.Join(project, ".deepagents", oldJournalName)
			written, err := os.ReadFile(journal)
			switch {
			case err == nil && !bytes.Equal(written, content):
				t.Fatalf("the agent's file holds other bytes than it wrote (%d, want %d): the test's journal is not the attack", len(written), len(content))
			case err == nil:
				if !root {
					t.Errorf("an agent whose files are in memory wrote %s", journal)
				}
			case !errors.Is(err, os.ErrNotExist):
				t.Fatal(err)
			}
			t.Logf("the agent's write reached %s: %v", journal, written != nil)
			for _, args := range [][]string{{"threads"}, {"run", "-p", "next", "--model", "openai:gpt-test"}} {
				code, out, errs := cliChild(t, args...)
				if written != nil && (code == 0 || !strings.Contains(errs, journal)) {
					t.Errorf("deepagents %s beside the agent's journal: exit %d, %q, %q; want a failure naming it", strings.Join(args, " "), code, out, errs)
				}
				if written == nil && code != 0 {
					t.Errorf("deepagents %s: exit %d, %q", strings.Join(args, " "), code, errs)
				}
				if _, err := os.Stat(filepath.Join(project, "pwned.db")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("deepagents %s ran the SQL of the journal the agent wrote (%v)", strings.Join(args, " "), err)
				}
			}
		})
	}
}

// A thread database cut short, with a garbage header, not SQLite at all,
// or with pages lost is an error naming the file for every command that
// reads threads, never "no threads yet"; the file is left as it was. An
// empty file is a new database (deepagents makes one so): no threads, and
// the listing does not write a schema into it.
func TestDamagedDatabaseIsAnErrorNamingIt(t *testing.T) {
	db, id := projectThread(t)
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(good) < 3*4096 {
		t.Fatalf("the database is %d bytes: too small to lose pages", len(good))
	}
	lost := bytes.Clone(good)
	clear(lost[2*4096:]) // every page but the first two zeroed
	commands := [][]string{
		{"threads"},
		{"threads", "--json"},
		{"threads", "show", id},
		{"run", "-p", "again", "--model", "openai:gpt-test", "--thread", id},
		{"resume", "--thread", id},
	}
	for _, c := range []struct {
		name      string
		data      []byte
		unchanged bool // the commands must leave the file as it is
	}{
		{"cut to half", good[:len(good)/2], true},
		{"cut to 100 bytes", good[:100], true},
		{"header overwritten", append([]byte("this is no SQLite header!!!!!!!"), good[31:]...), true},
		{"not SQLite", []byte("# notes\nnot a database\n"), true},
		{"pages lost", lost, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(db, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range commands {
				code, out, errs := cliChild(t, args...)
				if code == 0 || !strings.Contains(errs, db) || strings.Contains(out+errs, "no threads yet") || strings.Contains(errs, "no thread ") {
					t.Errorf("deepagents %s: exit %d, stdout %q, stderr %q; want a failure naming %s", strings.Join(args, " "), code, out, errs, db)
				}
			}
			if after, err := os.ReadFile(db); c.unchanged && (err != nil || !bytes.Equal(after, c.data)) {
				t.Errorf("the file changed (%v)", err)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		if err := os.WriteFile(db, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := cliChild(t, "threads")
		if code != 0 || !strings.Contains(errs, "no threads yet (the database "+db+" is empty)") {
			t.Errorf("threads on an empty file: exit %d, %q, %q", code, out, errs)
		}
		if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
			t.Errorf("the listing wrote into the empty file (%v)", err)
		}
	})
}

// --db sqlite:PATH?synchronous=full opens PATH (not a file named with the
// parameter) with every commit synced; an unknown parameter is bad usage.
func TestDBSynchronousParameter(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	project, _ := runEnv(t, srv)
	code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--db", "sqlite:full.db?synchronous=full")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(project, "full.db")); err != nil {
		t.Errorf("full.db was not made: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(project, "full.db?*")); len(left) > 0 {
		t.Errorf("a file named with the parameter: %v", left)
	}
	code, _, errs = runCLI(t, "threads", "--db", "sqlite:full.db?synchronous=off")
	if code != 2 || !strings.Contains(errs, "synchronous=off is not accepted") {
		t.Errorf("synchronous=off: exit %d, %q", code, errs)
	}
}

// A database file that cannot be made (here: in /proc, where no file can
// be created) is an error saying so, with the system's reason, not
// SQLite's "unable to open database file".
func TestDatabaseThatCannotBeMadeSaysWhy(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc, where no file can be made (Linux only)")
	}
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply { return ot.Text("ok") })
	runEnv(t, srv)
	code, _, errs := runCLI(t, "run", "-p", "hi", "--model", "openai:gpt-test", "--db", "sqlite:/proc/deepagents-test.db")
	if code == 0 || !strings.Contains(errs, "thread database sqlite:/proc/deepagents-test.db: cannot make the file") || strings.Contains(errs, "unable to open") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
