package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/deepagents-go/deepagents/internal/safefile"
)

// This file keeps memory at home: a memory file, and every file it
// imports, is read only from the directories its Source allows, once
// symbolic links are resolved.

// systemDirs are the kernel's views of processes and devices: their files
// are not notes (/proc/self/environ holds the process's secrets), so no
// memory file is read from them, whatever the allowed directories.
var systemDirs = []string{"/proc", "/sys", "/dev"}

// refusal is the error of a memory file or import that lies outside the
// directories it may be read from; Reason says why, for the person.
type refusal struct {
	Path   string
	Reason string
}

func (r *refusal) Error() string { return r.Path + ": " + r.Reason }

// place is where one source's files may be read from.
type place struct {
	dirs    []dirForms
	exclude []dirForms // never read from, though inside dirs
}

// dirForms is one allowed directory as given (absolute, clean) and as it
// resolves (the same when it does not exist yet).
type dirForms struct {
	given, real string
}

// newPlace returns the place of s: its Within directories, or the
// directory holding its file.
func newPlace(s Source) place {
	dirs := s.Within
	if len(dirs) == 0 {
		dirs = []string{filepath.Dir(s.Path)}
	}
	var pl place
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		pl.dirs = append(pl.dirs, dirForms{given: abs, real: resolve(abs)})
	}
	for _, d := range s.Exclude {
		if abs, err := filepath.Abs(d); err == nil {
			pl.exclude = append(pl.exclude, dirForms{given: abs, real: resolve(abs)})
		}
	}
	return pl
}

// excluded returns the excluded directory that holds p (as given, or its
// real form), or "".
func (pl place) excluded(p string) string {
	for _, d := range pl.exclude {
		_, a := inside(d.given, p)
		_, b := inside(d.real, p)
		if a || b {
			return d.given
		}
	}
	return ""
}

// names lists the allowed directories for messages.
func (pl place) names() string {
	out := make([]string, len(pl.dirs))
	for i, d := range pl.dirs {
		out[i] = d.given
	}
	return strings.Join(out, " and ")
}

// inside returns the part of p below dir, and whether p is dir or below it.
func inside(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

func systemPath(p string) bool {
	for _, d := range systemDirs {
		if _, ok := inside(d, p); ok {
			return true
		}
	}
	return false
}

// check decides whether the file at p may be read. It returns p's real
// path and the real form of the allowed directory holding it; a
// *refusal when p, or where its links lead, is outside the allowed
// directories, in a system directory or in a .git directory; an error
// wrapping fs.ErrNotExist when p is allowed but missing.
func (pl place) check(p string) (real, dir string, err error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", "", err
	}
	if systemPath(abs) {
		return "", "", &refusal{Path: p, Reason: fmt.Sprintf("%s is the system's view of processes and devices, not a memory file", abs)}
	}
	lexical := false
	for _, d := range pl.dirs {
		_, a := inside(d.given, abs)
		_, b := inside(d.real, abs)
		lexical = lexical || a || b
	}
	if !lexical {
		return "", "", &refusal{Path: p, Reason: "it lies outside " + pl.names() + ", where memory may be read from"}
	}
	if d := pl.excluded(abs); d != "" {
		return "", "", &refusal{Path: p, Reason: "it lies in " + d + ", which this memory file may not read"}
	}
	// EvalSymlinks gives up after 255 links, so a loop ends here.
	real, err = filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if err != nil {
		return "", "", &refusal{Path: p, Reason: fmt.Sprintf("its symbolic links cannot be followed (%v)", safefile.WithoutPath(err, abs))}
	}
	if systemPath(real) {
		return "", "", &refusal{Path: p, Reason: fmt.Sprintf("a symbolic link leads to %s, the system's view of processes and devices", real)}
	}
	if d := pl.excluded(real); d != "" {
		return "", "", &refusal{Path: p, Reason: fmt.Sprintf("a symbolic link leads to %s, in %s, which this memory file may not read", real, d)}
	}
	for _, d := range pl.dirs {
		rel, ok := inside(d.real, real)
		if !ok {
			continue
		}
		for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
			if strings.EqualFold(part, ".git") {
				return "", "", &refusal{Path: p, Reason: "it is inside .git, which holds the repository's settings (and can hold credentials), not memory"}
			}
		}
		return real, d.real, nil
	}
	return "", "", &refusal{Path: p, Reason: fmt.Sprintf("a symbolic link leads to %s, outside %s, where memory may be read from", real, pl.names())}
}

// read returns the contents of the file at p once check allows it. The
// file is opened below its allowed directory through os.Root, so a link
// swapped in after the check cannot lead out either. Errors are about p.
func (pl place) read(p string) ([]byte, error) {
	real, dir, err := pl.check(p)
	if err != nil {
		return nil, err
	}
	return readBelow(dir, real, p)
}

// readBelow reads the file real (a path without links) below dir.
func readBelow(dir, real, p string) ([]byte, error) {
	rel, ok := inside(dir, real)
	if !ok {
		return nil, &refusal{Path: p, Reason: "it lies outside " + dir}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: safefile.WithoutPath(err, dir)}
	}
	defer root.Close()
	data, err := safefile.ReadIn(root, rel, MaxFileBytes)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if strings.Contains(pe.Err.Error(), "escapes") {
			return nil, &refusal{Path: p, Reason: "a symbolic link in its path changed while it was read, and now leads outside " + dir}
		}
		return nil, &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return data, err
}

// resolve returns abs with the symbolic links of its nearest existing
// ancestor resolved (abs itself when that fails): where a file at abs
// would be created.
func resolve(abs string) string {
	d := abs
	for {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		up := filepath.Dir(d)
		if up == d {
			return abs
		}
		d = up
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return abs
	}
	rest, err := filepath.Rel(d, abs)
	if err != nil {
		return abs
	}
	return filepath.Join(real, rest)
}

// checkDir decides whether a memory file may be written in dir (which may
// not exist yet): where it resolves must be inside an allowed directory,
// so that a linked directory cannot carry the write elsewhere.
func (pl place) checkDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	real := resolve(abs)
	if d := pl.excluded(real); d != "" {
		return &refusal{Path: dir, Reason: fmt.Sprintf("it leads to %s, in %s, where this memory file may not be kept", real, d)}
	}
	for _, f := range pl.dirs {
		if _, ok := inside(f.real, real); ok {
			return nil
		}
	}
	return &refusal{Path: dir, Reason: fmt.Sprintf("it leads to %s, outside %s, where memory may be kept", real, pl.names())}
}
