package main

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"

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
// are not inside --root: the user's at /memory/user/AGENTS.md, the
// project's at /memory/project/ and their path from the repository root.
const memoryMount = "/memory/"

// skillSources returns the default skill sources, lowest precedence first:
// the user's (~/.deepagents/skills), then the project's
// (.deepagents/skills in the working directory). With claude, each level
// also reads .claude/skills, just below the deepagents directory of the
// same level.
func skillSources(cwd, home string, claude bool) []skills.Source {
	var out []skills.Source
	if home != "" {
		if claude {
			out = append(out, skills.Source{Label: "user (.claude)", Dir: filepath.Join(home, ".claude", "skills")})
		}
		out = append(out, skills.Source{Label: "user", Dir: filepath.Join(home, ".deepagents", "skills")})
	}
	if claude {
		out = append(out, skills.Source{Label: "project (.claude)", Dir: filepath.Join(cwd, ".claude", "skills")})
	}
	return append(out, skills.Source{Label: "project", Dir: filepath.Join(cwd, ".deepagents", "skills")})
}

// repoRoot returns the nearest directory at or above dir that holds .git,
// or "" when there is none.
func repoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// memorySources returns the default memory files, farthest first: the
// user's ~/.deepagents/AGENTS.md; each AGENTS.md from the repository root
// (the nearest directory above holding .git, else the working directory)
// down to the working directory; and the project's .deepagents/AGENTS.md.
// The user's and the .deepagents one are listed even when missing, so the
// agent knows where to write; the others only when they exist.
//
// Each file gets the path the agent edits it at: its path inside root when
// root (--root) holds it, else a mount under /memory/.
func memorySources(cwd, home, root string) []memory.Source {
	top := repoRoot(cwd)
	if top == "" {
		top = cwd
	}
	var out []memory.Source
	add := func(path, show string) {
		s := memory.Source{Path: path, Show: show}
		if root != "" {
			if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
				s.Show, s.InBackend = "/"+filepath.ToSlash(rel), true
			}
		}
		out = append(out, s)
	}
	if home != "" {
		add(filepath.Join(home, ".deepagents", "AGENTS.md"), memoryMount+"user/AGENTS.md")
	}
	var dirs []string
	for d := cwd; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == top || filepath.Dir(d) == d {
			break
		}
	}
	project := func(path string) string {
		rel, err := filepath.Rel(top, path)
		if err != nil {
			return memoryMount + "project/" + filepath.Base(path)
		}
		return memoryMount + "project/" + filepath.ToSlash(rel)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], "AGENTS.md")
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err == nil && st.IsDir():
			continue
		}
		// Other errors are the run's: the middleware reports them with
		// the path.
		add(p, project(p))
	}
	own := filepath.Join(cwd, ".deepagents", "AGENTS.md")
	add(own, project(own))
	return out
}

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
