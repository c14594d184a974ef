package subagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"github.com/google/jsonschema-go/jsonschema"
)

// Mode is how a subagent runs; it is fixed in its Spec, never chosen by the
// model.
type Mode string

// Modes. The empty Mode is Isolated.
const (
	Isolated Mode = "isolated"
	Fork     Mode = "fork"
	// Handoff is the old name of Isolated, still accepted.
	Handoff Mode = "handoff"
)

// GeneralPurposeName is the name of the default subagent.
const GeneralPurposeName = "general-purpose"

// Spec declares one subagent.
type Spec struct {
	// Name is what the model passes as subagent_type. Names are keys: a spec
	// named general-purpose replaces the default one.
	Name string
	// Description is the subagent's line in the task tool's listing.
	Description string
	// SystemPrompt is the subagent's own prompt. For a fork it is sent after
	// the parent's prompt, at the start of the changing part of the system
	// prompt (llm.Request.SystemTail), so that the fork's requests still
	// begin with the parent's cached prefix. Empty: no system prompt
	// (isolated) or none added.
	SystemPrompt string
	// Mode is Isolated (default), Fork, or Handoff (= Isolated).
	Mode Mode
	// Tools are the subagent's own tools, bound after the file tools. Nil
	// means the parent's custom tools. Ignored for forks, which get the
	// parent's exact tool list.
	Tools []tool.Tool
	// ExactTools makes Tools the subagent's complete tool list: the file
	// tools are not added, nor the tools of shared middleware such as
	// write_todos (agent files that name the tools they allow).
	ExactTools bool
	// MCPServers, when set, narrows the MCP tools the subagent gets from
	// its parent to those of the named servers (tools that name their
	// servers through an MCPServers() []string method). Nil: all of them.
	// A fork cannot narrow: it runs with its parent's exact tools.
	MCPServers []string
	// Model answers the subagent; nil means the parent's model.
	Model llm.Model
	// Reasoning asks the subagent's model to think first; nil inherits the
	// parent's setting (for a fork too). Checked at assembly against the
	// subagent's model like the parent's.
	Reasoning *llm.ReasoningConfig
	// ContextWindow is the subagent's model's context window in tokens; 0
	// takes the parent's when the subagent uses the parent's model, else
	// unknown. The subagent's context report and compaction use it.
	ContextWindow int
	// InterruptOn names the subagent's tools whose calls wait for a
	// person's decision (see package approve). Nil inherits the
	// parent's; an empty map turns approvals off for this subagent.
	InterruptOn map[string]approve.Policy
	// Middleware wrap the subagent's model and tool calls.
	Middleware []agent.Middleware
	// Permissions are the rules on the subagent's file access (package
	// vfs/perm), applied by deepagents.New. Nil inherits the parent's; an
	// empty list lifts them. A fork always has its parent's.
	Permissions perm.Rules
	// ResponseFormat makes the receipt structured JSON. It is a Go struct
	// type (a reflect.Type, or As[T]()), a *jsonschema.Schema, or a JSON
	// schema document (json.RawMessage, []byte, map[string]any) of an
	// object. The subagent gets one extra tool named after the type (or the
	// schema's title) whose parameters are the schema.
	ResponseFormat any
	// Skills are the names of the skills an isolated subagent may use,
	// listed in its prompt (see package skills); nil gives it none. They
	// come from the parent's skill sources, so a spec that names skills is
	// refused when the parent has none. A fork never may set them: it
	// inherits the parent's.
	Skills []string
	// MaxSteps bounds the model calls of each run of the subagent (0: the
	// parent's limit, else agent.DefaultMaxSteps). Every instance, that is
	// every task call, has a budget of its own.
	MaxSteps int
	// Timeout bounds one run of the subagent (0: none). A timed-out run ends
	// with status limit and keeps what it wrote.
	Timeout time.Duration
	// Background makes the subagent run in the background by default: a
	// task call returns at once with a task id unless it passes
	// run_in_background false.
	Background bool
	// BackgroundLimits cap the subagent's background runs; zero fields
	// take Config.Background's (MaxRunning is Config's only).
	BackgroundLimits BackgroundLimits
}

// As returns the response format for Go type T, for Spec.ResponseFormat.
func As[T any]() any { return reflect.TypeFor[T]() }

// Decode parses a structured receipt into T.
func Decode[T any](receipt string) (T, error) {
	var v T
	err := json.Unmarshal([]byte(receipt), &v)
	return v, err
}

// ConfigError is an assembly-time rejection of a subagent configuration:
// the same type as agent.ConfigError, so one errors.As matches the errors of
// agent.New, NewTask and deepagents.New. Its Subagent field names the spec
// at fault, and its message is the exact text users see.
type ConfigError = agent.ConfigError

func configErr(name, format string, args ...any) error {
	return &ConfigError{Subagent: name, Msg: fmt.Sprintf(format, args...)}
}

// normMode validates a mode and resolves Handoff and "" to Isolated.
func normMode(s Spec) (Mode, error) {
	switch s.Mode {
	case "", Isolated, Handoff:
		return Isolated, nil
	case Fork:
		return Fork, nil
	}
	return "", configErr(s.Name, "SubAgent '%s' has invalid mode '%s'; expected 'isolated' or 'fork'", s.Name, s.Mode)
}

var toolNameRe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// ResolveFormat turns a Spec.ResponseFormat value into an agent response
// format, or rejects it with a *ConfigError ("Unsupported schema type:
// <type>" for a value of a kind it does not take).
func ResolveFormat(v any) (*agent.ResponseFormat, error) {
	if v == nil {
		return nil, nil
	}
	var (
		doc  []byte
		name string
		err  error
	)
	switch f := v.(type) {
	case reflect.Type:
		doc, name, err = structSchema(f)
	case *jsonschema.Schema:
		if f == nil {
			return nil, nil
		}
		doc, err = json.Marshal(f)
	case json.RawMessage:
		doc = f
	case []byte:
		doc = f
	case map[string]any:
		doc, err = json.Marshal(f)
	default:
		t := reflect.TypeOf(v)
		if t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
			doc, name, err = structSchema(t)
		} else {
			return nil, &ConfigError{Msg: fmt.Sprintf("Unsupported schema type: %T", v)}
		}
	}
	if err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, &ConfigError{Msg: fmt.Sprintf("response format: %v", err), Err: err}
	}
	var meta struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Type        any    `json:"type"`
	}
	if err := json.Unmarshal(doc, &meta); err != nil {
		return nil, &ConfigError{Msg: fmt.Sprintf("response format is not a JSON schema object: %v", err)}
	}
	if meta.Type != "object" {
		return nil, &ConfigError{Msg: fmt.Sprintf("response format must be an object schema (\"type\": \"object\"), got type %v", meta.Type)}
	}
	if name == "" {
		name = meta.Title
	}
	name = strings.Trim(toolNameRe.ReplaceAllString(name, "_"), "_")
	if name == "" {
		name = "StructuredResponse"
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		return nil, &ConfigError{Msg: fmt.Sprintf("response format is not valid JSON: %v", err), Err: err}
	}
	desc := meta.Description
	if desc == "" {
		desc = "Return your final answer by calling this tool; its arguments are the answer. The call ends your task."
	}
	return &agent.ResponseFormat{Name: name, Description: desc, Schema: compact.Bytes()}, nil
}

func structSchema(t reflect.Type) ([]byte, string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, "", &ConfigError{Msg: fmt.Sprintf("Unsupported schema type: %s", t)}
	}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, "", &ConfigError{Msg: fmt.Sprintf("cannot derive a schema from %s: %v", t, err)}
	}
	doc, err := json.Marshal(s)
	return doc, t.Name(), err
}
