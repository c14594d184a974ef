// Package scenario loads and runs replay scenarios: JSON files that fully
// determine one agent run with no model service — the agent's configuration,
// the starting files, the user's input and the script of every agent's
// replies — and produces the transcript `deepagents replay` prints.
//
// The format is public API (docs/REPLAY.md): fields may be added, none
// renamed. camelCase spellings of the JavaScript reference harness
// (systemPrompt, responseFormat) are accepted as aliases.
package scenario

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/offload"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Scenario is one replayable run.
type Scenario struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Input       Input             `json:"input"`
	Files       map[string]string `json:"files,omitempty"`
	// BinaryFiles are starting files given as base64, for content that is
	// not text (an image read_file should see).
	BinaryFiles map[string]string `json:"binary_files,omitempty"`
	DelayMS     float64           `json:"delay_ms,omitempty"`
	// ModelOptions ("model" in JSON) sets what the scripted model reports
	// it accepts.
	ModelOptions *ModelSpec      `json:"model,omitempty"`
	Agent        AgentSpec       `json:"agent"`
	Script       scripted.Script `json:"script"`
	// Expect is free-form: any JSON value is accepted and kept as written.
	// The keys this package knows are evaluated into Transcript.Checks;
	// nothing in Expect changes the run.
	Expect json.RawMessage `json:"expect,omitempty"`

	// Turns are further user inputs on the same thread, each sent once the
	// run before it has ended; the script keeps being consumed in order.
	Turns []string `json:"turns,omitempty"`
	// Decisions answer the calls the run stops at for approval: each time
	// it stops interrupted, the decisions (in order) whose call ids are
	// among the waiting calls, and whose Stop has come, are taken out, at
	// most one per waiting call, and the thread is resumed with them, until
	// none is left. A second decision for one call id waits for a later
	// stop, as when a later turn reuses the id.
	Decisions []Decision `json:"decisions,omitempty"`
	// CrashAfterEvents are crash points: after the Nth event of the
	// transcript (1-based, counted across turns and resumptions) everything
	// in memory is thrown away as a crash would, and the run is resumed
	// from its checkpoints. Positive; taken in increasing order, each once
	// (Parse sorts them, and so does Run for a list set in Go).
	CrashAfterEvents []int `json:"crash_after_events,omitempty"`

	// Warnings lists what was ignored while parsing (unknown keys, an alias
	// given next to its canonical key), each as "[PATH:]LINE:COL: text".
	Warnings []string `json:"-"`
}

// Input is the user's input: a string (one user message) or a list of
// messages.
type Input []llm.Message

// UnmarshalJSON accepts a string or [{"role":..,"content":..}, ...].
func (in *Input) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*in = Input{llm.User(s)}
		return nil
	}
	var msgs []llm.Message
	if err := json.Unmarshal(b, &msgs); err != nil {
		return errors.New(`"input" must be a string or a list of {"role", "content"} messages`)
	}
	for i := range msgs {
		if err := normRole(&msgs[i]); err != nil {
			return fmt.Errorf("input message %d: %w", i, err)
		}
	}
	*in = msgs
	return nil
}

// normRole accepts the four roles and the reference harness's "human" and
// "ai".
func normRole(m *llm.Message) error {
	switch m.Role {
	case llm.RoleUser, llm.RoleAssistant, llm.RoleSystem, llm.RoleTool:
	case "human":
		m.Role = llm.RoleUser
	case "ai":
		m.Role = llm.RoleAssistant
	case "":
		return errors.New(`has no "role"; use user, assistant, system or tool`)
	default:
		return fmt.Errorf("has unknown role %q; use user, assistant, system or tool", m.Role)
	}
	return nil
}

// ModelSpec sets the scripted model's capabilities. By default it reads
// images and takes reasoning settings.
type ModelSpec struct {
	// Images false makes the model report that it does not read images.
	Images *bool `json:"images,omitempty"`
	// Reasoning false makes the model drop reasoning settings, which every
	// run then reports in a warning event.
	Reasoning *bool `json:"reasoning,omitempty"`
}

// AgentSpec configures the agent; {} is the default deep agent.
type AgentSpec struct {
	SystemPrompt string         `json:"system_prompt,omitempty"`
	Tools        []FakeTool     `json:"tools,omitempty"`
	Subagents    []SubagentSpec `json:"subagents,omitempty"`
	MaxSteps     int            `json:"max_steps,omitempty"`
	MaxParallel  int            `json:"max_parallel,omitempty"`
	// Offload sets the offloading thresholds; absent keys keep the defaults.
	Offload *OffloadSpec `json:"offload,omitempty"`
	// Reasoning is sent with every request of the agent and of the
	// subagents that set none: {"effort": "high"} or {"budget_tokens": N}.
	Reasoning *llm.ReasoningConfig `json:"reasoning,omitempty"`
	// InterruptOn names the tools whose calls wait for a person's decision,
	// for the agent and every subagent that sets none.
	InterruptOn InterruptOn `json:"interrupt_on,omitempty"`
	// ContextWindow is the agent's context window in tokens (0: unknown).
	// Setting it turns compaction on at 0.85 of it.
	ContextWindow int `json:"context_window,omitempty"`
	// Compaction sets or turns off compaction; see Compaction.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Todos binds write_todos for the agent and every subagent, each
	// instance with its own list (package todos).
	Todos bool `json:"todos,omitempty"`
}

// OffloadSpec sets when large texts are saved to files (offload.Config):
// thresholds in o200k tokens, 0 turning that offloading off, an absent key
// keeping the default.
type OffloadSpec struct {
	ToolResultTokens  *int           `json:"tool_result_tokens,omitempty"`
	UserMessageTokens *int           `json:"user_message_tokens,omitempty"`
	PerTool           map[string]int `json:"per_tool,omitempty"`
}

func (o *OffloadSpec) config() *offload.Config {
	if o == nil {
		return nil
	}
	c := offload.Defaults()
	if o.ToolResultTokens != nil {
		c.ToolResultTokens = *o.ToolResultTokens
	}
	if o.UserMessageTokens != nil {
		c.UserMessageTokens = *o.UserMessageTokens
	}
	c.PerTool = o.PerTool
	return &c
}

// FakeTool is a custom tool with one required string parameter "query" that
// answers "RETURNS (query: QUERY)".
type FakeTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Returns     string `json:"returns,omitempty"`
}

// SubagentSpec declares a subagent.
type SubagentSpec struct {
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	SystemPrompt   string          `json:"system_prompt,omitempty"`
	Mode           string          `json:"mode,omitempty"`
	Tools          *[]string       `json:"tools,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Skills         []string        `json:"skills,omitempty"`
	MaxSteps       int             `json:"max_steps,omitempty"`
	TimeoutMS      float64         `json:"timeout_ms,omitempty"`
	// Reasoning is the subagent's own reasoning setting; absent inherits
	// the agent's.
	Reasoning *llm.ReasoningConfig `json:"reasoning,omitempty"`
	// InterruptOn is the subagent's own approval policy; absent (nil)
	// inherits the agent's, {} gates nothing (so it is written even when
	// empty).
	InterruptOn InterruptOn `json:"interrupt_on"`
	// ContextWindow and Compaction are the subagent's own: it compacts
	// against its own window (absent: no compaction of its own).
	ContextWindow int         `json:"context_window,omitempty"`
	Compaction    *Compaction `json:"compaction,omitempty"`
}

// aliases are the JavaScript reference harness's camelCase spellings,
// accepted wherever the snake_case key is.
var aliases = map[string]string{"systemPrompt": "system_prompt", "responseFormat": "response_format",
	"delayMs": "delay_ms", "maxSteps": "max_steps", "maxParallel": "max_parallel", "timeoutMs": "timeout_ms",
	"toolCalls": "tool_calls", "binaryFiles": "binary_files", "budgetTokens": "budget_tokens",
	"interruptOn": "interrupt_on", "crashAfterEvents": "crash_after_events"}

// Error is a scenario that cannot be run: a file that cannot be read, text
// that is not JSON, or a value the format does not allow. Line and Column
// (1-based, the column counted in characters) are 0 when the problem has no
// position, such as a file that is too large.
type Error struct {
	File   string
	Line   int
	Column int
	Reason string
}

// Error renders "FILE:LINE:COL: reason", leaving out the parts that are not
// known.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Column)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// maxWarnings is how many warnings one scenario reports in full.
const maxWarnings = 100

// Parse decodes a scenario and checks that it can run. Errors are *Error,
// one line, with the line and column of the problem.
func Parse(data []byte) (*Scenario, error) { return ParseFile("", data) }

// ParseFile is Parse for data read from the named file (or "-" for standard
// input); the name prefixes errors and warnings.
func ParseFile(name string, data []byte) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Reason: fmt.Sprintf("the scenario is %s; the limit is %s", safefile.Size(int64(len(data))), safefile.Size(MaxFileSize))}
	}
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")) // a UTF-8 byte-order mark is allowed
	fail := func(err error) error {
		var pe *posError
		if errors.As(err, &pe) {
			line, col := lineCol(data, pe.off)
			return &Error{File: name, Line: line, Column: col, Reason: pe.msg}
		}
		return &Error{File: name, Reason: oneLine(err)}
	}
	root, err := parseTreeOpts(data, "expect", false) // expect is free-form, repeated keys included
	if err != nil {
		return nil, fail(err)
	}
	if root.kind != kObject {
		return nil, fail(errAt(root.start, "the top level must be a JSON object, not %s", root.kind.words()))
	}
	d := &decoder{doc: data, aliases: aliases, hooks: hooks, pos: map[string]int{}}
	var s Scenario
	if err := d.value(root, reflect.ValueOf(&s).Elem(), ""); err != nil {
		return nil, fail(err)
	}
	if err := s.validate(d); err != nil {
		return nil, fail(err)
	}
	shown := d.warnings[:min(len(d.warnings), maxWarnings)]
	offs := make([]int, len(shown))
	for i, w := range shown {
		offs[i] = w.off
	}
	for i, lc := range lineCols(data, offs) {
		s.Warnings = append(s.Warnings, (&Error{File: name, Line: lc[0], Column: lc[1], Reason: shown[i].msg}).Error())
	}
	if more := len(d.warnings) - len(shown); more > 0 {
		s.Warnings = append(s.Warnings, (&Error{File: name, Reason: fmt.Sprintf("%d more warnings not shown", more)}).Error())
	}
	return &s, nil
}

// Load reads and parses a scenario file. The file must be a regular file of
// at most MaxFileSize bytes.
func Load(path string) (*Scenario, error) {
	data, err := safefile.Read(path, MaxFileSize)
	if err != nil {
		return nil, &Error{Reason: oneLine(err)}
	}
	return ParseFile(path, data)
}

var hooks = map[reflect.Type]func(d *decoder, n *node, v reflect.Value, path string) error{
	reflect.TypeFor[Input]():                decodeInput,
	reflect.TypeFor[scripted.AgentScript](): decodeAgentScript,
	reflect.TypeFor[Gate]():                 decodeGate,
	reflect.TypeFor[Decision]():             decodeDecision,
	reflect.TypeFor[Compaction]():           decodeCompaction,
}

func decodeInput(d *decoder, n *node, v reflect.Value, path string) error {
	switch n.kind {
	case kString:
		v.Set(reflect.ValueOf(Input{llm.User(n.str)}))
		return nil
	case kArray:
		msgs := make(Input, len(n.items))
		for i, it := range n.items {
			p := indexPath(path, i)
			if it.kind != kObject {
				return errAt(it.start, `%s must be a {"role", "content"} message, not %s`, p, it.kind.words())
			}
			if err := d.value(it, reflect.ValueOf(&msgs[i]).Elem(), p); err != nil {
				return err
			}
			if err := normRole(&msgs[i]); err != nil {
				off := it.start
				if r := it.get("role"); r != nil {
					off = r.start
				}
				return errAt(off, "%s %v", p, err)
			}
		}
		v.Set(reflect.ValueOf(msgs))
		return nil
	}
	return errAt(n.start, `"input" must be a string or a list of {"role", "content"} messages, not %s`, n.kind.words())
}

const scriptForms = `a list of steps or {"cases": [{"match": "...", "steps": [...]}]}`

func decodeAgentScript(d *decoder, n *node, v reflect.Value, path string) error {
	var as scripted.AgentScript
	switch n.kind {
	case kArray:
		as.Steps = []scripted.Step{}
		if err := d.value(n, reflect.ValueOf(&as.Steps).Elem(), path); err != nil {
			return err
		}
	case kObject:
		cases := n.get("cases")
		for _, m := range n.members {
			if m.key != "cases" {
				d.warn(m.keyPos, "unknown key %q in %s (ignored)", m.key, path)
			}
		}
		if cases == nil {
			return errAt(n.start, "%s has no \"cases\"; an agent's script is %s", path, scriptForms)
		}
		if cases.kind != kArray {
			return errAt(cases.start, "%s.cases must be a list, not %s", path, cases.kind.words())
		}
		as.Cases = []scripted.Case{}
		if err := d.value(cases, reflect.ValueOf(&as.Cases).Elem(), path+".cases"); err != nil {
			return err
		}
	default:
		return errAt(n.start, "%s must be %s, not %s", path, scriptForms, n.kind.words())
	}
	v.Set(reflect.ValueOf(as))
	return nil
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "json: "), "\n", " ")
}

// validate checks what decoding cannot: required keys, ranges and names.
// d.pos gives the offset of each decoded value by path; what validate only
// warns about goes to d's warnings.
func (s *Scenario) validate(d *decoder) error {
	pos := d.pos
	at := func(paths ...string) int {
		for _, p := range paths {
			if off, ok := pos[p]; ok {
				return off
			}
		}
		return 0
	}
	if len(s.Input) == 0 {
		return errAt(at("input"), `"input" is missing or empty`)
	}
	if _, ok := s.Script["parent"]; !ok {
		return errAt(at("script"), `"script" has no "parent" replies (the top-level agent's steps)`)
	}
	if err := checkDelay(s.DelayMS, "delay_ms", at("delay_ms")); err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(s.Files)) {
		if _, err := vfs.Clean(p); err != nil {
			return errAt(at(keyPath("files", p)), "files: %v", err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(s.BinaryFiles)) {
		kp := keyPath("binary_files", p)
		if _, err := vfs.Clean(p); err != nil {
			return errAt(at(kp), "binary_files: %v", err)
		}
		if _, dup := s.Files[p]; dup {
			return errAt(at(kp), "%s is given in both files and binary_files; give it once", p)
		}
		if _, err := decodeBase64(s.BinaryFiles[p]); err != nil {
			return errAt(at(kp), "binary_files: %s is not valid base64: %v", p, err)
		}
	}
	if err := checkReasoning(s.Agent.Reasoning, "agent.reasoning", at); err != nil {
		return err
	}
	for _, who := range slices.Sorted(maps.Keys(s.Script)) {
		as := s.Script[who]
		base := keyPath("script", who)
		check := func(steps []scripted.Step, path string) error {
			for i, st := range steps {
				sp := indexPath(path, i)
				if st.DelayMS != nil {
					if err := checkDelay(*st.DelayMS, sp+".delay_ms", at(sp+".delay_ms")); err != nil {
						return err
					}
				}
				for j, c := range st.ToolCalls {
					cp := indexPath(sp+".tool_calls", j)
					if c.Name == "" {
						return errAt(at(cp+".name", cp), `%s has no name (the tool to call)`, cp)
					}
				}
			}
			return nil
		}
		if err := check(as.Steps, base); err != nil {
			return err
		}
		for ci, c := range as.Cases {
			if err := check(c.Steps, indexPath(base+".cases", ci)+".steps"); err != nil {
				return err
			}
		}
	}
	for i, t := range s.Agent.Tools {
		if p := indexPath("agent.tools", i); t.Name == "" {
			return errAt(at(p+".name", p), "%s has no name", p)
		}
	}
	if s.Agent.Offload != nil {
		if err := s.Agent.Offload.config().Validate(); err != nil {
			return errAt(at("agent.offload"), "agent.offload: %s", strings.TrimPrefix(err.Error(), "offload: "))
		}
	}
	if s.Agent.MaxSteps < 0 {
		return errAt(at("agent.max_steps"), "agent.max_steps must not be negative (0 means the default)")
	}
	if s.Agent.ContextWindow < 0 {
		return errAt(at("agent.context_window"), "agent.context_window must not be negative (0 means unknown)")
	}
	if s.Agent.MaxParallel < 0 {
		return errAt(at("agent.max_parallel"), "agent.max_parallel must not be negative (0 means the default)")
	}
	for i, sa := range s.Agent.Subagents {
		p := indexPath("agent.subagents", i)
		switch subagent.Mode(sa.Mode) {
		case "", subagent.Isolated, subagent.Fork, subagent.Handoff:
		default:
			return errAt(at(p+".mode"), `%s.mode is %q; use "isolated", "fork" or "handoff"`, p, sa.Mode)
		}
		if sa.ContextWindow < 0 {
			return errAt(at(p+".context_window"), "%s.context_window must not be negative (0 means unknown)", p)
		}
		if sa.MaxSteps < 0 {
			return errAt(at(p+".max_steps"), "%s.max_steps must not be negative (0 means the parent's limit)", p)
		}
		if err := checkReasoning(sa.Reasoning, p+".reasoning", at); err != nil {
			return err
		}
		if sa.TimeoutMS < 0 || sa.TimeoutMS > MaxTimeoutMS {
			return errAt(at(p+".timeout_ms"), "%s.timeout_ms must be between 0 and %d (24 hours), not %v", p, MaxTimeoutMS, sa.TimeoutMS)
		}
	}
	return s.validateDurable(d, at)
}

func checkReasoning(r *llm.ReasoningConfig, path string, at func(...string) int) error {
	if r == nil {
		return nil
	}
	switch r.Effort {
	case "", llm.EffortLow, llm.EffortMedium, llm.EffortHigh:
	default:
		return errAt(at(path+".effort", path), `%s.effort is %q; use "low", "medium" or "high"`, path, r.Effort)
	}
	if r.BudgetTokens < 0 {
		return errAt(at(path+".budget_tokens", path), "%s.budget_tokens must not be negative", path)
	}
	return nil
}

// decodeBase64 reads standard base64, padded or not, ignoring line breaks.
func decodeBase64(s string) ([]byte, error) {
	s = strings.NewReplacer("\n", "", "\r", "").Replace(s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

func checkDelay(ms float64, path string, off int) error {
	if ms < 0 {
		return errAt(off, "%s must not be negative", path)
	}
	if ms > MaxDelayMS {
		return errAt(off, "%s is %v; at most %d (10 minutes per model call) is allowed", path, ms, MaxDelayMS)
	}
	return nil
}

// Model returns a scripted model playing the scenario's script.
func (s *Scenario) Model() *scripted.Model {
	opts := scripted.Options{Delay: time.Duration(s.DelayMS * float64(time.Millisecond))}
	if mo := s.ModelOptions; mo != nil {
		opts.NoImages = mo.Images != nil && !*mo.Images
		opts.NoReasoning = mo.Reasoning != nil && !*mo.Reasoning
	}
	return scripted.New(s.Script, opts)
}

// Build assembles the scenario's agent on model. Assembly errors (a spec
// the harness refuses, such as skills on a fork) are returned as they are;
// Run reports them in the transcript instead.
func (s *Scenario) Build(model llm.Model) (*agent.Agent, error) {
	custom := make([]tool.Tool, 0, len(s.Agent.Tools))
	byName := map[string]tool.Tool{}
	for _, ft := range s.Agent.Tools {
		t, err := ft.tool()
		if err != nil {
			return nil, err
		}
		custom = append(custom, t)
		byName[ft.Name] = t
	}
	var specs []subagent.Spec
	for _, sa := range s.Agent.Subagents {
		spec := subagent.Spec{
			Name: sa.Name, Description: sa.Description, SystemPrompt: sa.SystemPrompt,
			Mode: subagent.Mode(sa.Mode), Skills: sa.Skills, MaxSteps: sa.MaxSteps,
			Timeout:   time.Duration(sa.TimeoutMS * float64(time.Millisecond)),
			Reasoning: sa.Reasoning, InterruptOn: sa.InterruptOn.approvals(),
		}
		mw, err := compactionMiddleware(sa.ContextWindow, sa.Compaction, model)
		if err != nil {
			return nil, err
		}
		spec.Middleware = mw
		if sa.Tools != nil {
			spec.Tools = []tool.Tool{}
			for _, name := range *sa.Tools {
				t, ok := byName[name]
				if !ok {
					var err error
					if t, err = (FakeTool{Name: name}).tool(); err != nil {
						return nil, err
					}
				}
				spec.Tools = append(spec.Tools, t)
			}
		}
		if len(sa.ResponseFormat) > 0 {
			rf := bytes.TrimSpace(sa.ResponseFormat)
			if rf[0] == '{' {
				spec.ResponseFormat = json.RawMessage(rf)
			} else {
				var v any
				if err := json.Unmarshal(rf, &v); err != nil {
					return nil, err
				}
				spec.ResponseFormat = v
			}
		}
		specs = append(specs, spec)
	}
	mw, err := compactionMiddleware(s.Agent.ContextWindow, s.Agent.Compaction, model)
	if err != nil {
		return nil, err
	}
	return deepagents.New(deepagents.Config{
		Model: model, SystemPrompt: s.Agent.SystemPrompt, Tools: custom, Subagents: specs, Middleware: mw,
		MaxSteps: s.Agent.MaxSteps, MaxParallel: s.Agent.MaxParallel, Offload: s.Agent.Offload.config(),
		Reasoning: s.Agent.Reasoning, InterruptOn: s.Agent.InterruptOn.approvals(), Todos: s.Agent.Todos,
		// A scenario compacts only when it says so (agent.context_window or
		// agent.compaction), through the middleware built above.
		NoCompaction: true,
	})
}

type queryArgs struct {
	Query string `json:"query" jsonschema:"What to look up"`
}

func (ft FakeTool) tool() (tool.Tool, error) {
	desc := ft.Description
	if desc == "" {
		desc = "Scripted stand-in for the " + ft.Name + " tool."
	}
	returns := ft.Returns
	if returns == "" {
		returns = "ok"
	}
	return tool.Func(ft.Name, desc, func(_ context.Context, _ *tool.Env, in queryArgs) (string, error) {
		return fmt.Sprintf("%s (query: %s)", returns, in.Query), nil
	})
}
