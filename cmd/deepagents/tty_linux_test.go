package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// Ctrl-C during a turn of an interactive session stops that turn only: the
// previous turn's answer is not printed again as if it were this one's,
// and Ctrl-D at the next prompt ends the session with exit status 0.
func TestCtrlCDuringATurnOnATerminal(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Last().Text() == "first" {
			return ot.Text("ANSWER-ONE")
		}
		started <- struct{}{}
		<-release // until the test ends: only Ctrl-C stops this turn
		return ot.Text("too late")
	})
	t.Cleanup(func() { close(release) })
	runEnv(t, srv)
	term := startCLI(t, "run", "--model", "openai:gpt-test", "--no-mcp")
	term.expect("> ")
	term.typeIn("first\r")
	term.expect("ANSWER-ONE")
	term.expect("> ")
	term.typeIn("second\r")
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatalf("the second turn made no model call within a minute:\n%s", term.output())
	}
	term.typeIn("\x03")
	term.expect("interrupted by the user (Ctrl-C)")
	term.expect("> ")
	term.typeIn("\x04")
	if code := term.exitCode(); code != 0 {
		t.Errorf("Ctrl-D after a cancelled turn: exit status %d, want 0:\n%s", code, term.output())
	}
	if n := strings.Count(term.output(), "ANSWER-ONE"); n != 1 {
		t.Errorf("the first turn's answer is shown %d times, want once:\n%s", n, term.output())
	}
}

// terminal is the deepagents command running on a pseudo-terminal: what
// the test writes to it is typed at the keyboard (Ctrl-C is "\x03", Ctrl-D
// "\x04"), and everything it prints, stdout and stderr, is read back.
type terminal struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	done   chan error

	mu     sync.Mutex
	out    bytes.Buffer
	seen   int           // how much of out expect has consumed
	more   chan struct{} // signalled on each read
	closed bool
}

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		master.Close()
		t.Fatalf("unlocking the pseudo-terminal: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		master.Close()
		t.Fatalf("naming the pseudo-terminal: %v", errno)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	return master, slave
}

// startCLI runs `deepagents args...` on a new terminal, in its own session
// with the terminal as its controlling one, so that Ctrl-C sends SIGINT as
// a shell would. The process inherits the test's environment and
// directory.
func startCLI(t *testing.T, args ...string) *terminal {
	t.Helper()
	master, slave := openPTY(t)
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestMainChildProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "DEEPAGENTS_MAIN_CHILD=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		master.Close()
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	term := &terminal{t: t, master: master, cmd: cmd, done: make(chan error, 1), more: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			if err != nil {
				term.closed = true
			}
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-term.done:
		case <-time.After(10 * time.Second):
		}
		master.Close()
	})
	return term
}

// typeIn writes s to the terminal as keystrokes.
func (term *terminal) typeIn(s string) {
	term.t.Helper()
	if _, err := term.master.WriteString(s); err != nil {
		term.t.Fatalf("typing %q: %v", s, err)
	}
}

// expect waits, at most a minute, until the terminal shows want after what
// earlier calls consumed, and consumes up to its end.
func (term *terminal) expect(want string) {
	term.t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		term.mu.Lock()
		rest := term.out.String()[term.seen:]
		i := strings.Index(rest, want)
		if i >= 0 {
			term.seen += i + len(want)
		}
		closed := term.closed
		term.mu.Unlock()
		if i >= 0 {
			return
		}
		if closed {
			term.t.Fatalf("the terminal closed before it showed %q:\n%s", want, term.output())
		}
		select {
		case <-term.more:
		case <-deadline.C:
			term.t.Fatalf("the terminal did not show %q within a minute:\n%s", want, term.output())
		}
	}
}

// output is everything the terminal showed so far.
func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// exitCode waits, at most a minute, for the command to end and returns its
// exit status.
func (term *terminal) exitCode() int {
	term.t.Helper()
	select {
	case err := <-term.done:
		term.done <- err // for the cleanup
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			term.t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		term.t.Fatalf("the command did not end within a minute:\n%s", term.output())
	}
	return -1
}

// What the model says and what tools read is shown on a terminal, never
// acted on: an answer that would set the window title, clear the screen or
// write over its own line, and a tool error quoting a path with such
// characters (in the progress lines and in 'threads show'), reach the
// terminal with those characters spelled as \u escapes. A pipe gets the
// answer as it is.
func TestTerminalShowsEscapesNotActsOnThem(t *testing.T) {
	const answer = "done\x1b]0;owned\x07 \x1b[2J\rall fine\u202e"
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if r.Last().Role == "user" {
			return ot.Tools(ot.Call{ID: "r1", Name: "read_file", Args: `{"file_path":"/no\u001b[2Jsuch"}`})
		}
		return ot.Text(answer)
	})
	runEnv(t, srv)
	term := startCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--no-mcp", "--thread", "esc", "--new-thread")
	if code := term.exitCode(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.output())
	}
	out := term.output()
	for _, want := range []string{`done\u001b]0;owned\u0007 \u001b[2J\u000dall fine\u202e`, `no\u001b[2Jsuch`} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal does not show %q:\n%q", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("the terminal was sent control characters:\n%q", out)
	}
	show := startCLI(t, "threads", "show", "esc")
	if code := show.exitCode(); code != 0 || strings.ContainsAny(show.output(), "\x1b\x07\u202e") || !strings.Contains(show.output(), `\u001b]0;owned`) {
		t.Errorf("threads show: exit %d:\n%q", code, show.output())
	}
	code, stdout, errs := runCLI(t, "run", "-p", "go", "--model", "openai:gpt-test", "--no-mcp")
	if code != 0 || stdout != answer+"\n" {
		t.Errorf("a pipe: exit %d, %q (%s), want the answer as it is", code, stdout, errs)
	}
}
