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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
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
	DelayMS     float64           `json:"delay_ms,omitempty"`
	Agent       AgentSpec         `json:"agent"`
	Script      scripted.Script   `json:"script"`
	Expect      *Expect           `json:"expect,omitempty"`

	// Warnings lists unknown keys found while parsing; they are ignored.
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
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleUser, llm.RoleAssistant, llm.RoleSystem, llm.RoleTool:
		case "human":
			msgs[i].Role = llm.RoleUser
		case "ai":
			msgs[i].Role = llm.RoleAssistant
		default:
			return fmt.Errorf("input message %d has unknown role %q", i, m.Role)
		}
	}
	*in = msgs
	return nil
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
}

// Expect holds optional checks, in the vocabulary of the reference harness.
type Expect struct {
	NoError                 bool              `json:"no_error,omitempty"`
	ErrorContains           *string           `json:"error_contains,omitempty"`
	ParentMessageCount      *int              `json:"parent_message_count,omitempty"`
	FilesInclude            []string          `json:"files_include,omitempty"`
	FilesExclude            []string          `json:"files_exclude,omitempty"`
	ToolMessageContains     map[string]string `json:"tool_message_contains,omitempty"`
	SubagentMessageContains map[string]string `json:"subagent_message_contains,omitempty"`
	MaxConcurrentModelCalls *int              `json:"max_concurrent_model_calls,omitempty"`
	FinalStateKeys          []string          `json:"final_state_keys,omitempty"`
}

var aliases = map[string]string{"systemPrompt": "system_prompt", "responseFormat": "response_format",
	"delayMs": "delay_ms", "maxSteps": "max_steps", "maxParallel": "max_parallel", "timeoutMs": "timeout_ms"}

// Parse decodes a scenario and checks it is runnable. Errors are one line.
func Parse(data []byte) (*Scenario, error) {
	var warnings []string
	norm, err := normalize(data, "", &warnings)
	if err != nil {
		return nil, err
	}
	var s Scenario
	if err := json.Unmarshal(norm, &s); err != nil {
		return nil, fmt.Errorf("invalid scenario: %s", oneLine(err))
	}
	strict := json.NewDecoder(bytes.NewReader(norm))
	strict.DisallowUnknownFields()
	var probe Scenario
	if err := strict.Decode(&probe); err != nil && strings.Contains(err.Error(), "unknown field") {
		warnings = append(warnings, strings.TrimPrefix(err.Error(), "json: "))
	}
	s.Warnings = warnings
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Load reads and parses a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// normalize renames camelCase aliases to snake_case in the scenario, its
// agent and each subagent, leaving every other value byte for byte (tool-call
// arguments keep their key order).
func normalize(data []byte, path string, warnings *[]string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		if path != "" {
			return data, nil // not an object: the typed decode reports it
		}
		if !json.Valid(data) {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		return nil, errors.New("invalid scenario: the top level must be a JSON object")
	}
	out := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		if a, ok := aliases[k]; ok {
			if _, dup := obj[a]; dup {
				*warnings = append(*warnings, fmt.Sprintf("both %q and %q given at %s; using %q", k, a, orRoot(path), a))
				continue
			}
			k = a
		}
		switch {
		case path == "" && k == "agent":
			nv, err := normalize(v, ".agent", warnings)
			if err != nil {
				return nil, err
			}
			v = nv
		case path == ".agent" && k == "subagents":
			var subs []json.RawMessage
			if json.Unmarshal(v, &subs) == nil {
				for i := range subs {
					ns, err := normalize(subs[i], ".agent.subagents[]", warnings)
					if err != nil {
						return nil, err
					}
					subs[i] = ns
				}
				v, _ = json.Marshal(subs)
			}
		}
		out[k] = v
	}
	return json.Marshal(out)
}

func orRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return strings.TrimPrefix(p, ".")
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimPrefix(err.Error(), "json: "), "\n", " ")
}

func (s *Scenario) validate() error {
	if len(s.Input) == 0 {
		return errors.New(`invalid scenario: "input" is missing or empty`)
	}
	if _, ok := s.Script["parent"]; !ok {
		return errors.New(`invalid scenario: "script" has no "parent" replies`)
	}
	if s.DelayMS < 0 {
		return errors.New(`invalid scenario: "delay_ms" must not be negative`)
	}
	for p := range s.Files {
		if _, err := vfs.Clean(p); err != nil {
			return fmt.Errorf("invalid scenario: files: %v", err)
		}
	}
	for who, as := range s.Script {
		for ci, c := range as.Cases {
			if len(c.Steps) == 0 {
				return fmt.Errorf("invalid scenario: script %q case %d has no steps", who, ci)
			}
		}
		check := func(steps []scripted.Step, where string) error {
			for i, st := range steps {
				for j, c := range st.ToolCalls {
					if c.Name == "" {
						return fmt.Errorf("invalid scenario: script %q%s step %d tool call %d has no name", who, where, i, j)
					}
					if len(c.Args) > 0 && !json.Valid(c.Args) {
						return fmt.Errorf("invalid scenario: script %q%s step %d tool call %d has invalid args", who, where, i, j)
					}
				}
			}
			return nil
		}
		if err := check(as.Steps, ""); err != nil {
			return err
		}
		for ci, c := range as.Cases {
			if err := check(c.Steps, fmt.Sprintf(" case %d", ci)); err != nil {
				return err
			}
		}
	}
	for i, t := range s.Agent.Tools {
		if t.Name == "" {
			return fmt.Errorf("invalid scenario: agent.tools[%d] has no name", i)
		}
	}
	if s.Agent.Offload != nil {
		if err := s.Agent.Offload.config().Validate(); err != nil {
			return fmt.Errorf("invalid scenario: agent.offload: %s", strings.TrimPrefix(err.Error(), "offload: "))
		}
	}
	return nil
}

// Model returns a scripted model playing the scenario's script.
func (s *Scenario) Model() *scripted.Model {
	return scripted.New(s.Script, scripted.Options{Delay: time.Duration(s.DelayMS * float64(time.Millisecond))})
}

// Build assembles the scenario's agent on model. Assembly errors (the
// rejections of F23–F28) are returned as they are.
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
			Timeout: time.Duration(sa.TimeoutMS * float64(time.Millisecond)),
		}
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
	return deepagents.New(deepagents.Config{
		Model: model, SystemPrompt: s.Agent.SystemPrompt, Tools: custom, Subagents: specs,
		MaxSteps: s.Agent.MaxSteps, MaxParallel: s.Agent.MaxParallel, Offload: s.Agent.Offload.config(),
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
