package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestTemporalServeArg(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--temporal", "localhost:7233"}, true},
		{[]string{"-temporal=localhost:7233", "--demo"}, true},
		{[]string{"--demo", "--temporal=h:1"}, true},
		{[]string{"--demo"}, false},
		{[]string{"--system", "temporal"}, false},
		{[]string{"--", "--temporal"}, false},
		{[]string{"--temporalx=1"}, false},
		{nil, false},
	} {
		if got := temporalServeArg(c.args); got != c.want {
			t.Errorf("temporalServeArg(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// serve --temporal runs deepagents-temporal serve with the same arguments,
// and exits with its status.
func TestServeTemporalHandsOver(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in program is a shell script")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + out + "'\necho from-temporal\nexit 7\n"
	if err := os.WriteFile(filepath.Join(dir, temporalBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var stdout, stderr bytes.Buffer
	code := cmdServe(context.Background(), []string{"--temporal", "localhost:7233", "--db", "postgres://x", "--demo"}, &stdout, &stderr)
	if code != 7 {
		t.Fatalf("exit %d, want the program's 7; stderr: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "serve\n--temporal\nlocalhost:7233\n--db\npostgres://x\n--demo\n"; string(got) != want {
		t.Fatalf("the program got %q, want %q", got, want)
	}
	if !strings.Contains(stdout.String(), "from-temporal") {
		t.Fatalf("its output did not reach stdout: %q", stdout.String())
	}
}

// Without the program, serve --temporal says how to install it.
func TestServeTemporalWithoutTheProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := cmdServe(context.Background(), []string{"--temporal", "localhost:7233"}, &stdout, &stderr)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), "go install github.com/deepagents-go/deepagents/temporal/cmd/deepagents-temporal") {
		t.Fatalf("stderr does not say how to install it: %s", stderr.String())
	}
}

func FuzzTemporalServeArg(f *testing.F) {
	f.Add("--temporal\x00h:1")
	f.Add("--demo\x00--\x00--temporal")
	f.Add("-temporal=x")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		if out := temporalServeArgs(args); len(out) != len(args) {
			t.Fatalf("temporalServeArgs(%q) = %q: not one argument for each", args, out)
		}
		if !temporalServeArg(args) {
			return
		}
		for _, a := range args {
			if a == "--" {
				break
			}
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "-") && name == "temporal" {
				return
			}
		}
		t.Fatalf("temporalServeArg(%q) is true without a --temporal flag before --", args)
	})
}

// serve's --addr is the program's --listen; what follows "--" is passed
// as it is.
func TestTemporalServeArgs(t *testing.T) {
	got := temporalServeArgs([]string{"--addr", "0.0.0.0:2024", "-addr=h:1", "--db", "x", "--", "--addr"})
	want := []string{"--listen", "0.0.0.0:2024", "--listen=h:1", "--db", "x", "--", "--addr"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("temporalServeArgs = %q, want %q", got, want)
	}
}

// A Ctrl-C that the program answers with a clean stop is a clean stop of
// serve too: exit status 0.
func TestServeTemporalStopsCleanly(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in program is a shell script")
	}
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	script := "#!/bin/sh\ntrap 'exit 0' INT\ntouch '" + ready + "'\nwhile :; do sleep 0.05; done\n"
	if err := os.WriteFile(filepath.Join(dir, temporalBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() { done <- cmdServe(ctx, []string{"--temporal", "h:1", "--db", "x"}, &stdout, &stderr) }()
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if i > 400 {
			t.Fatal("the program did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d after a clean stop, want 0; stderr: %s", code, stderr.String())
	}
}
