// Command testrun runs the project's tests and says what they skipped.
//
//	go run ./internal/testrun -race ./...
//
// It runs `go test -json` with the arguments it is given and prints what
// plain `go test` prints (a line per package, and the output of the tests
// that failed; everything with -v), then one line per package whose tests
// skipped because a service they need is missing (PostgreSQL, bubblewrap,
// Chromium, Node.js), with how many tests and the first skip message, and
// how long the run took. Plain `go test` shows a package whose tests all
// skipped as "ok", so a missing service would otherwise go unnoticed. It
// exits with go test's status.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	// Ctrl-C reaches go test too (same process group): wait for it to
	// stop and report, rather than dying first.
	signal.Ignore(os.Interrupt)
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run runs go test with args and reports on stdout and stderr; it returns
// the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	cmd := exec.CommandContext(ctx, goTool(), append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testrun: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testrun: starting go test: %v\n", err)
		return 2
	}
	r := newReport(stdout, stderr, verbose(args))
	readErr := r.read(pipe)
	err = cmd.Wait()
	r.summary(time.Since(start))
	if readErr != nil {
		fmt.Fprintf(stderr, "testrun: reading go test's output: %v\n", readErr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintf(stderr, "testrun: go test: %v\n", err)
		return 2
	case readErr != nil:
		return 2
	}
	return 0
}

// goTool is the go command: the one in GOROOT/bin when this program was
// started by `go run` (which sets GOROOT for it), else go on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := root + "/bin/go"
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// verbose reports whether args ask go test for -v.
func verbose(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		switch a {
		case "-v", "--v", "-v=true", "--v=true":
			return true
		}
	}
	return false
}

// event is one line of go test -json (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// A service is something outside Go that some tests need; they skip
// without it (unless .ci/run's DEEPAGENTS_TEST_*_REQUIRED says they must
// not), with a message that names it.
type service struct {
	name string
	// in matches a skip message that names the service.
	in *regexp.Regexp
}

var services = []service{
	{"PostgreSQL", regexp.MustCompile(`(?i)postgres`)},
	{"bubblewrap", regexp.MustCompile(`(?i)bubblewrap|\bbwrap\b`)},
	{"Chromium", regexp.MustCompile(`(?i)chromium`)},
	{"Node.js", regexp.MustCompile(`(?i)\bnode(\.js)? is not installed|\bnpm ci\b|LangGraph SDK`)},
}

// serviceOf returns the service a skip message names, or "".
func serviceOf(msg string) string {
	for _, s := range services {
		if s.in.MatchString(msg) {
			return s.name
		}
	}
	return ""
}

// test is what one test printed.
type test struct {
	name     string
	lines    []string // its own output, without the run and result lines
	header   string   // its "--- FAIL" (or PASS, SKIP) line
	children []*test
	failed   bool
}

// pkg is one package's output, held until the package ends, as go test
// does.
type pkg struct {
	tests map[string]*test
	top   []*test
	// out is what is printed for the package, in order.
	out []string
}

// skips counts one package's tests skipped for one service; first is the
// first reason given.
type skips struct {
	pkg, service string
	n            int
	first        string
}

// report turns go test's events into its plain output and the summary.
type report struct {
	stdout, stderr io.Writer
	verbose        bool
	pkgs           map[string]*pkg
	skipped        map[[2]string]*skips
	order          []*skips
}

func newReport(stdout, stderr io.Writer, verbose bool) *report {
	return &report{stdout: stdout, stderr: stderr, verbose: verbose, pkgs: map[string]*pkg{}, skipped: map[[2]string]*skips{}}
}

// read handles the events of r until it ends.
func (r *report) read(in io.Reader) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var ev event
			if json.Unmarshal(bytes.TrimSpace(line), &ev) != nil || ev.Action == "" {
				_, _ = r.stdout.Write(line) // not an event: as it came
			} else {
				r.event(ev)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	// A package that never ended (go test was killed): show what it had.
	for _, name := range slices.Sorted(maps.Keys(r.pkgs)) {
		r.flush(name)
	}
	return nil
}

func (r *report) pkg(name string) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{tests: map[string]*test{}}
		r.pkgs[name] = p
	}
	return p
}

// testLine reports whether s is a line go test prints only with -v.
func testLine(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func resultLine(s string) bool {
	t := strings.TrimLeft(s, " ")
	return strings.HasPrefix(t, "--- FAIL:") || strings.HasPrefix(t, "--- PASS:") || strings.HasPrefix(t, "--- SKIP:")
}

func (r *report) event(ev event) {
	switch ev.Action {
	case "build-output":
		fmt.Fprint(r.stderr, ev.Output)
		return
	case "build-fail":
		return
	}
	if ev.Package == "" {
		if ev.Output != "" {
			fmt.Fprint(r.stdout, ev.Output)
		}
		return
	}
	if r.verbose && ev.Action == "output" {
		fmt.Fprint(r.stdout, ev.Output)
	}
	p := r.pkg(ev.Package)
	if ev.Test == "" {
		switch ev.Action {
		case "output":
			if ev.Output != "PASS\n" {
				p.out = append(p.out, ev.Output)
			}
		case "pass", "fail", "skip":
			r.flush(ev.Package)
		}
		return
	}
	t := p.tests[ev.Test]
	if t == nil {
		t = &test{name: ev.Test}
		p.tests[ev.Test] = t
		if i := strings.LastIndexByte(ev.Test, '/'); i >= 0 && p.tests[ev.Test[:i]] != nil {
			parent := p.tests[ev.Test[:i]]
			parent.children = append(parent.children, t)
		} else {
			p.top = append(p.top, t)
		}
	}
	switch ev.Action {
	case "output":
		switch s := ev.Output; {
		case testLine(s):
		case resultLine(s):
			t.header = strings.TrimLeft(s, " ")
		default:
			t.lines = append(t.lines, s)
		}
	case "fail":
		t.failed = true
		if !strings.Contains(ev.Test, "/") && !r.verbose {
			p.out = append(p.out, t.render(0)...)
		}
	case "skip":
		r.skip(ev.Package, t)
	}
}

// render returns the lines go test prints for a failed test at depth d:
// its result line, its output, then its failed subtests, indented.
func (t *test) render(d int) []string {
	ind := strings.Repeat("    ", d)
	var out []string
	if t.header != "" {
		out = append(out, ind+t.header)
	}
	for _, l := range t.lines {
		out = append(out, ind+l)
	}
	for _, c := range t.children {
		if c.failed {
			out = append(out, c.render(d+1)...)
		}
	}
	return out
}

// logPrefix is the file:line a test's log line starts with.
var logPrefix = regexp.MustCompile(`^\s*[\w./-]+\.go:\d+: `)

// skip counts a skipped test whose message names a service.
func (r *report) skip(pkgName string, t *test) {
	var svc, why string
	for _, l := range t.lines {
		l = strings.TrimSpace(logPrefix.ReplaceAllString(l, ""))
		if svc = serviceOf(l); svc != "" {
			why = l
			break
		}
	}
	if svc == "" {
		return
	}
	key := [2]string{pkgName, svc}
	s := r.skipped[key]
	if s == nil {
		s = &skips{pkg: pkgName, service: svc, first: why}
		r.skipped[key] = s
		r.order = append(r.order, s)
	}
	s.n++
}

// flush prints a package's held output (unless -v printed it already).
func (r *report) flush(name string) {
	p := r.pkgs[name]
	if p == nil {
		return
	}
	if !r.verbose {
		for _, s := range p.out {
			fmt.Fprint(r.stdout, s)
		}
	}
	delete(r.pkgs, name)
}

// summary prints the packages whose tests skipped for a missing service,
// then once per service the first reason given (which says how to provide
// it), and how long the run took.
func (r *report) summary(took time.Duration) {
	if len(r.order) > 0 {
		fmt.Fprintln(r.stdout, "Skipped for a missing service:")
		// Reasons in the order the services were first met.
		var svcs []string
		why := map[string]string{}
		for _, s := range r.order {
			if _, ok := why[s.service]; !ok {
				svcs = append(svcs, s.service)
				why[s.service] = s.first
			}
		}
		slices.SortStableFunc(r.order, func(a, b *skips) int { return strings.Compare(a.pkg+"\x00"+a.service, b.pkg+"\x00"+b.service) })
		for _, s := range r.order {
			tests := "tests need"
			if s.n == 1 {
				tests = "test needs"
			}
			fmt.Fprintf(r.stdout, "SKIP\t%s\t%d %s %s\n", s.pkg, s.n, tests, s.service)
		}
		for _, svc := range svcs {
			fmt.Fprintf(r.stdout, "%s: %s\n", svc, why[svc])
		}
		fmt.Fprintln(r.stdout, "(bash .ci/run sets them all up.)")
	}
	fmt.Fprintf(r.stdout, "go test took %s\n", took.Round(time.Second))
}
