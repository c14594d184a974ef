package sandbox

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// maxPatternSegments bounds the components of one protected entry, so a
// pattern's progress through a path fits in a 64-bit mask.
const maxPatternSegments = 63

// pattern is one protected entry, split at slashes. A "**" component
// matches any number of path components (none included); other components
// are path.Match patterns over one component ("*" matches names that start
// with a dot too).
type pattern struct {
	entry string // as the caller gave it, for messages
	segs  []string
	lit   []bool // segs[i] holds no pattern characters: compare as is
	// nonDir: the pattern matches only what is not a directory. It is the
	// entry that names a git directory (".git"): the directory itself
	// stays writable (objects, refs, the index), gitControl lists what in
	// it is protected, and a ".git" file (a link to a git directory
	// elsewhere, which git follows) is protected whole.
	nonDir bool
}

// gitControl is what of a git directory is protected: what configures git
// or makes it run programs (config, hooks, attributes and excludes in
// info), and the commondir file, which would make git take its
// configuration from another directory. The same holds for the git
// directories of submodules (modules/NAME, NAME may hold slashes) and the
// files of linked worktrees that point elsewhere.
var gitControl = []string{
	"config", "config.worktree", "commondir", "hooks", "info",
	"modules/**/config", "modules/**/config.worktree", "modules/**/commondir", "modules/**/hooks", "modules/**/info",
	"worktrees/*/config.worktree", "worktrees/*/commondir",
}

// GitDirEntries returns the protected entries (see Options.Protected) of
// the git directory at dir, a plain path relative to the directory commands
// run in: what configures git or makes it run programs, as for an entry
// named ".git", for a git directory of another name, such as the one a
// ".git" file points at (a bare repository kept beside its work tree).
func GitDirEntries(dir string) []string {
	var b strings.Builder
	for _, r := range dir {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	prefix := strings.TrimSuffix(b.String(), "/")
	out := make([]string, len(gitControl))
	for i, c := range gitControl {
		out[i] = prefix + "/" + c
	}
	return out
}

// parsePatterns checks the protected entries and compiles them. An entry is
// relative to the directory, uses slashes, and holds no "." or ".."
// component after cleaning; "**" components are doublestar wildcards, other
// components path.Match patterns. An entry whose last component is ".git"
// adds the gitControl paths below it (see pattern.nonDir).
func parsePatterns(entries []string) ([]pattern, error) {
	var out []pattern
	for _, e := range entries {
		segs, err := splitEntry(e)
		if err != nil {
			return nil, fmt.Errorf("protected path %q: %w", e, err)
		}
		if segs[len(segs)-1] != ".git" {
			out = append(out, newPattern(e, segs, false))
			continue
		}
		out = append(out, newPattern(e, segs, true))
		for _, c := range gitControl {
			sub := append(append([]string(nil), segs...), strings.Split(c, "/")...)
			if len(sub) > maxPatternSegments {
				return nil, fmt.Errorf("protected path %q: more than %d components", e, maxPatternSegments-4)
			}
			out = append(out, newPattern(e, collapse(sub), false))
		}
	}
	return out, nil
}

func splitEntry(e string) ([]string, error) {
	switch {
	case strings.TrimSpace(e) == "":
		return nil, errors.New("empty")
	case strings.IndexByte(e, 0) >= 0:
		return nil, errors.New("holds a NUL byte")
	case strings.HasPrefix(e, "/"):
		return nil, errors.New("absolute; give it relative to the directory")
	}
	c := path.Clean(e)
	if c == "." {
		return nil, errors.New("names the whole directory, which commands must be able to write")
	}
	segs := collapse(strings.Split(c, "/"))
	if len(segs) > maxPatternSegments {
		return nil, fmt.Errorf("more than %d components", maxPatternSegments)
	}
	for _, s := range segs {
		if s == ".." {
			return nil, errors.New("leads out of the directory (..)")
		}
		if s == "**" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("component %q is not a valid pattern", s)
		}
	}
	return segs, nil
}

// collapse merges runs of "**" components, which match the same paths as
// one.
func collapse(segs []string) []string {
	out := segs[:0:0]
	for i, s := range segs {
		if s == "**" && i > 0 && segs[i-1] == "**" {
			continue
		}
		out = append(out, s)
	}
	return out
}

func newPattern(entry string, segs []string, nonDir bool) pattern {
	p := pattern{entry: entry, segs: segs, lit: make([]bool, len(segs)), nonDir: nonDir}
	for i, s := range segs {
		p.lit[i] = s != "**" && !strings.ContainsAny(s, `*?[\`)
	}
	return p
}

// A pattern's progress through a path is a mask: bit i set means the path so
// far matches segs[:i]. start is the mask of the empty path, step adds a
// component, full says the path matches the whole pattern, and more says a
// longer path could still match.

func (p *pattern) start() uint64 { return p.closure(1) }

// closure adds the states reached by letting "**" match nothing.
func (p *pattern) closure(m uint64) uint64 {
	for i, s := range p.segs {
		if s == "**" && m&(1<<i) != 0 {
			m |= 1 << (i + 1)
		}
	}
	return m
}

func (p *pattern) step(m uint64, name string) uint64 {
	var next uint64
	for i, s := range p.segs {
		if m&(1<<i) == 0 {
			continue
		}
		switch {
		case s == "**":
			next |= 1 << i
		case p.lit[i]:
			if s == name {
				next |= 1 << (i + 1)
			}
		default:
			if ok, _ := path.Match(s, name); ok {
				next |= 1 << (i + 1)
			}
		}
	}
	return p.closure(next)
}

func (p *pattern) full(m uint64) bool { return m&(1<<len(p.segs)) != 0 }

func (p *pattern) more(m uint64) bool { return m&(1<<len(p.segs)-1) != 0 }

// matcher tracks every pattern at once along a path.
type matcher struct{ pats []pattern }

// states is the progress of every pattern at one path.
type states []uint64

func (mt *matcher) root() states {
	s := make(states, len(mt.pats))
	for i := range mt.pats {
		s[i] = mt.pats[i].start()
	}
	return s
}

// child returns the progress at the entry name below a path at s, whether
// the entry is protected (isDir: it is a directory, which some patterns do
// not match), and whether something below it could be. The progress is
// written to buf when it is long enough (the scan reuses one).
func (mt *matcher) child(s states, name string, isDir bool, buf states) (next states, protected, below bool) {
	if len(buf) < len(s) {
		buf = make(states, len(s))
	}
	next = buf[:len(s)]
	for i := range mt.pats {
		p := &mt.pats[i]
		m := p.step(s[i], name)
		next[i] = m
		if p.full(m) && !(p.nonDir && isDir) {
			protected = true
		}
		if p.more(m) {
			below = true
		}
	}
	return next, protected, below
}

// protects reports whether the slash path rel (relative, clean) is
// protected itself or lies below a protected entry, with isDir telling
// whether rel is a directory (its ancestors are).
func (mt *matcher) protects(rel string, isDir bool) bool {
	s := mt.root()
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		var prot bool
		s, prot, _ = mt.child(s, name, isDir || i < len(parts)-1, nil)
		if prot {
			return true
		}
	}
	return false
}

// literals returns the names an entry of a directory at s must have to
// match or lead to a match, when they are all plain names (no wildcard is
// in play there); ok is false otherwise.
func (mt *matcher) literals(s states) (names []string, ok bool) {
	for i := range mt.pats {
		p := &mt.pats[i]
		for j := range p.segs {
			if s[i]&(1<<j) == 0 {
				continue
			}
			if !p.lit[j] {
				return nil, false
			}
			if !slices.Contains(names, p.segs[j]) {
				names = append(names, p.segs[j])
			}
		}
	}
	return names, true
}
