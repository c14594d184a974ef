// Package memory gives an agent long-term memory kept in AGENTS.md files:
// the user's notes, the project's and the agent's own. Before every model
// call the files are read (again only when they changed) and shown to the
// model in a memory block after the cached part of the system prompt, so
// editing them never invalidates the cached prefix, and an unchanged set
// gives byte-identical requests. The agent updates its memory with
// edit_file or write_file on the paths the block shows, and its next model
// call sees the change.
//
//	mw, err := memory.Middleware(memory.Config{Sources: []memory.Source{
//		{Path: filepath.Join(home, ".deepagents", "AGENTS.md"), Show: "/memory/user/AGENTS.md"},
//		{Path: "AGENTS.md", Show: "/memory/project/AGENTS.md"},
//	}})
//
// A line "@relative/path" in a memory file imports that file in its place
// (to a depth of MaxDepth, each file once per chain), and HTML comments are
// left out. A memory file and its imports are read only from the
// directories its Source allows (Within), once symbolic links are
// resolved: an import of /etc/passwd, ../../proc/self/environ or a link
// that leads out is not read, and a warning says why.
package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/internal/safefile"
)

// Limits.
const (
	// DefaultMaxBytes caps the memory block's contents (32 KiB).
	DefaultMaxBytes = 32 << 10
	// MaxFileBytes is the largest memory or imported file read (1 MiB); a
	// larger one fails the run with its path.
	MaxFileBytes = 1 << 20
	// MaxDepth is how deep imports nest: a file imported by a file imported
	// ... five times is read, a sixth level is not.
	MaxDepth = 5
)

// Source is one memory file.
type Source struct {
	// Path is the file on disk. A file that does not exist is skipped (the
	// agent may create it); any other read error fails the run.
	Path string
	// Show is the path the agent's file tools reach the file at, shown
	// above its contents so the agent can edit it. Unless InBackend is set,
	// the middleware mounts the file there for every tool call. Empty: the
	// disk path is shown and the agent cannot edit the file.
	Show string
	// InBackend says the agent's backend already serves the file at Show
	// (a real directory holding it), so it is not mounted again.
	InBackend bool
	// Within are the directories the file and everything it imports must
	// lie in once symbolic links are resolved (the project's root, say, for
	// a file that comes with a repository). A file elsewhere, under /proc,
	// /sys or /dev, or inside a .git directory is not read, and a warning
	// names it and says why. Empty: the directory holding Path.
	Within []string
	// Exclude are directories inside Within whose files are never read
	// nor written for this source, whatever the links say: the user's own
	// settings (~/.deepagents) for a file that comes with a repository,
	// when the repository holds the home directory.
	Exclude []string
}

// shown is the path the block names for s.
func (s Source) shown() string {
	if s.Show != "" {
		return s.Show
	}
	return s.Path
}

// File is one source as read: its text with imports expanded and comments
// removed, Missing, or Refused (the reason it was not read: it lies
// outside the source's Within directories).
type File struct {
	Source  Source
	Text    string
	Missing bool
	Refused string
	// Imports are the real paths of the files imported into Text, in the
	// order they were read.
	Imports []string
}

// reader reads files through a cache keyed by path, size and modification
// time, so an unchanged file is not read again.
type reader struct {
	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	info os.FileInfo
	text string
}

// read returns the file's text and real path if pl allows it, or ok false
// when it does not exist; a *refusal when pl does not allow it.
func (r *reader) read(path string, pl place) (text, real string, ok bool, err error) {
	real, dir, err := pl.check(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	st, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	r.mu.Lock()
	c, hit := r.cache[real]
	r.mu.Unlock()
	// A write by rename (ours, osfs's, most editors') makes a new file,
	// which SameFile tells apart even within one tick of a coarse clock.
	if hit && os.SameFile(c.info, st) && c.info.Size() == st.Size() && c.info.ModTime().Equal(st.ModTime()) {
		return c.text, real, true, nil
	}
	data, err := readBelow(dir, real, path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	text = strings.ReplaceAll(strings.TrimPrefix(strings.ToValidUTF8(string(data), "\uFFFD"), "\ufeff"), "\r\n", "\n")
	r.mu.Lock()
	if r.cache == nil {
		r.cache = map[string]cached{}
	}
	r.cache[real] = cached{info: st, text: text}
	r.mu.Unlock()
	return text, real, true, nil
}

// Load reads the sources in order, expanding imports and removing
// comments. Warnings are problems that did not stop it (an import that is
// missing, too deep, a cycle, or outside the source's Within directories;
// a source outside them); an error names the file that could not be read.
func Load(sources []Source) ([]File, []string, error) {
	return (&reader{}).load(sources)
}

func (r *reader) load(sources []Source) ([]File, []string, error) {
	var files []File
	var warns []string
	for _, s := range sources {
		pl := newPlace(s)
		text, real, ok, err := r.read(s.Path, pl)
		var no *refusal
		if errors.As(err, &no) {
			warns = append(warns, fmt.Sprintf("%s was not read: %s", s.Path, no.Reason))
			files = append(files, File{Source: s, Refused: no.Reason})
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("memory: reading %s: %w", s.Path, safefile.WithoutPath(err, s.Path))
		}
		if !ok {
			files = append(files, File{Source: s, Missing: true})
			continue
		}
		abs, _ := filepath.Abs(s.Path)
		var imports []string
		out, err := r.expand(StripComments(text), abs, filepath.Dir(real), []string{real}, pl, &warns, &imports)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, File{Source: s, Text: strings.TrimSpace(out), Imports: imports})
	}
	return files, warns, nil
}

// expand replaces each import line of text (from file, at depth
// len(chain)-1; chain holds the real paths of the files importing) with the imported file's expanded text, reading only what
// pl allows. A relative import is relative to base, the directory the
// file really is in (a linked file imports from beside its target). The
// real path of each file imported is added to imports.
func (r *reader) expand(text, file, base string, chain []string, pl place, warns, imports *[]string) (string, error) {
	lines := strings.Split(text, "\n")
	fence := false
	for i, ln := range lines {
		trimmed := strings.TrimSpace(ln)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = !fence
			continue
		}
		target, ok := ImportLine(ln)
		if fence || !ok {
			continue
		}
		path := target
		if !filepath.IsAbs(path) {
			path = filepath.Join(base, filepath.FromSlash(target))
		}
		if len(chain) > MaxDepth {
			*warns = append(*warns, fmt.Sprintf("%s: the import of %s was not expanded: imports nest at most %d levels deep", file, target, MaxDepth))
			continue
		}
		sub, real, ok, err := r.read(path, pl)
		var no *refusal
		if errors.As(err, &no) {
			*warns = append(*warns, fmt.Sprintf("%s: the import of %s was not read: %s", file, target, no.Reason))
			continue
		}
		if err != nil {
			return "", fmt.Errorf("memory: reading %s (imported by %s): %w", path, file, safefile.WithoutPath(err, path))
		}
		if !ok {
			*warns = append(*warns, fmt.Sprintf("%s: the import of %s was not expanded: %s does not exist", file, target, path))
			continue
		}
		if slices.Contains(chain, real) {
			*warns = append(*warns, fmt.Sprintf("%s: the import of %s was not expanded: it imports itself through %s", file, target, strings.Join(chain, " → ")))
			continue
		}
		*imports = append(*imports, real)
		out, err := r.expand(StripComments(sub), path, filepath.Dir(real), append(chain[:len(chain):len(chain)], real), pl, warns, imports)
		if err != nil {
			return "", err
		}
		lines[i] = strings.TrimRight(out, "\n")
	}
	return strings.Join(lines, "\n"), nil
}

// ImportLine reports whether line is an import, "@path" alone on its line
// (spaces around it allowed), and returns the path. A path is relative to
// the importing file's directory unless absolute; "@" followed by a space,
// an e-mail-like "a@b" or "@" alone are not imports.
func ImportLine(line string) (string, bool) {
	s := strings.TrimSpace(line)
	if len(s) < 2 || s[0] != '@' {
		return "", false
	}
	p := s[1:]
	if strings.ContainsAny(p, " \t@") || strings.ContainsRune(p, 0) {
		return "", false
	}
	return p, true
}

// StripComments removes HTML comments, <!-- to -->, across lines; an
// unclosed comment runs to the end of the text.
func StripComments(s string) string {
	if !strings.Contains(s, "<!--") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "<!--")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i+4:], "-->")
		if j < 0 {
			break
		}
		s = s[i+4+j+3:]
	}
	return b.String()
}
