package osfs

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Write's temporary files are named ".osfs-<16 hex digits>.tmp".
const (
	tempPrefix = ".osfs-"
	tempSuffix = ".tmp"
	tempHex    = 16
)

// How old (by modification time) a temporary file must be before a sweep
// may remove it. A writer locks its temporary file from creation until the
// rename, so an unlocked one is dead once it is older than the instant
// between creating and locking it: staleLocked leaves a wide margin. Where
// files cannot be locked, only age tells, and staleUnlocked is far longer
// than any write takes.
const (
	staleLocked   = time.Minute
	staleUnlocked = time.Hour
)

func isTemp(name string) bool {
	if len(name) != len(tempPrefix)+tempHex+len(tempSuffix) ||
		!strings.HasPrefix(name, tempPrefix) || !strings.HasSuffix(name, tempSuffix) {
		return false
	}
	for _, c := range name[len(tempPrefix) : len(tempPrefix)+tempHex] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// hidden reports whether a clean virtual path names, or passes through, a
// temporary file's name: such paths do not exist in the virtual view.
func hidden(p string) bool {
	if !strings.Contains(p, "/"+tempPrefix) {
		return false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if isTemp(seg) {
			return true
		}
	}
	return false
}

// RemoveStaleTemps removes the temporary files that writes killed midway
// (a crash, a kill -9) left anywhere in the workspace, and says how many
// went. A temporary file is stale when no writer holds its lock (a writer
// locks it until the rename, and the lock dies with the process) and it was
// last modified over a minute ago; where the system has no file locks, when
// it was last modified over an hour ago. New starts this in the background
// unless NoSweep is given; listing a directory removes the stale ones in it
// as well. Symbolic links are not followed and unreadable directories are
// skipped.
func (f *FS) RemoveStaleTemps(ctx context.Context) (int, error) {
	n := 0
	dirs := []string{"."}
	for len(dirs) > 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		entries, err := f.readDir(d)
		if err != nil && len(entries) == 0 {
			continue
		}
		for _, e := range entries {
			r := e.Name()
			if d != "." {
				r = d + "/" + r
			}
			switch {
			case e.IsDir():
				dirs = append(dirs, r)
			case e.Type().IsRegular() && isTemp(e.Name()):
				if f.removeIfStale(r, time.Now()) {
					n++
				}
			}
		}
	}
	return n, nil
}

func (f *FS) readDir(r string) ([]fs.DirEntry, error) {
	d, err := f.root.Open(r)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// removeIfStale removes the temporary file r (relative to the root) if it
// is stale at now, and reports whether it did.
func (f *FS) removeIfStale(r string, now time.Time) bool {
	fi, err := f.root.Lstat(r)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	age := now.Sub(fi.ModTime())
	if age < staleLocked {
		return false
	}
	file, err := f.root.OpenFile(r, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return false
	}
	defer file.Close()
	free, err := tryLock(file)
	switch {
	case err != nil && age < staleUnlocked:
		return false // cannot tell whether its writer lives: only age can
	case err == nil && !free:
		return false // its writer is at work
	}
	// Remove it only if the name still means the file examined: a writer
	// may have renamed it into place meanwhile.
	opened, err := file.Stat()
	if err != nil {
		return false
	}
	cur, err := f.root.Lstat(r)
	if err != nil || !os.SameFile(opened, cur) {
		return false
	}
	return f.root.Remove(r) == nil
}
