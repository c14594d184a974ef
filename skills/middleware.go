package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// StateName is the run-state value in which the middleware remembers which
// warnings it already reported in the current turn, so that each is
// reported once per run and not before every model call.
const StateName = "skills"

// Config configures the skills middleware.
type Config struct {
	// Sources are the skill directories, lowest precedence first. Ignored
	// when Loader is set.
	Sources []Source
	// Loader, when set, is shared with other agents (a parent and its
	// subagents), so the sources are read once per change for all of them.
	Loader *Loader
	// Prefix is where the agent's file tools find the skills
	// (DefaultPrefix, "/skills/", when empty). Ignored when Loader is set.
	Prefix string
	// Window is the agent's context window in tokens (0: unknown); the
	// listing takes at most Budget(Window) characters.
	Window int
	// Only, when not nil, restricts the agent to the skills of these names
	// (a subagent's spec); a name no source has is reported in a warning.
	Only []string
	// NoMount leaves the agent's backend as it is: the caller serves the
	// prefix itself (for instance with a vfs.Route to Loader.FS()).
	NoMount bool
}

// Middleware lists the skills in the agent's system prompt and makes them
// readable by its tools.
//
// Before each model call it takes the sources' current skills (re-read only
// when their files changed) and appends the listing to the request's
// System, the cached part of the prompt: an unchanged set gives identical
// bytes. When the listing is over its budget, the least recently used
// skills (by the agent's read_file calls on their folders before the
// current turn, so the listing does not change within a run) lose their
// descriptions first, and a warning event names them; load problems are in
// an untrusted block of the listing and in a warning event, once per run.
//
// Every tool call except those that run agents (task) sees the skill
// folders read-only under the prefix, over whatever backend the agent has.
//
// It fails only on an invalid Prefix.
func Middleware(cfg Config) (agent.Middleware, error) {
	l := cfg.Loader
	if l == nil {
		var err error
		if l, err = NewLoader(cfg.Prefix, cfg.Sources...); err != nil {
			return agent.Middleware{}, err
		}
	}
	m := &mw{l: l, window: cfg.Window}
	if cfg.Only != nil {
		m.only = slices.Clone(cfg.Only)
		slices.Sort(m.only)
		m.only = slices.Compact(m.only)
	}
	out := agent.Middleware{Name: "skills", BeforeModel: m.beforeModel, SystemPart: tokens.SkillsPart}
	if !cfg.NoMount {
		out.WrapTool = m.wrapTool
	}
	return out, nil
}

type mw struct {
	l      *Loader
	window int
	only   []string
}

// visible is the set this agent may use: all of the loader's, or those
// named in Only, with a warning for each name no source has.
func (m *mw) visible() *Set {
	set := m.l.Current()
	if m.only == nil {
		return set
	}
	out := &Set{Sources: set.Sources, Warnings: slices.Clone(set.Warnings)}
	for _, name := range m.only {
		if s, ok := set.Lookup(name); ok {
			out.Skills = append(out.Skills, s)
		} else {
			out.Warnings = append(out.Warnings, fmt.Sprintf("this agent's spec names the skill %q, but no skill source has it", name))
		}
	}
	return out
}

type memo struct {
	Turn   int    `json:"turn"`
	Warned string `json:"warned"`
}

func (m *mw) beforeModel(_ context.Context, st agent.StepInfo, req *llm.Request) error {
	set := m.visible()
	var msgs []llm.Message
	if st.State != nil {
		msgs = st.State.Messages
	}
	turn, lastUse := usage(msgs, m.l.prefix)
	l := Render(set, Budget(m.window), lastUse)
	// A fork runs under its parent's system prompt, which already holds
	// the listing: adding it again would change the bytes the fork shares
	// with its parent's cached prefix.
	if l.Text != "" && !strings.Contains(req.System, intro(l.Text)) {
		if req.System != "" {
			req.System += "\n\n"
		}
		req.System += l.Text
	}
	m.warn(st, turn, set, l)
	return nil
}

// intro is the listing's heading and first paragraph, which mark a system
// prompt that already has a listing.
func intro(text string) string {
	head, rest, _ := strings.Cut(text, "\n\n")
	para, _, _ := strings.Cut(rest, "\n")
	return head + "\n\n" + para
}

// warn emits the load and budget warnings once per turn (per run).
func (m *mw) warn(st agent.StepInfo, turn int, set *Set, l Listing) {
	if st.Emit == nil || len(set.Warnings) == 0 && len(l.Short) == 0 && !l.Over {
		return
	}
	h := sha256.New()
	for _, w := range set.Warnings {
		h.Write([]byte(w + "\n"))
	}
	fmt.Fprintf(h, "%v %v", l.Short, l.Over)
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	if st.State != nil {
		if old, ok, _ := agent.GetValue[memo](st.State, StateName); ok && old.Turn == turn && old.Warned == sum {
			return
		}
	}
	if len(set.Warnings) > 0 {
		st.Emit(agent.Event{Type: agent.Warning, Warning: &agent.WarningInfo{Source: "skills",
			Text: fmt.Sprintf("%d problem(s) loading skills:\n%s", len(set.Warnings), strings.Join(set.Warnings, "\n"))}})
	}
	if len(l.Short) > 0 || l.Over {
		text := fmt.Sprintf("the skills listing is over its budget of %d characters, so these skills are listed without descriptions: %s",
			l.Budget, strings.Join(l.Short, ", "))
		if l.Over {
			text += fmt.Sprintf("; it is still %d characters long with every description left out", l.Len)
		}
		st.Emit(agent.Event{Type: agent.Warning, Warning: &agent.WarningInfo{Source: "skills", Dropped: slices.Clone(l.Short), Text: text}})
	}
	if st.SetValue != nil {
		_ = st.SetValue(StateName, memo{Turn: turn, Warned: sum})
	}
}

// usage reads the history for the turn number (the count of user
// messages) and, for each skill read before the current turn, the index of
// its last read: a read_file call on a path below prefix+NAME/. The
// current turn's reads are left out so that the listing stays the same
// for the whole run.
func usage(msgs []llm.Message, prefix string) (turn int, last map[string]int) {
	end := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			end = i
			break
		}
	}
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			turn++
		}
	}
	for i, msg := range msgs[:end] {
		if msg.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range msg.ToolCalls {
			if c.Name != "read_file" {
				continue
			}
			var a struct {
				FilePath string `json:"file_path"`
			}
			if json.Unmarshal(c.Args, &a) != nil {
				continue
			}
			rest, ok := strings.CutPrefix("/"+strings.TrimLeft(a.FilePath, "/"), prefix)
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(rest, "/")
			if name == "" {
				continue
			}
			if last == nil {
				last = map[string]int{}
			}
			last[name] = i
		}
	}
	return turn, last
}

// wrapTool gives every tool call but a nested agent's a view of the
// backend with the skills mounted read-only at the prefix. A task call
// keeps its layer: its child is an agent with its own middleware.
func (m *mw) wrapTool(ctx context.Context, call *agent.ToolCall, next agent.ToolFunc) (tool.Result, error) {
	return agent.RunMounted(ctx, call, next, vfs.Route{Prefix: m.l.prefix, Backend: m.l.FS(), ReadOnly: true})
}
