package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/deepagents-go/deepagents/internal/safefile"
)

// MaxConfigSize caps how much of a .mcp.json file is read.
const MaxConfigSize = 1 << 20

// ServerConfig is one entry of a .mcp.json file's mcpServers object, in the
// format Claude Code writes. A server without a URL runs as a subprocess
// speaking over stdin and stdout.
type ServerConfig struct {
	// Type is stdio, http, streamable_http (the same as http) or sse; empty
	// means stdio without a URL and http with one.
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// AllowedTools, when set, are the only tools of the server bound (by
	// the server's own tool names); DisabledTools are never bound.
	AllowedTools  []string `json:"allowedTools,omitempty"`
	DisabledTools []string `json:"disabledTools,omitempty"`
}

// Transport kinds after normalisation.
const (
	KindStdio = "stdio"
	KindHTTP  = "http"
	KindSSE   = "sse"
)

// Kind is the normalised transport of the server: stdio, http or sse.
func (c ServerConfig) Kind() string {
	if k := typeKind(c.Type); k != "" {
		return k
	}
	if c.URL == "" {
		return KindStdio
	}
	return KindHTTP
}

// typeKind is the transport a type names, or "" for an empty or unknown
// type.
func typeKind(t string) string {
	switch strings.ToLower(t) {
	case "stdio":
		return KindStdio
	case "http", "streamable_http", "streamable-http", "streamablehttp":
		return KindHTTP
	case "sse":
		return KindSSE
	}
	return ""
}

// File is a parsed .mcp.json: the servers by name, in name order.
type File struct {
	Path    string
	Servers map[string]ServerConfig
	// Hash is the SHA-256 of the file's bytes, hex; a stored approval of a
	// project's servers holds it, so an edit needs a new approval.
	Hash string
}

// Names lists the file's servers in name order.
func (f *File) Names() []string { return slices.Sorted(maps.Keys(f.Servers)) }

// ConfigError is a problem with an MCP config file or one of its servers.
type ConfigError struct {
	Path   string // the file, when known
	Server string // the server at fault, when one is
	Msg    string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Server != "" {
		fmt.Fprintf(&b, "MCP server %q: ", e.Server)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Parse reads the text of a .mcp.json file. path only names the file in
// errors. Every server is checked: a known type, a command for stdio, a URL
// for http and sse, names that fit a tool name. Variables are not expanded
// here (see Expand).
func Parse(data []byte, path string) (*File, error) {
	sum := sha256.Sum256(data)
	f := &File{Path: path, Servers: map[string]ServerConfig{}, Hash: hex.EncodeToString(sum[:])}
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &ConfigError{Path: path, Msg: "not a valid .mcp.json file: " + jsonErrText(err)}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(doc.MCPServers)) {
		raw := doc.MCPServers[name]
		if err := checkServerName(name); err != nil {
			errs = append(errs, &ConfigError{Path: path, Server: name, Msg: err.Error()})
			continue
		}
		var sc ServerConfig
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&sc); err != nil {
			errs = append(errs, &ConfigError{Path: path, Server: name, Msg: "not a valid server entry: " + jsonErrText(err)})
			continue
		}
		if err := sc.check(); err != nil {
			errs = append(errs, &ConfigError{Path: path, Server: name, Msg: err.Error()})
			continue
		}
		f.Servers[name] = sc
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

func jsonErrText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%q must be %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return "the value must be " + jsonKind(te.Type.Kind().String())
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice":
		return "an array of strings"
	case "map", "struct":
		return "an object"
	}
	return "of another type"
}

func checkServerName(name string) error {
	if name == "" {
		return errors.New("a server needs a name")
	}
	if len(name) > 64 {
		return errors.New("the name is longer than 64 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("the name may hold only letters, digits, '_', '-' and '.', not %q", r)
		}
	}
	return nil
}

func (c ServerConfig) check() error {
	if c.Type != "" && typeKind(c.Type) == "" {
		return fmt.Errorf("unknown type %q; expected stdio, http, streamable_http or sse", c.Type)
	}
	switch c.Kind() {
	case KindStdio:
		if strings.TrimSpace(c.Command) == "" {
			return errors.New(`a stdio server needs a "command" (or give a "url" for an HTTP server)`)
		}
	default:
		if strings.TrimSpace(c.URL) == "" {
			return fmt.Errorf(`a %s server needs a "url"`, c.Kind())
		}
	}
	return nil
}

// Expand returns c with ${VAR} and ${VAR:-default} replaced in the command,
// arguments, environment values, URL and header values. getenv reports
// whether a variable is set. A variable that is unset and has no default is
// an error naming the server and the variable.
func (c ServerConfig) Expand(server string, getenv func(string) (string, bool)) (ServerConfig, error) {
	var firstErr error
	ex := func(s string) string {
		out, err := expandVars(s, getenv)
		if err != nil && firstErr == nil {
			firstErr = &ConfigError{Server: server, Msg: err.Error()}
		}
		return out
	}
	out := c
	out.Command = ex(c.Command)
	out.URL = ex(c.URL)
	if c.Args != nil {
		out.Args = make([]string, len(c.Args))
		for i, a := range c.Args {
			out.Args[i] = ex(a)
		}
	}
	if c.Env != nil {
		out.Env = make(map[string]string, len(c.Env))
		for _, k := range slices.Sorted(maps.Keys(c.Env)) {
			out.Env[k] = ex(c.Env[k])
		}
	}
	if c.Headers != nil {
		out.Headers = make(map[string]string, len(c.Headers))
		for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
			out.Headers[k] = ex(c.Headers[k])
		}
	}
	return out, firstErr
}

// expandVars replaces ${NAME} and ${NAME:-default} in s. A "$" not followed
// by "{" is kept, as is an unterminated "${".
func expandVars(s string, getenv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+2+j]
		s = s[i+2+j+1:]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("${%s} is not a variable reference; a name holds letters, digits and '_'", expr)
		}
		v, ok := getenv(name)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case ok:
			// set but empty, without a default: empty it is
		default:
			return "", fmt.Errorf("the environment variable %s is not set and ${%s} has no default (write ${%s:-default})", name, name, name)
		}
	}
}

func validVarName(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Scope says where a server's config came from.
type Scope string

// Scopes, low to high precedence.
const (
	ScopeUser    Scope = "user"    // ~/.deepagents/.mcp.json
	ScopeProject Scope = "project" // the project's .deepagents/.mcp.json or .mcp.json
	ScopeFlag    Scope = "flag"    // --mcp-config FILE
)

// Server is a server to start: its name, its config and where it came from.
type Server struct {
	Name   string
	Config ServerConfig
	// Source is the file it was read from.
	Source string
	Scope  Scope
	// Hash is the source file's SHA-256 (hex).
	Hash string
}

// Sources lists the config files read, low to high precedence, for a home
// directory, a project directory and the --mcp-config files (each may be
// empty).
func Sources(home, project string, extra ...string) []Source {
	var out []Source
	if home != "" {
		out = append(out, Source{Path: filepath.Join(home, ".deepagents", ".mcp.json"), Scope: ScopeUser})
	}
	if project != "" {
		out = append(out,
			Source{Path: filepath.Join(project, ".deepagents", ".mcp.json"), Scope: ScopeProject},
			Source{Path: filepath.Join(project, ".mcp.json"), Scope: ScopeProject})
	}
	for _, p := range extra {
		if p != "" {
			out = append(out, Source{Path: p, Scope: ScopeFlag, Required: true})
		}
	}
	return out
}

// Source is one config file to read.
type Source struct {
	Path  string
	Scope Scope
	// Required makes a missing file an error (a file named on the command
	// line); other sources are skipped when absent.
	Required bool
}

// Load reads the sources in order; a later file's server replaces an earlier
// server of the same name. The result is in name order. Every file's
// problems are reported together.
func Load(sources []Source) ([]Server, error) {
	byName := map[string]Server{}
	var errs []error
	for _, src := range sources {
		data, err := safefile.Read(src.Path, MaxConfigSize)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && !src.Required {
				continue
			}
			errs = append(errs, &ConfigError{Path: src.Path, Msg: "cannot read it: " + err.Error()})
			continue
		}
		f, err := Parse(data, src.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for name, sc := range f.Servers {
			byName[name] = Server{Name: name, Config: sc, Source: src.Path, Scope: src.Scope, Hash: f.Hash}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]Server, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ProjectServers returns the servers of project scope, which start only
// when the user trusts the project.
func ProjectServers(servers []Server) []Server {
	var out []Server
	for _, s := range servers {
		if s.Scope == ScopeProject {
			out = append(out, s)
		}
	}
	return out
}

// ProjectHash is the SHA-256 (hex) of the project-scope servers' configs,
// as they are written (before ${VAR} expansion): an approval stored for
// one hash does not cover an edited config.
func ProjectHash(servers []Server) string {
	h := sha256.New()
	for _, s := range ProjectServers(servers) {
		b, _ := json.Marshal(s.Config)
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", s.Name, s.Source, b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TrustKey is the key under which the approval of a project's MCP servers
// is stored in the user's trust store (config.TrustStore).
func TrustKey(project string) string { return "mcp:" + project }
