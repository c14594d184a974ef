package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/config"
	"github.com/deepagents-go/deepagents/mcp"
)

// This file is MCP in the CLI: the flags, finding the servers' configs,
// asking for trust of a project's servers, starting them for `run`, and
// `deepagents mcp list`.

// mcpFlags are the MCP flags of run, resume and mcp list.
type mcpFlags struct {
	configs        stringList
	off            bool
	trust          bool
	pin            string
	connectTimeout time.Duration
	callTimeout    time.Duration
}

// stringList is a flag that may be given more than once.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func addMCPFlags(fs *flag.FlagSet, m *mcpFlags) {
	fs.Var(&m.configs, "mcp-config", "an MCP config file (.mcp.json format) read after ~/.deepagents/.mcp.json and the project's; may be repeated")
	fs.BoolVar(&m.off, "no-mcp", false, "start no MCP servers")
	fs.BoolVar(&m.trust, "trust-project-mcp", false, "start the MCP servers of the project's .mcp.json files; remembered for their config as it is now")
	fs.StringVar(&m.pin, "mcp-pin", "", "TOOL|SERVER[,…]: MCP tools (mcp__ names) or servers always bound, even when the others are found through mcp_search")
	fs.DurationVar(&m.connectTimeout, "mcp-connect-timeout", mcp.DefaultConnectTimeout, "how long connecting to an MCP server and listing its tools may take")
	fs.DurationVar(&m.callTimeout, "mcp-call-timeout", mcp.DefaultCallTimeout, "how long one MCP tool call may take")
}

func (m mcpFlags) pins() []string {
	var out []string
	for _, p := range strings.Split(m.pin, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// loadMCP reads the servers' configs and decides which may start: the
// user's and those named by --mcp-config always; the project's only when
// trusted (--trust-project-mcp, a stored approval of this project with its
// servers' configs as they are now, or a yes on the terminal). The others
// are returned as untrusted, and a warning naming them goes to stderr.
func loadMCP(f mcpFlags, cwd, home string, confirm func(string) bool, stderr io.Writer) (start, untrusted []mcp.Server, err error) {
	if f.off {
		return nil, nil, nil
	}
	servers, err := mcp.Load(mcp.Sources(home, cwd, f.configs...))
	if err != nil {
		return nil, nil, err
	}
	project := mcp.ProjectServers(servers)
	if len(project) == 0 {
		return servers, nil, nil
	}
	var store config.TrustStore
	if home != "" {
		store = config.UserTrustStore(home)
	}
	key, hash := mcp.TrustKey(cwd), mcp.ProjectHash(servers)
	remember := func() error {
		if store.Path == "" {
			return nil
		}
		if err := store.Add(key, hash); err != nil {
			return fmt.Errorf("could not remember that you trust the project's MCP servers: %w", err)
		}
		return nil
	}
	trusted := false
	switch {
	case f.trust:
		trusted = true
		if err := remember(); err != nil {
			return nil, nil, err
		}
	case store.Path != "":
		if trusted, err = store.Trusted(key, hash); err != nil {
			return nil, nil, err
		}
	}
	if !trusted && confirm != nil {
		if confirm(describeProjectServers(project) + "Start these servers (remembered for their config as it is now)? [y/N] ") {
			trusted = true
			if err := remember(); err != nil {
				return nil, nil, err
			}
		}
	}
	if trusted {
		return servers, nil, nil
	}
	untrusted = project
	for _, s := range servers {
		if s.Scope != mcp.ScopeProject {
			start = append(start, s)
		}
	}
	var names []string
	for _, s := range untrusted {
		names = append(names, termText(s.Name)+" ("+s.Source+")")
	}
	fmt.Fprintf(stderr, "deepagents: warning: not starting the project's MCP servers %s: the project is not trusted; "+
		"run with --trust-project-mcp to start them (remembered until their config changes)\n", strings.Join(names, ", "))
	return start, untrusted, nil
}

// describeProjectServers says what each project server would run or reach.
func describeProjectServers(servers []mcp.Server) string {
	var b strings.Builder
	b.WriteString("This project's MCP config starts these servers:\n")
	for _, s := range servers {
		if s.Config.Kind() == mcp.KindStdio {
			fmt.Fprintf(&b, "  %s: runs %s %s (from %s)\n", s.Name, s.Config.Command, strings.Join(s.Config.Args, " "), s.Source)
		} else {
			fmt.Fprintf(&b, "  %s: connects to %s (from %s)\n", s.Name, s.Config.URL, s.Source)
		}
	}
	// What the person is asked to trust is shown as it is: no escape
	// sequence in the project's file may hide a command.
	return termText(b.String())
}

// startMCP starts the MCP servers for an agent; nil when there are none.
// Servers that fail to start are named on stderr; the run goes on without
// their tools.
func startMCP(ctx context.Context, f mcpFlags, cwd, home string, confirm func(string) bool, stderr io.Writer) (*mcp.Manager, error) {
	start, untrusted, err := loadMCP(f, cwd, home, confirm, stderr)
	if err != nil {
		return nil, err
	}
	if len(start) == 0 && len(untrusted) == 0 {
		return nil, nil
	}
	m := mcp.NewManager(start, mcp.Options{ConnectTimeout: f.connectTimeout, CallTimeout: f.callTimeout})
	m.MarkUntrusted(untrusted)
	m.Start(ctx)
	for _, st := range m.Statuses() {
		if st.Status == mcp.StatusFailed {
			fmt.Fprintf(stderr, "deepagents: warning: MCP server %s (%s) is not available: %s\n", termText(st.Name), st.Source, termText(st.Error))
		}
	}
	return m, nil
}

// mcpToolNames lists the names of every tool m's servers offer, bound
// directly or behind mcp_search.
func mcpToolNames(m *mcp.Manager) []string {
	if m == nil {
		return nil
	}
	var names []string
	for _, t := range m.Tools() {
		names = append(names, t.Spec().Name)
	}
	return names
}

// applyMCP binds the servers' tools into cfg: directly, or behind
// mcp_search when their definitions would take more than a tenth of the
// context window; subagents get theirs (see mcp.Subagents).
func applyMCP(cfg *deepagents.Config, m *mcp.Manager, f mcpFlags) {
	if m == nil {
		return
	}
	tools := m.Tools()
	if len(tools) == 0 {
		return
	}
	b := m.Bind(cfg.ContextWindow, f.pins())
	parentTools := cfg.Tools
	cfg.Tools = append(cfg.Tools, b.Tools...)
	if b.Middleware != nil {
		cfg.Middleware = append(cfg.Middleware, *b.Middleware)
	}
	cfg.Subagents = m.Subagents(deepagents.WithGeneralPurpose(cfg.Subagents), append(parentTools, b.Tools...), cfg.ContextWindow, f.pins())
}

const mcpHelp = `usage: deepagents mcp list [flags]

Lists the MCP servers that 'deepagents run' would start: where each comes
from, whether it connected (or why not, or that its project is not trusted),
its tools and what their definitions cost in tokens. Servers are read from
~/.deepagents/.mcp.json, the project's .deepagents/.mcp.json and .mcp.json,
then --mcp-config files; a later file's server replaces an earlier one of the
same name. See docs/MCP.md.

Flags:
`

func cmdMCP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "list" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, mcpHelp)
			return 0
		}
		return usageError(stderr, "mcp", "expected 'deepagents mcp list'")
	}
	fs := flag.NewFlagSet("mcp list", flag.ContinueOnError)
	var f mcpFlags
	addMCPFlags(fs, &f)
	output := fs.String("output", "text", "text | json")
	operands, code, ok := parseFlags(fs, args[1:], mcpHelp, stdout, stderr)
	if !ok {
		return code
	}
	if len(operands) > 0 {
		return usageError(stderr, "mcp list", fmt.Sprintf("unexpected argument %q", operands[0]))
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "deepagents mcp list: --output must be text or json, not %q\n", *output)
		return exitUsage
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "deepagents mcp list: %v\n", err)
		return exitFailed
	}
	home, _ := os.UserHomeDir()
	m, err := startMCP(ctx, f, cwd, home, nil, io.Discard)
	if err != nil {
		fmt.Fprintf(stderr, "deepagents mcp list: %v\n", err)
		return exitUsage
	}
	statuses := []mcp.ServerStatus{}
	if m != nil {
		defer m.Close()
		statuses = m.Statuses()
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"servers": statuses})
		return exitOK
	}
	if len(statuses) == 0 {
		fmt.Fprintln(stdout, "No MCP servers configured.")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSOURCE\tSTATUS\tTOOLS\tTOKENS")
	total := 0
	for _, st := range statuses {
		status := string(st.Status)
		if st.Error != "" {
			status += ": " + st.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", termText(st.Name), st.Source, termText(status), len(st.Tools), st.Tokens)
		total += st.Tokens
	}
	tw.Flush()
	fmt.Fprintf(stdout, "The tools' definitions cost about %d tokens in all.\n", total)
	var untrusted []string
	for _, st := range statuses {
		if st.Status == mcp.StatusUntrusted {
			untrusted = append(untrusted, st.Name)
		}
	}
	if len(untrusted) > 0 {
		fmt.Fprintf(stdout, "The project's servers %s are not started: you have not trusted them. To start them, run with "+
			"--trust-project-mcp ('deepagents mcp list --trust-project-mcp', or 'deepagents run --trust-project-mcp'), or answer y "+
			"when 'deepagents run' asks on a terminal; the approval is remembered until their config changes.\n", strings.Join(untrusted, ", "))
	}
	return exitOK
}
