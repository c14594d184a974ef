package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
