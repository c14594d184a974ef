// Package runner drives agent runs that are saved in a checkpoint store:
// it holds a thread's lease while a run goes on, so that no two processes
// run one thread at once, and tells a dead local holder's lease from a live
// one.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
)

// DefaultLeaseTTL is how long a run's hold on its thread lasts without
// renewal. A running process renews it every third of that; the lease of a
// process that died expires after it (at once when the holder was a process
// on this machine that no longer exists).
const DefaultLeaseTTL = time.Minute

// Checkpoints makes a run durable in saver under thread
// (agent.WithThread): each step is saved as it is taken
// (CheckpointRecorder), a save the store cannot take for now is tried again
// (WithSaveRetry), and the run holds the thread's lease while it runs, as
// this process for DefaultLeaseTTL (or as Lease says), so that a second run
// on the thread is refused.
//
// A run needs only the four methods of checkpoint.RunStore. The lease is
// taken when store is also a checkpoint.Leaser, as every saver of this
// module is; a store without leases (one under an engine that already runs
// each thread once, say) runs without them.
func Checkpoints(store checkpoint.RunStore, thread string, opts ...Option) agent.RunOption {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return agent.WithThread(thread, threadOf(store, thread, c))
}

// Thread is thread id of store as Checkpoints gives it to a run: the
// resume matrix, the recorder and (when store takes leases) the lease. A
// driver that runs the loop elsewhere than in this process (a workflow
// engine, which reads and records in activities) uses it to do what a run
// given Checkpoints does.
func Thread(store checkpoint.RunStore, id string, opts ...Option) agent.Thread {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return threadOf(store, id, c)
}

// Option is a knob of Checkpoints.
type Option func(*config)

type config struct {
	saveRetry time.Duration
	metadata  map[string]string
	ended     bool
	holder    string
	ttl       time.Duration
}

// WithEndedResult makes a run given no input, on a thread whose last run
// has already ended, end at once with that run's saved status and result
// (messages, files, usage, subagents) instead of being refused. It is for a
// process that takes a thread over after a crash: a run saves its end
// before it shows its last response, so a process that died after showing
// it may have finished the run.
func WithEndedResult() Option { return func(c *config) { c.ended = true } }

// Metadata keys (WithMetadata) that more than one driver of a thread reads.
const (
	// FlagsKey holds the flags the deepagents command started a turn
	// with: a JSON list of [name, value] pairs, paths made absolute.
	FlagsKey = "deepagents.flags"
	// RootKey holds the real directory a turn's files are on, for drivers
	// that have no flags (a Temporal workflow); the deepagents command
	// says it with its "root" flag instead.
	RootKey = "deepagents.root"
)

// TurnRoot says which real directory the turn whose input checkpoint
// carries md worked on: "" for the run's own files in its state. known is
// false when md does not say (a turn started by a driver that records
// neither key).
func TurnRoot(md map[string]string) (root string, known bool) {
	if r, ok := md[RootKey]; ok {
		return r, true
	}
	raw, ok := md[FlagsKey]
	if !ok {
		return "", false
	}
	var flags [][2]string
	if json.Unmarshal([]byte(raw), &flags) != nil {
		return "", false
	}
	for _, f := range flags {
		if f[0] == "root" {
			root = f[1]
		}
	}
	return root, true
}

// WithMetadata saves md with the checkpoint of the run's input (beside the
// "source" key, which it cannot replace): what the caller needs to know of
// the turn later, such as the settings it was started with. Listing a
// thread's history can filter by it (checkpoint.ListOptions). A subagent
// run, and a run resumed without input, save no input and so no metadata.
func WithMetadata(md map[string]string) Option {
	return func(c *config) { c.metadata = maps.Clone(md) }
}

// WithSaveRetry sets how long a save that fails because the checkpoint
// store is unavailable is tried again, with growing pauses, before the run
// fails (default DefaultSaveRetry; negative: not at all). Each try is
// announced by a warning event (source "checkpoint"). A run that fails so
// saves no end: it stays unfinished, and can be resumed once the store is
// back. Subagent runs take their parent's setting.
func WithSaveRetry(d time.Duration) Option { return func(c *config) { c.saveRetry = d } }

// Lease has a run hold its thread's lease as holder (default: this host
// and process, LeaseHolder) with a time to live of ttl (default
// DefaultLeaseTTL), when the store takes leases.
func Lease(holder string, ttl time.Duration) Option {
	return func(c *config) { c.holder, c.ttl = holder, ttl }
}

// LeaseHolder names this process in a thread's lease, as runs name it when
// Lease gives no holder: host, process id, a random part (so that a
// later process with the same id is not mistaken for it) and, on Linux,
// the machine's boot and process id namespace (so that a process in a
// container sharing the host's name is not either). Another holder named
// so (a server's probe, say) is known for dead by LeaseHolderGone.
func LeaseHolder() string { return holderName() }

// holderName names this process in a lease (see LeaseHolder).
func holderName() string { return LeaseHolderOf(os.Getpid()) }

// LeaseHolderGone reports whether a lease holder named as LeaseHolder names
// them is a process of this host and process id namespace, other than this
// one, that no longer runs (a zombie included): its lease can be taken over
// without waiting for it to expire. A holder from anywhere else, or named
// otherwise, is never taken for gone.
func LeaseHolderGone(holder string) bool { return deadLocalHolder(holder) }

// LeaseHolderOf names process pid of this host as LeaseHolder names this
// process: for a supervisor that takes leases on behalf of processes it
// starts, so that their leases are freed as soon as they die.
func LeaseHolderOf(pid int) string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%s/%d/%s", host, pid, hex.EncodeToString(b[:]))
	if space := hostSpace(); space != "" {
		name += "/" + space
	}
	return name
}

// localHolder returns the process id a holder named as holderName names
// them gives, when it is a process whose id this process sees as it is:
// the same host and, where that is not enough, the same boot and process
// id namespace. ok is false otherwise.
func localHolder(holder string) (pid int, ok bool) {
	parts := strings.Split(holder, "/")
	space := hostSpace()
	switch {
	case hostSpaced && (space == "" || len(parts) != 4 || parts[3] != space):
		return 0, false
	case !hostSpaced && len(parts) != 3:
		return 0, false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	return pid, parts[0] == host && err == nil && pid > 0
}

// ownHolder reports whether holder names this very process.
func ownHolder(holder string) bool {
	pid, ok := localHolder(holder)
	return ok && pid == os.Getpid()
}

// deadLocalHolder reports whether holder names a process on this host that
// no longer exists, so its lease need not run out first.
func deadLocalHolder(holder string) bool {
	pid, ok := localHolder(holder)
	return ok && pid != os.Getpid() && !processAlive(pid)
}

// TakeLease acquires thread's lease for holder until now+ttl, as
// checkpoint.Saver.Acquire does, but first takes it over from a holder
// that LeaseHolderGone says is gone, without waiting for its lease to
// expire. Runs take their threads this way; so should other callers that
// hold a thread (to delete it, say).
func TakeLease(ctx context.Context, saver checkpoint.Leaser, thread, holder string, now time.Time, ttl time.Duration) (checkpoint.Lease, error) {
	l, err := saver.Acquire(ctx, thread, holder, now, ttl)
	var le *checkpoint.LeasedError
	if errors.As(err, &le) && deadLocalHolder(le.Holder) {
		if rerr := saver.Release(ctx, thread, le.Holder); rerr == nil {
			l, err = saver.Acquire(ctx, thread, holder, now, ttl)
		}
	}
	return l, err
}

// lease is a run's hold on its thread (agent.Hold): taken when the run
// starts, renewed every third of its time to live, released when the run
// ends.
type lease struct {
	saver  checkpoint.Leaser
	thread string
	holder string
	ttl    time.Duration
}

// Hold takes the thread for the run and keeps it until release is called;
// lost ends the run when another process took the thread over.
func (l *lease) Hold(ctx context.Context, now func() time.Time, lost func(error)) (release func(), err error) {
	holder, ttl := l.holder, l.ttl
	if holder == "" {
		holder = holderName()
	}
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	_, err = TakeLease(ctx, l.saver, l.thread, holder, now(), ttl)
	var le *checkpoint.LeasedError
	if err != nil {
		if errors.As(err, &le) {
			who := "another process"
			if ownHolder(le.Holder) {
				who = "another run of this process"
			}
			return nil, &busyError{msg: fmt.Sprintf("thread %q is being run by %s (%s) until %s; wait for it to finish or for its lease to expire",
				l.thread, who, le.Holder, le.Expires.UTC().Format(time.RFC3339)), err: err}
		}
		return nil, fmt.Errorf("taking thread %q: %w", l.thread, err)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(max(ttl/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.Background(), ttl/3)
				_, err := l.saver.Renew(rctx, l.thread, holder, now(), ttl)
				cancel()
				if errors.Is(err, checkpoint.ErrNotHeld) {
					// Another process took the thread over: this run must not
					// write another step.
					lost(fmt.Errorf("lost thread %q to another process (its lease expired)", l.thread))
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = l.saver.Release(rctx, l.thread, holder)
	}, nil
}

// busyError is the error of a run whose thread another run holds; it
// matches checkpoint.ErrLeased.
type busyError struct {
	msg string
	err error
}

func (e *busyError) Error() string { return e.msg }
func (e *busyError) Unwrap() error { return e.err }
