package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/internal/projectfiles"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/skills"
)

// This file wires skills and memory (AGENTS.md files) into `run`.

// skillsFlags declares the flags of skills and memory.
func skillsFlags(fs *flag.FlagSet, f *runFlags) {
	fs.BoolVar(&f.claudeSkills, "claude-skills", false, "also load skills from ~/.claude/skills and the project's .claude/skills")
	fs.BoolVar(&f.noSkills, "no-skills", false, "list no skills")
	fs.BoolVar(&f.noMemory, "no-memory", false, "load no AGENTS.md memory files")
}

// memoryMount is where the agent's file tools find the memory files that
// are not inside --root (see projectfiles).
const memoryMount = projectfiles.MemoryMount

// skillSources, memorySources and projectRoot are the project's files as
// every command that builds its agent finds them.
var (
	skillSources  = projectfiles.SkillSources
	memorySources = projectfiles.MemorySources
	projectRoot   = projectfiles.ProjectRoot
)

// skillsAndMemory builds the run's skills and memory configuration from the
// flags: nil for what is turned off.
func skillsAndMemory(f runFlags, cwd, home, root string, window int) (*skills.Config, *memory.Config, error) {
	var sc *skills.Config
	var mc *memory.Config
	if !f.noSkills {
		sc = &skills.Config{Sources: skillSources(cwd, home, f.claudeSkills), Window: window}
	}
	if !f.noMemory {
		if root != "" {
			abs, err := filepath.Abs(root)
			if err != nil {
				return nil, nil, err
			}
			root = abs
		}
		mc = &memory.Config{Sources: memorySources(cwd, home, root)}
	}
	return sc, mc, nil
}

// projectFiles are the files of a project the user has not trusted that
// go to the model as they are written: its memory files (with the files
// they import) and its skills. They are listed, not blocked: the user
// sees what a repository they cloned puts in front of the model.
type projectFiles struct {
	Memory []listedFile `json:"memory,omitempty"`
	Skills []listedFile `json:"skills,omitempty"`
}

// listedFile is one file of projectFiles.
type listedFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Skill is the name of the skill whose SKILL.md this is.
	Skill string `json:"skill,omitempty"`
	// ImportedBy is the memory file that imports this one.
	ImportedBy string `json:"imported_by,omitempty"`
}

// listProjectFiles finds the project's own memory files and skills in the
// run's configuration (nil for what is off) and, unless there are none or
// the user trusted them as they are now, lists them on w with their sizes
// and returns them. The user's own files (under home) are not listed. With
// trust (--trust-project) they are not listed, and the trust store under
// home remembers them as they are, keyed by the project's directory (its
// repository root, else cwd), until one of them changes.
func listProjectFiles(w io.Writer, trust bool, cwd, home string, sc *skills.Config, mc *memory.Config) *projectFiles {
	var out projectFiles
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	if mc != nil {
		var project []memory.Source
		for _, s := range mc.Sources {
			if home == "" || s.Path != filepath.Join(home, ".deepagents", "AGENTS.md") {
				project = append(project, s)
			}
		}
		// A file that cannot be read fails the first model call with its
		// path; refused ones are warned about there too.
		files, _, _ := memory.Load(project)
		for _, f := range files {
			if f.Missing || f.Refused != "" {
				continue
			}
			out.Memory = append(out.Memory, listedFile{Path: f.Source.Path, Size: size(f.Source.Path)})
			for _, imp := range f.Imports {
				out.Memory = append(out.Memory, listedFile{Path: imp, Size: size(imp), ImportedBy: f.Source.Path})
			}
		}
	}
	if sc != nil {
		var project []skills.Source
		for _, s := range sc.Sources {
			if strings.HasPrefix(s.Label, "project") {
				project = append(project, s)
			}
		}
		for _, sk := range skills.Load("", project...).Skills {
			p := filepath.Join(sk.Dir, skills.FileName)
			out.Skills = append(out.Skills, listedFile{Path: p, Size: size(p), Skill: sk.Name})
		}
	}
	if len(out.Memory) == 0 && len(out.Skills) == 0 {
		return nil
	}
	dir := projectRoot(cwd, home)
	var store config.TrustStore
	if home != "" {
		store = config.UserTrustStore(home)
	}
	key, digest := dir+string(filepath.Separator), out.digest()
	if trust {
		if store.Path == "" {
			return nil // no home directory: trusted for this run only
		}
		if err := store.Add(key, digest); err != nil {
			fmt.Fprintf(w, "deepagents: warning: could not remember that you trust the memory files and skills of %s: %v\n", dir, err)
		} else {
			fmt.Fprintf(w, "deepagents: trusting the memory files and skills of %s as they are now (remembered in %s; a change lists them again)\n", dir, store.Path)
		}
		return nil
	}
	if store.Path != "" {
		if ok, err := store.Trusted(key, digest); err == nil && ok {
			return nil
		}
	}
	fmt.Fprintln(w, "deepagents: this project is not trusted; its memory files and skills below go to the model as they are written:")
	for _, f := range out.Memory {
		if f.ImportedBy != "" {
			fmt.Fprintf(w, "  memory  %s (%s, imported by %s)\n", termText(f.Path), safefile.Size(f.Size), termText(f.ImportedBy))
		} else {
			fmt.Fprintf(w, "  memory  %s (%s)\n", termText(f.Path), safefile.Size(f.Size))
		}
	}
	for _, f := range out.Skills {
		fmt.Fprintf(w, "  skill   %s: %s (%s)\n", termText(f.Skill), termText(f.Path), safefile.Size(f.Size))
	}
	fmt.Fprintln(w, "  (after reading them, --trust-project once stops this list until one of them changes)")
	return &out
}

// maxReviewedFile caps how much of one listed file the digest of a review
// reads: SKILL.md's own cap, above the memory files' 1 MiB.
const maxReviewedFile = 10 << 20

// digest is the SHA-256, in hex, of the listed files as they are now: each
// one's path, then the SHA-256 of its contents (or why it could not be
// read), so that editing, adding or removing any of them changes it.
func (p *projectFiles) digest() string {
	h := sha256.New()
	for _, f := range slices.Concat(p.Memory, p.Skills) {
		var sum string
		if data, err := safefile.Read(f.Path, maxReviewedFile); err != nil {
			sum = "unreadable: " + err.Error()
		} else {
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		}
		fmt.Fprintf(h, "%q %s\n", f.Path, sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}
