package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// execBackend is an in-memory backend that "runs" commands by recording
// them and answering what it was told to.
type execBackend struct {
	*vfs.Memory
	got []vfs.ExecRequest
	res vfs.ExecResult
	err error
}

func (b *execBackend) Execute(ctx context.Context, req vfs.ExecRequest) (vfs.ExecResult, error) {
	b.got = append(b.got, req)
	return b.res, b.err
}

func TestExecuteTool(t *testing.T) {
	ex := Execute(ExecuteOptions{})
	if ex.Spec().Name != "execute" {
		t.Fatalf("name %q", ex.Spec().Name)
	}
	for _, tc := range []struct {
		name    string
		args    string
		res     vfs.ExecResult
		err     error
		want    string
		isError bool
		timeout time.Duration
	}{
		{"output and exit code", `{"command":"make"}`, vfs.ExecResult{Output: "built\n", ExitCode: 0, Timeout: 120 * time.Second}, nil,
			"built\n[exit code 0]", false, 0},
		{"a failure is a normal result", `{"command":"false","timeout":5}`, vfs.ExecResult{Output: "nope", ExitCode: 2, Timeout: 5 * time.Second}, nil,
			"nope\n[exit code 2]", false, 5 * time.Second},
		{"no output", `{"command":"true"}`, vfs.ExecResult{Timeout: time.Minute}, nil, "(no output)\n[exit code 0]", false, 0},
		{"timeout", `{"command":"sleep 9","timeout":1}`, vfs.ExecResult{Output: "zzz\n", TimedOut: true, ExitCode: 137, Timeout: time.Second}, nil,
			"zzz\n[killed after 1 s: the command was still running at its timeout, so it and every process it started were stopped]", true, time.Second},
		{"capped timeout", `{"command":"x","timeout":99999}`, vfs.ExecResult{Output: "ok\n", Timeout: 600 * time.Second}, nil,
			"ok\n[the timeout asked for, 99999 s, is over the maximum; the command ran with 600 s]\n[exit code 0]", false, 99999 * time.Second},
		{"cut output", `{"command":"yes"}`, vfs.ExecResult{Output: "y\n[... 10 bytes of output omitted ...]\ny\n", OmittedBytes: 10, ExitCode: 141, Timeout: time.Minute}, nil,
			"y\n[... 10 bytes of output omitted ...]\ny\n[output cut: 10 bytes left out in the middle; redirect the output to a file and read it with read_file to see all of it]\n[exit code 141]", false, 0},
		{"protected paths", `{"command":"echo {} > .mcp.json"}`, vfs.ExecResult{Timeout: time.Minute, Notice: "the command created .mcp.json at protected paths; they were removed"}, nil,
			"(no output)\n[the command created .mcp.json at protected paths; they were removed]\n[exit code 0]", true, 0},
		{"runner error", `{"command":"x"}`, vfs.ExecResult{}, errors.New("bwrap vanished"),
			"Error: the command could not run: bwrap vanished.", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &execBackend{Memory: vfs.NewMemory(nil), res: tc.res, err: tc.err}
			// Through vfs.Track, as the agent loop hands a real directory to tools.
			res, err := ex.Run(context.Background(), &tool.Env{Files: vfs.Track(b)}, json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != tc.want || res.IsError != tc.isError {
				t.Errorf("result %q (error %v), want %q (error %v)", res.Content, res.IsError, tc.want, tc.isError)
			}
			if len(b.got) != 1 || b.got[0].Timeout != tc.timeout {
				t.Errorf("requests %+v, want one with timeout %v", b.got, tc.timeout)
			}
		})
	}
}

func TestExecuteRefusals(t *testing.T) {
	ex := Execute(ExecuteOptions{})
	b := &execBackend{Memory: vfs.NewMemory(nil)}
	for _, tc := range []struct {
		name  string
		files vfs.Backend
		args  string
		want  string
	}{
		{"no executor", vfs.NewMemory(nil), `{"command":"ls"}`, "Error: this agent's files are not in a directory where commands can run, so execute is unavailable. Use the file tools instead."},
		{"no files", nil, `{"command":"ls"}`, "Error: this agent's files are not in a directory where commands can run, so execute is unavailable. Use the file tools instead."},
		{"empty command", b, `{"command":"  "}`, "Invalid arguments for execute: command is empty; give the shell command to run. Fix the arguments and call execute again."},
		{"negative timeout", b, `{"command":"ls","timeout":-1}`, "Invalid arguments for execute: timeout is -1; give a number of seconds, or 0 for the default. Fix the arguments and call execute again."},
		{"NUL", b, `{"command":"a\u0000b"}`, "Invalid arguments for execute: command contains a NUL byte, which no shell command can hold. Fix the arguments and call execute again."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ex.Run(context.Background(), &tool.Env{Files: tc.files}, json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.Content != tc.want {
				t.Errorf("result %q (error %v), want the error %q", res.Content, res.IsError, tc.want)
			}
		})
	}
	if len(b.got) != 0 {
		t.Errorf("refused calls reached the executor: %+v", b.got)
	}
	// A cancelled run is a Go error, so the loop stops.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ex.Run(ctx, &tool.Env{Files: b}, json.RawMessage(`{"command":"ls"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// A too long command.
	long, _ := json.Marshal(map[string]string{"command": strings.Repeat("x", 64<<10+1)})
	res, _ := ex.Run(context.Background(), &tool.Env{Files: b}, long)
	if !res.IsError || !strings.Contains(res.Content, "65537 bytes long, over the limit of 65536") {
		t.Errorf("long command: %q", res.Content)
	}
}

// FuzzExecuteArgs: the decoder never panics, and what it accepts is a
// command the tool can hand to a shell with a usable timeout.
func FuzzExecuteArgs(f *testing.F) {
	for _, s := range []string{
		`{"command":"ls -la"}`, `{"command":"make test","timeout":300}`, `{"command":""}`, `{"command":"x","timeout":-5}`,
		`{"command":"x","timeout":1e30}`, `{"command":"x","timeout":1.5}`, `{"command":"x","extra":1}`, `{"timeout":3}`,
		`{"command":null}`, `not json`, ``, `{"command":"a\u0000b"}`, `{"command":"x","timeout":9223372036854775807}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := DecodeExecuteArgs(json.RawMessage(raw))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error message")
			}
			return
		}
		if strings.TrimSpace(in.Command) == "" || strings.IndexByte(in.Command, 0) >= 0 || len(in.Command) > MaxCommandBytes {
			t.Fatalf("accepted command %q", in.Command)
		}
		if in.Timeout < 0 || in.Timeout > 365*24*3600 {
			t.Fatalf("accepted timeout %d", in.Timeout)
		}
		if d := time.Duration(in.Timeout) * time.Second; d < 0 {
			t.Fatalf("timeout %d overflows", in.Timeout)
		}
	})
}

// The description tells the model how its commands run.
func TestExecuteDescription(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     ExecuteOptions
		has, not string
	}{
		{"sandbox", ExecuteOptions{}, "Commands run in a sandbox: files can be written only below the root, and there is no network.", "NOT in a sandbox"},
		{"sandbox with network", ExecuteOptions{Network: true}, "Commands run in a sandbox: files can be written only below the root, and the network is available.", "no network"},
		{"unsandboxed", ExecuteOptions{Unsandboxed: true, Network: true}, "Commands run directly on the user's machine, NOT in a sandbox", "Commands run in a sandbox"},
		{"replaced", ExecuteOptions{Description: "Mine."}, "Mine.", "sandbox"},
	} {
		d := Execute(tc.opts).Spec().Description
		if !strings.Contains(d, tc.has) || strings.Contains(d, tc.not) {
			t.Errorf("%s: %q", tc.name, d)
		}
		if tc.opts.Description == "" && !strings.HasPrefix(d, "Run a shell command (sh -c) in the root directory") || !strings.HasSuffix(d, ".") {
			t.Errorf("%s: %q", tc.name, d)
		}
	}
}
