// Package skills gives an agent skills: folders of instructions (a SKILL.md
// with a short front matter, plus any files it refers to) that the agent
// reads only when a task calls for them. The agent's system prompt lists
// each skill in one line — its name, what it is for and the path of its
// SKILL.md — and the agent reads the file with read_file when it needs it.
//
// Skills come from ordered source directories; a skill in a later source
// replaces one of the same name in an earlier source. Sources are checked
// again before each model call and re-read only when their files changed,
// so an unchanged set gives a byte-identical prompt and the provider's
// prompt cache keeps hitting.
//
//	mw, err := skills.Middleware(skills.Config{Sources: []skills.Source{
//		{Label: "user", Dir: filepath.Join(home, ".deepagents", "skills")},
//		{Label: "project", Dir: ".deepagents/skills"},
//	}})
//
// The middleware also makes the skill folders readable by the agent's file
// tools, read-only, under /skills/NAME/ (Config.Prefix), whatever the
// agent's backend is.
package skills

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Limits of the Agent Skills format.
const (
	// MaxNameLen is the longest skill name, in characters.
	MaxNameLen = 64
	// MaxDescription is the longest description kept, in characters; a
	// longer one is cut to this length with a warning.
	MaxDescription = 1024
	// MaxCompatibility is the longest compatibility note kept.
	MaxCompatibility = 500
	// MaxFileSize is the largest SKILL.md read (10 MiB).
	MaxFileSize = 10 << 20
	// maxFront caps the front matter handed to the YAML parser.
	maxFront = 64 << 10
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Skill is one skill as listed to the agent.
type Skill struct {
	// Name identifies the skill; a later source's skill replaces an
	// earlier one of the same name.
	Name string `json:"name"`
	// Description says what the skill does and when to use it.
	Description   string            `json:"description"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	AllowedTools  []string          `json:"allowed_tools,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	// Source is the label of the source it came from, Dir the folder on
	// disk, and Path where the agent reads its SKILL.md.
	Source string `json:"source"`
	Dir    string `json:"dir"`
	Path   string `json:"path"`
}

// Header is a SKILL.md front matter as parsed, before the checks that
// decide whether the skill is listed.
type Header struct {
	Name          string
	Description   string
	License       string
	Compatibility string
	AllowedTools  []string
	Metadata      map[string]string
	// Body is the text after the front matter.
	Body string
}

// ParseFile reads the front matter of a SKILL.md. It fails when the file
// has no front matter or it is not a YAML mapping; unknown fields are
// ignored (the format grows), fields of the wrong type are errors.
func ParseFile(data []byte) (Header, error) {
	if !utf8.Valid(data) {
		return Header{}, fmt.Errorf("the file is not valid UTF-8 text")
	}
	text := strings.ReplaceAll(strings.TrimPrefix(string(data), "\ufeff"), "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return Header{}, fmt.Errorf(`no front matter: the file must start with a line "---"`)
	}
	var front, body string
	found := false
	for off := 0; off <= len(rest); {
		line, _, more := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			front, body = rest[:off], rest[min(off+len(line)+1, len(rest)):]
			found = true
			break
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	if !found {
		return Header{}, fmt.Errorf(`the front matter is not closed by a line "---"`)
	}
	if len(front) > maxFront {
		return Header{}, fmt.Errorf("the front matter is %d bytes long; at most %d are read", len(front), maxFront)
	}
	var doc yaml.Node
	if err := safeYAML(front, &doc); err != nil {
		return Header{}, fmt.Errorf("the front matter is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	h := Header{Body: strings.TrimLeft(body, "\n")}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return h, nil // empty front matter: the checks report what is missing
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return h, nil
	}
	if root.Kind != yaml.MappingNode {
		return Header{}, fmt.Errorf("the front matter must be a mapping of fields (name: ..., description: ...)")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		var err error
		switch k.Value {
		case "name":
			h.Name, err = scalar(k.Value, v)
		case "description":
			h.Description, err = scalar(k.Value, v)
		case "license":
			h.License, err = scalar(k.Value, v)
		case "compatibility":
			h.Compatibility, err = scalar(k.Value, v)
		case "allowed-tools":
			h.AllowedTools, err = toolList(v)
		case "metadata":
			h.Metadata, err = stringMap(v)
		}
		if err != nil {
			return Header{}, err
		}
	}
	return h, nil
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

func resolve(v *yaml.Node) *yaml.Node {
	for i := 0; v != nil && v.Kind == yaml.AliasNode && i < 8; i++ {
		v = v.Alias
	}
	return v
}

func scalar(key string, v *yaml.Node) (string, error) {
	v = resolve(v)
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s must be text, not a list or a mapping", key)
	}
	if v.ShortTag() == "!!null" {
		return "", nil
	}
	return strings.TrimSpace(v.Value), nil
}

// toolList reads allowed-tools: a space-separated string, as the format
// defines it, or a YAML list of names.
func toolList(v *yaml.Node) ([]string, error) {
	v = resolve(v)
	if v == nil {
		return nil, nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.ShortTag() == "!!null" {
			return nil, nil
		}
		return strings.Fields(strings.ReplaceAll(v.Value, ",", " ")), nil
	case yaml.SequenceNode:
		var out []string
		for _, it := range v.Content {
			it = resolve(it)
			if it == nil || it.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("allowed-tools must list tool names as text")
			}
			if s := strings.TrimSpace(it.Value); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("allowed-tools must be tool names separated by spaces, or a list of them")
}

// stringMap reads metadata: a mapping of text keys to text values.
func stringMap(v *yaml.Node) (map[string]string, error) {
	v = resolve(v)
	if v == nil || v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("metadata must be a mapping of keys to text values")
	}
	out := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := resolve(v.Content[i]), resolve(v.Content[i+1])
		if k == nil || val == nil || k.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("metadata must be a mapping of keys to text values")
		}
		out[k.Value] = val.Value
	}
	return out, nil
}

// CheckName says what is wrong with a skill name for the folder it is in:
// lowercase letters, digits and single hyphens, not at either end, at most
// MaxNameLen characters, and the folder's name. Nil when it is valid.
func CheckName(name, folder string) error {
	switch {
	case name == "":
		return fmt.Errorf("the name is empty")
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Errorf("the name is %d characters long; at most %d are allowed", utf8.RuneCountInString(name), MaxNameLen)
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return fmt.Errorf("the name must not start or end with a hyphen")
	case strings.Contains(name, "--"):
		return fmt.Errorf("the name must not contain two hyphens in a row")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("the name may hold only lowercase letters, digits and hyphens, not %q", r)
		}
	}
	if name != folder {
		return fmt.Errorf("the name differs from its folder's name %q", folder)
	}
	return nil
}

// Build checks a parsed header found in folder and returns the skill with
// the warnings to show for it. ok is false when the skill cannot be listed
// (no name or no description): the warnings say why. A name that breaks
// the naming rules is listed anyway, with a warning; an overlong
// description or compatibility note is cut, with a warning.
func Build(h Header, folder string) (s Skill, warnings []string, ok bool) {
	name := oneLine(h.Name)
	desc := oneLine(h.Description)
	if name == "" {
		return Skill{}, []string{"it has no name in its front matter, so it was not loaded"}, false
	}
	if desc == "" {
		return Skill{}, []string{fmt.Sprintf("skill %q has no description in its front matter, so it was not loaded", name)}, false
	}
	if err := CheckName(name, folder); err != nil {
		warnings = append(warnings, fmt.Sprintf("skill %q: %v; it is listed anyway", name, err))
	}
	if n := utf8.RuneCountInString(desc); n > MaxDescription {
		desc = cut(desc, MaxDescription)
		warnings = append(warnings, fmt.Sprintf("skill %q: its description is %d characters long and was cut to %d", name, n, MaxDescription))
	}
	compat := oneLine(h.Compatibility)
	if n := utf8.RuneCountInString(compat); n > MaxCompatibility {
		compat = cut(compat, MaxCompatibility)
		warnings = append(warnings, fmt.Sprintf("skill %q: its compatibility note is %d characters long and was cut to %d", name, n, MaxCompatibility))
	}
	s = Skill{Name: name, Description: desc, License: oneLine(h.License), Compatibility: compat}
	for _, t := range h.AllowedTools {
		if t = oneLine(t); t != "" {
			s.AllowedTools = append(s.AllowedTools, t)
		}
	}
	if len(h.Metadata) > 0 {
		s.Metadata = maps.Clone(h.Metadata)
	}
	return s, warnings, true
}

// oneLine folds white space, line breaks included, to single spaces, so a
// field can never start a line of its own in the prompt.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\t\n\r\v\f  ") && strings.TrimSpace(s) == s {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// cut shortens s to n characters.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// sortedNames returns the names of m in order.
func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
