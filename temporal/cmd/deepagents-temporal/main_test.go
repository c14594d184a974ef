package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/temporal"
)

// run runs the command line args and returns its exit status and output.
func run(t *testing.T, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut strings.Builder
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	status = dispatch(ctx, args, &out, &errOut)
	return status, out.String(), errOut.String()
}

// Mistakes on the command line are usage errors (status 2) that say what
// to do, found before anything is dialled.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: deepagents-temporal COMMAND"},
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{[]string{"serve"}, "--db is required"},
		{[]string{"serve", "--db", "x.db", "--demo", "--root", "/r"}, "--demo serves the scripted demo agent: it takes no --root"},
		{[]string{"worker", "--demo", "--db", "mysql://x"}, `--db: "mysql://x" is not a database deepagents uses`},
		{[]string{"run", "hello"}, "--thread is required"},
		{[]string{"run", "--thread", "T"}, "give the prompt as one argument"},
		{[]string{"run", "--thread", "T", "  "}, "to resume a thread's unfinished run use resume"},
		{[]string{"resume", "--thread", "T", "hello"}, "resume takes no prompt"},
		{[]string{"approve", "--thread", "T"}, "give exactly one of --approve, --reject, --decisions or --list"},
		{[]string{"approve", "--thread", "T", "--approve", "--reject"}, "give exactly one of"},
		{[]string{"approve", "--thread", "T", "--approve", "--message", "m"}, "--message goes with --reject"},
		{[]string{"approve", "--thread", "T", "--decisions", "/nonexistent/d.json"}, "--decisions: open /nonexistent/d.json"},
		{[]string{"worker", "--demo", "--model", "openai:gpt-4.1"}, "it takes neither --project nor --model"},
		{[]string{"worker", "--demo", "--approval-timeout", "0s"}, "--approval-timeout must be positive"},
	} {
		st, _, errOut := run(t, tc.args...)
		if st != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: status %d, stderr %q; want 2 and %q", tc.args, st, errOut, tc.want)
		}
	}
	// A database that cannot be opened is a failure, found before
	// Temporal is dialled.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st, _, errOut := run(t, "worker", "--demo", "--db", "sqlite:"+filepath.Join(notDir, "x.db"))
	if st != exitFailed || !strings.Contains(errOut, "thread database") {
		t.Errorf("--db on a missing directory: status %d, stderr %q", st, errOut)
	}
}

// TLS settings that cannot work are refused before anything is dialled.
func TestTLSFlags(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-ca", ca}, "holds no PEM certificate"},
		{[]string{"--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem"}, "--tls-cert/--tls-key: open /nonexistent/c.pem"},
	} {
		st, _, errOut := run(t, append(append([]string{"run"}, tc.args...), "--thread", "T", "hi")...)
		if st != exitFailed || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: status %d, stderr %q; want 1 and %q", tc.args, st, errOut, tc.want)
		}
	}
}

// A Temporal service that does not answer is reported within the dial
// timeout, naming the address and what to do.
func TestDialTimeout(t *testing.T) {
	start := time.Now()
	// A port of the loopback nobody listens on refuses at once; an address
	// that drops packets would hang: the timeout bounds both.
	st, _, errOut := run(t, "run", "--address", "127.0.0.1:1", "--dial-timeout", "2s", "--thread", "T", "hi")
	if st != exitFailed || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("status %d, stderr %q; want 1 naming the address", st, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the dial took %s", d)
	}
}

// The project's agent is built from its configuration as far as a worker
// can run it, and the registry accepts it: its subagents keep the file
// tools they name, and what a worker cannot run (execute without --root)
// is left out with a notice.
func TestConfigAgent(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(project, "deepagents.toml"), `model = "local:m"
system_prompt = "Be brief."
max_steps = 20
[interrupt_on]
write_file = true
[providers.local]
type = "openai-compatible"
base_url = "http://127.0.0.1:1/v1"
`)
	write(filepath.Join(project, ".deepagents", "agents", "researcher.md"), `---
name: researcher
description: Reads files.
tools: [read_file, execute]
mcpServers: [docs]
---
Read carefully.
`)
	reg := temporal.NewRegistry()
	var stderr strings.Builder
	if err := configAgent(t.Context(), reg, "main", project, "", nil, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`tool "execute" is left out`, "execute is left out"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("notices %q; want %q", stderr.String(), want)
		}
	}
	var none strings.Builder
	err := configAgent(t.Context(), reg, "other", t.TempDir(), "nosuch:model", nil, &none)
	if err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("an unknown provider: %v", err)
	}
}

// With --root, the project's agent works on the directory: it has the
// execute tool (commands unsandboxed here, with --no-sandbox), its files
// are the directory's, and the registry accepts it. A relative --root, or
// one with --demo, is a usage error.
func TestWorkerRootGivesTheAgentTheDirectory(t *testing.T) {
	project, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "deepagents.toml"), []byte(`model = "local:m"
[providers.local]
type = "openai-compatible"
base_url = "http://127.0.0.1:1/v1"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := temporal.NewRegistry()
	var stderr strings.Builder
	dir := &agentSetup{}
	defer dir.close()
	if err := openWorkDir(t.Context(), reg, workerFlags{root: root, noSandbox: true}, dir, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "UNSANDBOXED in "+root) {
		t.Errorf("notices %q; want the unsandboxed warning", stderr.String())
	}
	if err := configAgent(t.Context(), reg, "main", project, "", dir, &stderr); err != nil {
		t.Fatal(err)
	}
	a, ok := reg.Lookup("main")
	if !ok {
		t.Fatal("no agent main")
	}
	var names []string
	for _, tl := range a.Tools() {
		names = append(names, tl.Spec().Name)
	}
	if !slices.Contains(names, "execute") || a.Config().Backend == nil {
		t.Errorf("tools %v, backend %v; want execute on the directory", names, a.Config().Backend)
	}
	if strings.Contains(stderr.String(), "execute is left out") {
		t.Errorf("notices %q: execute is not left out with --root", stderr.String())
	}
	for _, args := range [][]string{{"--root", "relative/dir", "--model", "x:y"}, {"--root", root, "--demo"}} {
		var out, errOut strings.Builder
		if st := dispatch(t.Context(), append([]string{"worker"}, args...), &out, &errOut); st != exitUsage {
			t.Errorf("worker %v: status %d (%s); want a usage error", args, st, errOut.String())
		}
	}
}

// The worker starts the user's MCP servers, and the project's only with
// --trust-project-mcp; a stdio server's tools are the agent's, pinned to
// one worker per run (session tools), and the servers stop with the
// worker.
func TestWorkerStartsMCPServers(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../mcp/testdata/server").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(project, "deepagents.toml"), `model = "local:m"
[providers.local]
type = "openai-compatible"
base_url = "http://127.0.0.1:1/v1"
`)
	server := func(name string) string {
		return `{"mcpServers":{"` + name + `":{"command":"` + bin + `"}}}`
	}
	write(filepath.Join(home, ".deepagents", ".mcp.json"), server("mine"))
	write(filepath.Join(project, ".mcp.json"), server("theirs"))

	for _, trust := range []bool{false, true} {
		reg := temporal.NewRegistry()
		setup := &agentSetup{}
		setup.mcp = workerMCP(trust, &setup.closers)
		var stderr strings.Builder
		if err := configAgent(t.Context(), reg, "main", project, "", setup, &stderr); err != nil {
			setup.close()
			t.Fatal(err)
		}
		a, _ := reg.Lookup("main")
		var mcpTools int
		for _, tl := range a.Tools() {
			if tl.Spec().Name == "pid" || strings.HasSuffix(tl.Spec().Name, "pid") {
				mcpTools++
			}
		}
		setup.close()
		want := 1
		if trust {
			want = 2
		}
		if mcpTools != want {
			t.Errorf("trust %v: %d pid tools, want %d (one per server started); notices:\n%s", trust, mcpTools, want, stderr.String())
		}
		if !trust && !strings.Contains(stderr.String(), "MCP server theirs") {
			t.Errorf("no notice of the project's server left out: %s", stderr.String())
		}
	}
}
