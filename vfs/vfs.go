// Package vfs is the agent's filesystem: a small Backend interface that the
// file tools work through, path normalisation, the default in-state Memory
// backend, and copy-on-write Layers that let parallel tool calls and
// subagents write without stepping on each other.
//
// Paths are virtual and absolute ("/notes/today.md"). Directories are implied
// by the files below them. Every backend accepts only paths that Clean
// accepts.
package vfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors returned by backends, matchable with errors.Is. They are the io/fs
// sentinels, so os-backed implementations interoperate.
var (
	ErrNotFound    = fs.ErrNotExist
	ErrExists      = fs.ErrExist
	ErrPermission  = fs.ErrPermission
	ErrInvalidPath = errors.New("invalid path")
	ErrIsDir       = errors.New("is a directory")
	ErrNotDir      = errors.New("not a directory")
)

// File is one file of the in-state filesystem.
type File struct {
	Content    string    `json:"content"`
	CreatedAt  time.Time `json:"created_at"`
	ModifiedAt time.Time `json:"modified_at"`
}

// Entry describes a file or directory.
type Entry struct {
	Path       string    `json:"path"`
	IsDir      bool      `json:"is_dir,omitempty"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at,omitzero"`
}

// Backend is the storage the file tools work on. Paths are clean absolute
// virtual paths. Implementations must be safe for concurrent use.
type Backend interface {
	// Stat describes the file or directory at path.
	Stat(ctx context.Context, path string) (Entry, error)
	// Read returns a file's whole content.
	Read(ctx context.Context, path string) (string, error)
	// Write creates or replaces a file, creating parent directories as needed.
	Write(ctx context.Context, path, content string) error
	// Delete removes a file, or a directory and everything below it, and
	// says how many files went.
	Delete(ctx context.Context, path string) (int, error)
	// List returns the direct children of a directory, sorted by path.
	List(ctx context.Context, dir string) ([]Entry, error)
	// Walk yields every file (not directory) below dir, sorted by path.
	Walk(ctx context.Context, dir string) iter.Seq2[Entry, error]
}

// Brancher is a Backend that can hand out copy-on-write layers: writes to a
// layer stay in it until its Delta is merged back with Merge.
type Brancher interface {
	Backend
	Branch() *Layer
}

// Applier is a Backend that a Delta can be applied to.
type Applier interface {
	Backend
	Apply(d Delta)
}

// Change is one path's new state in a Delta: File nil means deleted.
type Change struct {
	Path string `json:"path"`
	File *File  `json:"file,omitempty"`
	// By names who made the change, when a merge knows it.
	By string `json:"by,omitempty"`
}

// Deleted reports whether the change removes the path.
func (c Change) Deleted() bool { return c.File == nil }

// Delta is the set of changes a layer made, sorted by path.
type Delta []Change

// MaxPathLen is the longest cleaned path Clean accepts, in bytes.
const MaxPathLen = 4096

// Clean normalises a path to an absolute virtual path ("/a/b"). Relative
// paths are taken from the root, and a backslash is a separator like a slash
// (win\bar\baz is /win/bar/baz). It refuses, with an error that says what to
// send instead, empty paths, "..", "~" and Windows drive paths (C:\x, c:/x).
// Clean is idempotent: a path it returns is returned unchanged, and it never
// holds a backslash.
func Clean(p string) (string, error) {
	if p == "" {
		return "", pathError(p, "the path is empty; give an absolute path such as /notes.md")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", pathError(p, "the path contains a NUL byte")
	}
	if p[0] == '~' {
		return "", pathError(p, "home-relative paths (~) are not supported; use an absolute path from the root, such as /notes.md")
	}
	if len(p) >= 2 && p[1] == ':' && isLetter(p[0]) {
		return "", pathError(p, "Windows drive paths are not supported; use forward slashes from the root, such as /dir/file.txt")
	}
	// A backslash separates directories, as on Windows: win\bar means
	// /win/bar. The original p is kept for error messages.
	s := p
	if strings.IndexByte(s, '\\') >= 0 {
		s = strings.ReplaceAll(s, "\\", "/")
	}
	out := s
	if strings.Contains(s, "//") || strings.Contains(s, "/.") || s[0] != '/' || len(s) > 1 && s[len(s)-1] == '/' {
		var b strings.Builder
		b.Grow(len(s) + 1)
		for seg := range strings.SplitSeq(s, "/") {
			switch seg {
			case "", ".":
				continue
			case "..":
				return "", pathError(p, "path traversal with '..' is not allowed; give the absolute path of the file")
			}
			b.WriteByte('/')
			b.WriteString(seg)
		}
		out = b.String()
		if out == "" {
			out = "/"
		}
	}
	if len(out) > MaxPathLen {
		return "", pathError(p, fmt.Sprintf("the path is longer than %d bytes", MaxPathLen))
	}
	return out, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// PathError is an invalid-path error; it matches ErrInvalidPath.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return "invalid path " + quote(shorten(e.Path)) + ": " + e.Reason }

// Is reports whether target is ErrInvalidPath.
func (e *PathError) Is(target error) bool { return target == ErrInvalidPath }

func pathError(p, reason string) error { return &PathError{Path: p, Reason: reason} }

func quote(s string) string { return "'" + s + "'" }

// shorten cuts a long path for display, on a character boundary, and makes
// control characters visible.
func shorten(s string) string {
	const keep = 60
	cut := len(s) > keep+20
	if cut {
		n := keep
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if cut {
		s += "..."
	}
	return s
}

// Under reports whether path is dir or below it.
func Under(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir) && len(path) > len(dir) && path[len(dir)] == '/'
}

// Parent returns the directory holding path ("/" for top-level entries).
func Parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// childOf returns the name of dir's direct child that contains path, and
// whether path is that child itself (a file) rather than something below it.
func childOf(path, dir string) (name string, direct bool) {
	rest := path[len(dir)+1:]
	if dir == "/" {
		rest = path[1:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i], false
	}
	return rest, true
}

// listFromWalk builds a one-level listing of dir from a recursive walk.
func listFromWalk(ctx context.Context, b Backend, dir string) ([]Entry, error) {
	return ListFiles(dir, b.Walk(ctx, dir))
}

// ListFiles builds the one-level listing of the clean directory dir, sorted
// by path, from every file below it (in any order): a subdirectory's entry
// sums the sizes and takes the latest time of the files under it. It is
// for backends that keep files only, as List's implementation.
func ListFiles(dir string, files iter.Seq2[Entry, error]) ([]Entry, error) {
	var out []Entry
	seen := map[string]int{}
	for e, err := range files {
		if err != nil {
			return nil, err
		}
		if e.Path == dir {
			return nil, &fs.PathError{Op: "list", Path: dir, Err: ErrNotDir}
		}
		name, direct := childOf(e.Path, dir)
		child := join(dir, name)
		if direct {
			out = append(out, e)
			continue
		}
		if i, ok := seen[child]; ok {
			out[i].Size += e.Size
			if e.ModifiedAt.After(out[i].ModifiedAt) {
				out[i].ModifiedAt = e.ModifiedAt
			}
			continue
		}
		seen[child] = len(out)
		out = append(out, Entry{Path: child, IsDir: true, Size: e.Size, ModifiedAt: e.ModifiedAt})
	}
	if len(out) == 0 && dir != "/" {
		return nil, &fs.PathError{Op: "list", Path: dir, Err: ErrNotFound}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
