// Package osfs is a vfs.Backend over a real directory, the workspace.
//
// Every operation goes through an os.Root opened on the workspace, so no
// path can reach outside it: not "..", not an absolute path, not a symbolic
// link. The virtual path "/notes/a.md" is the file notes/a.md of the
// workspace; "/" is the workspace itself.
//
// The semantics are those of vfs.Memory, with the differences a real
// directory brings:
//
//   - Directories exist on their own. Deleting the last file of a directory
//     leaves it, empty: Stat says it is a directory, List returns no entries
//     and Walk yields nothing. Delete of a directory removes the directory
//     too.
//   - Delete of "/" is refused (the error matches vfs.ErrPermission): the
//     workspace itself is never removed.
//   - A directory entry from Stat or List has Size 0 and the directory's own
//     modification time (Memory sums the files below it).
//   - Only regular files and directories are seen. FIFOs, sockets and
//     devices are left out of List and Walk; naming one is an error that
//     matches vfs.ErrPermission. Entries whose virtual path vfs.Clean would
//     refuse (a name holding a backslash, a path longer than
//     vfs.MaxPathLen) are left out of List and Walk too.
//   - Reading a file larger than the MaxFileBytes option (DefaultMaxFileBytes
//     unless set) fails with an error matching ErrTooLarge without loading
//     it. Content is returned byte for byte, binary or not; the tools decide
//     what to do with it.
//
// # Symbolic links
//
// A link that stays inside the workspace is followed, the way os.Root
// follows it: Stat, Read and Write through it reach its target, List shows
// it as what it points to. Walk yields links to files (under the link's own
// path) but does not descend into links to directories, so a walk never
// loops and never yields a file twice through a directory link; walking the
// link itself does list what is below it. Write through a link replaces the
// target's content and keeps the link. Delete of a link removes the link,
// never its target, and counts one file if it pointed at a file.
//
// A link that points outside the workspace, is absolute (os.Root refuses
// absolute links even when they point back inside), dangles or loops is
// left out of List and Walk. Naming it, or a path through it, fails: with
// ErrEscapes (which matches vfs.ErrPermission) if it leads outside, with
// vfs.ErrNotFound if it dangles (except that Write creates a dangling
// link's target, as a shell redirection would), with a "too many levels of
// symbolic links" error if it loops. The outside is never read, written,
// listed or walked.
//
// # Unreadable entries and cancellation
//
// Walk skips entries it cannot examine and directories below its starting
// point that it cannot read; List of an unreadable directory fails with an
// error matching vfs.ErrPermission. Every operation checks its context
// first; Walk and the recursive Delete of a directory check it again
// between entries and stop with the context's error (a Delete stopped that
// way has removed some files).
//
// # Writes
//
// Write creates missing parent directories (0o755) and new files (0o644,
// less the umask), and replaces atomically: the content goes to a temporary
// file ".osfs-<hex>.tmp" in the target's directory, is flushed to stable
// storage (unless the NoSync option says not to), and is renamed over the
// target, so a reader sees the old content or the new, never a mix. A
// replaced file keeps its permission bits; a file that is not writable (for
// instance mode 0o444) is refused with an error matching vfs.ErrPermission
// rather than replaced. Renaming breaks hard links: the other names keep
// the old content.
//
// # Updates and concurrent writers
//
// FS implements vfs.Updater: Update reads a file, computes its new content
// and replaces it as Write does, while holding the file, so concurrent
// read-modify-write cycles (parallel edit_file calls, or two processes
// working in one directory) apply one after the other and none is lost.
// Within a process, writers of one file queue on a lock of their own; across
// processes, they take an advisory lock (flock) on the file itself, and a
// writer that finds a new file renamed in while it waited locks that one
// instead. Write and Delete of a file take the same locks, so neither
// lands in the middle of an Update. A program that does not take part (an
// editor, git) can still change the file: just before renaming, Update
// checks that the file is the one it read, with the same size and
// modification time, and otherwise writes nothing and fails with an error
// matching vfs.ErrConflict. Where the system has no file locks, only the
// check guards against other processes.
//
// # Temporary files
//
// Temporary files do not exist in the virtual view: List, Walk and
// everything built on them leave them out, naming one (or a path through
// one) is vfs.ErrNotFound, and Write refuses the name as reserved (an error
// matching vfs.ErrPermission). A write killed midway leaves its temporary
// file behind; RemoveStaleTemps removes those no live writer holds, New
// runs it in the background (unless NoSweep), and listing a directory
// removes the stale ones in it.
//
// FS does not implement vfs.Brancher: writes go straight to disk, and the
// agent loop wraps it in vfs.Track to report them. It is safe for
// concurrent use. Errors about a path are *fs.PathError values naming the
// virtual path, never the host one, wrapping the vfs sentinels.
package osfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/deepagents-go/deepagents/vfs"
)

// DefaultMaxFileBytes is the largest file Read returns unless MaxFileBytes
// says otherwise.
const DefaultMaxFileBytes int64 = 10 << 20

// ErrEscapes is the error of a path that leads outside the workspace, through
// a symbolic link. It matches vfs.ErrPermission.
var ErrEscapes error = escapeError{}

type escapeError struct{}

func (escapeError) Error() string        { return "path escapes the workspace" }
func (escapeError) Is(target error) bool { return target == vfs.ErrPermission }

// ErrTooLarge is the error of a Read of a file larger than MaxFileBytes.
var ErrTooLarge = errors.New("file too large")

// tooLarge says how large the file is; it matches ErrTooLarge.
type tooLarge struct{ size, limit int64 }

func (e tooLarge) Error() string {
	return fmt.Sprintf("file too large: it has %d bytes and the limit is %d", e.size, e.limit)
}
func (tooLarge) Is(target error) bool { return target == ErrTooLarge }

// permissionError is a refusal with its own message that matches
// vfs.ErrPermission.
type permissionError string

func (e permissionError) Error() string      { return string(e) }
func (permissionError) Is(target error) bool { return target == vfs.ErrPermission }

const (
	errNotRegular = permissionError("not a regular file or directory")
	errRootDelete = permissionError("refusing to delete the workspace root")
	errReserved   = permissionError("the name is reserved for the workspace's temporary files")
)

// FS is a vfs.Backend over a directory. Create it with New.
type FS struct {
	root     *os.Root
	dir      string
	maxBytes int64
	noSync   bool
	escape   error // os.Root's own (unexported) path-escape error
	locks    pathLocks

	sweep     bool
	stopSweep context.CancelFunc
	swept     chan struct{} // closed when the sweep New started is over
}

var _ vfs.Backend = (*FS)(nil)

// Option configures New.
type Option func(*FS)

// MaxFileBytes sets the largest file Read returns; n <= 0 keeps
// DefaultMaxFileBytes.
func MaxFileBytes(n int64) Option {
	return func(f *FS) {
		if n > 0 {
			f.maxBytes = n
		}
	}
}

// NoSweep stops New from removing stale temporary files in the background
// (see RemoveStaleTemps). Stale ones met while listing are still removed.
func NoSweep() Option { return func(f *FS) { f.sweep = false } }

// NoSync makes Write skip flushing the new content to stable storage
// before it replaces the old. Writes get much faster (a flush can take tens
// of milliseconds) and stay atomic for readers, but after a crash or power
// loss a replaced file may be empty or hold its old content. For scratch
// directories and tests.
func NoSync() Option { return func(f *FS) { f.noSync = true } }

// New opens the directory dir as a workspace. dir must exist and be a
// directory. Close the FS when done.
func New(dir string, opts ...Option) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("the directory %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &dirError{fmt.Sprintf("the directory %s does not exist", abs), err}
	case err != nil:
		return nil, fmt.Errorf("the directory %s: %w", abs, err)
	case !fi.IsDir():
		return nil, &dirError{fmt.Sprintf("%s is not a directory", abs), vfs.ErrNotDir}
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("opening the directory %s: %w", abs, err)
	}
	f := &FS{root: r, dir: abs, maxBytes: DefaultMaxFileBytes, sweep: true, swept: make(chan struct{})}
	for _, o := range opts {
		o(f)
	}
	// os.Root reports an escape with an unexported error value: learn it.
	var pe *fs.PathError
	if _, err := r.Lstat(".."); errors.As(err, &pe) {
		f.escape = pe.Err
	}
	if f.sweep {
		var sctx context.Context
		sctx, f.stopSweep = context.WithCancel(context.Background())
		go func() {
			defer close(f.swept)
			_, _ = f.RemoveStaleTemps(sctx)
		}()
	} else {
		close(f.swept)
	}
	return f, nil
}

// Close stops the background sweep, waits for it, and releases the
// directory. Operations after Close fail.
func (f *FS) Close() error {
	if f.stopSweep != nil {
		f.stopSweep()
	}
	<-f.swept
	return f.root.Close()
}

// Dir returns the workspace directory as an absolute host path.
func (f *FS) Dir() string { return f.dir }

// rel maps a clean virtual path to a path relative to the root.
func rel(p string) string {
	if p == "/" {
		return "."
	}
	return p[1:]
}

// join returns the virtual path of dir's child name.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// visible reports whether a child found on disk belongs in the virtual
// view: its path is one Clean accepts unchanged, and it is not one of
// Write's temporary files.
func visible(p, name string) bool {
	if isTemp(name) {
		return false
	}
	c, err := vfs.Clean(p)
	return err == nil && c == p
}

// cause strips the host-path layer of an os error.
func cause(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	case errors.As(err, &se):
		return se.Err
	}
	return err
}

func (f *FS) escapes(err error) bool {
	return errors.Is(err, ErrEscapes) || f.escape != nil && errors.Is(err, f.escape) ||
		strings.Contains(err.Error(), "path escapes from parent")
}

// fail turns an os error into a PathError on the virtual path p, mapping it
// onto the vfs sentinels. A component that is not a directory means "not
// found" for lookups (as in Memory) and ErrNotDir when writing.
func (f *FS) fail(op, p string, err error, writing bool) error {
	c := cause(err)
	switch {
	case f.escapes(c):
		c = ErrEscapes
	case errors.Is(c, fs.ErrNotExist):
		c = vfs.ErrNotFound
	case errors.Is(c, syscall.ENOTDIR):
		if writing {
			c = vfs.ErrNotDir
		} else {
			c = vfs.ErrNotFound
		}
	case errors.Is(c, syscall.EISDIR):
		c = vfs.ErrIsDir
	}
	return &fs.PathError{Op: op, Path: p, Err: c}
}

func fileEntry(p string, fi fs.FileInfo) vfs.Entry {
	return vfs.Entry{Path: p, Size: fi.Size(), ModifiedAt: fi.ModTime()}
}

func dirEntry(p string, fi fs.FileInfo) vfs.Entry {
	return vfs.Entry{Path: p, IsDir: true, ModifiedAt: fi.ModTime()}
}

// dirError says, in the words of the person who named the directory, why
// it cannot be a workspace; it wraps the error it stands for (an
// fs.ErrNotExist, vfs.ErrNotDir) without repeating its text.
type dirError struct {
	msg string
	err error
}

func (e *dirError) Error() string { return e.msg }
func (e *dirError) Unwrap() error { return e.err }
