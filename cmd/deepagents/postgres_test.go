package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/internal/pgtest"
)

// --db postgres://… keeps threads on a PostgreSQL server: a run is saved
// there, continued, listed and shown. It needs a server
// (DEEPAGENTS_TEST_POSTGRES); without one it skips, saying how to give one.
func TestRunOnPostgres(t *testing.T) {
	db, _ := schemaDB(t)

	srv := gatedServer(t)
	runEnv(t, srv)
	code, out, errs := runCLI(t, "run", "-p", "write it", "--model", "openai:gpt-test", "--db", db, "--interrupt-on", "write_file", "--output", "json")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	id := decode(t, out).ThreadID
	code, out, errs = runCLI(t, "resume", "--thread", id, "--approve", "c1", "--model", "openai:gpt-test", "--db", db, "--output", "json")
	if code != 0 || decode(t, out).Result != "done" {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if code, out, _ := runCLI(t, "threads", "--db", db, "--json"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, `"status": "ok"`) {
		t.Errorf("threads: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "threads", "show", id, "--db", db); code != 0 || !strings.Contains(out, "tool write_file [c1]") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "threads", "rm", id, "--db", db); code != 0 || !strings.Contains(out, "removed thread "+id) {
		t.Errorf("rm: exit %d\n%s", code, out)
	}
}

// threads on a PostgreSQL database without the thread tables lists none
// and makes none: a reader leaves the database as it found it.
func TestThreadsOnEmptyPostgres(t *testing.T) {
	db, schema := schemaDB(t)
	runEnv(t, nil)

	if code, _, errs := runCLI(t, "threads", "--db", db); code != 0 || !strings.Contains(errs, "no threads yet (no thread tables in postgres://") {
		t.Errorf("threads: exit %d: %s", code, errs)
	}
	if code, out, errs := runCLI(t, "threads", "--db", db, "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("threads --json: exit %d: %s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "threads", "show", "x", "--db", db); code != 1 || !strings.Contains(errs, `no thread "x": the database postgres://`) || !strings.Contains(errs, "has no thread tables yet") {
		t.Errorf("threads show: exit %d: %s", code, errs)
	}
	conn := pgtest.Connect(t)
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1", schema).Scan(&n); err != nil || n != 0 {
		t.Errorf("threads made %d relations in the empty schema (%v)", n, err)
	}
}

// A PostgreSQL server that is not there fails within the connect timeout,
// with the password hidden.
func TestUnreachablePostgres(t *testing.T) {
	runEnv(t, nil)
	code, _, errs := runCLI(t, "threads", "--db", "postgres://me:secret@127.0.0.1:1/x?connect_timeout=2")
	if code == 0 || strings.Contains(errs, "secret") || !strings.Contains(errs, "thread database postgres://me:xxxxx@127.0.0.1:1/x") {
		t.Errorf("unreachable server: exit %d: %s", code, errs)
	}
}

// schemaDB makes a schema of the test's own on the test server and returns
// a --db URL that works in it, and its name; it skips when the server's
// address is not a postgres:// URL.
func schemaDB(t *testing.T) (db, schema string) {
	t.Helper()
	dsn, schema := pgtest.Schema(t)
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skipf("%s is not a postgres:// URL, which --db needs; skipping", pgtest.EnvDSN)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema
}
