package temporal

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/runner"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file puts an agent's files on a real directory of the workers: each
// read, write and command is an activity on a worker that has the
// directory, so that workflow code does no I/O.

// FilesActivity is the name of the activity that runs one operation of a
// directory registered with Registry.Directory.
const FilesActivity = "deepagents.Files"

// maxWalk is how many files one walk of a directory returns at most: its
// entries are one activity's result.
const maxWalk = 20000

// Directory registers b, this worker's view of the directory root (the
// directory itself, or a backend over it that applies rules), and returns
// the backend to build agents with (agent.Config.Backend): in workflow code
// each of its operations, and each command run with it when b runs
// commands (vfs.Executor), is an activity that runs on a worker that
// registered the same root, and fails there, without retrying, on a worker
// that did not; anywhere else it is b. A thread that the deepagents command
// started on a directory (--root) runs on a worker only with an agent on
// the same directory, and a workflow refuses it otherwise.
func (g *Registry) Directory(root string, b vfs.Backend) vfs.Backend {
	if g.dirs == nil {
		g.dirs = map[string]vfs.Backend{}
	}
	g.dirs[root] = b
	d := &dirFiles{g: g, root: root, b: b}
	if _, ok := vfs.AsExecutor(b); ok {
		return &dirExec{d}
	}
	return d
}

// FilesOp is the input of the files activity: one operation on a
// registered directory.
type FilesOp struct {
	Root    string           `json:"root"`
	Op      string           `json:"op"`
	Path    string           `json:"path,omitempty"`
	Content string           `json:"content,omitempty"`
	Exec    *vfs.ExecRequest `json:"exec,omitempty"`
	// Search is the whole search of a grep or glob op.
	Search *vfs.SearchRequest `json:"search,omitempty"`
	// Page is the page of a readrange op.
	Page *vfs.PageRequest `json:"page,omitempty"`
}

// FilesOut is the output of the files activity.
type FilesOut struct {
	Entry   *vfs.Entry        `json:"entry,omitempty"`
	Text    string            `json:"text,omitempty"`
	N       int               `json:"n,omitempty"`
	Entries []vfs.Entry       `json:"entries,omitempty"`
	Exec    *vfs.ExecResult   `json:"exec,omitempty"`
	Search  *vfs.SearchResult `json:"search,omitempty"`
	Page    *vfs.PageResult   `json:"page,omitempty"`
}

// Files is the files activity.
func (g *Registry) Files(ctx context.Context, in FilesOp) (*FilesOut, error) {
	b, ok := g.dirs[in.Root]
	if !ok {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"this worker has no directory %s: a run whose files are there runs only on workers that registered it (Registry.Directory, or deepagents-temporal worker --root %s)", in.Root, in.Root),
			"deepagents.NoDirectory", nil)
	}
	defer heartbeat(ctx)()
	out := &FilesOut{}
	var err error
	switch in.Op {
	case "stat":
		var e vfs.Entry
		if e, err = b.Stat(ctx, in.Path); err == nil {
			out.Entry = &e
		}
	case "read":
		out.Text, err = b.Read(ctx, in.Path)
	case "write":
		err = b.Write(ctx, in.Path, in.Content)
	case "delete":
		out.N, err = b.Delete(ctx, in.Path)
	case "list":
		out.Entries, err = b.List(ctx, in.Path)
	case "walk":
		for e, werr := range b.Walk(ctx, in.Path) {
			if werr != nil {
				err = werr
				break
			}
			if len(out.Entries) == maxWalk {
				err = fmt.Errorf("more than %d files under %s: search a smaller directory", maxWalk, in.Path)
				break
			}
			out.Entries = append(out.Entries, e)
		}
	case "exec":
		ex, ok := vfs.AsExecutor(b)
		if !ok || in.Exec == nil {
			return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("the directory %s of this worker runs no commands", in.Root), "deepagents.NoExecutor", nil)
		}
		var res vfs.ExecResult
		if res, err = ex.Execute(ctx, *in.Exec); err == nil {
			out.Exec = &res
		}
	case "grep", "glob":
		// The tool's own search, run here: only its answer, within the
		// tool's caps, goes back.
		if in.Search == nil || in.Search.Op != in.Op {
			return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("the files operation %s came without its search", in.Op), "deepagents.UnknownOp", nil)
		}
		var res vfs.SearchResult
		if res, err = fstools.Search(ctx, b, *in.Search); err == nil {
			out.Search = &res
		}
		in.Path = in.Search.Path
	case "readrange":
		// read_file's own read of one page, run here: the page and the
		// count of the lines after it go back, not the file.
		if in.Page == nil {
			return nil, sdktemporal.NewNonRetryableApplicationError("the files operation readrange came without its page", "deepagents.UnknownOp", nil)
		}
		var res vfs.PageResult
		if res, err = fstools.ReadPage(ctx, b, *in.Page); err == nil {
			out.Page = &res
		}
		in.Path = in.Page.Path
	default:
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("unknown files operation %q", in.Op), "deepagents.UnknownOp", nil)
	}
	if err != nil {
		return nil, crossFilesError(err)
	}
	// A result Temporal would refuse fails here, with a reason the tool
	// passes on (a file or a listing too large for one activity).
	if n, err := g.payloadSize(out); err != nil || n > MaxPayload {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the %s of %s is %d bytes compressed, over the %d one activity may return: read a smaller file, or search a smaller directory", in.Op, in.Path, n, MaxPayload),
			filesErrorType, nil, "")
	}
	return out, nil
}

// filesErrorType is the type of the application error that carries a
// directory's error out of the files activity, with the kind the file
// tools react to.
const filesErrorType = "deepagents.FilesError"

// filesKinds are the errors of package vfs that keep their identity across
// the activity, by name.
var filesKinds = map[string]error{
	"not_found": vfs.ErrNotFound, "exists": vfs.ErrExists, "permission": vfs.ErrPermission,
	"invalid_path": vfs.ErrInvalidPath, "is_dir": vfs.ErrIsDir, "not_dir": vfs.ErrNotDir,
}

func crossFilesError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	kind := ""
	for k, target := range filesKinds {
		if errors.Is(err, target) {
			kind = k
			break
		}
	}
	return sdktemporal.NewNonRetryableApplicationError(err.Error(), filesErrorType, nil, kind)
}

// filesError rebuilds in workflow code the error the files activity failed
// with: a directory's error keeps its kind (errors.Is(err,
// vfs.ErrNotFound)); any other error is its text.
func filesError(err error) error {
	var appErr *sdktemporal.ApplicationError
	if !errors.As(err, &appErr) {
		return err
	}
	if appErr.Type() == filesErrorType {
		var kind string
		_ = appErr.Details(&kind)
		if target, ok := filesKinds[kind]; ok {
			return &storeError{msg: appErr.Message(), target: target}
		}
	}
	return errors.New(appErr.Message())
}

// dirFiles is a registered directory: activities in workflow code.
type dirFiles struct {
	g    *Registry
	root string
	b    vfs.Backend
}

// do runs op as a files activity when ctx is workflow code's; ok is false
// elsewhere, where the caller uses the directory itself.
func (d *dirFiles) do(ctx context.Context, op FilesOp, timeout time.Duration) (out FilesOut, ok bool, err error) {
	r, ok := runtimeFrom(ctx)
	if !ok {
		return out, false, nil
	}
	op.Root = d.root
	if err := r.activity(ctx, d.g, FilesActivity, timeout, &sdktemporal.RetryPolicy{MaximumAttempts: 1}, op, &out); err != nil {
		return out, true, filesError(err)
	}
	return out, true, nil
}

// filesTimeout bounds one file operation's attempt; searchTimeout a whole
// search or page, which walks a tree (the activity beats meanwhile).
const (
	filesTimeout  = 2 * time.Minute
	searchTimeout = 10 * time.Minute
)

func (d *dirFiles) Stat(ctx context.Context, path string) (vfs.Entry, error) {
	out, ok, err := d.do(ctx, FilesOp{Op: "stat", Path: path}, filesTimeout)
	switch {
	case !ok:
		return d.b.Stat(ctx, path)
	case err != nil:
		return vfs.Entry{}, err
	case out.Entry == nil:
		return vfs.Entry{}, errors.New("the files activity answered a stat with no entry")
	}
	return *out.Entry, nil
}

func (d *dirFiles) Read(ctx context.Context, path string) (string, error) {
	out, ok, err := d.do(ctx, FilesOp{Op: "read", Path: path}, filesTimeout)
	if !ok {
		return d.b.Read(ctx, path)
	}
	return out.Text, err
}

func (d *dirFiles) Write(ctx context.Context, path, content string) error {
	_, ok, err := d.do(ctx, FilesOp{Op: "write", Path: path, Content: content}, filesTimeout)
	if !ok {
		return d.b.Write(ctx, path, content)
	}
	return err
}

func (d *dirFiles) Delete(ctx context.Context, path string) (int, error) {
	out, ok, err := d.do(ctx, FilesOp{Op: "delete", Path: path}, filesTimeout)
	if !ok {
		return d.b.Delete(ctx, path)
	}
	return out.N, err
}

func (d *dirFiles) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	out, ok, err := d.do(ctx, FilesOp{Op: "list", Path: dir}, filesTimeout)
	if !ok {
		return d.b.List(ctx, dir)
	}
	return out.Entries, err
}

func (d *dirFiles) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	if _, ok := runtimeFrom(ctx); !ok {
		return d.b.Walk(ctx, dir)
	}
	return func(yield func(vfs.Entry, error) bool) {
		out, _, err := d.do(ctx, FilesOp{Op: "walk", Path: dir}, filesTimeout)
		if err != nil {
			yield(vfs.Entry{}, err)
			return
		}
		for _, e := range out.Entries {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// searchChange names the change that makes a search of a directory one
// files activity; a workflow that started before it searches file by file
// as it did.
const searchChange = "deepagents.files-search"

// mountsSearchChange names the change that makes a search of a directory
// with mounts below the searched path (skills at /skills/) one files
// activity too, the mounts searched in workflow code (vfs.Composite); a
// workflow that started before it searches such a path file by file.
const mountsSearchChange = "deepagents.files-search-mounts"

// Search implements vfs.Searcher: in workflow code a grep or glob is one
// files activity, which runs the tool's search on the worker.
func (d *dirFiles) Search(ctx context.Context, req vfs.SearchRequest) (vfs.SearchResult, bool, error) {
	r, ok := runtimeFrom(ctx)
	if !ok || req.Part && workflow.GetVersion(r.cur, mountsSearchChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return vfs.SearchResult{}, false, nil
	}
	if workflow.GetVersion(r.cur, searchChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return vfs.SearchResult{}, false, nil
	}
	out, _, err := d.do(ctx, FilesOp{Op: req.Op, Path: req.Path, Search: &req}, searchTimeout)
	switch {
	case err != nil:
		return vfs.SearchResult{}, true, err
	case out.Search == nil:
		return vfs.SearchResult{}, true, errors.New("the files activity answered a search with no result")
	}
	return *out.Search, true, nil
}

// pageChange names the change that makes read_file's read of a page of a
// directory's file one readrange activity; a workflow that started before
// it reads the whole file as it did.
const pageChange = "deepagents.files-readrange"

// ReadPage implements vfs.PageReader: in workflow code a page of read_file
// is one files activity, which reads it on the worker.
func (d *dirFiles) ReadPage(ctx context.Context, req vfs.PageRequest) (vfs.PageResult, bool, error) {
	r, ok := runtimeFrom(ctx)
	if !ok || workflow.GetVersion(r.cur, pageChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return vfs.PageResult{}, false, nil
	}
	out, _, err := d.do(ctx, FilesOp{Op: "readrange", Path: req.Path, Page: &req}, searchTimeout)
	switch {
	case err != nil:
		return vfs.PageResult{}, true, err
	case out.Page == nil:
		return vfs.PageResult{}, true, errors.New("the files activity answered a read with no page")
	}
	return *out.Page, true, nil
}

// dirExec is a registered directory that runs commands.
type dirExec struct{ *dirFiles }

func (d *dirExec) Execute(ctx context.Context, req vfs.ExecRequest) (vfs.ExecResult, error) {
	// The attempt may take as long as the command may, and a little more.
	timeout := d.g.ToolTimeout
	if req.Timeout > 0 {
		timeout = max(timeout, req.Timeout+time.Minute)
	}
	out, ok, err := d.do(ctx, FilesOp{Op: "exec", Exec: &req}, timeout)
	switch {
	case !ok:
		ex, _ := vfs.AsExecutor(d.b)
		return ex.Execute(ctx, req)
	case err != nil:
		return vfs.ExecResult{}, err
	case out.Exec == nil:
		return vfs.ExecResult{}, errors.New("the files activity answered a command with no result")
	}
	return *out.Exec, nil
}

// directory is the workflow side of the directory root, as Directory
// returned it on the worker that registered it; this worker need not have
// it, since in workflow code every operation is an activity.
func (g *Registry) directory(root string, exec bool) vfs.Backend {
	d := &dirFiles{g: g, root: root, b: g.dirs[root]}
	if exec {
		return &dirExec{d}
	}
	return d
}

// dirView is what a subagent's child workflow needs to know of a
// directory its parent's call sees.
type dirView struct {
	root string
	exec bool
}

// dirBehind returns the registered directory b is a view of (a call's
// tracked view, say, or a composite with nothing mounted on it), or nil.
func dirBehind(b vfs.Backend) *dirView {
	for range 8 {
		switch d := b.(type) {
		case *dirFiles:
			return &dirView{root: d.root}
		case *dirExec:
			return &dirView{root: d.root, exec: true}
		case *vfs.Tracked:
			b = d.Backend
		case *vfs.Composite:
			if len(d.Routes()) > 0 {
				return nil
			}
			b = d.Fallback()
		case interface{ Unwrap() vfs.Backend }:
			b = d.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

// pathsOf is d without the files' contents: which paths changed, for a
// parent whose view of a directory learns what its child did there.
func pathsOf(d vfs.Delta) vfs.Delta {
	out := make(vfs.Delta, len(d))
	for i, c := range d {
		out[i] = vfs.Change{Path: c.Path, By: c.By}
		if c.File != nil {
			out[i].File = &vfs.File{}
		}
	}
	return out
}

// dirOf is the root of the registered directory b, or "".
func dirOf(b vfs.Backend) string {
	switch d := b.(type) {
	case *dirFiles:
		return d.root
	case *dirExec:
		return d.root
	}
	return ""
}

// checkRoot refuses to run thread on a worker whose agent's files are not
// where the thread's last turn had them: a thread that the deepagents
// command ran on a directory (--root), or a worker on one
// (Registry.Directory), runs only on that directory; one whose files are
// in its state, only in memory. A thread whose turns do not say is not
// refused.
func (g *Registry) checkRoot(ctx context.Context, thread, root string) error {
	cps, err := g.Store.List(ctx, checkpoint.ListOptions{ThreadID: thread, Metadata: map[string]string{"source": string(agent.RecordInput)}, Limit: 1})
	if err != nil {
		return crossStoreError(err)
	}
	if len(cps) == 0 {
		return nil
	}
	want, known := runner.TurnRoot(cps[0].Metadata)
	if !known || want == root {
		return nil
	}
	var msg string
	switch {
	case root == "":
		msg = fmt.Sprintf("thread %q works on the directory %s, and this worker's agent keeps its files in the run's memory: run it on a worker that registered that directory (Registry.Directory, deepagents-temporal worker --root %s)", thread, want, want)
	case want == "":
		msg = fmt.Sprintf("thread %q keeps its files in its own state, and this worker's agent works on the directory %s: run it on a worker whose agent keeps them in memory", thread, root)
	default:
		msg = fmt.Sprintf("thread %q works on the directory %s, and this worker's agent on %s: run it on a worker that registered %s", thread, want, root, want)
	}
	return sdktemporal.NewNonRetryableApplicationError(msg, "deepagents.WrongDirectory", nil)
}
