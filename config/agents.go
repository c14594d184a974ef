package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/internal/modelref"
	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/vfs/perm"
	"go.yaml.in/yaml/v3"
)

// AgentFile is a subagent declared in a Markdown file: YAML front matter
// between a first line "---" and a closing "---" line, then the system
// prompt.
//
//	---
//	name: researcher
//	description: Finds and summarises sources on one question.
//	tools: [read_file, grep, glob]
//	timeout: 90s
//	---
//	You are a careful researcher. ...
//
// The front matter keys are:
//
//	name             the subagent_type the model passes (default: the file's
//	                 name without .md); letters, digits, "_" and "-"
//	description      required: the subagent's line in the task tool's listing
//	mode             "isolated" (default), "fork" or "handoff" (= isolated)
//	tools            the tool names the subagent gets: a list, or a
//	                 comma-separated string ("tools: read_file" is the
//	                 list of that one tool); [] for none. Not for forks.
//	model            "provider:model", or "provider" for that provider's
//	                 configured default model; "inherit" or absent: the
//	                 parent's model
//	response_format  a JSON schema of an object (type: object), as a YAML
//	                 mapping or a string holding JSON
//	max_steps        the subagent's model-call limit, at least 1
//	timeout          a Go duration ("90s", "5m") bounding one run
//	reasoning        how much the subagent's model thinks first: an effort
//	                 (low, medium, high) or a budget of thinking tokens
//	                 (8000), or a mapping {effort: high} or
//	                 {budget_tokens: 8000}; absent: the parent's setting
//	interrupt_on     the tools whose calls wait for a person's decision: a
//	                 mapping of tool names, each true, false or a list of
//	                 decisions ([approve, edit, reject, respond]); absent: the
//	                 parent's; {} for none (the CLI keeps the user's gates
//	                 under a project's agent file)
//	permissions      rules on the subagent's file access, a list such as
//	                 ["deny write /**"] (see package vfs/perm); absent: the
//	                 parent's; [] for none (the CLI keeps the user's rules
//	                 under a project's agent file). Not for forks.
//	context_window   the subagent's model's context window in tokens, over
//	                 the built-in number for its model (or for a model
//	                 without one); absent: its model's known window
//	mcpServers       the MCP servers whose tools the subagent gets from its
//	                 parent (a list, like tools); absent: all of them
//	skills           the names of the skills the subagent may use: a list
//	                 or a comma-separated string. Not for forks (they have
//	                 their parent's).
//	background       true: a task call runs the subagent in the background
//	                 (it returns at once with a task id) unless the call
//	                 passes run_in_background: false
//	background_max_steps, background_max_tokens, background_timeout
//	                 caps on each background run of the subagent (defaults:
//	                 50 model calls, 200000 tokens, 30m); a project's agent
//	                 file may lower the caps in force, never raise them
//
// Any other key is an error.
type AgentFile struct {
	// Path is the file, as given to ParseAgentFile or joined from the
	// directory given to LoadAgents.
	Path        string
	Name        string
	Description string
	// Mode is "isolated", "fork" or "handoff"; "isolated" when not set.
	Mode string
	// Tools are the tool names, unresolved: nil when the key is absent (the
	// caller's default tools), empty when given empty (no tools).
	Tools []string
	// ToolLines are the lines of the names in Tools, one each, so that a
	// caller who finds a name unknown can say where it is.
	ToolLines []int
	// Model is "provider:model" or "provider", unresolved; "" for the
	// parent's model. See Config.ExpandModel.
	Model string
	// ModelLine is the line of the model key, 0 when it is absent.
	ModelLine int
	// ResponseFormat is the compact JSON of an object schema, or nil.
	ResponseFormat json.RawMessage
	// MaxSteps is 0 when not set.
	MaxSteps int
	// Timeout is 0 when not set.
	Timeout time.Duration
	// Reasoning is nil when not set: the subagent inherits the parent's.
	Reasoning *llm.ReasoningConfig
	// InterruptOn is nil when not set: the subagent inherits the parent's
	// approvals. An empty map asks about nothing.
	InterruptOn map[string]approve.Policy
	// Permissions is nil when not set: the subagent inherits the parent's
	// rules. An empty list lifts them.
	Permissions perm.Rules
	// ContextWindow is 0 when not set: the window known for the
	// subagent's model applies (Config.Profile).
	ContextWindow int
	// MCPServers (key mcpServers) narrows the parent's MCP tools to those
	// of the named servers; nil when not set (all of them).
	MCPServers []string
	// Skills are the skill names of the skills key, nil when it is absent.
	Skills []string
	// Background makes the subagent run in the background by default;
	// BackgroundLimits cap its background runs (zero fields: defaults).
	Background       bool
	BackgroundLimits subagent.BackgroundLimits
	// Prompt is the body after the front matter, without the blank lines
	// around it; it may be empty.
	Prompt string
	// Line is where the front matter starts (the first "---").
	Line int
}

// Spec returns the subagent spec of a, with Name, Description,
// SystemPrompt, Mode, ResponseFormat, MaxSteps, Timeout, Reasoning and
// InterruptOn filled in. Tools
// and Model are left for the caller to resolve from a.Tools and a.Model.
func (a AgentFile) Spec() subagent.Spec {
	s := subagent.Spec{
		Name:         a.Name,
		Description:  a.Description,
		SystemPrompt: a.Prompt,
		Mode:         subagent.Mode(a.Mode),
		MaxSteps:     a.MaxSteps,
		Timeout:      a.Timeout,

		Background:       a.Background,
		BackgroundLimits: a.BackgroundLimits,
	}
	if len(a.ResponseFormat) > 0 {
		s.ResponseFormat = slices.Clone(a.ResponseFormat)
	}
	if a.Reasoning != nil {
		r := *a.Reasoning
		s.Reasoning = &r
	}
	s.InterruptOn = cloneApprovals(a.InterruptOn)
	s.MCPServers = slices.Clone(a.MCPServers)
	s.Skills = slices.Clone(a.Skills)
	if a.Permissions != nil {
		s.Permissions = slices.Clone(a.Permissions)
	}
	return s
}

// AgentDirs returns the standard agents directories, user first so that
// the project's files override the user's: homeDir/.deepagents/agents and
// projectDir/.deepagents/agents. An empty homeDir leaves the user directory
// out; an empty projectDir is the current directory.
func AgentDirs(projectDir, homeDir string) []string {
	var dirs []string
	if homeDir != "" {
		dirs = append(dirs, filepath.Join(homeDir, ".deepagents", "agents"))
	}
	return append(dirs, filepath.Join(projectDir, ".deepagents", "agents"))
}

// LoadAgents reads the agent files (*.md, not starting with ".") of each
// directory, in order. A directory that does not exist is skipped; one that
// cannot be read is an error. A file in a later directory replaces the one
// of the same name from an earlier directory (so pass the user directory
// before the project one, as AgentDirs does); two files of the same name in
// one directory are an error. The result is sorted by name.
//
// Every problem of every file is reported, each as a *FileError, joined
// with errors.Join; with any problem the result is nil.
func LoadAgents(dirs ...string) ([]AgentFile, error) {
	byName := map[string]AgentFile{}
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, &FileError{Path: dir, Msg: "cannot read the agents directory: " + pathErrText(err)})
			continue
		}
		here := map[string]AgentFile{}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".md") {
				continue
			}
			path := filepath.Join(dir, name)
			st, err := os.Stat(path) // follows symlinks; never opens the file
			if err != nil {
				errs = append(errs, &FileError{Path: path, Msg: "cannot read: " + pathErrText(err)})
				continue
			}
			if st.IsDir() {
				continue
			}
			if !st.Mode().IsRegular() {
				// A FIFO, socket or device named like an agent file: opening
				// it could block or never end, so it is refused unopened.
				errs = append(errs, &FileError{Path: path, Msg: "cannot read: not a regular file (an agent file must be a plain file)"})
				continue
			}
			data, err := safefile.Read(path, MaxFileSize)
			if err != nil {
				errs = append(errs, &FileError{Path: path, Msg: "cannot read: " + pathErrText(err)})
				continue
			}
			a, nameLine, err := parseAgentFile(path, data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if prev, dup := here[a.Name]; dup {
				errs = append(errs, &FileError{Path: path, Line: nameLine,
					Msg: fmt.Sprintf("subagent %q is also declared in %s; names must be unique within a directory", a.Name, prev.Path)})
				continue
			}
			here[a.Name] = a
		}
		for name, a := range here {
			byName[name] = a
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]AgentFile, 0, len(byName))
	for _, a := range byName {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b AgentFile) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// pathErrText is err without the path, which the FileError already shows.
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

var agentKeys = []string{"name", "description", "mode", "tools", "model", "response_format", "max_steps", "timeout", "reasoning", "interrupt_on", "permissions", "context_window", "mcpServers", "skills",
	"background", "background_max_steps", "background_max_tokens", "background_timeout"}

var agentModes = []string{string(subagent.Isolated), string(subagent.Fork), string(subagent.Handoff)}

// ParseAgentFile parses one agent file; path names it in errors and gives
// the default name. Every problem is reported, as *FileErrors joined with
// errors.Join, each with path and a line of the file.
func ParseAgentFile(path string, data []byte) (AgentFile, error) {
	a, _, err := parseAgentFile(path, data)
	return a, err
}

// parseAgentFile is ParseAgentFile, also returning the line to blame for
// the name: where name is set, or the front matter's start.
func parseAgentFile(path string, data []byte) (AgentFile, int, error) {
	p := &problems{path: path}
	a, nameLine := parseAgent(p, path, data)
	if err := p.err(); err != nil {
		return AgentFile{}, 0, err
	}
	return a, nameLine, nil
}

// frontStart is the line of the opening "---": front matter line n is file
// line n+frontStart.
const frontStart = 1

func parseAgent(p *problems, path string, data []byte) (a AgentFile, nameLine int) {
	nameLine = frontStart
	a = AgentFile{Path: path, Line: frontStart, Mode: string(subagent.Isolated)}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		p.add(1+bytes.Count(data[:i], []byte("\n")), "the file is not valid UTF-8 text")
		return a, nameLine
	}
	text := strings.ReplaceAll(strings.TrimPrefix(string(data), "\ufeff"), "\r\n", "\n")
	lines := strings.SplitAfter(text, "\n")
	if !isFence(lines[0]) {
		p.add(frontStart, `missing front matter: the file must start with a line "---"`)
		return a, nameLine
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if isFence(lines[i]) {
			end = i
			break
		}
	}
	if end < 0 {
		p.add(frontStart, `unclosed front matter: no line "---" ends it`)
		return a, nameLine
	}
	a.Prompt = trimBlankLines(strings.Join(lines[end+1:], ""))

	front := strings.Join(lines[1:end], "")
	var doc yaml.Node
	if err := safeYAML(front, &doc); err != nil {
		line, msg := yamlErr(err, front)
		// Front matter line n is file line n+frontStart; an error at its
		// end is on the closing "---".
		p.add(min(line+frontStart, end+1), "invalid YAML: %s", msg)
		return a, nameLine
	}
	at := func(n *yaml.Node) int { return n.Line + frontStart }

	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = deref(doc.Content[0])
	}
	if root != nil && root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		root = nil // only comments, or "~"
	}
	if root != nil && root.Kind != yaml.MappingNode {
		p.add(at(root), "the front matter must be keys and values, got %s", describe(root))
		return a, nameLine
	}

	seen := map[string]int{}
	var toolsLine, skillsLine, permissionsLine int
	if root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			kn, vn := root.Content[i], root.Content[i+1]
			k, v := deref(kn), deref(vn)
			kl, vl := at(kn), at(vn)
			if (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) && v.Style&yaml.FlowStyle == 0 {
				vl = kl // a block collection starts on the next line; blame the key
			}
			if k.Kind != yaml.ScalarNode {
				p.add(kl, "keys must be words, got %s", describe(k))
				continue
			}
			key := k.Value
			if first, dup := seen[key]; dup {
				p.add(kl, "key %q is set twice (first on line %d)", key, first)
				continue
			}
			seen[key] = kl
			switch key {
			case "name":
				if s, ok := yamlString(p, key, v, vl); ok {
					if !nameRe.MatchString(s) {
						p.add(vl, `name must be letters, digits, "_" and "-" only, got %q`, s)
					} else {
						a.Name, nameLine = s, kl
					}
				}
			case "description":
				if s, ok := yamlString(p, key, v, vl); ok {
					if s = strings.TrimSpace(s); s == "" {
						p.add(vl, "description must not be empty: the model chooses subagents by it")
					}
					a.Description = s
				}
			case "mode":
				if s, ok := yamlString(p, key, v, vl); ok {
					if !slices.Contains(agentModes, s) {
						p.add(vl, "mode must be %s, got %q", quoteList(agentModes, "or"), s)
					} else {
						a.Mode = s
					}
				}
			case "tools":
				a.Tools, a.ToolLines = yamlTools(p, v, vl, at)
				toolsLine = kl
			case "model":
				if s, ok := yamlString(p, key, v, vl); ok {
					s = strings.TrimSpace(s)
					if s == "inherit" {
						s = ""
					} else if msg := checkModelRef(s); msg != "" {
						p.add(vl, "model %s", msg)
					}
					a.Model = s
					if s != "" {
						a.ModelLine = vl
					}
				}
			case "response_format":
				a.ResponseFormat = yamlSchema(p, v, vl, at)
			case "max_steps":
				a.MaxSteps = yamlPositiveInt(p, key, v, vl)
			case "timeout":
				a.Timeout = yamlDuration(p, key, v, vl)
			case "reasoning":
				a.Reasoning = yamlReasoning(p, v, vl, at)
			case "interrupt_on":
				a.InterruptOn = yamlInterruptOn(p, v, vl, at)
			case "mcpServers":
				a.MCPServers = yamlServerNames(p, v, vl, at)
			case "permissions":
				a.Permissions = yamlPermissions(p, v, vl, at)
				permissionsLine = kl
			case "context_window":
				if n := yamlPositiveInt(p, key, v, vl); n > maxWindow {
					p.add(vl, "context_window is too large: %d tokens", n)
				} else {
					a.ContextWindow = n
				}
			case "skills":
				a.Skills = yamlSkills(p, v, vl, at)
				skillsLine = kl
			case "background":
				a.Background = yamlBool(p, key, v, vl)
			case "background_max_steps":
				a.BackgroundLimits.MaxSteps = yamlPositiveInt(p, key, v, vl)
			case "background_max_tokens":
				a.BackgroundLimits.MaxTokens = yamlPositiveInt(p, key, v, vl)
			case "background_timeout":
				a.BackgroundLimits.Timeout = yamlDuration(p, key, v, vl)
			default:
				p.add(kl, "%s", unknownKey(key, key, agentKeys))
			}
		}
	}
	if _, ok := seen["description"]; !ok {
		p.add(frontStart, `missing required key "description": the model chooses subagents by it`)
	}
	if _, ok := seen["name"]; !ok {
		base := strings.TrimSuffix(filepath.Base(path), ".md")
		if !nameRe.MatchString(base) {
			p.add(frontStart, `the file name %q is not a subagent name (letters, digits, "_" and "-" only): rename the file or set "name"`, base)
		}
		a.Name = base
	}
	if a.Mode == string(subagent.Fork) && a.Tools != nil {
		p.add(toolsLine, `tools cannot be set for mode "fork": a fork runs with its parent's exact tools`)
	}
	if a.Mode == string(subagent.Fork) && a.Skills != nil {
		p.add(skillsLine, `skills cannot be set for mode "fork": a fork has its parent's skills`)
	}
	if a.Mode == string(subagent.Fork) && a.Permissions != nil {
		p.add(permissionsLine, `permissions cannot be set for mode "fork": a fork shares its parent's rules`)
	}
	return a, nameLine
}

// isFence reports whether line is a front matter delimiter.
func isFence(line string) bool { return strings.TrimRight(line, " \t\r\n") == "---" }

// trimBlankLines drops the blank lines before and the white space after s.
func trimBlankLines(s string) string {
	for {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok || strings.TrimSpace(line) != "" {
			break
		}
		s = rest
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return strings.TrimRight(s, " \t\r\n")
}

// safeYAML parses YAML into a node; a panic of the parser is an error.
func safeYAML(src string, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return yaml.Unmarshal([]byte(src), n)
}

var (
	yamlLineRe   = regexp.MustCompile(`^yaml: line (\d+): `)
	yamlAnchorRe = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// yamlParserProblems are the messages of yaml's parser (not its scanner),
// whose line numbers are 0-based where the scanner's are 1-based.
var yamlParserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>",
	"did not find expected node content", "did not find expected '-' indicator",
	"did not find expected key", "did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found undefined tag handle", "found duplicate %YAML directive", "found incompatible YAML document",
	"found duplicate %TAG directive",
}

// yamlErr splits a yaml error on src into the 1-based line of src it is
// on and its message. yaml omits the line when it is the first.
func yamlErr(err error, src string) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		msg = err.Error()[len(m[0]):]
		line = n
		if slices.Contains(yamlParserProblems, msg) {
			line = n + 1
		}
	} else if m := yamlAnchorRe.FindStringSubmatch(msg); m != nil {
		for i, l := range strings.Split(src, "\n") {
			if strings.Contains(l, "*"+m[1]) {
				line = i + 1
				break
			}
		}
	}
	return max(line, 1), msg
}

// deref follows aliases to the node they stand for.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// describe names what a node holds, for "got ..." messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("the string %q", v)
		case "!!int":
			return "the integer " + v
		case "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		case "!!timestamp":
			return "the date " + v
		}
		return fmt.Sprintf("%s %s", n.ShortTag(), v)
	}
	return "an alias"
}

// yamlString is the string value of key, or false after reporting why it
// is not one.
func yamlString(p *problems, key string, v *yaml.Node, line int) (string, bool) {
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
		return v.Value, true
	}
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		p.add(line, "%s has no value", key)
		return "", false
	}
	hint := ""
	if v.Kind == yaml.ScalarNode {
		hint = "; put it in quotes"
	}
	p.add(line, "%s must be a string, got %s%s", key, describe(v), hint)
	return "", false
}

func yamlBool(p *problems, key string, v *yaml.Node, line int) bool {
	var b bool
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
		p.add(line, "%s must be true or false, got %s", key, describe(v))
		return false
	}
	return b
}

func yamlPositiveInt(p *problems, key string, v *yaml.Node, line int) int {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		p.add(line, "%s must be a whole number, got %s", key, describe(v))
		return 0
	}
	var n int64
	if err := v.Decode(&n); err != nil || n > math.MaxInt32 {
		p.add(line, "%s is too large: %s", key, v.Value)
		return 0
	}
	if n < 1 {
		p.add(line, "%s must be at least 1, got %s", key, v.Value)
		return 0
	}
	return int(n)
}

func yamlDuration(p *problems, key string, v *yaml.Node, line int) time.Duration {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		hint := ""
		if v.ShortTag() == "!!int" || v.ShortTag() == "!!float" {
			hint = "; add a unit"
		}
		p.add(line, `%s must be a duration like "90s" or "5m", got %s%s`, key, describe(v), hint)
		return 0
	}
	return positiveDuration(p, key, v.Value, line)
}

// positiveDuration parses a Go duration that must be above zero, reporting
// a problem at line otherwise.
func positiveDuration(p *problems, key, text string, line int) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(text))
	if err != nil {
		p.add(line, `%s must be a duration like "90s" or "5m", got %q`, key, text)
		return 0
	}
	if d <= 0 {
		p.add(line, "%s must be positive, got %q", key, text)
		return 0
	}
	return d
}

// yamlServerNames reads mcpServers: a list of MCP server names (letters,
// digits, '_', '-' and '.'), or one comma-separated string.
func yamlServerNames(p *problems, v *yaml.Node, line int, at func(*yaml.Node) int) []string {
	var names []string
	add := func(s string, l int) {
		s = strings.TrimSpace(s)
		switch {
		case s == "" || strings.ContainsFunc(s, func(r rune) bool {
			return !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}):
			p.add(l, `mcpServers: %q is not a server name (letters, digits, "_", "-" and ".")`, s)
		case !slices.Contains(names, s):
			names = append(names, s)
		}
	}
	switch {
	case v.Kind == yaml.SequenceNode:
		names = []string{}
		for _, en := range v.Content {
			if e := deref(en); e.Kind == yaml.ScalarNode && e.ShortTag() == "!!str" {
				add(e.Value, at(en))
			} else {
				p.add(at(en), "mcpServers items must be server names, got %s", describe(e))
			}
		}
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		names = []string{}
		for _, s := range strings.Split(v.Value, ",") {
			add(s, line)
		}
	default:
		p.add(line, "mcpServers must be a list of MCP server names, got %s", describe(v))
	}
	return names
}

// yamlSkills reads the skills key: a list of skill names or a
// comma-separated string of them.
func yamlSkills(p *problems, v *yaml.Node, line int, at func(*yaml.Node) int) []string {
	var names []string
	var lines []int
	switch {
	case v.Kind == yaml.SequenceNode:
		for i, en := range v.Content {
			e := deref(en)
			if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
				p.add(at(en), "skills item %d must be a skill name, got %s", i+1, describe(e))
				continue
			}
			names, lines = append(names, strings.TrimSpace(e.Value)), append(lines, at(en))
		}
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		for _, s := range strings.Split(v.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				names, lines = append(names, s), append(lines, line)
			}
		}
	default:
		p.add(line, "skills must be a list of skill names or a comma-separated string, got %s", describe(v))
		return nil
	}
	out := []string{}
	for i, n := range names {
		switch {
		case !nameRe.MatchString(n):
			p.add(lines[i], `skill name %q must be letters, digits, "_" and "-" only`, n)
		case slices.Contains(out, n):
			p.add(lines[i], "skill %q is listed twice", n)
		default:
			out = append(out, n)
		}
	}
	return out
}

func yamlTools(p *problems, v *yaml.Node, line int, at func(*yaml.Node) int) ([]string, []int) {
	type item struct {
		name string
		line int
	}
	var items []item
	switch {
	case v.Kind == yaml.SequenceNode:
		for i, en := range v.Content {
			e := deref(en)
			if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
				p.add(at(en), "tools item %d must be a tool name, got %s", i+1, describe(e))
				continue
			}
			items = append(items, item{strings.TrimSpace(e.Value), at(en)})
		}
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		for _, s := range strings.Split(v.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, item{s, line})
			}
		}
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
		p.add(line, `tools has no value: write "tools: []" for no tools, or leave the key out for the default tools`)
		return nil, nil
	default:
		p.add(line, "tools must be a list of tool names or a comma-separated string, got %s", describe(v))
		return nil, nil
	}
	tools := make([]string, 0, len(items))
	lines := make([]int, 0, len(items))
	for _, it := range items {
		switch {
		case it.name == "":
			p.add(it.line, "tools has an empty tool name")
		case strings.ContainsAny(it.name, " \t\n"):
			p.add(it.line, "tool name %q has spaces: separate tool names with commas", it.name)
		case !nameRe.MatchString(it.name):
			p.add(it.line, `tool name %q must be letters, digits, "_" and "-" only`, it.name)
		case slices.Contains(tools, it.name):
			p.add(it.line, "tool %q is listed twice", it.name)
		default:
			tools = append(tools, it.name)
			lines = append(lines, it.line)
		}
	}
	return tools, lines
}

// yamlSchema turns response_format into the compact JSON of an object
// schema.
func yamlSchema(p *problems, v *yaml.Node, line int, at func(*yaml.Node) int) json.RawMessage {
	var doc []byte
	keyLine := func(string) int { return line }
	switch {
	case v.Kind == yaml.MappingNode:
		var buf bytes.Buffer
		budget := 10000
		if n, msg := nodeJSON(&buf, v, map[*yaml.Node]bool{}, &budget); msg != "" {
			l := line
			if n != nil {
				l = at(n)
			}
			p.add(l, "response_format: %s", msg)
			return nil
		}
		doc = buf.Bytes()
		keyLine = func(key string) int {
			for i := 0; i+1 < len(v.Content); i += 2 {
				if k := deref(v.Content[i]); k.Value == key {
					return at(v.Content[i+1])
				}
			}
			return line
		}
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		var buf bytes.Buffer
		src := []byte(v.Value)
		if strings.TrimSpace(v.Value) == "" {
			p.add(line, "response_format is empty")
			return nil
		}
		var x any
		err := json.Unmarshal(src, &x) // its errors have offsets; Compact's not
		if err == nil {
			err = json.Compact(&buf, src)
		}
		if err != nil {
			l := line
			var se *json.SyntaxError
			if errors.As(err, &se) && v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				// A block scalar's text starts on the line after the key.
				off := min(int(se.Offset), len(src))
				l = line + 1 + bytes.Count(src[:off], []byte("\n"))
			}
			p.add(l, "response_format is not valid JSON: %v", err)
			return nil
		}
		doc = buf.Bytes()
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
		p.add(line, "response_format has no value")
		return nil
	default:
		p.add(line, "response_format must be a JSON schema: a mapping, or a string holding JSON; got %s", describe(v))
		return nil
	}
	var meta map[string]any
	if err := json.Unmarshal(doc, &meta); err != nil || meta == nil {
		p.add(line, "response_format must be a JSON schema object, got %s", jsonKind(doc))
		return nil
	}
	typeLine := keyLine("type")
	switch t := meta["type"].(type) {
	case string:
		if t != "object" {
			p.add(typeLine, `response_format must be an object schema (type: object), got type %q`, t)
			return nil
		}
	case nil:
		p.add(typeLine, "response_format must be an object schema (type: object), got no type")
		return nil
	default:
		b, _ := json.Marshal(t)
		p.add(typeLine, "response_format must be an object schema (type: object), got type %s", b)
		return nil
	}
	// The title names the tool the subagent answers with and the
	// description explains it: both must be text.
	for _, key := range []string{"title", "description"} {
		if x, ok := meta[key]; ok {
			if _, isText := x.(string); !isText {
				b, _ := json.Marshal(x)
				p.add(keyLine(key), "response_format: %s must be a string, got %s", key, clipJSON(b))
				return nil
			}
		}
	}
	// Whatever else the subagent package would refuse at assembly is
	// refused here, where the line is known.
	if _, err := subagent.ResolveFormat(json.RawMessage(doc)); err != nil {
		p.add(line, "response_format: %v", err)
		return nil
	}
	return json.RawMessage(doc)
}

// clipJSON shortens a JSON value quoted in a message.
func clipJSON(b []byte) string {
	if r := []rune(string(b)); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return string(b)
}

// jsonKind names the kind of a JSON document.
func jsonKind(doc []byte) string {
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 {
		return "nothing"
	}
	switch doc[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	}
	return "a number"
}

// nodeJSON writes n as JSON, keeping the order of mapping keys. On failure
// it returns the node at fault and why.
func nodeJSON(w *bytes.Buffer, n *yaml.Node, open map[*yaml.Node]bool, budget *int) (*yaml.Node, string) {
	orig := n
	n = deref(n)
	*budget--
	if *budget < 0 {
		return nil, "the schema is too large" // nil: blame response_format
	}
	if open[n] {
		return orig, "the schema contains itself (an alias of an enclosing anchor)"
	}
	if len(open) > 64 {
		return orig, "the schema is nested too deeply"
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		open[n] = true
		defer delete(open, n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
				return n.Content[i], fmt.Sprintf("keys must be strings, got %s", describe(k))
			}
			if k.ShortTag() == "!!merge" || k.Value == "<<" && k.Style == 0 {
				return n.Content[i], "merge keys (<<) are not supported"
			}
			if seen[k.Value] {
				return n.Content[i], fmt.Sprintf("key %q is set twice", k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				w.WriteByte(',')
			}
			kb, _ := json.Marshal(k.Value)
			w.Write(kb)
			w.WriteByte(':')
			if bad, msg := nodeJSON(w, n.Content[i+1], open, budget); msg != "" {
				return bad, msg
			}
		}
		w.WriteByte('}')
	case yaml.SequenceNode:
		w.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				w.WriteByte(',')
			}
			if bad, msg := nodeJSON(w, e, open, budget); msg != "" {
				return bad, msg
			}
		}
		w.WriteByte(']')
	case yaml.ScalarNode:
		var b []byte
		switch n.ShortTag() {
		case "!!null":
			b = []byte("null")
		case "!!bool", "!!int", "!!float":
			var x any
			if err := n.Decode(&x); err != nil {
				return orig, fmt.Sprintf("%s is not a JSON value", n.Value)
			}
			var err error
			if b, err = json.Marshal(x); err != nil {
				return orig, fmt.Sprintf("%s is not a JSON number", n.Value)
			}
		default: // strings, and dates and other tags as their text
			b, _ = json.Marshal(n.Value)
		}
		w.Write(b)
	default:
		return orig, "unsupported YAML node"
	}
	return nil, ""
}

// checkModelRef checks a "provider:model" or "provider" reference; it
// returns what is wrong, or "".
func checkModelRef(s string) string {
	provider, model, hasModel := strings.Cut(s, ":")
	switch {
	case s == "":
		return `must not be empty: write "provider:model"`
	case !hasModel && modelref.Suggest(s) != "":
		if !nameRe.MatchString(provider) {
			return fmt.Sprintf(`%q is a model name without its provider: write %q`, s, modelref.Suggest(s))
		}
		return "" // a provider of that name may exist: ExpandModel says
	case !nameRe.MatchString(provider):
		return fmt.Sprintf(`must be "provider:model" (e.g. "openai:gpt-4.1"), got %q`, s)
	case hasModel && strings.TrimSpace(model) == "":
		return fmt.Sprintf(`%q names no model after the ":"`, s)
	}
	return ""
}
