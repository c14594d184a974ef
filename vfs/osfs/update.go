package osfs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
)

var _ vfs.Updater = (*FS)(nil)

// pathLocks serialises, within the process, the writers of one file (keyed
// by its name relative to the root after symbolic links), so they queue
// here instead of polling the OS lock.
type pathLocks struct {
	mu sync.Mutex
	m  map[string]*pathLock
}

type pathLock struct {
	mu   sync.Mutex
	refs int
}

// lock takes key's lock, or gives up with ctx's error.
func (l *pathLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*pathLock{}
	}
	pl := l.m[key]
	if pl == nil {
		pl = &pathLock{}
		l.m[key] = pl
	}
	pl.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if pl.refs--; pl.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	if !pl.mu.TryLock() {
		got := make(chan struct{})
		go func() {
			pl.mu.Lock()
			close(got)
		}()
		select {
		case <-got:
		case <-ctx.Done():
			// Hand the lock back as soon as the waiter gets it.
			go func() {
				<-got
				pl.mu.Unlock()
				release()
			}()
			return nil, ctx.Err()
		}
	}
	return func() {
		pl.mu.Unlock()
		release()
	}, nil
}

// held is a file this process holds for an update: open, locked against
// other processes when the system allows, and known to still be the file at
// its name when it was locked.
type held struct {
	file *os.File
	fi   fs.FileInfo // after locking, before reading
}

func (h *held) release() { h.file.Close() } // a second call does nothing

// maxLockWait bounds the pause between two attempts at a file lock another
// process holds.
const maxLockWait = 20 * time.Millisecond

// hold opens and locks the regular file at r (relative to the root, links
// resolved). A writer that renames a new file over r while this waits makes
// it start again on the new file, so the file held is the current one.
func (f *FS) hold(ctx context.Context, r string) (*held, error) {
	for range 10000 {
		file, err := f.root.OpenFile(r, os.O_RDONLY|oNonblock, 0)
		if err != nil {
			return nil, err
		}
		if err := lockWait(ctx, file); err != nil {
			file.Close()
			return nil, err
		}
		fi, err := file.Stat()
		if err == nil {
			err = readable(fi, math.MaxInt64)
		}
		if err != nil {
			file.Close()
			return nil, err
		}
		cur, err := f.root.Stat(r)
		if err == nil && os.SameFile(fi, cur) {
			return &held{file: file, fi: fi}, nil
		}
		file.Close()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		// Replaced or removed meanwhile: look again.
	}
	return nil, vfs.ErrConflict
}

// lockWait takes file's OS lock, waiting while another process (or another
// open file of this one) holds it. Where the system cannot lock it returns
// at once without the lock: the in-process lock and the check before the
// rename still apply.
func lockWait(ctx context.Context, file *os.File) error {
	wait := time.Millisecond
	for {
		ok, err := tryLock(file)
		if ok || err != nil {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxLockWait)
	}
}

// unchanged reports whether the held file is still at r with the size and
// modification time it had when it was read, so that nothing that does not
// take part in the locking changed it meanwhile.
func (f *FS) unchanged(h *held, r string) error {
	now, err := h.file.Stat()
	if err != nil {
		return err
	}
	cur, err := f.root.Stat(r)
	if err != nil || !os.SameFile(h.fi, cur) || now.Size() != h.fi.Size() || !now.ModTime().Equal(h.fi.ModTime()) {
		return vfs.ErrConflict
	}
	return nil
}

// Update implements vfs.Updater. Updates and Writes of one file queue
// behind each other in this process, and across processes through an
// advisory lock (flock) on the file itself, taken again on whichever file
// is current when a writer renamed a new one in. Just before the new
// content replaces the old, Update checks that the file is still the one it
// read, with the same size and modification time; if a program that does
// not take part changed it, nothing is written and the error matches
// vfs.ErrConflict. A file that is not writable is refused as Write refuses
// it.
func (f *FS) Update(ctx context.Context, path string, fn vfs.UpdateFunc) error {
	p, err := vfs.Clean(path)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case p == "/":
		return &fs.PathError{Op: "update", Path: p, Err: vfs.ErrIsDir}
	case hidden(p):
		return &fs.PathError{Op: "update", Path: p, Err: vfs.ErrNotFound}
	}
	target, fi, err := f.linkTarget(rel(p))
	switch {
	case err != nil:
		return f.fail("update", p, err, false)
	case fi.IsDir():
		return &fs.PathError{Op: "update", Path: p, Err: vfs.ErrIsDir}
	case !fi.Mode().IsRegular():
		return &fs.PathError{Op: "update", Path: p, Err: errNotRegular}
	}
	if err := f.writable(target); err != nil {
		return f.fail("update", p, err, true)
	}
	unlock, err := f.locks.lock(ctx, target)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := f.hold(ctx, target)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return f.fail("update", p, err, false)
	}
	defer h.release()
	if err := readable(h.fi, f.maxBytes); err != nil {
		return f.fail("update", p, err, false)
	}
	var b strings.Builder
	b.Grow(int(h.fi.Size()))
	n, err := io.Copy(&b, io.LimitReader(h.file, f.maxBytes+1))
	switch {
	case err != nil:
		return f.fail("update", p, err, false)
	case n > f.maxBytes:
		return &fs.PathError{Op: "update", Path: p, Err: tooLarge{n, f.maxBytes}}
	}
	content, err := fn(b.String())
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.commit("update", p, target, h.fi.Mode().Perm(), true, content, h, func() error { return f.unchanged(h, target) })
}

// writable refuses a file that is not writable (for instance mode 0o444)
// rather than renaming over it. Other failures to open it for writing,
// such as a running executable, do not stop the rename.
func (f *FS) writable(target string) error {
	w, err := f.root.OpenFile(target, os.O_WRONLY|oNonblock, 0)
	if err == nil {
		w.Close()
		return nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}

// mkdirAll makes the missing directories of dir (relative to the root), one
// component at a time. A component that is there but does not lead to a
// directory (a file, or a link whose target is missing) fails with
// vfs.ErrNotDir, as mkdir -p would: the root's own MkdirAll would follow a
// dangling link and make the directories its target names, which the
// caller never asked for.
func (f *FS) mkdirAll(dir string) error {
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		part := dir[:i]
		if part == "" {
			continue
		}
		fi, err := f.root.Stat(part)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return vfs.ErrNotDir
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if _, lerr := f.root.Lstat(part); lerr == nil {
			return vfs.ErrNotDir // a link leading nowhere
		}
		if err := f.root.Mkdir(part, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// commit writes content to a new temporary file next to target and renames
// it over target, after check (if any) passed. The temporary file is locked
// while it exists, which tells a sweep that its writer is alive. h, if not
// nil, is the held target: where an open file cannot be renamed over, it is
// released just before the rename.
func (f *FS) commit(op, p, target string, perm fs.FileMode, keepPerm bool, content string, h *held, check func() error) error {
	dir := "."
	if i := strings.LastIndexByte(target, '/'); i >= 0 {
		dir = target[:i]
		if err := f.mkdirAll(dir); err != nil {
			return f.fail(op, p, err, true)
		}
	}
	tmp := dir + "/" + tempName()
	w, err := f.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return f.fail(op, p, err, true)
	}
	_, _ = tryLock(w)
	_, err = io.WriteString(w, content)
	if err == nil && keepPerm {
		err = w.Chmod(perm) // exactly the old bits, whatever the umask
	}
	if err == nil && !f.noSync {
		err = w.Sync()
	}
	if err == nil && check != nil {
		err = check()
	}
	closed := false
	if !renameOpenFiles {
		closed = true
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if h != nil {
			h.release()
		}
	}
	if err == nil {
		// Where it can, rename before closing, so the lock covers the file
		// until it has its name.
		err = f.root.Rename(tmp, target)
	}
	if !closed {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		_ = f.root.Remove(tmp)
		if errors.Is(err, vfs.ErrConflict) {
			return &fs.PathError{Op: op, Path: p, Err: vfs.ErrConflict}
		}
		return f.fail(op, p, err, true)
	}
	return nil
}
