package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
)

// DefaultMaxScanEntries bounds the listing of the directory that finds its
// protected paths before a command (see Options.MaxScanEntries).
const DefaultMaxScanEntries = 200_000

// maxProtectedMounts bounds the mounts one command's protected paths take
// (each read-only path and each of its ancestors). Each is an open file
// handed to bubblewrap, which must stay below the 1024 files a process may
// usually have open.
const maxProtectedMounts = 512

// afterScanFactor is how many times MaxScanEntries the listing after a
// command may see, to leave room for what the command made.
const afterScanFactor = 4

// maxNamed bounds the paths a notice names.
const maxNamed = 20

// fileID tells one file from another: its device and inode, and for a
// symbolic link (which is never mounted read-only, see guard) its change
// time, so that a link deleted and made again, which may get the same
// inode, is seen as new.
type fileID struct {
	dev, ino uint64
	ctime    int64
}

// found is a protected path seen by a listing.
type found struct {
	mode fs.FileMode // the type bits
	id   fileID
	// stamp is the size and modification and change times, to see a file
	// changed in place (only without a sandbox, where nothing stops it).
	stamp [3]int64
	link  string // a symbolic link's target
	// git: protected only as a git directory link (a ".git" that is not a
	// directory): when it is a link to a directory, only that directory's
	// gitControl paths are mounted read-only.
	git bool
}

// listing is what a scan of the directory found.
type listing struct {
	found   map[string]found // by slash path relative to the directory
	entries int              // entries looked at
	over    bool             // the scan stopped at its limit
	// unlocked are the directories the scan gave their owner read and
	// search permission again (see unlock); unreadable those it could not
	// read even so.
	unlocked, unreadable []string
}

// unlock gives the owner read and search permission on the directory rel
// and on each directory above it that lacks them, so that the scan can list
// it and look up its entries: a command running as the same user can take
// them away (chmod 111 or 000) to hide what it made below from the check
// after it. It reports whether it changed anything.
func (l *listing) unlock(root *os.Root, rel string) bool {
	changed := false
	parts := []string{"."}
	if rel != "." {
		parts = append(parts, strings.Split(rel, "/")...)
	}
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		fi, err := lstatDir(root, p)
		if err != nil || !fi.IsDir() {
			return changed
		}
		if fi.Mode().Perm()&0o500 == 0o500 {
			continue
		}
		if err := chmodDir(root, p, fi.Mode().Perm()|0o500); err != nil {
			return changed
		}
		changed = true
		if !slices.Contains(l.unlocked, p) {
			l.unlocked = append(l.unlocked, p)
		}
	}
	return changed
}

// cannotRead notes that rel could not be read, even after unlock.
func (l *listing) cannotRead(rel string) {
	if !slices.Contains(l.unreadable, rel) {
		l.unreadable = append(l.unreadable, rel)
	}
}

// lstatDir and chmodDir are Lstat and Chmod in root, the root directory
// itself taken by its path: a directory without search permission cannot
// be looked up in, not even as ".".
func lstatDir(root *os.Root, rel string) (fs.FileInfo, error) {
	if rel == "." {
		return os.Lstat(root.Name())
	}
	return root.Lstat(rel)
}

func chmodDir(root *os.Root, rel string, mode fs.FileMode) error {
	if rel == "." {
		return os.Chmod(root.Name(), mode)
	}
	return root.Chmod(rel, mode)
}

// scan lists the protected paths below root. It reads directories only
// where a protected path could be, never follows a symbolic link, and stops
// after limit entries (over is then set). With deep, it also lists
// everything below a protected directory (each entry there is protected by
// it); otherwise it does not enter one. Directories that cannot be read
// (vanished, no permission) are left out.
func (mt *matcher) scan(root *os.Root, deep bool, limit int) listing {
	type dir struct {
		rel    string
		st     states
		inside bool // below a protected directory (deep only)
	}
	l := listing{found: map[string]found{}}
	stack := []dir{{rel: ".", st: mt.root()}}
	// literals are the names to look up in d instead of listing it (see
	// matcher.literals); not below a protected directory, where everything
	// is listed.
	literals := func(d dir) ([]string, bool) {
		if d.inside {
			return nil, false
		}
		return mt.literals(d.st)
	}
	buf := make(states, len(mt.pats))
	// visit handles the entry name of d; false when the limit is reached.
	visit := func(d dir, name string, isDir bool) bool {
		l.entries++
		if l.entries > limit {
			l.over = true
			return false
		}
		if d.inside {
			rel := path.Join(d.rel, name)
			mt.record(root, rel, false, &l)
			if isDir {
				stack = append(stack, dir{rel: rel, inside: true})
			}
			return true
		}
		st, prot, below := mt.child(d.st, name, isDir, buf)
		switch {
		case prot:
			rel := path.Join(d.rel, name)
			mt.record(root, rel, gitOnly(mt, st, isDir), &l)
			if deep && isDir {
				stack = append(stack, dir{rel: rel, inside: true})
			}
		case below && isDir:
			stack = append(stack, dir{rel: path.Join(d.rel, name), st: slices.Clone(st)})
		}
		return true
	}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if names, ok := literals(d); ok {
			// Only plain names can match here: look them up rather than
			// list the directory.
			for _, name := range names {
				fi, err := root.Lstat(path.Join(d.rel, name))
				if errors.Is(err, fs.ErrPermission) && l.unlock(root, d.rel) {
					fi, err = root.Lstat(path.Join(d.rel, name))
				}
				if errors.Is(err, fs.ErrPermission) {
					l.cannotRead(d.rel)
				}
				if err == nil && !visit(d, name, fi.IsDir()) {
					return l
				}
			}
			continue
		}
		f, err := openDir(root, d.rel)
		if errors.Is(err, fs.ErrPermission) && l.unlock(root, d.rel) {
			f, err = openDir(root, d.rel)
		}
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				l.cannotRead(d.rel)
			}
			continue
		}
		for {
			ents, err := f.ReadDir(512)
			for _, e := range ents {
				if !visit(d, e.Name(), e.Type().IsDir()) {
					f.Close()
					return l
				}
			}
			if err != nil || len(ents) == 0 {
				break
			}
		}
		f.Close()
	}
	return l
}

// gitOnly reports whether only patterns naming a git directory protect the
// entry at st.
func gitOnly(mt *matcher, st states, isDir bool) bool {
	for i := range mt.pats {
		if p := &mt.pats[i]; p.full(st[i]) && !p.nonDir {
			return false
		}
	}
	return !isDir
}

func (mt *matcher) record(root *os.Root, rel string, git bool, l *listing) {
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrPermission) && l.unlock(root, path.Dir(rel)) {
		fi, err = root.Lstat(rel)
	}
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			l.cannotRead(rel)
		}
		return
	}
	f := found{mode: fi.Mode().Type(), id: identity(fi), git: git}
	f.stamp = [3]int64{fi.Size(), fi.ModTime().UnixNano(), f.id.ctime}
	if f.mode&fs.ModeSymlink != 0 {
		f.link, _ = root.Readlink(rel)
	} else {
		// Only a link's change time is compared (see fileID).
		f.id.ctime = 0
	}
	l.found[rel] = f
}

// sameFile reports whether a and b are the same file, unchanged for a
// symbolic link.
func sameFile(a, b found) bool {
	return a.id == b.id && a.mode == b.mode && a.link == b.link
}

// ErrTooManyEntries is the error of a command refused because the directory
// holds more entries than Options.MaxScanEntries, so its protected paths
// cannot be checked.
var ErrTooManyEntries = errors.New("too many entries to check the protected paths")

// guard is the protection of one command's run: the listing before it,
// the read-only mounts (sandboxed), and the check after it.
type guard struct {
	mt        *matcher
	dir       string // the directory, absolute
	root      *os.Root
	sandboxed bool
	limit     int
	before    listing
	// mounted: the protected paths mounted read-only (or below one), which
	// the command cannot have changed.
	mounted map[string]bool
	args    []string   // bubblewrap's mount arguments
	files   []*os.File // the files they name, from descriptor 4 on
}

// newGuard lists the protected paths of dir before a command and, when
// sandboxed, prepares the mounts that make them read-only. It refuses the
// command (fails closed) when the directory is too large to list or holds
// too many protected paths to mount.
func (r *Runner) newGuard(dir string) (*guard, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	g := &guard{mt: r.match, dir: dir, root: root, sandboxed: r.Sandboxed(), limit: r.opts.MaxScanEntries}
	g.before = g.mt.scan(root, !g.sandboxed, g.limit)
	if g.before.over {
		root.Close()
		return nil, fmt.Errorf("%w: the directory holds more than %d files and directories, too many to check its protected paths (settings, instructions, version-control configuration) before and after a command, so commands are refused here; run the agent on a smaller directory, or raise the limit (sandbox.Options.MaxScanEntries)", ErrTooManyEntries, g.limit)
	}
	if g.sandboxed {
		if err := g.planMounts(); err != nil {
			g.close()
			return nil, err
		}
	}
	return g, nil
}

// close releases what the guard holds (the files are closed already once
// the command has started).
func (g *guard) close() {
	g.closeFiles()
	g.root.Close()
}

func (g *guard) closeFiles() {
	for _, f := range g.files {
		f.Close()
	}
	g.files = nil
}

// mountArgs and mountFiles are nil on a nil guard.
func (g *guard) mountArgs() []string {
	if g == nil {
		return nil
	}
	return g.args
}

func (g *guard) mountFiles() []*os.File {
	if g == nil {
		return nil
	}
	return g.files
}

// covered reports whether rel is a mounted protected path or lies below
// one.
func (g *guard) covered(rel string) bool {
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if g.mounted[p] {
			return true
		}
	}
	return false
}

// report collects what the check after a command did, for the notice.
type report struct {
	removed, restored, changed, deleted, failed []string
	// unlocked are directories the command had made unreadable, given back
	// their permissions to check them; unreadable could not be read.
	unlocked, unreadable []string
	unchecked            bool
}

// after checks the protected paths once the command has ended: what it made
// at a protected path (a new file, directory or link, or one put in place
// of a link) is removed, links it removed or replaced are made again.
// What the host process itself holds open for writing (the thread
// database's journal, say) is left alone, and so are the read-only mounted
// paths, which the command could not touch. Without a sandbox, what was
// changed or deleted in place is only reported. It returns the notice for
// the model, or "" when there is nothing to say, and what the person must
// hear of (see Options.Unguarded).
func (g *guard) after() (string, Unguarded) {
	post := g.mt.scan(g.root, !g.sandboxed, afterScanFactor*g.limit)
	var rep report
	rep.unchecked = post.over
	rep.unlocked, rep.unreadable = post.unlocked, post.unreadable
	var held map[fileID]bool
	isHeld := func(id fileID) bool {
		if held == nil {
			held = heldFiles()
		}
		id.ctime = 0
		return held[id]
	}
	gone := map[string]bool{} // paths removed, whose descendants need nothing more
	under := func(rel string) bool {
		for p := path.Dir(rel); p != "."; p = path.Dir(p) {
			if gone[p] {
				return true
			}
		}
		return false
	}
	for _, rel := range slices.Sorted(maps.Keys(post.found)) {
		p := post.found[rel]
		q, existed := g.before.found[rel]
		if under(rel) || g.sandboxed && g.covered(rel) {
			continue
		}
		if existed && sameFile(q, p) {
			if !g.sandboxed && q.mode.IsRegular() && q.stamp != p.stamp && !isHeld(p.id) {
				rep.changed = append(rep.changed, rel)
			}
			continue
		}
		if p.mode&fs.ModeSymlink == 0 && isHeld(p.id) {
			continue
		}
		kept, err := g.remove(rel, isHeld)
		switch {
		case err != nil:
			rep.failed = append(rep.failed, fmt.Sprintf("%s (%v)", rel, err))
			continue
		case kept:
			rep.removed = append(rep.removed, rel+" (in part: the host process has files open in it)")
		default:
			rep.removed = append(rep.removed, rel)
			gone[rel] = true
		}
		if existed && q.mode&fs.ModeSymlink != 0 {
			g.restore(rel, q.link, &rep)
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(g.before.found)) {
		q := g.before.found[rel]
		if _, ok := post.found[rel]; ok || post.over || g.sandboxed && g.covered(rel) {
			continue
		}
		if q.mode&fs.ModeSymlink != 0 {
			// A link is not mounted: the command could remove it, or put
			// in its place something no pattern matches (a directory
			// instead of a link named .git).
			if _, err := g.root.Lstat(path.Dir(rel)); err == nil {
				if _, err := g.root.Lstat(rel); err == nil {
					if kept, err := g.remove(rel, isHeld); err != nil || kept {
						rep.failed = append(rep.failed, fmt.Sprintf("%s (in place of a link: %v)", rel, err))
						continue
					}
					rep.removed = append(rep.removed, rel)
				}
				g.restore(rel, q.link, &rep)
				continue
			}
		}
		if !g.sandboxed && !under(rel) && !isHeld(q.id) {
			rep.deleted = append(rep.deleted, rel)
		}
	}
	unguarded := Unguarded{Paths: slices.Concat(rep.changed, rep.deleted, rep.failed, rep.unreadable), Unchecked: rep.unchecked}
	return rep.notice(g.sandboxed, g.limit), unguarded
}

// Unguarded is what a command did to protected paths that the runner
// neither stopped nor undid (see Options.Unguarded).
type Unguarded struct {
	// Paths are the protected paths, relative to the directory, that the
	// command changed or deleted (only possible without a sandbox), that
	// could not be removed or put back, or that could not be read to be
	// checked.
	Paths []string
	// Unchecked says the command left too many files and directories to
	// check everything it made; commands are refused from then on.
	Unchecked bool
}

// restore makes the link rel -> target again.
func (g *guard) restore(rel, target string, rep *report) {
	err := g.root.Symlink(target, rel)
	if errors.Is(err, fs.ErrExist) {
		if now, rerr := g.root.Readlink(rel); rerr == nil && now == target {
			err = nil
		}
	}
	if err != nil {
		rep.failed = append(rep.failed, fmt.Sprintf("%s (could not restore the link to %s: %v)", rel, target, err))
		return
	}
	rep.restored = append(rep.restored, rel+" -> "+target)
}

// remove deletes rel and everything below it, except files the host holds
// open for writing (kept reports that some were). Directories the command
// made unwritable are made writable first.
func (g *guard) remove(rel string, held func(fileID) bool) (kept bool, err error) {
	fi, err := g.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if held(identity(fi)) {
		return true, nil
	}
	if fi.IsDir() {
		if fi.Mode().Perm()&0o700 != 0o700 {
			_ = g.root.Chmod(rel, fi.Mode().Perm()|0o700)
		}
		f, err := g.root.Open(rel)
		if err != nil {
			return false, err
		}
		for {
			ents, rerr := f.ReadDir(512)
			for _, e := range ents {
				k, err := g.remove(path.Join(rel, e.Name()), held)
				if err != nil {
					f.Close()
					return kept, err
				}
				kept = kept || k
			}
			if rerr != nil || len(ents) == 0 {
				break
			}
		}
		f.Close()
		if kept {
			return true, nil
		}
	}
	err = g.root.Remove(rel)
	if errors.Is(err, fs.ErrPermission) {
		// The command may have made the directory holding rel unwritable.
		dir := path.Dir(rel)
		if fi, serr := lstatDir(g.root, dir); serr == nil && fi.IsDir() && fi.Mode().Perm()&0o700 != 0o700 &&
			chmodDir(g.root, dir, fi.Mode().Perm()|0o700) == nil {
			err = g.root.Remove(rel)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return kept, err
	}
	return kept, nil
}

// notice is the text the model reads about the check, "" when there is
// nothing to say.
func (rep *report) notice(sandboxed bool, limit int) string {
	var parts []string
	if len(rep.removed) > 0 {
		parts = append(parts, "the command created "+named(rep.removed)+" at protected paths; "+
			"they were removed")
	}
	if len(rep.restored) > 0 {
		parts = append(parts, "the protected links "+named(rep.restored)+" were changed or removed and were restored")
	}
	if len(rep.failed) > 0 {
		parts = append(parts, "WARNING: the command changed protected paths that could not be put back: "+named(rep.failed))
	}
	if len(rep.unlocked) > 0 {
		parts = append(parts, "the command took read or search permission away from "+named(rep.unlocked)+
			", which would have hidden what it made below from this check; it was given back")
	}
	if len(rep.unreadable) > 0 {
		parts = append(parts, "WARNING: "+named(rep.unreadable)+" could not be read, so what the command made there could not be checked")
	}
	if len(rep.changed)+len(rep.deleted) > 0 {
		var what []string
		if len(rep.changed) > 0 {
			what = append(what, "changed "+named(rep.changed))
		}
		if len(rep.deleted) > 0 {
			what = append(what, "deleted "+named(rep.deleted))
		}
		parts = append(parts, "WARNING: without a sandbox nothing stops a command from changing protected paths, and this one "+
			strings.Join(what, " and "))
	}
	if rep.unchecked {
		parts = append(parts, fmt.Sprintf("WARNING: the command left more than %d files and directories where protected paths could be, "+
			"too many to check what it did to them; commands are refused until there are fewer than %d", afterScanFactor*limit, limit))
	}
	if len(parts) == 0 {
		return ""
	}
	how := "Protected paths (version-control configuration and hooks, agent settings, instructions and skills, MCP configuration, " +
		"the thread database) can be read but not created, changed, renamed or deleted by commands"
	if !sandboxed {
		how += "; without a sandbox that is checked only after the command"
	}
	return strings.Join(parts, "; ") + ". " + how + ": ask the user to change them."
}

// named lists paths for a notice, at most maxNamed of them.
func named(paths []string) string {
	if len(paths) <= maxNamed {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(paths)-maxNamed)
}
