package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/sandbox"
	"github.com/deepagents-go/deepagents/skills"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// This file keeps the agent off the control plane: the files that decide
// how later runs behave. Git's data, the thread database, the trust store
// and the user's own settings are never changed by the agent's file tools;
// agent files, skills, memory files (AGENTS.md, the user's included) and
// project settings change only in a call the person approved, unless the
// user's own config lets some of them through ([protect] allow). A change
// of the user's memory is always reported. The same places (but git's
// objects and refs) are read-only to execute's commands.

// controlPlane is the run's protection of the control plane.
type controlPlane struct {
	// gate judges a call's path before it runs, on every mount;
	// root guards the --root directory's backend (nil without one);
	// mounts guards the memory files mounted from outside it (nil when
	// there are none).
	gate, root, mounts *perm.Guard
	// forExecute are the places execute's commands may read but not
	// change, relative to the root.
	forExecute []string
	// rootMount is the --root directory as the file tools see it (nil
	// without one).
	rootMount *perm.Mount
}

// protectInputs are what the control plane is drawn from.
type protectInputs struct {
	root      string // --root, absolute; "" without
	cwd, home string
	db        config.Database
	skills    *skills.Config // nil: no skills
	memory    *memory.Config // nil: no memory files
	subagents string         // --subagents DIR, or ""
	store     bool           // /memories/ is mounted from the database
	allow     []string       // [protect] allow of the user's config
	// mcpConfigs are the --mcp-config files, whose servers start without
	// asking; systemFile is the file of --system @FILE ("" without).
	mcpConfigs []string
	systemFile string
}

// The words for each kind of protected place, said to the person and the
// model.
const (
	whatGit          = "git's repository data (.git)"
	whatDatabase     = "a thread database of deepagents"
	whatTrust        = "your store of trusted projects (~/.deepagents/trusted.json)"
	whatUserConfig   = "your own deepagents settings (~/.deepagents)"
	whatUserMemory   = "your user memory (~/.deepagents/AGENTS.md), which every later run shows to the model"
	whatAgents       = "an agent file (.deepagents/agents), which defines a subagent of later runs"
	whatSkills       = "a skill folder, whose instructions later runs load"
	whatMemory       = "a memory file (AGENTS.md), which later runs show to the model"
	whatProject      = "deepagents' project settings (.deepagents)"
	whatProjectToml  = "a deepagents project config (deepagents.toml)"
	whatMCP          = "an MCP server list (.mcp.json), which starts programs in later runs"
	whatMCPConfig    = "an MCP server list given with --mcp-config, whose programs later runs start without asking"
	whatSystemFile   = "the system prompt file given with --system, which later runs show to the model"
	sideFiles        = "{,-wal,-shm,-journal,-oplog-*}"
	deepagentsDir    = ".deepagents"
	userMemoryFile   = "AGENTS.md"
	projectStateGlob = "state.db" + sideFiles
)

// newControlPlane draws the protected places and the guards over them.
func newControlPlane(in protectInputs) (*controlPlane, error) {
	zones := protectedZones(in)
	var gateMounts, memMounts []perm.Mount
	var rootMount *perm.Mount
	if in.root != "" {
		rootMount = &perm.Mount{Prefix: "/", Host: realPath(in.root), Links: true}
		gateMounts = append(gateMounts, *rootMount)
	}
	if in.store {
		gateMounts = append(gateMounts, perm.Mount{Prefix: MemoriesPrefix})
	}
	if in.skills != nil {
		prefix := in.skills.Prefix
		if prefix == "" {
			prefix = skills.DefaultPrefix
		}
		gateMounts = append(gateMounts, perm.Mount{Prefix: prefix})
	}
	if in.memory != nil && !in.memory.NoMount {
		for _, s := range in.memory.Sources {
			if s.Show != "" && !s.InBackend {
				memMounts = append(memMounts, perm.Mount{Prefix: s.Show, Host: s.Path})
			}
		}
	}
	gateMounts = append(gateMounts, memMounts...)
	cp := &controlPlane{rootMount: rootMount}
	var err error
	if cp.gate, err = perm.NewGuard(zones, gateMounts); err != nil {
		return nil, err
	}
	if rootMount != nil {
		if cp.root, err = perm.NewGuard(zones, []perm.Mount{*rootMount}); err != nil {
			return nil, err
		}
		cp.root.Approved = agent.Approved
		cp.forExecute = protectedForExecute(in)
	}
	if len(memMounts) > 0 {
		if cp.mounts, err = perm.NewGuard(zones, memMounts); err != nil {
			return nil, err
		}
		cp.mounts.Approved = agent.Approved
	}
	return cp, nil
}

// protectedZones are the protected places, the first that matches a host
// path deciding for it: the Never places, then the Ask places from the
// most particular kind to the most general, each kind also at the real
// place of a directory that is a symbolic link. A kind the user allows is
// Free, still reported when it asks to be.
func protectedZones(in protectInputs) []perm.Zone {
	var zones []perm.Zone
	add := func(dir, glob string, level perm.Level, group, what string) {
		if dir == "" {
			return
		}
		for _, d := range anchors(dir) {
			z := perm.Zone{Dir: d, Glob: glob, Level: level, Group: group, What: what}
			if group == config.ProtectUserMemory {
				z.Report = true
			}
			if level == perm.Ask && slices.Contains(in.allow, group) {
				z.Level = perm.Free
			}
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	// file adds the one file path (and its real place).
	file := func(path string, level perm.Level, group, what string) {
		if path == "" {
			return
		}
		for _, p := range anchors(path) {
			add(filepath.Dir(p), escapeGlob(filepath.Base(p)), level, group, what)
		}
	}
	// Each project-like directory whose .git or .deepagents is a link
	// elsewhere gets the zones of those at their real place.
	var projects []string
	for _, d := range []string{in.root, in.cwd, in.home} {
		if d != "" && !slices.Contains(projects, d) {
			projects = append(projects, d)
		}
	}
	linked := func(name string) []string {
		var out []string
		for _, d := range projects {
			p := filepath.Join(d, name)
			if r := realPath(p); r != p {
				out = append(out, r)
			}
		}
		return out
	}

	// Never.
	add("/", "**/.git/**", perm.Never, config.ProtectGit, whatGit)
	for _, r := range linked(".git") {
		add(r, "**", perm.Never, config.ProtectGit, whatGit)
	}
	for _, d := range projects {
		for _, r := range gitDirsOf(d) {
			add(r, "**", perm.Never, config.ProtectGit, whatGit)
		}
	}
	if in.db.Kind == config.SQLite && in.db.Path != "" {
		for _, p := range anchors(absPath(in.db.Path)) {
			add(filepath.Dir(p), escapeGlob(filepath.Base(p))+sideFiles, perm.Never, config.ProtectDatabase, whatDatabase)
		}
	}
	add("/", "**/"+deepagentsDir+"/"+projectStateGlob, perm.Never, config.ProtectDatabase, whatDatabase)
	for _, r := range linked(deepagentsDir) {
		add(r, projectStateGlob, perm.Never, config.ProtectDatabase, whatDatabase)
	}
	if in.home != "" {
		userDir := filepath.Join(in.home, deepagentsDir)
		file(config.UserTrustStore(in.home).Path, perm.Never, config.ProtectTrust, whatTrust)
		add(userDir, "{config.toml,.mcp.json,agents/**,"+turnKeyFile+","+projectStateGlob+"}", perm.Never, config.ProtectUserConfig, whatUserConfig)
		// Ask, reported.
		file(filepath.Join(userDir, userMemoryFile), perm.Ask, config.ProtectUserMemory, whatUserMemory)
	}
	if in.memory != nil && in.home != "" {
		// The user's memory file as the memory middleware reads it.
		for _, s := range in.memory.Sources {
			if filepath.Dir(s.Path) == filepath.Join(in.home, deepagentsDir) && filepath.Base(s.Path) == userMemoryFile {
				file(s.Path, perm.Ask, config.ProtectUserMemory, whatUserMemory)
			}
		}
	}

	// Ask: agents.
	add("/", "**/"+deepagentsDir+"/agents/**", perm.Ask, config.ProtectAgents, whatAgents)
	for _, r := range linked(deepagentsDir) {
		add(r, "agents/**", perm.Ask, config.ProtectAgents, whatAgents)
	}
	if in.subagents != "" {
		add(absPath(in.subagents), "**", perm.Ask, config.ProtectAgents, whatAgents)
	}
	// Skills.
	add("/", "**/"+deepagentsDir+"/skills/**", perm.Ask, config.ProtectSkills, whatSkills)
	for _, r := range linked(deepagentsDir) {
		add(r, "skills/**", perm.Ask, config.ProtectSkills, whatSkills)
	}
	if in.skills != nil {
		for _, s := range in.skills.Sources {
			add(absPath(s.Dir), "**", perm.Ask, config.ProtectSkills, whatSkills)
		}
	}
	// Memory files.
	add("/", "**/"+userMemoryFile, perm.Ask, config.ProtectMemory, whatMemory)
	if in.memory != nil {
		for _, s := range in.memory.Sources {
			file(absPath(s.Path), perm.Ask, config.ProtectMemory, whatMemory)
		}
	}
	// Project settings.
	add("/", "**/"+deepagentsDir+"/**", perm.Ask, config.ProtectProjectConfig, whatProject)
	for _, r := range linked(deepagentsDir) {
		add(r, "**", perm.Ask, config.ProtectProjectConfig, whatProject)
	}
	add("/", "**/"+config.ProjectFile, perm.Ask, config.ProtectProjectConfig, whatProjectToml)
	add("/", "**/.mcp.json", perm.Ask, config.ProtectProjectConfig, whatMCP)
	// Files the command line names.
	for _, p := range in.mcpConfigs {
		file(absPath(p), perm.Ask, config.ProtectProjectConfig, whatMCPConfig)
	}
	file(in.systemFile, perm.Ask, config.ProtectMemory, whatSystemFile)
	return zones
}

// protectedForExecute lists the places, relative to the root, that
// execute's commands may read but never create, change, rename or delete:
// the same places the file tools may not change freely, whatever the user
// allows, except git's objects and refs (and the rest of .git), which
// commands such as git commit must write. Each is a doublestar glob or a
// plain path.
func protectedForExecute(in protectInputs) []string {
	root := realPath(in.root)
	out := []string{
		// Every git directory: its configuration, hooks, info and the
		// commondir file that would send git to another directory's
		// configuration; a .git that is a file (it says where the
		// repository is) whole.
		"**/.git",
		"**/.git/config", "**/.git/config.worktree", "**/.git/hooks", "**/.git/info",
		"**/.git/modules/**/config", "**/.git/modules/**/hooks", "**/.git/modules/**/info",
		"**/" + deepagentsDir, "**/" + config.ProjectFile, "**/.mcp.json", "**/" + userMemoryFile,
	}
	if fi, err := os.Lstat(filepath.Join(root, ".git")); err == nil && !fi.IsDir() {
		// A .git file says where the repository is: changing it moves git
		// to data the command wrote.
		out = append(out, ".git")
	}
	// The git directory a .git file points at, when it is in the root (a
	// bare repository kept beside its work tree), whatever its name.
	for _, d := range []string{root, realPath(in.cwd)} {
		for _, g := range gitDirsOf(d) {
			if rel, err := filepath.Rel(root, g); err == nil && filepath.IsLocal(rel) {
				for _, e := range sandbox.GitDirEntries(filepath.ToSlash(rel)) {
					if !slices.Contains(out, e) {
						out = append(out, e)
					}
				}
			}
		}
	}
	// under adds the host path p, relative to the root, when it is inside.
	under := func(p, suffix string) {
		for _, a := range anchors(absPath(p)) {
			if rel, err := filepath.Rel(root, a); err == nil && filepath.IsLocal(rel) {
				if g := escapeGlob(filepath.ToSlash(rel)) + suffix; !slices.Contains(out, g) {
					out = append(out, g)
				}
			}
		}
	}
	if in.db.Kind == config.SQLite && in.db.Path != "" {
		under(in.db.Path, "*")
	}
	if in.home != "" {
		under(config.UserTrustStore(in.home).Path, "")
	}
	if in.skills != nil {
		for _, s := range in.skills.Sources {
			under(s.Dir, "")
		}
	}
	if in.subagents != "" {
		under(in.subagents, "")
	}
	for _, p := range in.mcpConfigs {
		under(p, "")
	}
	if in.systemFile != "" {
		under(in.systemFile, "")
	}
	if in.memory != nil {
		for _, s := range in.memory.Sources {
			under(s.Path, "")
		}
	}
	return out
}

// withLinkRules returns the --root directory's backend b with the user's
// rules also checked where its symbolic links lead (perm.LinkRules), for
// the agent and every subagent: a link in a cloned project cannot take a
// read or write to a place the rules deny.
func (cp *controlPlane) withLinkRules(b vfs.Backend, rules perm.Rules) (vfs.Backend, error) {
	if cp == nil || cp.rootMount == nil || b == nil {
		return b, nil
	}
	return perm.LinkRules(b, rules, []perm.Mount{*cp.rootMount})
}

// withPathGates adds to gates the control plane's check of the paths that
// write_file, edit_file and delete change; has says which of those tools
// the agent has (nil: all).
func (cp *controlPlane) withPathGates(gates map[string]approve.Policy, has func(string) bool) map[string]approve.Policy {
	if cp == nil || cp.gate == nil {
		return gates
	}
	for _, name := range fstools.ChangingTools {
		if has != nil && !has(name) {
			continue
		}
		target := func(args json.RawMessage) (string, bool, bool) { return fstools.ChangedPath(name, args) }
		check := func(_ context.Context, args json.RawMessage) approve.Verdict {
			v := cp.gate.CheckCall(target, args)
			// No approval mode lifts these waits.
			return approve.Verdict{Wait: v.Wait, Reason: v.Reason, Report: v.Report, Changes: v.Changes, Protected: v.Wait}
		}
		gates = approve.WithCheck(gates, check, name)
	}
	return gates
}

// gateSpecs adds the path gates to every subagent that has gates of its
// own (the others inherit the agent's), for the tools it has.
func (cp *controlPlane) gateSpecs(specs []subagent.Spec) {
	for i := range specs {
		if specs[i].InterruptOn == nil {
			continue
		}
		sp := specs[i]
		specs[i].InterruptOn = cp.withPathGates(sp.InterruptOn, func(name string) bool {
			return !sp.ExactTools || hasTool(sp.Tools, name)
		})
	}
}

// maxGitFile caps the .git and commondir files read to find where a
// repository's git directory is.
const maxGitFile = 4 << 10

// gitDirsOf returns the real places of the git directories that git uses
// for dir when dir/.git says where they are: the directory a ".git" file
// names ("gitdir: PATH", a worktree's or a bare repository's), and the
// directory its commondir file names (the repository a worktree belongs
// to). Both hold git's configuration and hooks whatever their names.
func gitDirsOf(dir string) []string {
	if dir == "" {
		return nil
	}
	first := func(p string) string {
		data, err := safefile.Read(p, maxGitFile)
		if err != nil {
			return ""
		}
		line, _, _ := strings.Cut(string(data), "\n")
		return strings.TrimSpace(line)
	}
	at := func(base, p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		return realPath(p)
	}
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotGit)
	if err != nil {
		return nil
	}
	var out []string
	gitDir := dotGit
	if fi.Mode().IsRegular() {
		target, ok := strings.CutPrefix(first(dotGit), "gitdir:")
		if target = strings.TrimSpace(target); !ok || target == "" {
			return nil
		}
		gitDir = at(dir, target)
		out = append(out, gitDir)
	}
	if common := first(filepath.Join(gitDir, "commondir")); common != "" {
		out = append(out, at(realPath(gitDir), common))
	}
	return out
}

// anchors returns p and, when it differs, its real place (symbolic links
// resolved), so that a zone holds for both names.
func anchors(p string) []string {
	p = absPath(p)
	if r := realPath(p); r != p {
		return []string{p, r}
	}
	return []string{p}
}

// absPath is p made absolute and clean ("/" for "/").
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// realPath is the absolute p with its symbolic links resolved, as far as
// it exists: a missing end is joined as written.
func realPath(p string) string {
	p = absPath(p)
	var rest []string
	for d := p; ; {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		up := filepath.Dir(d)
		if up == d {
			return p
		}
		rest = append([]string{filepath.Base(d)}, rest...)
		d = up
	}
}

// escapeGlob makes a name match itself in a doublestar glob.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
