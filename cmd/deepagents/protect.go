package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/fstools"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/skills"
	"github.com/deepagents-go/deepagents/subagent"
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
	cp := &controlPlane{}
	var err error
	if cp.gate, err = perm.NewGuard(zones, gateMounts); err != nil {
		return nil, err
	}
	if rootMount != nil {
		if cp.root, err = perm.NewGuard(zones, []perm.Mount{*rootMount}); err != nil {
			return nil, err
		}
		cp.forExecute = protectedForExecute(in)
	}
	if len(memMounts) > 0 {
		if cp.mounts, err = perm.NewGuard(zones, memMounts); err != nil {
			return nil, err
		}
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
		"**/.git/config", "**/.git/config.worktree", "**/.git/hooks", "**/.git/info",
		"**/.git/modules/**/config", "**/.git/modules/**/hooks", "**/.git/modules/**/info",
		"**/" + deepagentsDir, "**/" + config.ProjectFile, "**/.mcp.json", "**/" + userMemoryFile,
	}
	if fi, err := os.Lstat(filepath.Join(root, ".git")); err == nil && !fi.IsDir() {
		// A .git file says where the repository is: changing it moves git
		// to data the command wrote.
		out = append(out, ".git")
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
	if in.memory != nil {
		for _, s := range in.memory.Sources {
			under(s.Path, "")
		}
	}
	return out
}

// withPathGates adds to gates the control plane's check of the paths that
// write_file, edit_file and delete change; has says which of those tools
// the agent has (nil: all).
func (cp *controlPlane) withPathGates(gates map[string]agent.Approval, has func(string) bool) map[string]agent.Approval {
	if cp == nil || cp.gate == nil {
		return gates
	}
	for _, name := range fstools.ChangingTools {
		if has != nil && !has(name) {
			continue
		}
		target := func(args json.RawMessage) (string, bool, bool) { return fstools.ChangedPath(name, args) }
		gates = agent.WithCheck(gates, cp.gate.ArgCheck(target), name)
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
