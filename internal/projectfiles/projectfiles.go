// Package projectfiles says where a project's skills and AGENTS.md memory
// files are, and what each memory file may import, for every command that
// builds the project's agent (deepagents run, and a Temporal worker).
package projectfiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/skills"
)

// MemoryMount is where the agent's file tools find the memory files that
// are not inside --root: the user's at /memory/user/AGENTS.md, the
// project's at /memory/project/ and their path from the repository root.
const MemoryMount = "/memory/"

// SkillSources returns the default skill sources, lowest precedence first:
// the user's (~/.deepagents/skills), then the project's
// (.deepagents/skills in the working directory). With claude, each level
// also reads .claude/skills, just below the deepagents directory of the
// same level.
func SkillSources(cwd, home string, claude bool) []skills.Source {
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

// ProjectRoot returns the project dir is in: the nearest directory at or
// above dir that holds .git, else dir. Below the home directory the search
// stops short of it: a home directory kept in git (dotfiles) is not the
// project of every directory under it, and must not let their memory files
// import the user's files.
func ProjectRoot(dir, home string) string {
	belowHome := home != "" && dir != home && isInside(home, dir)
	for d := dir; ; {
		if belowHome && d == home {
			return dir
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

// isInside reports whether p is dir or below it (both absolute, clean).
func isInside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}

// MemorySources returns the default memory files, farthest first: the
// user's ~/.deepagents/AGENTS.md; each AGENTS.md from the repository root
// (the nearest directory above holding .git, else the working directory)
// down to the working directory; and the project's .deepagents/AGENTS.md.
// The user's and the .deepagents one are listed even when missing, so the
// agent knows where to write; the others only when they exist.
//
// Each file gets the path the agent edits it at: its path inside root when
// root (--root) holds it, else a mount under /memory/. The project's files
// import only from inside the project (the repository root): they come
// with the repository, and must not pull the user's files (their
// ~/.deepagents holds settings and the trust list) into the prompt. The
// user's own file imports from their ~/.deepagents and the project.
func MemorySources(cwd, home, root string) []memory.Source {
	top := ProjectRoot(cwd, home)
	var out []memory.Source
	project := []string{top}
	// What a project's files never read: the user's settings, and the home
	// directory when the project holds it (a repository at /) without the
	// run being in it.
	var notProject []string
	if home != "" {
		notProject = append(notProject, filepath.Join(home, ".deepagents"))
		if isInside(top, home) && !isInside(home, cwd) {
			notProject = append(notProject, home)
		}
	}
	add := func(path, show string, within, exclude []string) {
		s := memory.Source{Path: path, Show: show, Within: within, Exclude: exclude}
		if root != "" {
			if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
				s.Show, s.InBackend = "/"+filepath.ToSlash(rel), true
			}
		}
		out = append(out, s)
	}
	userFile := ""
	if home != "" {
		userFile = filepath.Join(home, ".deepagents", "AGENTS.md")
		add(userFile, MemoryMount+"user/AGENTS.md", []string{filepath.Join(home, ".deepagents"), top}, nil)
	}
	var dirs []string
	for d := cwd; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == top || filepath.Dir(d) == d {
			break
		}
	}
	shown := func(path string) string {
		rel, err := filepath.Rel(top, path)
		if err != nil {
			return MemoryMount + "project/" + filepath.Base(path)
		}
		return MemoryMount + "project/" + filepath.ToSlash(rel)
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
		add(p, shown(p), project, notProject)
	}
	if own := filepath.Join(cwd, ".deepagents", "AGENTS.md"); own != userFile {
		// In the home directory, it is the user's own, listed already.
		add(own, shown(own), project, notProject)
	}
	return out
}
