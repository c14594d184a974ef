package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
)

// A lease is committed as it is taken and a release at once: another
// saver on the file (another process) is refused while it is held, takes
// it once released, and reads the run's work; a refused lease leaves no
// transaction holding the write lock.
func TestLeasesAcrossSavers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s := openT(t, path)
	other, err := Open(path, Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	now := time.Now()

	if _, err := s.Acquire(ctx, "th", "a", now, time.Minute); err != nil {
		t.Fatal(err)
	}
	putMsg(t, s, "c1", "", "one")
	var le *checkpoint.LeasedError
	if _, err := other.Acquire(ctx, "th", "b", now, time.Minute); !errors.As(err, &le) || le.Holder != "a" {
		t.Fatalf("other process, thread held: %v", err)
	}
	putMsg(t, s, "c2", "c1", "two")
	if err := s.Release(ctx, "th", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, "th", "b", now, time.Minute); err != nil {
		t.Fatalf("other process after the release: %v", err)
	}
	if got := messages(t, other); got != "one,two" {
		t.Errorf("other process reads %q", got)
	}
	// Refused: no transaction is left open, so the other can still write.
	_, err = s.Acquire(ctx, "th", "a", now, time.Minute)
	if _, ok := err.(*checkpoint.LeasedError); !ok {
		t.Fatalf("lease held by the other process: %v (%T), want *checkpoint.LeasedError", err, err)
	}
	if _, err := other.Acquire(ctx, "th3", "b", now, time.Minute); err != nil {
		t.Errorf("other process after a refused lease: %v", err)
	}
}

// Savers on one file that ask for the same thread's lease at the same
// moment: exactly one gets it.
func TestLeaseRaceHasOneWinner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	const n = 6
	savers := make([]*Saver, n)
	for i := range savers {
		savers[i] = openT(t, path)
	}
	for round := range 20 {
		thread := fmt.Sprint("race", round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, s := range savers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = s.Acquire(context.Background(), thread, fmt.Sprint("h", i), time.Now(), time.Minute)
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			var le *checkpoint.LeasedError
			switch {
			case err == nil:
				won++
			case !errors.As(err, &le):
				t.Fatalf("round %d, saver %d: %v", round, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d savers hold the lease, want 1", round, won)
		}
	}
}

// leaseChildEnv makes this test binary a process that takes a lease (see
// TestLeaseChildProcess).
const leaseChildEnv = "DEEPAGENTS_SQLITE_LEASE_CHILD"

// TestLeaseChildProcess is not a test: it is the process that
// TestLeaseIsExclusiveAcrossProcesses starts, which opens the database
// named by leaseChildEnv, asks for thread "th" as its own holder and
// prints "won" or "refused".
func TestLeaseChildProcess(t *testing.T) {
	path := os.Getenv(leaseChildEnv)
	if path == "" {
		t.Skip("only run as a child process of TestLeaseIsExclusiveAcrossProcesses")
	}
	s, err := Open(path, Options{BusyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Acquire(context.Background(), "th", fmt.Sprint("pid", os.Getpid()), time.Now(), time.Hour)
	var le *checkpoint.LeasedError
	switch {
	case err == nil:
		fmt.Println("LEASE won")
	case errors.As(err, &le):
		fmt.Println("LEASE refused")
	default:
		t.Fatal(err)
	}
}

// Processes started together that each ask for the same thread's lease:
// exactly one holds it.
func TestLeaseIsExclusiveAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	openT(t, path).Close() // the schema, made once
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 4
	cmds := make([]*exec.Cmd, n)
	outs := make([]strings.Builder, n)
	for i := range cmds {
		cmds[i] = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLeaseChildProcess$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), leaseChildEnv+"="+path)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	won := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i].String())
		}
		switch out := outs[i].String(); {
		case strings.Contains(out, "LEASE won"):
			won++
		case !strings.Contains(out, "LEASE refused"):
			t.Fatalf("child %d said neither:\n%s", i, out)
		}
	}
	if won != 1 {
		t.Fatalf("%d processes hold the lease, want 1", won)
	}
}
