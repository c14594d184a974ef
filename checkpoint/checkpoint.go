// Package checkpoint stores a run's steps durably so that a run can stop at
// any step and continue later, in this process or another one.
//
// A Saver records one Step at a time: what the step changed (messages it
// appended, its file delta, the middleware values it set, its usage), never
// the whole state. Storage is delta-first: messages are appended and never
// rewritten, file contents are stored once per content hash, and every N steps
// a checkpoint carries a snapshot (by reference, so it stays small) so that
// rebuilding any state reads one snapshot and at most N deltas. Get returns
// the full state rebuilt from those records.
//
// Results of calls that finished inside a step are saved one by one with
// PutWrite as soon as each finishes; they come back with the checkpoint as
// Pending, so a resumed run does not repeat them. A saver that implements
// PendingReader also gives a namespace's writes alone, without its states.
//
// A thread is the unit of a conversation. Inside a thread, each agent run has
// its own namespace (its agent path; "" for the top level), so a subagent's
// steps are kept under its parent's thread. Leases let one process hold a
// thread while it runs it.
//
// Every Saver passes the suite in checkpoint/checkpointtest. A new saver
// need not reimplement the storage model: it keeps Records (Encode, Decode),
// messages by per-namespace sequence number and file contents by hash, and
// uses Build to turn a step into a record, Chain, ViewOf and Assemble to
// rebuild a state, and PlanPrune and PlanCopy for Prune and CopyThread, as
// Memory, checkpoint/sqlite and checkpoint/postgres do. Messages are stored
// in the savers' own form (checkpoint/internal/msgcodec), joined into chunks
// so that a long history reads back in few rows.
package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/checkpoint/internal/ckerr"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// Status is the state of a run as of a checkpoint.
type Status string

// The statuses a step may record. Savers store any non-empty string; these
// are the ones the agent loop writes.
const (
	StatusRunning     Status = "running"
	StatusDone        Status = "done"
	StatusInterrupted Status = "interrupted"
	StatusError       Status = "error"
)

// Limits on identifiers, so that a bad id is refused in plain words before it
// reaches storage.
const (
	MaxThreadIDLen = 255
	MaxIDLen       = 255
	MaxNSLen       = 4096
)

// Step is the record of one step: where it belongs and what it changed.
type Step struct {
	ThreadID string
	// NS is the agent path of the run that took the step: "" for the top
	// level, for example "parent / researcher#call_1" for a subagent.
	NS string
	// ID identifies the checkpoint inside its thread and namespace.
	ID string
	// ParentID is the checkpoint this step continues from; "" starts a new
	// history. The parent must already be stored in the same thread and
	// namespace.
	ParentID string
	Step     int
	Metadata map[string]string
	// Messages are the messages the step appended.
	Messages []llm.Message
	// Files is the step's file delta: new contents and deletions.
	Files vfs.Delta
	// Values are the middleware values the step set, by name, as JSON. A
	// nil value (or JSON null) removes the name. Names the step does not
	// mention keep their earlier value.
	Values map[string]json.RawMessage
	// Usage is what this step's model calls used.
	Usage  llm.Usage
	Status Status
	// Time is when the step was recorded; the caller's clock, so that a
	// deterministic runtime gives deterministic records.
	Time time.Time
}

// Ref names a checkpoint. An empty ID means the latest one of the thread's
// namespace NS.
type Ref struct {
	ThreadID string
	NS       string
	ID       string
}

// Write is the result of one call that finished inside a step, saved before
// the step completes. Writes are keyed by (checkpoint, CallID, Kind): putting
// the same key again replaces the earlier write, so a retried save leaves one.
type Write struct {
	CallID string
	// Kind tells what the write holds; "" is stored as "result". Other kinds
	// (an interrupt waiting for a decision, for example) live beside a call's
	// result under the same call id.
	Kind string
	// Result is the tool message the call produced.
	Result llm.Message
	// Files is the call's own file delta, merged by the loop when the step
	// completes.
	Files vfs.Delta
	// Data carries anything else the kind needs, as JSON.
	Data json.RawMessage
	Time time.Time
}

// KindResult is the Kind of a Write that holds a finished call's result.
const KindResult = "result"

// State is a run's full state as of a checkpoint.
type State struct {
	Messages []llm.Message
	Files    map[string]vfs.File
	Values   map[string]json.RawMessage
}

// Checkpoint is a stored step as read back. From Get it carries the full
// State and the Pending writes; List leaves both empty, to stay cheap on long
// threads.
type Checkpoint struct {
	ThreadID string
	NS       string
	ID       string
	ParentID string
	Step     int
	Metadata map[string]string
	Status   Status
	Time     time.Time
	// StepUsage is this step's usage; Usage the sum over its history.
	StepUsage llm.Usage
	Usage     llm.Usage
	State     State
	// Pending are the writes put for this checkpoint, sorted by call id then
	// kind.
	Pending []Write
}

// Ref returns the reference of c.
func (c *Checkpoint) Ref() Ref { return Ref{ThreadID: c.ThreadID, NS: c.NS, ID: c.ID} }

// ListOptions filters a thread's history. Results are newest first (in the
// order they were put).
type ListOptions struct {
	// ThreadID is required.
	ThreadID string
	// NS selects one namespace unless AllNamespaces is set.
	NS            string
	AllNamespaces bool
	// Before, when set, keeps only checkpoints put before that checkpoint
	// (of the same thread, in any namespace).
	Before string
	// Limit caps the number of results; 0 means no cap.
	Limit int
	// Metadata keeps only checkpoints whose metadata has every pair given.
	Metadata map[string]string
}

// PruneOptions says which history Prune drops. Checkpoints that survive keep
// their full state: the oldest survivor of each history becomes a snapshot.
// Both options may be set; a checkpoint survives only if both keep it.
type PruneOptions struct {
	// KeepLast keeps the newest KeepLast checkpoints of each namespace; 0
	// means no cap.
	KeepLast int
	// Before drops every checkpoint of the thread put before this one.
	Before string
}

// Lease is a thread held by one holder until Expires.
type Lease struct {
	ThreadID string
	Holder   string
	Expires  time.Time
}

// ThreadInfo summarises a thread for listings.
type ThreadInfo struct {
	ID string
	// Title is the first user message's text, shortened.
	Title   string
	Updated time.Time
	// Status, Steps and Tokens come from the top-level namespace: its latest
	// status, its number of checkpoints and its total input+output tokens.
	Status Status
	Steps  int
	Tokens int
}

// ThreadsOptions filters Threads. Results are most recently updated first.
type ThreadsOptions struct {
	Limit int
}

// Stats counts what a saver stores, for one thread or (thread "") for all.
// Bytes counts stored payload bytes (encoded records, messages, writes, and
// the file contents the thread references, each distinct content once).
type Stats struct {
	Checkpoints int
	Messages    int
	Writes      int
	Blobs       int
	Rows        int
	Bytes       int64
}

// Saver stores checkpoints: the union of the interfaces below, each of
// which is what one kind of consumer needs. Implementations are safe for
// concurrent use and honour context cancellation.
type Saver interface {
	RunStore
	Leaser
	Admin
	Close() error
}

// RunStore is what a durable run needs of its store: read a thread back
// (Get, List) and save each step and each finished call (Put, PutWrite).
// The agent loop and a runner driving it use it; one holding threads
// against other processes adds a Leaser. A driver whose engine already
// runs each thread once (a workflow engine) needs no more.
type RunStore interface {
	Reader
	Recorder
}

// Reader reads a thread back: a resumed run, and the CLI and the server
// showing a thread.
type Reader interface {
	// Get returns the checkpoint at ref with its full state, or the latest of
	// the namespace when ref.ID is empty; ErrNotFound when there is none.
	Get(ctx context.Context, ref Ref) (*Checkpoint, error)
	// List returns a thread's checkpoints, newest first, without their state.
	List(ctx context.Context, opts ListOptions) ([]Checkpoint, error)
}

// Recorder saves a run as it goes: its steps, and each call that finished
// inside a step. The agent loop is its one writer.
type Recorder interface {
	// Put stores a step. Putting a checkpoint id that is already stored in
	// the thread's namespace does nothing, so a retried put leaves one record.
	Put(ctx context.Context, s Step) error
	// PutWrite stores one finished call's result for the checkpoint at ref
	// (ref.ID is required).
	PutWrite(ctx context.Context, ref Ref, w Write) error
}

// Leaser holds threads for one process at a time: a run for as long as it
// runs, the CLI's threads rm and the server's liveness checks briefly.
type Leaser interface {
	// Acquire leases a thread to holder until now+ttl. A lease held by
	// another holder that has not expired at now is refused with a
	// *LeasedError (errors.Is ErrLeased); an expired one is taken over.
	// Acquiring a lease one already holds renews it. A saver shared by
	// several machines may time leases by a clock of its own instead of
	// now (postgres.Options.ServerClock).
	Acquire(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (Lease, error)
	// Renew extends holder's lease to now+ttl; ErrNotHeld if holder does
	// not hold it (it expired and someone else took it, or it was released).
	Renew(ctx context.Context, threadID, holder string, now time.Time, ttl time.Duration) (Lease, error)
	// Release ends holder's lease; releasing a lease one does not hold does
	// nothing.
	Release(ctx context.Context, threadID, holder string) error
}

// Admin manages stored threads as a whole: the CLI's threads command and
// the server's thread endpoints list, fork, prune and delete them.
type Admin interface {
	// Threads lists threads.
	Threads(ctx context.Context, opts ThreadsOptions) ([]ThreadInfo, error)
	// Stats counts stored rows and bytes.
	Stats(ctx context.Context, threadID string) (Stats, error)
	// DeleteThread removes a thread, its writes and its lease. Deleting a
	// thread that does not exist is not an error. It does not look at the
	// lease: a run still holding the thread would go on saving into it, so
	// take the lease first (Acquire, as the CLI's threads rm does) or stop
	// the run.
	DeleteThread(ctx context.Context, threadID string) error
	// CopyThread forks src into the new thread dst. With src.ID set, dst
	// gets that checkpoint with all its ancestors and their writes, and every
	// checkpoint of the thread's other namespaces put up to that point; with
	// src.ID empty it gets the whole thread. ErrThreadExists if dst has
	// checkpoints.
	CopyThread(ctx context.Context, src Ref, dst string) error
	// Prune drops history of a thread (see PruneOptions).
	Prune(ctx context.Context, threadID string, opts PruneOptions) error
}

// Errors a Saver returns; match them with errors.Is.
var (
	ErrNotFound     = errors.New("checkpoint not found")
	ErrLeased       = errors.New("thread is leased")
	ErrNotHeld      = errors.New("lease not held")
	ErrThreadExists = errors.New("thread already exists")
	ErrInvalid      = ckerr.ErrInvalid
	// ErrUnavailable marks a failure of the store itself, not of the
	// operation: the database could not be reached, restarted, or stayed
	// too busy. The same operation may succeed if tried again later; puts
	// and writes are idempotent, so trying one again after a failure that
	// may have landed is safe. Savers wrap such errors with it.
	ErrUnavailable = errors.New("checkpoint store unavailable")
	// ErrDamaged marks stored data that no saver writes: a record that
	// does not decode or contradicts itself, messages or file contents it
	// names that are missing or corrupt, a history that loops. The store
	// was damaged or changed by something else; a saver of a file says
	// which file.
	ErrDamaged = ckerr.ErrDamaged
)

// damagedf is an error about damaged stored data (see ErrDamaged).
func damagedf(format string, args ...any) error { return ckerr.Damagedf(format, args...) }

// LeasedError says who holds a thread and until when.
type LeasedError struct {
	ThreadID string
	Holder   string
	Expires  time.Time
}

func (e *LeasedError) Error() string {
	return fmt.Sprintf("thread %q is in use by %s until %s", e.ThreadID, e.Holder, e.Expires.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrLeased) true.
func (e *LeasedError) Is(target error) bool { return target == ErrLeased }

func invalid(format string, args ...any) error { return ckerr.Invalidf(format, args...) }

// CheckListOptions checks what List is given: a valid thread id and a limit
// that is not negative. Savers call it first.
func CheckListOptions(o ListOptions) error {
	if err := ValidateThreadID(o.ThreadID); err != nil {
		return err
	}
	if o.Limit < 0 {
		return fmt.Errorf("%w: limit %d is negative", ErrInvalid, o.Limit)
	}
	return nil
}

// CheckPruneOptions checks what Prune is given: a valid thread id and a
// keep-last count that is not negative. Savers call it first.
func CheckPruneOptions(threadID string, o PruneOptions) error {
	if err := ValidateThreadID(threadID); err != nil {
		return err
	}
	if o.KeepLast < 0 {
		return fmt.Errorf("%w: keep-last %d is negative", ErrInvalid, o.KeepLast)
	}
	return nil
}

// ValidateThreadID refuses empty, over-long or non-UTF-8 thread ids.
func ValidateThreadID(id string) error {
	return validID("thread id", id, MaxThreadIDLen)
}

func validID(what, id string, max int) error {
	if id == "" {
		return invalid("%s is empty", what)
	}
	if len(id) > max {
		return invalid("%s is %d bytes long; at most %d are allowed", what, len(id), max)
	}
	return validText(what, id)
}

// validText refuses text that is not valid UTF-8 or holds a NUL byte: names
// are stored as text, and PostgreSQL's text columns can hold neither.
func validText(what, s string) error {
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", what)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid("%s holds a NUL byte", what)
	}
	return nil
}

// ValidateHolder checks a lease holder's name. Savers call it in Acquire,
// Renew and Release.
func ValidateHolder(holder string) error {
	return validID("lease holder", holder, MaxIDLen)
}

// ValidateRef checks a reference; needID also requires its checkpoint id.
func ValidateRef(r Ref, needID bool) error {
	if err := ValidateThreadID(r.ThreadID); err != nil {
		return err
	}
	if len(r.NS) > MaxNSLen {
		return invalid("namespace is %d bytes long; at most %d are allowed", len(r.NS), MaxNSLen)
	}
	if err := validText("namespace", r.NS); err != nil {
		return err
	}
	if needID || r.ID != "" {
		return validID("checkpoint id", r.ID, MaxIDLen)
	}
	return nil
}

// ValidateStep checks a step before it is stored.
func ValidateStep(s *Step) error {
	if err := ValidateRef(Ref{ThreadID: s.ThreadID, NS: s.NS, ID: s.ID}, true); err != nil {
		return err
	}
	if s.ParentID != "" {
		if err := validID("parent checkpoint id", s.ParentID, MaxIDLen); err != nil {
			return err
		}
		if s.ParentID == s.ID {
			return invalid("checkpoint %q names itself as its parent", s.ID)
		}
	}
	if s.Step < 0 {
		return invalid("step number %d is negative", s.Step)
	}
	for name, v := range s.Values {
		if name == "" {
			return invalid("a value has an empty name")
		}
		if len(v) > 0 && !json.Valid(v) {
			return invalid("value %q is not valid JSON", name)
		}
	}
	for _, c := range s.Files {
		if c.Path == "" {
			return invalid("a file change has an empty path")
		}
	}
	return nil
}
