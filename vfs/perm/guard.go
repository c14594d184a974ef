package perm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/deepagents-go/deepagents/vfs"
)

// This file guards the control plane: the files on disk that decide how
// later runs behave (git's repository data, the thread database, agent
// files, skills, memory files, config files). The agent may read them; a
// Guard says which of them it may never change, and which only once a
// person approved the call. Unlike the rules above, a Guard looks at the
// real place a path leads to: a symbolic link inside the directory that
// points at .git/config, or a directory link to .deepagents, is judged as
// what it reaches, and as the names it goes through.

// Level is how far the agent may change a protected place.
type Level uint8

const (
	// Free places may be changed like any other.
	Free Level = iota
	// Ask places change only in a call a person approved
	// (Guard.Approved).
	Ask
	// Never places are not changed by the agent, approved or not.
	Never
)

func (l Level) String() string {
	switch l {
	case Free:
		return "free"
	case Ask:
		return "ask"
	case Never:
		return "never"
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Zone is one protected place on disk: the host paths below Dir that Glob
// matches. Paths are compared without regard to letter case, so a disk that
// ignores case cannot be used to get around a zone.
type Zone struct {
	// Dir is an absolute host directory ("/" for any place on the disk).
	Dir string
	// Glob is a doublestar pattern of slash-separated paths relative to
	// Dir: "**/.git/**" (every .git directory below Dir, itself included),
	// "trusted.json", "skills/**".
	Glob string
	// Level is how far the agent may change what the zone holds.
	Level Level
	// Group names the kind of place, for the user's loosening of the Ask
	// zones ("memory", "skills", ...); see the CLI's [protect] table.
	Group string
	// What says what the place is, for the person and the model: "git's
	// repository data (.git)".
	What string
	// Report asks that every change of the place be reported, whatever its
	// level.
	Report bool
}

// matches reports whether the host path h (slash-separated, folded)
// is in the zone.
func (z *zone) matches(h string) bool {
	var rel string
	switch {
	case z.dir == "/":
		rel = strings.TrimPrefix(h, "/")
	case h == z.dir:
	case strings.HasPrefix(h, z.dir+"/"):
		rel = h[len(z.dir)+1:]
	default:
		return false
	}
	ok, err := doublestar.Match(z.glob, rel)
	return ok && err == nil
}

type zone struct {
	Zone
	dir, glob string // folded (see fold), slash-separated
}

// Mount says where a virtual directory (or file) of the agent's files is on
// disk, so that the Guard can tell which host paths a virtual path reaches.
type Mount struct {
	// Prefix is the virtual path: "/" for the root of the agent's files, a
	// directory such as "/memories", or a file such as
	// "/memory/user/AGENTS.md".
	Prefix string
	// Host is the absolute host path Prefix stands for; empty for files
	// that are not on disk (a store in the thread database).
	Host string
	// Links says that the backend follows symbolic links below Host the
	// way vfs/osfs does (relative links, confined to Host): the Guard
	// follows them too. Without it the host path is taken as it is.
	Links bool
}

// Guard decides whether the agent may change a path of its files: the
// first zone (in the order given) that one of the host paths reaches
// matches decides. Create it with NewGuard; it is safe for concurrent use.
type Guard struct {
	// Approved reports whether the change running with ctx was approved by
	// a person (agent.Approved, for the tool calls of an agent); an Ask
	// place is changed only then. Nil: no change was approved.
	Approved func(ctx context.Context) bool

	zones  []zone
	mounts []Mount // longest prefix first
}

// NewGuard returns a guard of zones over the mounts. Zones are tried in
// order for each host path a change reaches, and the first that matches
// decides for that path; a change reaching several host paths (through
// symbolic links) takes the strictest of their levels.
func NewGuard(zones []Zone, mounts []Mount) (*Guard, error) {
	g := &Guard{}
	for _, z := range zones {
		if !filepath.IsAbs(z.Dir) {
			return nil, fmt.Errorf("protected place %q: the directory %q is not absolute", z.What, z.Dir)
		}
		glob := foldCase(z.Glob)
		if !doublestar.ValidatePattern(glob) {
			return nil, fmt.Errorf("protected place %q: %q is not a valid glob", z.What, z.Glob)
		}
		g.zones = append(g.zones, zone{Zone: z, dir: fold(filepath.Clean(z.Dir)), glob: glob})
	}
	for _, m := range mounts {
		p, err := vfs.Clean(m.Prefix)
		if err != nil {
			return nil, fmt.Errorf("mount %q: %w", m.Prefix, err)
		}
		if m.Host != "" && !filepath.IsAbs(m.Host) {
			return nil, fmt.Errorf("mount %s: %q is not an absolute path", p, m.Host)
		}
		m.Prefix = p
		if m.Host != "" {
			m.Host = filepath.Clean(m.Host)
		}
		g.mounts = append(g.mounts, m)
	}
	slices.SortStableFunc(g.mounts, func(a, b Mount) int { return len(b.Prefix) - len(a.Prefix) })
	return g, nil
}

// fold is a host path as zones compare it: each letter replaced by the
// least of the letters Unicode's simple case folding equates with it, so
// that every spelling a case-insensitive disk takes for the same name
// compares equal ("ſ" and "S" for "s", the Kelvin sign for "k"), not only
// the upper and lower case of ASCII.
func fold(h string) string { return foldCase(filepath.ToSlash(h)) }

// foldCase replaces each rune of s by the least rune of its case-folding
// orbit (see unicode.SimpleFold).
func foldCase(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}

// Finding is what a Guard says about changing one path.
type Finding struct {
	// Level is the strictest level of the places the change reaches.
	Level Level
	// What says what the deciding place is; empty when no zone matched.
	What string
	// Report is set when a place the change reaches asks to be reported.
	Report bool
	// Linked is set when the deciding host path is not the path as
	// written: the change reaches it through a symbolic link.
	Linked bool
}

// CheckWrite says what writing (or editing) the file at the virtual path p
// means, following symbolic links to the file written as the disk backend
// does.
func (g *Guard) CheckWrite(p string) (Finding, error) { return g.check(p, false) }

// CheckDelete says what deleting the virtual path p means: a link itself
// (not what it points to) is deleted, and a directory with everything in it,
// so every name below it counts.
func (g *Guard) CheckDelete(p string) (Finding, error) { return g.check(p, true) }

func (g *Guard) check(p string, del bool) (Finding, error) {
	p, err := vfs.Clean(p)
	if err != nil {
		return Finding{}, err
	}
	m := g.mountOf(p)
	if m == nil || m.Host == "" {
		return Finding{}, nil
	}
	rel := strings.TrimPrefix(p, m.Prefix)
	var hosts []string
	if m.Links {
		hosts, err = resolve(m.Host, rel, !del)
		if err != nil {
			return Finding{}, err
		}
	} else {
		hosts = []string{filepath.Join(m.Host, filepath.FromSlash(rel))}
	}
	var f Finding
	for i, h := range hosts {
		g.judge(&f, h, i > 0)
	}
	if del && f.Level < Never {
		// A directory goes with everything in it, links included but not
		// followed, as the disk backend deletes it.
		last := hosts[len(hosts)-1]
		if fi, err := os.Lstat(last); err == nil && fi.IsDir() {
			_ = filepath.WalkDir(last, func(h string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil // what cannot be read cannot be deleted either
				}
				g.judge(&f, h, false)
				if f.Level == Never {
					return filepath.SkipAll
				}
				return nil
			})
		}
	}
	return f, nil
}

// judge raises f by the zone that decides the host path h.
func (g *Guard) judge(f *Finding, h string, linked bool) {
	fh := fold(h)
	for i := range g.zones {
		z := &g.zones[i]
		if !z.matches(fh) {
			continue
		}
		if z.Report {
			f.Report = true
		}
		if z.Level > f.Level || f.What == "" && z.Level == f.Level {
			f.Level, f.What, f.Linked = z.Level, z.What, linked
		}
		return
	}
}

// mountOf returns the mount that serves the clean virtual path p.
func (g *Guard) mountOf(p string) *Mount {
	for i := range g.mounts {
		m := &g.mounts[i]
		if m.Prefix == "/" || p == m.Prefix || strings.HasPrefix(p, m.Prefix+"/") {
			return m
		}
	}
	return nil
}

// maxLinks bounds the symbolic links one path may go through, as the
// kernel does.
const maxLinks = 40

// errEscapes is a path that leads out of its mount's directory.
var errEscapes = errors.New("it leads outside the directory through a symbolic link")

// resolve returns the host paths that the path rel (slash-separated,
// clean, below dir) reaches: as written, then as it reads after each
// symbolic link is followed, the last being the file itself. Links are
// followed as os.Root follows them: relative targets only, never above dir.
// With follow false the last name is not followed (a delete removes the
// link itself). Once a name does not exist (or is not a directory), the
// rest is taken as written, ".." included, as creating the missing
// directories would make it.
func resolve(dir, rel string, follow bool) ([]string, error) {
	queue := splitPath(rel)
	hosts := []string{filepath.Join(dir, filepath.FromSlash(rel))}
	var done []string
	links := 0
	lexical := false
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == ".." {
			if len(done) == 0 {
				return nil, errEscapes
			}
			done = done[:len(done)-1]
			continue
		}
		cur := append(slices.Clip(done), c)
		if lexical || len(queue) == 0 && !follow {
			done = cur
			continue
		}
		host := filepath.Join(dir, filepath.Join(cur...))
		fi, err := os.Lstat(host)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			lexical = true
			done = cur
			continue
		case err != nil:
			return nil, err
		case fi.Mode()&fs.ModeSymlink == 0:
			done = cur
			continue
		}
		if links++; links > maxLinks {
			return nil, syscall.ELOOP
		}
		t, err := os.Readlink(host)
		if err != nil {
			return nil, err
		}
		if t == "" || filepath.IsAbs(t) || filepath.VolumeName(t) != "" {
			return nil, errEscapes
		}
		queue = append(splitPath(filepath.ToSlash(t)), queue...)
		// The path as it now reads names a place too: a link named
		// AGENTS.md makes what it points to a memory file.
		if now, ok := lexicalJoin(done, queue); ok {
			hosts = append(hosts, filepath.Join(dir, now))
		}
	}
	return append(hosts, filepath.Join(dir, filepath.Join(done...))), nil
}

// splitPath splits a slash-separated path into its names, without empty
// ones and ".".
func splitPath(p string) []string {
	var out []string
	for s := range strings.SplitSeq(p, "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}

// lexicalJoin joins done and rest, applying ".." as written; ok is false
// when it climbs above the start.
func lexicalJoin(done, rest []string) (string, bool) {
	out := slices.Clone(done)
	for _, c := range rest {
		if c == ".." {
			if len(out) == 0 {
				return "", false
			}
			out = out[:len(out)-1]
			continue
		}
		out = append(out, c)
	}
	return filepath.Join(out...), true
}

// denial is the error of a change the guard refuses, or nil.
func (g *Guard) denial(ctx context.Context, op, p string, f Finding, err error) error {
	if err != nil {
		if errors.Is(err, vfs.ErrInvalidPath) {
			return err
		}
		return &vfs.DeniedError{Op: op, Path: p, Reason: "cannot tell where this path leads: " + err.Error()}
	}
	this := "this is "
	if f.Linked {
		this = "this path leads, through a symbolic link, to "
	}
	switch {
	case f.Level == Never:
		return &vfs.DeniedError{Op: op, Path: p, Reason: this + f.What + ", which the agent may read but never change"}
	case f.Level == Ask && (g.Approved == nil || !g.Approved(ctx)):
		return &vfs.DeniedError{Op: op, Path: p, Reason: this + f.What + ": changing it needs a person's approval, and this call did not have it"}
	}
	return nil
}

// Wrap returns b with every write, edit and delete checked by the guard
// (reads pass): a change of a Never place is refused, and one of an Ask
// place unless the change was approved (Guard.Approved). The refusal is a
// *vfs.DeniedError, which the file tools answer as an error result.
func (g *Guard) Wrap(b vfs.Backend) vfs.Backend {
	if b == nil {
		return nil
	}
	return &guardedFS{inner: b, g: g}
}

// guardedFS is a backend under a Guard.
type guardedFS struct {
	inner vfs.Backend
	g     *Guard
}

// Unwrap returns the guarded backend.
func (b *guardedFS) Unwrap() vfs.Backend { return b.inner }

func (b *guardedFS) Stat(ctx context.Context, path string) (vfs.Entry, error) {
	return b.inner.Stat(ctx, path)
}

func (b *guardedFS) Read(ctx context.Context, path string) (string, error) {
	return b.inner.Read(ctx, path)
}

// Open implements vfs.Opener, streaming when the wrapped backend can.
func (b *guardedFS) Open(ctx context.Context, path string) (io.ReadCloser, vfs.Entry, error) {
	return vfs.Open(ctx, b.inner, path)
}

func (b *guardedFS) List(ctx context.Context, dir string) ([]vfs.Entry, error) {
	return b.inner.List(ctx, dir)
}

func (b *guardedFS) Walk(ctx context.Context, dir string) iter.Seq2[vfs.Entry, error] {
	return b.inner.Walk(ctx, dir)
}

func (b *guardedFS) Write(ctx context.Context, path, content string) error {
	f, err := b.g.CheckWrite(path)
	if err := b.g.denial(ctx, "write", path, f, err); err != nil {
		return err
	}
	return b.inner.Write(ctx, path, content)
}

// Update implements vfs.Updater through the wrapped backend.
func (b *guardedFS) Update(ctx context.Context, path string, fn vfs.UpdateFunc) error {
	f, err := b.g.CheckWrite(path)
	if err := b.g.denial(ctx, "edit", path, f, err); err != nil {
		return err
	}
	return vfs.Update(ctx, b.inner, path, fn)
}

func (b *guardedFS) Delete(ctx context.Context, path string) (int, error) {
	f, err := b.g.CheckDelete(path)
	if err := b.g.denial(ctx, "delete", path, f, err); err != nil {
		return 0, err
	}
	return b.inner.Delete(ctx, path)
}

// Target says which path a call changes, from its arguments: the virtual
// path, and whether the call deletes it (else it writes the file there); ok
// is false when the call changes no file or its arguments cannot be read.
type Target func(args json.RawMessage) (path string, del bool, ok bool)

// Verdict is what the guard says about one call that changes a file: the
// agent's approval check (approve.Check) answers with it.
type Verdict struct {
	// Wait makes the call wait for a person's decision, for Reason.
	Wait   bool
	Reason string
	// Report is told once the call ran: a change the user must hear about.
	Report string
	// Changes is the path the call changes, when it waits or is reported.
	Changes string
}

// CheckCall says what the guard makes of a call whose changed path target
// reads from its arguments args: a call that changes an Ask place waits
// for a person, saying why; one that changes a place that asks to be
// reported is reported once it ran, and counted among the run's changed
// files. A Never place does not make the call wait:
// no approval could let it through, and the backend refuses it.
func (g *Guard) CheckCall(target Target, args json.RawMessage) Verdict {
	p, del, ok := target(args)
	if !ok {
		return Verdict{}
	}
	cp, err := vfs.Clean(p)
	if err != nil {
		return Verdict{}
	}
	f, err := g.check(cp, del)
	if err != nil {
		return Verdict{}
	}
	var v Verdict
	verb := "Writing"
	if del {
		verb = "Deleting"
	}
	via := ""
	if f.Linked {
		via = ", through a symbolic link,"
	}
	if f.Level == Ask {
		v.Wait = true
		v.Reason = fmt.Sprintf("%s %s changes%s %s, so it waits for your approval", verb, cp, via, f.What)
		v.Changes = cp
	}
	if f.Report {
		v.Report = fmt.Sprintf("it changed %s: %s", cp, f.What)
		if f.Linked {
			v.Report = fmt.Sprintf("it changed %s, which leads through a symbolic link to %s", cp, f.What)
		}
		v.Changes = cp
	}
	return v
}
