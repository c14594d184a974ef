package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/internal/projectfiles"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/skills"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// This file gives a worker's agent the skills and AGENTS.md memory that
// "deepagents run" gives it. Middleware run in workflow code, which must
// do no I/O and must see the same thing on every replay, so both are read
// once, when the worker starts, into a read-only snapshot in memory.

// knowledge says which of skills and memory the agent gets.
type knowledge struct {
	claudeSkills, noSkills, noMemory bool
}

// flags declares the flags of skills and memory, as "deepagents run" has
// them.
func (k *knowledge) flags(fs *flag.FlagSet) {
	fs.BoolVar(&k.claudeSkills, "claude-skills", false, "also load skills from ~/.claude/skills and the project's .claude/skills")
	fs.BoolVar(&k.noSkills, "no-skills", false, "list no skills")
	fs.BoolVar(&k.noMemory, "no-memory", false, "load no AGENTS.md memory files")
}

// memoryMount is where the agent's file tools find the memory files that
// are not inside --root, as in "deepagents run".
const memoryMount = projectfiles.MemoryMount

// snapshot is what a worker's agent knows of the project, read at worker
// start: its skills (nil: none) and its memory middleware (nil: none).
type snapshot struct {
	skills *skills.Config
	memory *agent.Middleware
	// hash identifies the contents, so that workers can be compared.
	hash string
}

// loadSnapshot reads the skills and memory files of the project in cwd
// (with root, the --root directory, or ""), with the sources, caps and
// import rules of "deepagents run".
func loadSnapshot(k knowledge, cwd, home, root string) (*snapshot, error) {
	out := &snapshot{}
	h := sha256.New()
	if !k.noSkills {
		l, err := skills.Snapshot("", projectfiles.SkillSources(cwd, home, k.claudeSkills)...)
		if err != nil {
			return nil, err
		}
		out.skills = &skills.Config{Loader: l}
		for _, s := range l.Current().Skills {
			fmt.Fprintf(h, "skill %s %s %q\n", s.Name, s.Dir, s.Description)
		}
		for e, err := range l.FS().Walk(context.Background(), "/") {
			if err == nil && !e.IsDir {
				text, _ := l.FS().Read(context.Background(), e.Path)
				fmt.Fprintf(h, "file %s %d %x\n", e.Path, len(text), sha256.Sum256([]byte(text)))
			}
		}
	}
	if !k.noMemory {
		m, err := memorySnapshot(projectfiles.MemorySources(cwd, home, root), 0)
		if err != nil {
			return nil, err
		}
		out.memory = &m.mw
		fmt.Fprintf(h, "memory %x\n", sha256.Sum256([]byte(m.text)))
	}
	out.hash = hex.EncodeToString(h.Sum(nil)[:8])
	return out, nil
}

// frozenMemory is the memory block as it was at worker start, and the
// middleware that shows it.
type frozenMemory struct {
	text  string
	warns []string
	mw    agent.Middleware
}

// memorySnapshot reads the memory sources once (their imports and checks
// are memory.Load's) and returns a middleware that adds the block to
// every request, as memory.Middleware does, without reading the files
// again. The files the agent is shown under /memory/ are served read-only
// from memory: on a worker the agent cannot edit them (its edits would
// have to be written from workflow code). A file that cannot be read fails
// here, with its path.
func memorySnapshot(sources []memory.Source, maxBytes int) (*frozenMemory, error) {
	if maxBytes <= 0 {
		maxBytes = memory.DefaultMaxBytes
	}
	files, warns, err := memory.Load(sources)
	if err != nil {
		return nil, fmt.Errorf("memory files: %w (fix or remove the file, or start the worker with --no-memory)", err)
	}
	block := memory.Render(files, maxBytes)
	if len(block.Cut) > 0 {
		warns = append(warns, "the memory block is over its limit: "+strings.Join(block.Cut, "; "))
	}
	fm := &frozenMemory{text: block.Text, warns: warns}
	dirs := map[string]map[string]vfs.File{}
	var order []string
	for _, s := range sources {
		if s.Show == "" || s.InBackend {
			continue
		}
		p, err := vfs.Clean(s.Show)
		if err != nil || p == "/" {
			return nil, fmt.Errorf("memory: %s: Show %q is not an absolute file path", s.Path, s.Show)
		}
		dir, name := path.Split(p)
		if dirs[dir] == nil {
			dirs[dir] = map[string]vfs.File{}
			order = append(order, dir)
		}
		data, err := safefile.Read(s.Path, memory.MaxFileBytes)
		if err != nil {
			continue // missing: nothing to show
		}
		st, _ := os.Stat(s.Path)
		var f vfs.File
		f.Content = string(data)
		if st != nil {
			f.CreatedAt, f.ModifiedAt = st.ModTime(), st.ModTime()
		}
		dirs[dir]["/"+name] = f
	}
	var routes []vfs.Route
	for _, d := range order {
		routes = append(routes, vfs.Route{Prefix: d, Backend: vfs.NewMemory(dirs[d]), ReadOnly: true})
	}
	fm.mw = agent.Middleware{Name: "memory", SystemPart: tokens.MemoryPart, BeforeModel: fm.beforeModel}
	if len(routes) > 0 {
		fm.mw.WrapTool = func(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
			return agent.RunMounted(ctx, call, next, routes...)
		}
	}
	return fm, nil
}

// memoryMemo is the run-state value memory.Middleware keeps its reported
// warnings in, so that each is reported once per turn.
type memoryMemo struct {
	Turn   int    `json:"turn"`
	Warned string `json:"warned"`
}

func (m *frozenMemory) beforeModel(_ context.Context, st agent.StepInfo, req *llm.Request) error {
	if m.text != "" {
		if req.SystemTail != "" {
			req.SystemTail += "\n\n"
		}
		req.SystemTail += m.text
	}
	if st.Emit == nil || len(m.warns) == 0 {
		return nil
	}
	turn := 0
	if st.State != nil {
		for _, msg := range st.State.Messages {
			if msg.Role == llm.RoleUser {
				turn++
			}
		}
	}
	h := sha256.Sum256([]byte(strings.Join(m.warns, "\n")))
	sum := hex.EncodeToString(h[:8])
	if st.State != nil {
		if old, ok, _ := agent.GetValue[memoryMemo](st.State, memory.StateName); ok && old.Turn == turn && old.Warned == sum {
			return nil
		}
	}
	st.Emit(agent.Event{Type: agent.Warning, Warning: &agent.WarningInfo{Source: "memory", Text: strings.Join(m.warns, "\n")}})
	if st.SetValue != nil {
		_ = st.SetValue(memory.StateName, memoryMemo{Turn: turn, Warned: sum})
	}
	return nil
}
