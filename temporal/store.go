package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file keeps a RunAgent workflow's thread in the checkpoint store the
// CLI and the server use (Registry.Store): every read and write of it is a
// local activity that does what package runner does in process, so a thread
// started by `deepagents run` continues on a worker and back.

// storeTimeout bounds a store local activity: longer than runner's
// DefaultSaveRetry, which the recorder spends on a store that is down.
const storeTimeout = runner.DefaultSaveRetry + time.Minute

// Types of the application errors that carry the store's errors out of its
// activities, so that the loop sees them as in process.
const (
	unavailableType = "deepagents.StoreUnavailable"
	decisionType    = "deepagents.DecisionError"
	leasedType      = "deepagents.Leased"
	notHeldType     = "deepagents.NotHeld"
)

// storeError is an error of the store crossed back into workflow code: its
// text, and the sentinel it matched in the activity.
type storeError struct {
	msg    string
	target error
}

func (e *storeError) Error() string        { return e.msg }
func (e *storeError) Is(target error) bool { return target == e.target }

// crossStoreError turns err, in an activity, into an error that keeps what
// the loop reacts to (an unavailable store, refused decisions, a leased
// thread) across the activity.
func crossStoreError(err error) error {
	if err == nil {
		return nil
	}
	var de *agent.DecisionError
	switch {
	case errors.As(err, &de):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), decisionType, nil)
	case errors.Is(err, agent.ErrRecorderUnavailable), errors.Is(err, checkpoint.ErrUnavailable):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), unavailableType, nil)
	case errors.Is(err, checkpoint.ErrLeased):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), leasedType, nil)
	case errors.Is(err, checkpoint.ErrNotHeld):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), notHeldType, nil)
	}
	return sdktemporal.NewNonRetryableApplicationError(err.Error(), "deepagents.StoreError", nil)
}

// storeErrorOf rebuilds, in workflow code, the error crossStoreError sent.
// A store activity that timed out is the store being unavailable: the run
// stops unfinished, to be resumed, rather than failing.
func storeErrorOf(err error) error {
	var timeout *sdktemporal.TimeoutError
	if errors.As(err, &timeout) {
		return &storeError{msg: "the store did not answer in time: " + err.Error(), target: agent.ErrRecorderUnavailable}
	}
	var appErr *sdktemporal.ApplicationError
	if !errors.As(err, &appErr) {
		return err
	}
	switch appErr.Type() {
	case decisionType:
		return &agent.DecisionError{Msg: appErr.Message()}
	case unavailableType:
		return &storeError{msg: appErr.Message(), target: agent.ErrRecorderUnavailable}
	case leasedType:
		return &storeError{msg: appErr.Message(), target: checkpoint.ErrLeased}
	case notHeldType:
		return &storeError{msg: appErr.Message(), target: checkpoint.ErrNotHeld}
	}
	return errors.New(appErr.Message())
}

// OpenIn is the input of the activity that opens a thread: agent.Opening
// without its check, which runs in workflow code.
type OpenIn struct {
	Thread     string           `json:"thread"`
	Path       agent.Path       `json:"path"`
	Input      bool             `json:"input,omitempty"`
	Decisions  []agent.Decision `json:"decisions,omitempty"`
	Nested     bool             `json:"nested,omitempty"`
	ParentStep string           `json:"parent_step,omitempty"`
	// Root is the directory of the workers the run's files are on
	// (Registry.Directory); "" when they are the run's own.
	Root string `json:"root,omitempty"`
}

// Opened is what the thread-opening activity returns: how the run starts
// and its state as saved, but for its messages, of which it gives the
// number: they are read in pieces (ThreadMessages), so that a long
// thread's history makes no payload too large.
type Opened struct {
	How      agent.StartHow  `json:"how"`
	State    *agent.RunState `json:"state,omitempty"`
	Legacy   bool            `json:"legacy,omitempty"`
	Messages int             `json:"messages,omitempty"`
}

// MessagesIn is the input of the activity that reads a piece of a step's
// messages: those from index From on.
type MessagesIn struct {
	Thread string `json:"thread"`
	NS     string `json:"ns,omitempty"`
	Step   string `json:"step"`
	From   int    `json:"from"`
}

// messagesPiece is how many bytes of messages, as JSON, ThreadMessages
// returns at most (a longer message goes alone), well under Temporal's
// payload limit.
const messagesPiece = 48 << 10

// taskBytes is how many bytes of a thread's messages, as JSON, one
// workflow task reads at most before it ends (endTask): the results of a
// task's local activities reach the server together, in one message that
// the server refuses over 4 MB.
const taskBytes = 1 << 20

// openChange is the GetVersion change that ends a workflow task while a
// long thread's messages are read: histories from before it read them all
// in one task.
const openChange = "deepagents.open-in-tasks"

// piecesSize is the size of msgs as JSON, as ThreadMessages measured them.
func piecesSize(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		n += len(b)
	}
	return n
}

// endTask ends the running workflow task, so that the local activities'
// results so far reach the server before more are read: a timer of a
// millisecond, the smallest that is one.
func (r *Runtime) endTask() {
	r.wait(func(c workflow.Context) {
		if workflow.GetVersion(c, openChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return
		}
		_ = workflow.Sleep(c, time.Millisecond)
	})
}

// ChangedIn is the input of the activity that lists what an unfinished run
// changed: its state without messages or files, which runner does not read.
type ChangedIn struct {
	Thread   string          `json:"thread"`
	State    *agent.RunState `json:"state"`
	Finished bool            `json:"finished,omitempty"`
}

// LeaseIn is the input of the lease activities.
type LeaseIn struct {
	Thread string        `json:"thread"`
	Holder string        `json:"holder"`
	TTL    time.Duration `json:"ttl,omitempty"`
}

// storeThread is runner's thread of the registry's store: what the
// activities run.
func (g *Registry) storeThread(id string, opts ...runner.Option) (agent.Thread, error) {
	if g.Store == nil {
		return nil, sdktemporal.NewNonRetryableApplicationError("this worker has no checkpoint store (Registry.Store)", "NoStore", nil)
	}
	return runner.Thread(g.Store, id, opts...), nil
}

// OpenThread is the activity that reads the run at in.Path of a thread and
// decides how it starts, as runner does (agent.Thread.Open).
func (g *Registry) OpenThread(ctx context.Context, in OpenIn) (*Opened, error) {
	th, err := g.storeThread(in.Thread)
	if err != nil {
		return nil, err
	}
	if !in.Nested {
		if err := g.checkRoot(ctx, in.Thread, in.Root); err != nil {
			return nil, err
		}
	}
	how, rs, err := th.Open(ctx, in.Path, agent.Opening{Input: in.Input, Decisions: in.Decisions, Nested: in.Nested, ParentStep: in.ParentStep})
	if err != nil {
		return nil, crossStoreError(err)
	}
	out := &Opened{How: how, State: rs}
	if rs != nil {
		out.Legacy = rs.LegacyChildren
		out.Messages = len(rs.Messages)
		rs.Messages = nil
	}
	return out, nil
}

// ThreadMessages is the activity that reads the messages of a saved step
// from index in.From on, as many as fit in messagesPiece bytes of JSON
// (one at least).
func (g *Registry) ThreadMessages(ctx context.Context, in MessagesIn) ([]llm.Message, error) {
	if g.Store == nil {
		return nil, sdktemporal.NewNonRetryableApplicationError("this worker has no checkpoint store (Registry.Store)", "NoStore", nil)
	}
	cp, err := g.Store.Get(ctx, checkpoint.Ref{ThreadID: in.Thread, NS: in.NS, ID: in.Step})
	if err != nil {
		return nil, crossStoreError(err)
	}
	msgs := cp.State.Messages
	if in.From < 0 || in.From >= len(msgs) {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("step %s of thread %q holds %d messages, none from %d", in.Step, in.Thread, len(msgs), in.From), "MessagesMismatch", nil)
	}
	end, size := in.From, 0
	for end < len(msgs) {
		b, err := json.Marshal(msgs[end])
		if err != nil {
			return nil, err
		}
		if end > in.From && size+len(b) > messagesPiece {
			break
		}
		size += len(b)
		end++
	}
	return msgs[in.From:end], nil
}

// RecordStep is the activity that saves one step record, as runner's
// recorder does. When the store leases threads it first renews holder's
// lease in the same activity, so a workflow whose lease another run took
// while its worker was away (a deploy, say) stops before it writes a step
// under an id the other run writes too.
func (g *Registry) RecordStep(ctx context.Context, thread, holder string, rec *agent.StepRecord) error {
	return g.recordStep(ctx, thread, holder, rec)
}

// RecordStepOn is RecordStep for a run whose files are on the directory
// root of the workers (Registry.Directory): a turn's input record says so
// (runner.RootKey), so that the thread runs on that directory only.
func (g *Registry) RecordStepOn(ctx context.Context, thread, holder, root string, rec *agent.StepRecord) error {
	return g.recordStep(ctx, thread, holder, rec, runner.WithMetadata(map[string]string{runner.RootKey: root}))
}

func (g *Registry) recordStep(ctx context.Context, thread, holder string, rec *agent.StepRecord, opts ...runner.Option) error {
	th, err := g.storeThread(thread, opts...)
	if err != nil {
		return err
	}
	if l, ok := g.Store.(checkpoint.Leaser); ok && holder != "" {
		if _, err := l.Renew(ctx, thread, holder, time.Now(), runner.DefaultLeaseTTL); err != nil {
			return crossStoreError(err)
		}
	}
	if err := th.Record(ctx, rec); err != nil {
		return crossStoreError(err)
	}
	g.publishRecord(ctx, rec) // a served run's stream shows the step
	return nil
}

// ThreadFiles is the activity that reads a run's files as of one of its
// records.
func (g *Registry) ThreadFiles(ctx context.Context, thread string, path agent.Path, id string) (map[string]vfs.File, error) {
	th, err := g.storeThread(thread)
	if err != nil {
		return nil, err
	}
	files, err := th.FilesAt(ctx, path, id)
	return files, crossStoreError(err)
}

// ThreadChanged is the activity that lists what an unfinished run changed.
func (g *Registry) ThreadChanged(ctx context.Context, in ChangedIn) ([]string, error) {
	th, err := g.storeThread(in.Thread)
	if err != nil {
		return nil, err
	}
	paths, err := th.Changed(ctx, in.State, in.Finished)
	return paths, crossStoreError(err)
}

// TakeLease is the activity that takes a thread's lease for a workflow
// (runner.TakeLease, on the worker's clock).
func (g *Registry) TakeLease(ctx context.Context, in LeaseIn) error {
	l, ok := g.Store.(checkpoint.Leaser)
	if !ok {
		return nil
	}
	_, err := runner.TakeLease(ctx, l, in.Thread, in.Holder, time.Now(), in.TTL)
	return crossStoreError(err)
}

// RenewLease is the activity that renews a workflow's lease.
func (g *Registry) RenewLease(ctx context.Context, in LeaseIn) error {
	l, ok := g.Store.(checkpoint.Leaser)
	if !ok {
		return nil
	}
	_, err := l.Renew(ctx, in.Thread, in.Holder, time.Now(), in.TTL)
	return crossStoreError(err)
}

// ReleaseLease is the activity that lets a workflow's lease go.
func (g *Registry) ReleaseLease(ctx context.Context, in LeaseIn) error {
	l, ok := g.Store.(checkpoint.Leaser)
	if !ok {
		return nil
	}
	return crossStoreError(l.Release(ctx, in.Thread, in.Holder))
}

// local runs fn as a local activity from workflow code, with the running
// coroutine's context, and waits for it to finish even when the run is
// cancelled: a save was paid for, and a read is short.
func (r *Runtime) local(fn any, out any, args ...any) error {
	var err error
	r.wait(func(c workflow.Context) {
		err = localIn(c, fn, out, args...)
	})
	return err
}

func localIn(c workflow.Context, fn any, out any, args ...any) error {
	lc := workflow.WithLocalActivityOptions(c, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: storeTimeout,
		// The recorder tries an unavailable store again itself.
		RetryPolicy: &sdktemporal.RetryPolicy{MaximumAttempts: 1},
	})
	err := workflow.ExecuteLocalActivity(lc, fn, args...).Get(c, out)
	if err != nil {
		return storeErrorOf(err)
	}
	return nil
}

// stored is what the store holds of one run: the messages of its latest
// saved step record.
type stored struct {
	ns, id string
	msgs   []llm.Message
	// sums are the hashes of the first messages (messageSum), computed
	// once each as model calls need them.
	sums [][32]byte
}

// wfThread is a RunAgent workflow's thread (agent.Thread, agent.Hold): it
// reads and records in local activities, and keeps, per run, the messages
// its latest record saved, so that a model activity is given a reference
// to them instead of the messages.
type wfThread struct {
	g      *Registry
	rt     *Runtime
	id     string
	holder string
	known  map[string]*stored // by agent path
	// root is the directory of the workers the run's files are on
	// (Registry.Directory), "" when they are the run's own.
	root string
	// openedSize is the history's size once the top-level run's thread
	// was opened; continuing is set once the run stops to continue as
	// new.
	openedSize int
	continuing bool
	// own is the path of the run this workflow runs: nil for a top-level
	// run, the subagent's for a RunSubagent workflow.
	own agent.Path
}

func newWFThread(g *Registry, rt *Runtime, id, holder string) *wfThread {
	return &wfThread{g: g, rt: rt, id: id, holder: holder, known: map[string]*stored{}}
}

func nsOf(p agent.Path) string {
	if !p.IsNested() {
		return ""
	}
	return p.String()
}

func (t *wfThread) Open(ctx context.Context, path agent.Path, o agent.Opening) (agent.StartHow, *agent.RunState, error) {
	var out Opened
	err := t.rt.local(t.g.OpenThread, &out, OpenIn{Thread: t.id, Path: path, Input: o.Input, Decisions: o.Decisions, Nested: o.Nested, ParentStep: o.ParentStep, Root: t.root})
	if err != nil {
		return 0, nil, err
	}
	rs := out.State
	if rs != nil {
		read := 0 // bytes of messages read since the workflow task began
		for len(rs.Messages) < out.Messages {
			var piece []llm.Message
			if err := t.rt.local(t.g.ThreadMessages, &piece, MessagesIn{Thread: t.id, NS: nsOf(path), Step: rs.StepID, From: len(rs.Messages)}); err != nil {
				return 0, nil, err
			}
			if len(piece) == 0 {
				return 0, nil, fmt.Errorf("thread %q: reading its messages: none from %d", t.id, len(rs.Messages))
			}
			rs.Messages = append(rs.Messages, piece...)
			if read += piecesSize(piece); read >= taskBytes && len(rs.Messages) < out.Messages {
				t.rt.endTask()
				read = 0
			}
		}
		rs.LegacyChildren = out.Legacy
		t.known[path.String()] = &stored{ns: nsOf(path), id: rs.StepID, msgs: rs.Messages}
	}
	if t.owns(path) {
		t.openedSize = workflow.GetInfo(t.rt.cur).GetCurrentHistorySize()
	}
	// runner checks the decisions of a top-level run that resumes, and
	// only then: the check is the agent's, so it runs here.
	if out.How == agent.StartResume && !o.Nested && o.Check != nil && rs != nil {
		if err := o.Check(o.Decisions, rs.Loop.Interrupts); err != nil {
			return agent.StartRefused, rs, err
		}
	}
	return out.How, rs, nil
}

func (t *wfThread) Record(ctx context.Context, rec *agent.StepRecord) error {
	sent := *rec
	// A local activity is given its arguments as Go values, and runs on a
	// goroutine of its own: it gets copies of what the loop may still
	// change, and no callback into workflow code (the recorder's retry
	// warnings are not reported).
	sent.Warn = nil
	sent.Appended = slices.Clone(rec.Appended)
	sent.Files = slices.Clone(rec.Files)
	sent.Values = maps.Clone(rec.Values)
	// The store keeps subagents' results without their histories (each is
	// under its own namespace): they need not cross.
	if len(rec.Children) > 0 {
		sent.Children = make(map[string]*agent.Result, len(rec.Children))
		for id, kid := range rec.Children {
			sent.Children[id] = kid.WithoutState()
		}
	}
	if rec.Call != nil && rec.Call.Outcome != nil && rec.Call.Outcome.Child != nil {
		call, oc := *rec.Call, *rec.Call.Outcome
		oc.Child = oc.Child.WithoutState()
		call.Outcome = &oc
		sent.Call = &call
	}
	var err error
	if t.root != "" {
		err = t.rt.local(t.g.RecordStepOn, nil, t.id, t.holder, t.root, &sent)
	} else {
		err = t.rt.local(t.g.RecordStep, nil, t.id, t.holder, &sent)
	}
	if err != nil {
		return err
	}
	if rec.Kind == agent.RecordCall {
		return nil
	}
	// Right after a top-level step is saved, before any of its calls
	// starts, nothing is in flight: a long history goes on in a new
	// workflow run, which resumes the run from this record.
	if rec.Kind == agent.RecordStep && t.owns(rec.Path) && t.continueNow() {
		// The next workflow run holds the thread as this one does (the
		// same holder): the lease is kept for it.
		t.continuing = true
		return errContinue
	}
	key := rec.Path.String()
	var base []llm.Message
	var sums [][32]byte
	switch k := t.known[key]; {
	case rec.Parent == "":
	case k != nil && k.id == rec.Parent:
		base, sums = k.msgs, slices.Clone(k.sums)
	default:
		delete(t.known, key) // not known here: model calls carry their messages
		return nil
	}
	t.known[key] = &stored{ns: nsOf(rec.Path), id: rec.ID, msgs: slices.Concat(base, rec.Appended), sums: sums}
	return nil
}

func (t *wfThread) FilesAt(ctx context.Context, path agent.Path, id string) (map[string]vfs.File, error) {
	var files map[string]vfs.File
	err := t.rt.local(t.g.ThreadFiles, &files, t.id, path, id)
	return files, err
}

func (t *wfThread) Changed(ctx context.Context, rs *agent.RunState, finished bool) ([]string, error) {
	// runner reads the run's step ids, its step in progress and its loop
	// value: its messages and files stay here.
	light := *rs
	light.Messages, light.Files, light.Values, light.Finished, light.Children = nil, nil, nil, nil, nil
	var paths []string
	err := t.rt.local(t.g.ThreadChanged, &paths, ChangedIn{Thread: t.id, State: &light, Finished: finished})
	return paths, err
}

// Hold takes the thread's lease for the workflow in a local activity, and
// renews it from a workflow coroutine on a workflow timer (every third of
// runner.DefaultLeaseTTL), each renewal a local activity: a CLI or server
// run on the same thread is refused meanwhile, and this one stops when
// another took the thread over.
func (t *wfThread) Hold(ctx context.Context, now func() time.Time, lost func(error)) (func(), error) {
	if _, ok := t.g.Store.(checkpoint.Leaser); !ok {
		return func() {}, nil
	}
	in := LeaseIn{Thread: t.id, Holder: t.holder, TTL: runner.DefaultLeaseTTL}
	if err := t.rt.local(t.g.TakeLease, nil, in); err != nil {
		return nil, err
	}
	wc, stop := workflow.WithCancel(t.rt.cur)
	workflow.Go(wc, func(c workflow.Context) {
		for {
			if workflow.Sleep(c, in.TTL/3) != nil {
				return
			}
			if err := localIn(c, t.g.RenewLease, nil, in); errors.Is(err, checkpoint.ErrNotHeld) {
				lost(fmt.Errorf("lost thread %q to another process (its lease expired)", t.id))
				return
			}
		}
	})
	return func() {
		stop()
		if !t.continuing {
			_ = t.rt.local(t.g.ReleaseLease, nil, in)
		}
	}, nil
}

type threadKey struct{}

// withThread puts a workflow's thread in the run's context, where the
// model activity's caller finds what the store holds.
func withThread(ctx context.Context, t *wfThread) context.Context {
	return context.WithValue(ctx, threadKey{}, t)
}

func threadFrom(ctx context.Context) *wfThread {
	t, _ := ctx.Value(threadKey{}).(*wfThread)
	return t
}

// MessagesRef says where a model activity finds the messages of its
// request: the first Prefix messages of a saved step record (thread,
// namespace, step id), followed by the request's own messages, the whole
// list hashing to Hash.
type MessagesRef struct {
	Thread string `json:"thread"`
	NS     string `json:"ns,omitempty"`
	Step   string `json:"step"`
	Prefix int    `json:"prefix"`
	Hash   string `json:"hash"`
}

// reference returns req as a model activity carries it for the run at
// path: the messages the store holds already replaced by a reference.
// ok is false when the store holds none of them.
func (t *wfThread) reference(path string, req *llm.Request) (*llm.Request, *MessagesRef, bool) {
	k := t.known[path]
	if k == nil {
		return req, nil, false
	}
	n := 0
	for n < len(k.msgs) && n < len(req.Messages) && reflect.DeepEqual(k.msgs[n], req.Messages[n]) {
		n++
	}
	if n == 0 {
		return req, nil, false
	}
	for i := len(k.sums); i < n; i++ {
		k.sums = append(k.sums, messageSum(k.msgs[i]))
	}
	sums := slices.Clip(k.sums[:n])
	for _, m := range req.Messages[n:] {
		sums = append(sums, messageSum(m))
	}
	tail := *req
	tail.Messages = req.Messages[n:]
	return &tail, &MessagesRef{Thread: t.id, NS: k.ns, Step: k.id, Prefix: n, Hash: hashSums(sums)}, true
}

// messageSum is the hash of one message's JSON.
func messageSum(m llm.Message) [32]byte {
	b, _ := json.Marshal(m)
	return sha256.Sum256(b)
}

// hashSums is the hash of a message list, given its messages' hashes.
func hashSums(sums [][32]byte) string {
	h := sha256.New()
	for _, s := range sums {
		h.Write(s[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashMessages is the hash of a message list as a model activity checks
// it: of its messages' hashes, so that the workflow hashes each message
// once, not the whole list at each model call.
func hashMessages(msgs []llm.Message) string {
	sums := make([][32]byte, len(msgs))
	for i, m := range msgs {
		sums[i] = messageSum(m)
	}
	return hashSums(sums)
}

// rebuild puts back the messages of a request that ref points to, reading
// them from the store, and checks them against the hash the workflow sent.
func (g *Registry) rebuild(ctx context.Context, req *llm.Request, ref *MessagesRef) (*llm.Request, error) {
	if g.Store == nil {
		return nil, sdktemporal.NewNonRetryableApplicationError("the model call refers to a thread, and this worker has no checkpoint store (Registry.Store)", "NoStore", nil)
	}
	cp, err := g.Store.Get(ctx, checkpoint.Ref{ThreadID: ref.Thread, NS: ref.NS, ID: ref.Step})
	if err != nil {
		return nil, fmt.Errorf("reading the messages of the model call (thread %q, namespace %q, step %s): %w", ref.Thread, ref.NS, ref.Step, err)
	}
	if len(cp.State.Messages) < ref.Prefix {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("the model call takes %d messages of step %s of thread %q (namespace %q), which holds %d",
			ref.Prefix, ref.Step, ref.Thread, ref.NS, len(cp.State.Messages)), "MessagesMismatch", nil)
	}
	out := *req
	out.Messages = slices.Concat(cp.State.Messages[:ref.Prefix], req.Messages)
	if h := hashMessages(out.Messages); h != ref.Hash {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("the messages rebuilt from step %s of thread %q (namespace %q) are not those of the model call (hash %s, want %s): the store does not hold what the workflow saved",
			ref.Step, ref.Thread, ref.NS, h[:12], ref.Hash[:12]), "MessagesMismatch", nil)
	}
	return &out, nil
}
