package osfs

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/deepagents-go/deepagents/vfs"
)

// maxLinks bounds the symbolic links Write follows to find its target, as
// the kernel and os.Root bound theirs.
const maxLinks = 40

// Stat implements vfs.Backend.
func (f *FS) Stat(ctx context.Context, path string) (vfs.Entry, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return vfs.Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return vfs.Entry{}, err
	}
	if hidden(p) {
		return vfs.Entry{}, &fs.PathError{Op: "stat", Path: p, Err: vfs.ErrNotFound}
	}
	fi, err := f.root.Stat(rel(p))
	switch {
	case err != nil:
		return vfs.Entry{}, f.fail("stat", p, err, false)
	case fi.IsDir():
		return dirEntry(p, fi), nil
	case fi.Mode().IsRegular():
		return fileEntry(p, fi), nil
	}
	return vfs.Entry{}, &fs.PathError{Op: "stat", Path: p, Err: errNotRegular}
}

// Read implements vfs.Backend.
func (f *FS) Read(ctx context.Context, path string) (string, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if hidden(p) {
		return "", &fs.PathError{Op: "read", Path: p, Err: vfs.ErrNotFound}
	}
	r := rel(p)
	// Look before opening: opening a FIFO or a device can block or act.
	fi, err := f.root.Stat(r)
	if err == nil {
		err = readable(fi, f.maxBytes)
	}
	if err != nil {
		return "", f.fail("read", p, err, false)
	}
	file, err := f.root.OpenFile(r, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return "", f.fail("read", p, err, false)
	}
	defer file.Close()
	// What was opened is what counts.
	fi, err = file.Stat()
	if err == nil {
		err = readable(fi, f.maxBytes)
	}
	if err != nil {
		return "", f.fail("read", p, err, false)
	}
	var b strings.Builder
	b.Grow(int(fi.Size()))
	n, err := io.Copy(&b, io.LimitReader(file, f.maxBytes+1))
	switch {
	case err != nil:
		return "", f.fail("read", p, err, false)
	case n > f.maxBytes:
		return "", &fs.PathError{Op: "read", Path: p, Err: tooLarge{n, f.maxBytes}}
	}
	return b.String(), nil
}

// readable says why a file cannot be read, if it cannot.
func readable(fi fs.FileInfo, limit int64) error {
	switch {
	case fi.IsDir():
		return vfs.ErrIsDir
	case !fi.Mode().IsRegular():
		return errNotRegular
	case fi.Size() > limit:
		return tooLarge{fi.Size(), limit}
	}
	return nil
}

// Write implements vfs.Backend. It waits for an Update or Write of the
// same file in progress, here or in another process, and refuses names
// reserved for its temporary files.
func (f *FS) Write(ctx context.Context, path, content string) error {
	p, err := vfs.Clean(path)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case p == "/":
		return &fs.PathError{Op: "write", Path: p, Err: vfs.ErrIsDir}
	case hidden(p):
		return &fs.PathError{Op: "write", Path: p, Err: errReserved}
	}
	target, fi, err := f.linkTarget(rel(p))
	perm, replace := fs.FileMode(0o644), false
	switch {
	case err == nil && fi.IsDir():
		return &fs.PathError{Op: "write", Path: p, Err: vfs.ErrIsDir}
	case err == nil && fi.Mode().IsRegular():
		perm, replace = fi.Mode().Perm(), true
		if err := f.writable(target); err != nil {
			return f.fail("write", p, err, true)
		}
	case err == nil:
		return &fs.PathError{Op: "write", Path: p, Err: errNotRegular}
	case !errors.Is(err, fs.ErrNotExist):
		return f.fail("write", p, err, true)
	}
	unlock, err := f.locks.lock(ctx, target)
	if err != nil {
		return err
	}
	defer unlock()
	var h *held
	if replace {
		// Wait for whoever holds the file; if it cannot be held (it went
		// meanwhile, or cannot be opened for reading) write anyway.
		var err error
		h, err = f.hold(ctx, target)
		switch {
		case err == nil:
			defer h.release()
			perm = h.fi.Mode().Perm()
		case ctx.Err() != nil:
			return ctx.Err()
		}
	}
	return f.commit("write", p, target, perm, replace, content, h, nil)
}

func tempName() string {
	var b [tempHex / 2]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return tempPrefix + hex.EncodeToString(b[:]) + tempSuffix
}

// linkTarget follows the symbolic links at the end of r (a path relative to
// the root) to the name Write must replace, and returns it with its Lstat
// result. The name is left unclean: os.Root resolves its ".." components
// after the links before them, as the kernel would, and refuses any that
// leave the root.
func (f *FS) linkTarget(r string) (string, fs.FileInfo, error) {
	for range maxLinks {
		fi, err := f.root.Lstat(r)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return r, fi, err
		}
		t, err := f.root.Readlink(r)
		switch {
		case err != nil:
			return "", nil, err
		case t == "" || filepath.IsAbs(t) || filepath.VolumeName(t) != "":
			return "", nil, ErrEscapes
		}
		if i := strings.LastIndexByte(r, '/'); i >= 0 {
			r = r[:i+1] + t
		} else {
			r = t
		}
	}
	return "", nil, syscall.ELOOP
}

// Delete implements vfs.Backend. It refuses "/".
func (f *FS) Delete(ctx context.Context, path string) (int, error) {
	p, err := vfs.Clean(path)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	switch {
	case p == "/":
		return 0, &fs.PathError{Op: "delete", Path: p, Err: errRootDelete}
	case hidden(p):
		return 0, &fs.PathError{Op: "delete", Path: p, Err: vfs.ErrNotFound}
	}
	r := rel(p)
	fi, err := f.root.Lstat(r)
	if err != nil {
		return 0, f.fail("delete", p, err, false)
	}
	switch {
	case fi.IsDir():
		return f.removeDir(ctx, p)
	case fi.Mode()&fs.ModeSymlink != 0:
		// The link goes, never its target; it must lead somewhere visible.
		t, err := f.root.Stat(r)
		switch {
		case err != nil:
			return 0, f.fail("delete", p, err, false)
		case !t.IsDir() && !t.Mode().IsRegular():
			return 0, &fs.PathError{Op: "delete", Path: p, Err: errNotRegular}
		}
		if err := f.root.Remove(r); err != nil {
			return 0, f.fail("delete", p, err, false)
		}
		if t.IsDir() {
			return 0, nil
		}
		return 1, nil
	case !fi.Mode().IsRegular():
		return 0, &fs.PathError{Op: "delete", Path: p, Err: errNotRegular}
	}
	// Wait for an Update or Write of the file in progress, as Write does,
	// so it does not bring the file back after the delete.
	unlock, err := f.locks.lock(ctx, r)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if h, err := f.hold(ctx, r); err == nil {
		defer h.release()
	} else if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if err := f.root.Remove(r); err != nil {
		return 0, f.fail("delete", p, err, false)
	}
	return 1, nil
}

// removeDir removes the directory p and everything in it, without following
// links, and counts the files that went: regular files and links to them.
func (f *FS) removeDir(ctx context.Context, p string) (int, error) {
	names, err := f.names(p)
	if err != nil {
		return 0, f.fail("delete", p, err, false)
	}
	n := 0
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		cp := join(p, name)
		cr := rel(cp)
		fi, err := f.root.Lstat(cr)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // gone meanwhile
		case err != nil:
			return n, f.fail("delete", cp, err, false)
		case fi.IsDir():
			k, err := f.removeDir(ctx, cp)
			n += k
			if err != nil {
				return n, err
			}
			continue
		}
		counts := fi.Mode().IsRegular() && !isTemp(name)
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, err := f.root.Stat(cr)
			counts = err == nil && t.Mode().IsRegular()
		}
		if err := f.root.Remove(cr); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, f.fail("delete", cp, err, false)
		}
		if counts {
			n++
		}
	}
	if err := f.root.Remove(rel(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, f.fail("delete", p, err, false)
	}
	return n, nil
}

// names returns the names in the directory p, sorted (so that a recursive
// delete visits, and counts, in a stable order).
func (f *FS) names(p string) ([]string, error) {
	d, err := f.root.Open(rel(p))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// child is one entry of a directory as the virtual view sees it.
type child struct {
	vfs.Entry
	link bool // a symbolic link (to a file or a directory)
}

// children reads the directory p: regular files and directories, and links
// inside the workspace to either, classified by their target. Entries that
// cannot be examined, and entries the virtual view hides, are left out.
func (f *FS) children(p string) ([]child, error) {
	names, err := f.names(p)
	if err != nil {
		return nil, err
	}
	out := make([]child, 0, len(names))
	now := time.Now()
	for _, name := range names {
		cp := join(p, name)
		if isTemp(name) {
			f.removeIfStale(rel(cp), now)
			continue
		}
		if !visible(cp, name) {
			continue
		}
		cr := rel(cp)
		fi, err := f.root.Lstat(cr)
		if err != nil {
			continue
		}
		link := fi.Mode()&fs.ModeSymlink != 0
		if link {
			if fi, err = f.root.Stat(cr); err != nil {
				continue // escapes, dangles or loops
			}
		}
		switch {
		case fi.IsDir():
			out = append(out, child{dirEntry(cp, fi), link})
		case fi.Mode().IsRegular():
			out = append(out, child{fileEntry(cp, fi), link})
		}
	}
	return out, nil
}

// List implements vfs.Backend.
func (f *FS) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	p, err := vfs.Clean(dir)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if hidden(p) {
		return nil, &fs.PathError{Op: "list", Path: p, Err: vfs.ErrNotFound}
	}
	fi, err := f.root.Stat(rel(p))
	switch {
	case err != nil:
		return nil, f.fail("list", p, err, false)
	case !fi.IsDir():
		return nil, &fs.PathError{Op: "list", Path: p, Err: vfs.ErrNotDir}
	}
	kids, err := f.children(p)
	if err != nil {
		return nil, f.fail("list", p, err, false)
	}
	out := make([]vfs.Entry, len(kids))
	for i, k := range kids {
		out[i] = k.Entry
	}
	slices.SortFunc(out, func(a, b vfs.Entry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Walk implements vfs.Backend. A missing path yields nothing; a file yields
// itself. Directories that cannot be read below the starting one are
// skipped, as are links to directories. Cancelling ctx stops the walk with
// ctx's error.
func (f *FS) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	return func(yield func(vfs.Entry, error) bool) {
		p, err := vfs.Clean(dir)
		if err != nil {
			yield(vfs.Entry{}, err)
			return
		}
		if err := ctx.Err(); err != nil {
			yield(vfs.Entry{}, err)
			return
		}
		if hidden(p) {
			return
		}
		fi, err := f.root.Stat(rel(p))
		switch {
		case err != nil:
			if err = f.fail("walk", p, err, false); !errors.Is(err, vfs.ErrNotFound) {
				yield(vfs.Entry{}, err)
			}
		case fi.Mode().IsRegular():
			yield(fileEntry(p, fi), nil)
		case fi.IsDir():
			kids, err := f.children(p)
			if err != nil {
				yield(vfs.Entry{}, f.fail("walk", p, err, false))
				return
			}
			f.walk(ctx, kids, yield)
		}
	}
}

// walk yields the files in and below kids in path order and reports
// whether to go on.
func (f *FS) walk(ctx context.Context, kids []child, yield func(vfs.Entry, error) bool) bool {
	// A directory's files all start with its path and a slash, so sorting
	// directories by that key puts every subtree where its paths belong.
	key := func(c child) string {
		if c.IsDir {
			return c.Path + "/"
		}
		return c.Path
	}
	slices.SortFunc(kids, func(a, b child) int { return strings.Compare(key(a), key(b)) })
	for _, k := range kids {
		if err := ctx.Err(); err != nil {
			yield(vfs.Entry{}, err)
			return false
		}
		if !k.IsDir {
			if !yield(k.Entry, nil) {
				return false
			}
			continue
		}
		if k.link {
			continue
		}
		sub, err := f.children(k.Path)
		if err != nil {
			continue // unreadable: skipped
		}
		if !f.walk(ctx, sub, yield) {
			return false
		}
	}
	return true
}
