package skills

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/vfs"
)

// Source is a directory whose sub-directories holding a SKILL.md are
// skills. Label names it in the prompt and in warnings ("user",
// "project").
type Source struct {
	Label string
	Dir   string
}

// Set is the skills of all sources after overriding, sorted by name, and
// the warnings loading them gave (a skipped skill, a cut description, an
// unreadable file), in source order.
type Set struct {
	Skills   []Skill
	Warnings []string
	// Sources are the sources that were read, in order.
	Sources []Source
}

// Lookup returns the skill called name.
func (s *Set) Lookup(name string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	i, ok := slices.BinarySearchFunc(s.Skills, name, func(sk Skill, n string) int { return strings.Compare(sk.Name, n) })
	if !ok {
		return Skill{}, false
	}
	return s.Skills[i], true
}

// DefaultPrefix is where the agent's file tools find the skills: the
// SKILL.md of skill NAME is at /skills/NAME/SKILL.md.
const DefaultPrefix = "/skills/"

// Load reads every source in order: a later source's skill replaces an
// earlier one of the same name. A source directory that does not exist is
// skipped silently; every other problem is a warning in the Set, never an
// error, so one broken skill does not stop an agent. prefix is where the
// agent reads the skills (DefaultPrefix when empty).
func Load(prefix string, sources ...Source) *Set {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	set := &Set{Sources: slices.Clone(sources)}
	byName := map[string]Skill{}
	for _, src := range sources {
		entries, err := os.ReadDir(src.Dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				set.Warnings = append(set.Warnings, fmt.Sprintf("%s skills (%s): %v", src.Label, src.Dir, err))
			}
			continue
		}
		for _, e := range entries {
			if !isDirEntry(src.Dir, e) || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(src.Dir, e.Name())
			file := filepath.Join(dir, FileName)
			data, err := safefile.Read(file, MaxFileSize)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					set.Warnings = append(set.Warnings, fmt.Sprintf("%s: %v; the skill was not loaded", file, safefile.WithoutPath(err, file)))
				}
				continue
			}
			h, err := ParseFile(data)
			if err != nil {
				set.Warnings = append(set.Warnings, fmt.Sprintf("%s: %v; the skill was not loaded", file, err))
				continue
			}
			sk, warns, ok := Build(h, e.Name())
			for _, w := range warns {
				set.Warnings = append(set.Warnings, file+": "+w)
			}
			if !ok {
				continue
			}
			sk.Source, sk.Dir = src.Label, dir
			sk.Path = prefix + sk.Name + "/" + FileName
			byName[sk.Name] = sk
		}
	}
	for _, name := range sortedNames(byName) {
		set.Skills = append(set.Skills, byName[name])
	}
	return set
}

// isDirEntry reports whether e is a directory, following a symbolic link.
func isDirEntry(parent string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(parent, e.Name()))
	return err == nil && st.IsDir()
}

// Loader keeps the skills of its sources and reads them again only when
// their files changed: Current stats the source directories, their
// sub-directories and each SKILL.md (size and modification time) and
// returns the same *Set as long as that fingerprint is unchanged. It is
// safe for concurrent use.
type Loader struct {
	prefix  string
	sources []Source

	mu  sync.Mutex
	fp  string
	set *Set

	fsOnce sync.Once
	fs     *FS

	// fixed: a snapshot, whose set and files (mem) never change.
	fixed bool
	mem   vfs.Backend
}

// FS returns the read-only backend of the loader's skills (one per
// loader), to mount at Prefix.
func (l *Loader) FS() *FS {
	l.fsOnce.Do(func() { l.fs = NewFS(l) })
	return l.fs
}

// NewLoader returns a loader of sources; prefix is the directory where the
// agent reads the skills (DefaultPrefix when empty). It fails on a prefix
// that is not an absolute directory path below the root.
func NewLoader(prefix string, sources ...Source) (*Loader, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	p, err := vfs.Clean(prefix)
	if err != nil || p == "/" || !strings.HasPrefix(prefix, "/") {
		return nil, fmt.Errorf("skills: the prefix %q is not a directory below the root, such as %s", prefix, DefaultPrefix)
	}
	return &Loader{prefix: p + "/", sources: slices.Clone(sources)}, nil
}

// Prefix is where the agent reads the skills.
func (l *Loader) Prefix() string { return l.prefix }

// Current returns the skills as they are on disk now, re-reading the
// sources only when their fingerprint changed since the last call.
func (l *Loader) Current() *Set {
	if l.fixed {
		return l.set
	}
	fp := fingerprint(l.sources)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set != nil && fp == l.fp {
		return l.set
	}
	l.set, l.fp = Load(l.prefix, l.sources...), fp
	return l.set
}

// last returns the set of the latest Current call without checking the
// sources again (Current when there is none yet): the backend uses it for
// every file operation, and the middleware refreshes the set before each
// model call.
func (l *Loader) last() *Set {
	l.mu.Lock()
	set := l.set
	l.mu.Unlock()
	if set == nil {
		return l.Current()
	}
	return set
}

// fingerprint hashes what decides a load: for each source, whether it
// exists and its entries; for each entry, its SKILL.md's size and
// modification time.
func fingerprint(sources []Source) string {
	h := sha256.New()
	var buf [8]byte
	num := func(n int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		h.Write(buf[:])
	}
	for _, src := range sources {
		h.Write([]byte(src.Dir))
		h.Write([]byte{0})
		entries, err := os.ReadDir(src.Dir)
		if err != nil {
			h.Write([]byte("!" + err.Error()))
			continue
		}
		// os.ReadDir returns the entries sorted by name.
		for _, e := range entries {
			n := e.Name()
			h.Write([]byte(n))
			h.Write([]byte{0})
			st, err := os.Stat(filepath.Join(src.Dir, n, FileName))
			if err != nil {
				h.Write([]byte{1})
				continue
			}
			num(st.Size())
			num(st.ModTime().UnixNano())
			num(int64(st.Mode()))
		}
		h.Write([]byte{2})
	}
	return hex.EncodeToString(h.Sum(nil))
}
