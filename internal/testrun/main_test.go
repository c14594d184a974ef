package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The skip messages of the project's service-dependent tests, as they
// are written in pgtest, the sandbox, the CLI's shell, the web UI's
// browser tests and the server's SDK test, each name their service.
func TestServiceOfTheProjectsSkipMessages(t *testing.T) {
	for msg, want := range map[string]string{
		"no PostgreSQL test server: set DEEPAGENTS_TEST_POSTGRES to a connection string such as postgres://user:password@localhost:5432/dbname?sslmode=disable (CI's .ci/run always starts a server and sets it)": "PostgreSQL",
		"bubblewrap (bwrap) is not installed, so the sandbox cannot be tested here; install Debian's bubblewrap package (CI does)":                                                                                "bubblewrap",
		"bubblewrap (bwrap) is not installed; install Debian's bubblewrap package (CI does)":                                                                                                                      "bubblewrap",
		"no Chromium found (install Debian's chromium or chromium-headless-shell, or set DEEPAGENTS_CHROMIUM)":                                                                                                    "Chromium",
		"node is not installed; CI runs this test (install Node.js, then npm ci in server/sdktest)":                                                                                                               "Node.js",
		"the LangGraph SDK is not installed; run `npm ci` in server/sdktest (CI does)":                                                                                                                            "Node.js",
		"runs 500 steps":    "",
		"mkfifo: denied":    "",
		"no home directory": "",
		"running as root, and this test cannot re-run itself as an unprivileged user (x); .ci/run runs it as user nobody": "",
	} {
		if got := serviceOf(msg); got != want {
			t.Errorf("serviceOf(%q) = %q, want %q", msg, got, want)
		}
	}
}

// A module whose tests pass, skip for missing services, skip for another
// reason and fail: the run prints what plain go test prints (a line per
// package, a failed test's output nested under it, nothing of the tests
// that passed or skipped), then one line per package and service with how
// many tests skipped and why, and how long it took; it exits with go
// test's status.
func TestRunSummarisesSkippedServices(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("db/db_test.go", `package db
import "testing"
func TestOne(t *testing.T) { t.Skip("no PostgreSQL test server: set DEEPAGENTS_TEST_POSTGRES") }
func TestTwo(t *testing.T) { t.Skip("no PostgreSQL test server: set DEEPAGENTS_TEST_POSTGRES") }
func TestLong(t *testing.T) { t.Skip("runs 500 steps") }
func TestPasses(t *testing.T) { t.Log("quiet") }
`)
	write("box/box_test.go", `package box
import "testing"
func TestSandbox(t *testing.T) { t.Skip("bubblewrap (bwrap) is not installed") }
func TestBroken(t *testing.T) {
	t.Run("inner", func(t *testing.T) { t.Log("context"); t.Error("it broke") })
}
`)
	write("plain/plain.go", "package plain\n")
	t.Chdir(dir)
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	code := run(ctx, []string{"-count=1", "./..."}, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d, want go test's 1\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	got := out.String()
	for _, want := range []string{
		"--- FAIL: TestBroken (",
		"\n    --- FAIL: TestBroken/inner (",
		"\n        box_test.go:5: context\n        box_test.go:5: it broke\n",
		"\nFAIL\texample.com/m/box\t",
		"ok  \texample.com/m/db\t",
		"?   \texample.com/m/plain\t[no test files]\n",
		"Skipped for a missing service:\n" +
			"SKIP\texample.com/m/box\t1 test needs bubblewrap\n" +
			"SKIP\texample.com/m/db\t2 tests need PostgreSQL\n",
		"\nbubblewrap: bubblewrap (bwrap) is not installed\n",
		"\nPostgreSQL: no PostgreSQL test server: set DEEPAGENTS_TEST_POSTGRES\n",
		"(bash .ci/run sets them all up.)\ngo test took ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"=== RUN", "quiet", "runs 500 steps", "TestPasses", "--- SKIP"} {
		if strings.Contains(got, not) {
			t.Errorf("stdout shows %q, which plain go test does not:\n%s", not, got)
		}
	}
	// Only the db package: every test passes or skips, and the summary
	// is still there.
	out.Reset()
	if code := run(ctx, []string{"./db"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "SKIP\texample.com/m/db\t2 tests need PostgreSQL") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
}

// Whatever go test's output holds, reading it never panics, a line that
// is not an event comes out as it was, and only skips that name a service
// are counted.
func FuzzReport(f *testing.F) {
	for _, s := range []string{
		`{"Action":"output","Package":"p","Test":"T","Output":"    x_test.go:3: no PostgreSQL test server\n"}` + "\n" + `{"Action":"skip","Package":"p","Test":"T"}` + "\n",
		`{"Action":"run","Package":"p","Test":"T/a/b"}` + "\n" + `{"Action":"fail","Package":"p","Test":"T/a/b"}` + "\n" + `{"Action":"fail","Package":"p"}`,
		"not json\n{\"Action\":\"build-output\",\"ImportPath\":\"x\",\"Output\":\"# x\\n\"}\n",
		`{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out, errs bytes.Buffer
		r := newReport(&out, &errs, false)
		if err := r.read(bytes.NewReader(in)); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.SplitAfter(string(in), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "{") && strings.TrimSpace(line) != "" && !strings.Contains(out.String(), line) {
				t.Fatalf("the line %q was lost:\n%s", line, out.String())
			}
		}
		for _, s := range r.order {
			if serviceOf(s.first) == "" || s.n < 1 {
				t.Fatalf("counted %+v", s)
			}
		}
	})
}
