package config

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

// checkErrors fails unless err is made of FileErrors on one of paths, each
// with a line in 1..maxLine.
func checkErrors(t *testing.T, err error, maxLine int, paths ...string) {
	t.Helper()
	fes := FileErrors(err)
	if len(fes) == 0 {
		t.Fatalf("error without a FileError: %v", err)
	}
	for _, fe := range fes {
		ok := false
		for _, p := range paths {
			ok = ok || fe.Path == p
		}
		if !ok || fe.Line < 1 || fe.Line > maxLine || fe.Msg == "" {
			t.Fatalf("bad FileError %#v (paths %q, max line %d) in %v", fe, paths, maxLine, err)
		}
		if !strings.HasPrefix(fe.Error(), fe.Path+":") {
			t.Fatalf("error text %q does not start with the path", fe.Error())
		}
	}
}

// checkReasoning fails unless r is nil or exactly one of a known effort and
// a budget in range.
func checkReasoning(t *testing.T, r *llm.ReasoningConfig) {
	t.Helper()
	if r == nil {
		return
	}
	switch {
	case r.Effort != "" && r.BudgetTokens != 0:
		t.Fatalf("reasoning sets both: %+v", r)
	case r.Effort != "" && !slices.Contains(ReasoningEfforts, string(r.Effort)):
		t.Fatalf("reasoning effort %q", r.Effort)
	case r.Effort == "" && (r.BudgetTokens < 1 || r.BudgetTokens > MaxReasoningBudget):
		t.Fatalf("reasoning budget %d", r.BudgetTokens)
	}
}

func lineCount(data []byte) int { return strings.Count(string(data), "\n") + 1 }

func FuzzParseAgentFile(f *testing.F) {
	f.Add([]byte("---\ndescription: d\n---\nBody\n"))
	f.Add([]byte("---\nname: x\ndescription: d\nmode: fork\nresponse_format: {type: object}\n---\n"))
	f.Add([]byte("---\ndescription: d\nbackground: true\nbackground_max_steps: 5\nbackground_max_tokens: 1000\nbackground_timeout: 2m\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "agents/fuzz.md"
		a, err := ParseAgentFile(path, data)
		if err != nil {
			checkErrors(t, err, lineCount(data), path)
			return
		}
		if a.Path != path || a.Line != 1 || !nameRe.MatchString(a.Name) || strings.TrimSpace(a.Description) == "" {
			t.Fatalf("bad result %+v", a)
		}
		switch a.Mode {
		case "isolated", "fork", "handoff":
		default:
			t.Fatalf("mode %q", a.Mode)
		}
		if a.Mode == "fork" && a.Tools != nil {
			t.Fatalf("fork with tools %q", a.Tools)
		}
		if l := a.BackgroundLimits; l.MaxSteps < 0 || l.MaxTokens < 0 || l.Timeout < 0 {
			t.Fatalf("background limits %+v", l)
		}
		if a.ContextWindow < 0 || a.ContextWindow > maxWindow {
			t.Fatalf("context_window %d", a.ContextWindow)
		}
		for _, tool := range a.Tools {
			if !nameRe.MatchString(tool) {
				t.Fatalf("tool name %q", tool)
			}
		}
		// Every tool name and the model have a line of the file, for the
		// errors the CLI reports about them.
		if len(a.ToolLines) != len(a.Tools) {
			t.Fatalf("%d tool lines for %d tools", len(a.ToolLines), len(a.Tools))
		}
		for _, l := range a.ToolLines {
			if l < 1 || l > lineCount(data) {
				t.Fatalf("tool line %d of %d", l, lineCount(data))
			}
		}
		if (a.Model != "") != (a.ModelLine > 0) || a.ModelLine > lineCount(data) {
			t.Fatalf("model %q on line %d", a.Model, a.ModelLine)
		}
		checkReasoning(t, a.Reasoning)
		if a.MaxSteps < 0 || a.Timeout < 0 || !utf8.ValidString(a.Prompt) {
			t.Fatalf("bad result %+v", a)
		}
		if a.ResponseFormat != nil {
			if !json.Valid(a.ResponseFormat) {
				t.Fatalf("response format is not JSON: %s", a.ResponseFormat)
			}
			if _, err := subagent.ResolveFormat(a.Spec().ResponseFormat); err != nil {
				t.Fatalf("ResolveFormat(%s): %v", a.ResponseFormat, err)
			}
		}
	})
}

func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte("model = \"openai:gpt-4.1\"\n"), []byte("[providers.local]\ntype = \"openai-compatible\"\nbase_url = \"http://x/v1\"\n"))
	f.Add([]byte("max_steps = 0\n"), []byte("[providers.x]\n"))
	f.Add([]byte("[models.\"local:q\"]\ncontext_window = 32768\n"), []byte("[models.\"LOCAL:q\"]\nmax_output = 8192\ncaches = true\n"))
	f.Add([]byte("[background]\nmax_running = 2\ntimeout = \"10m\"\n"), []byte("[background]\nmax_running = 8\nmax_tokens = 1000\n"))
	f.Fuzz(func(t *testing.T, user, project []byte) {
		const up, pp = "home/.deepagents/config.toml", "project/deepagents.toml"
		c, err := load([]file{{up, user, false}, {pp, project, true}})
		if err != nil {
			checkErrors(t, err, max(lineCount(user), lineCount(project)), up, pp)
			return
		}
		if c.MaxSteps < 0 || c.MaxParallel < 0 {
			t.Fatalf("bad limits %+v", c)
		}
		if b := c.Background; b.MaxRunning < 0 || b.MaxSteps < 0 || b.MaxTokens < 0 || b.Timeout < 0 {
			t.Fatalf("bad background limits %+v", b)
		}
		checkReasoning(t, c.Reasoning)
		for name, a := range c.InterruptOn {
			if !nameRe.MatchString(name) || len(a.Allowed) > 3 {
				t.Fatalf("interrupt_on %q: %+v", name, a)
			}
		}
		// The project file only adds: every tool the user gates stays gated
		// as the user said, and only the user's file loosens protection.
		for name, a := range c.UserInterruptOn {
			if got, ok := c.InterruptOn[name]; !ok || !slices.Equal(got.Allowed, a.Allowed) {
				t.Fatalf("the user's gate on %s (%+v) became %+v", name, a, got)
			}
		}
		if len(c.Permissions) < len(c.UserPermissions) || !slices.Equal(c.Permissions[:len(c.UserPermissions)], c.UserPermissions) {
			t.Fatalf("the user's rules %v are not first in %v", c.UserPermissions, c.Permissions)
		}
		for _, g := range c.ProtectAllow {
			if !slices.Contains(ProtectGroups, g) {
				t.Fatalf("[protect] allows %q", g)
			}
		}
		for _, r := range c.Permissions {
			if again, err := perm.Parse(r.String()); err != nil || again != r {
				t.Fatalf("permission rule %q does not read back: %v", r, err)
			}
		}
		if c.Database != nil && c.Database.Kind != SQLite && c.Database.Kind != Postgres {
			t.Fatalf("db %+v", c.Database)
		}
		if c.Model != "" && !strings.Contains(c.Model, ":") {
			t.Fatalf("model %q not expanded", c.Model)
		}
		for name, pc := range c.Providers {
			if name != strings.ToLower(name) || !nameRe.MatchString(name) {
				t.Fatalf("provider name %q", name)
			}
			if got := c.ProviderFor(strings.ToUpper(name)); got.Type != pc.Type || got.BaseURL != pc.BaseURL {
				t.Fatalf("ProviderFor(%q) = %+v, want %+v", name, got, pc)
			}
		}
		for key, o := range c.Models {
			if k, msg := modelKey(key); msg != "" || k != key {
				t.Fatalf("models key %q is not canonical (%q, %s)", key, k, msg)
			}
			if o.Window < 0 || o.Window > maxWindow || o.MaxOutput < 0 || o.MaxOutput > maxWindow {
				t.Fatalf("models.%q: %+v", key, o)
			}
			provider, model, _ := strings.Cut(key, ":")
			p := c.Profile(strings.ToUpper(provider), model)
			if (o.Window > 0 && p.Window != o.Window) || (o.MaxOutput > 0 && p.MaxOutput != o.MaxOutput) || (o.Caches != nil && p.Caches != *o.Caches) {
				t.Fatalf("Profile(%s) = %+v ignores %+v", key, p, o)
			}
		}
		// Each file alone parses the same way it did inside the merge.
		if _, err := Parse(up, user); err != nil {
			t.Fatalf("user file fails alone: %v", err)
		}
	})
}

// FuzzKeyLines checks that the line scanner finds every key the TOML
// decoder reports, so that no error falls back to a parent's line.
func FuzzKeyLines(f *testing.F) {
	f.Add([]byte("a = 1\n[b.c]\nd = { e = 1, 'f g' = [1, {h = 2}] }\n[[i]]\nj = \"\"\"\nk = 1\n\"\"\"\n"))
	for _, s := range []string{`"a\eb" = 1`, `"\x41" = 1`, `"\u0041" = 1`, `"\U0001F600" = 1`, `'a\' = 1`, `"\\e\"" = 2`, "a = { b = 1,\n c = 2 }"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		md, err := toml.Decode(string(data), &m)
		if err != nil {
			return
		}
		lines := keyLines(data)
		for _, k := range md.Keys() {
			if _, ok := lines[strings.Join(k, "\x00")]; !ok {
				t.Fatalf("key %q not located in %q (found %v)", k, data, lines)
			}
		}
	})
}

// FuzzParseReasoning: a setting is accepted exactly when it is a known
// effort or a budget in range, and what is accepted reads back the same.
func FuzzParseReasoning(f *testing.F) {
	for _, s := range []string{"high", " Low ", "8000", "0", "-1", "200001", "+12", "1e3", "99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReasoning(s)
		if err != nil {
			if r != nil || err.Error() == "" {
				t.Fatalf("ParseReasoning(%q) = %+v, %v", s, r, err)
			}
			return
		}
		checkReasoning(t, r)
		if r == nil {
			t.Fatalf("ParseReasoning(%q): nil without an error", s)
		}
		text := string(r.Effort)
		if text == "" {
			text = strconv.Itoa(r.BudgetTokens)
		}
		if again, err := ParseReasoning(text); err != nil || *again != *r {
			t.Fatalf("%q read as %+v, which reads back as %+v, %v", s, r, again, err)
		}
	})
}

// FuzzParseDatabase checks that a database setting is either refused with a
// message that never shows a password, or read as one of the two kinds with
// what that kind needs; an SQLite setting reads back the same from its
// String.
func FuzzParseDatabase(f *testing.F) {
	for _, s := range []string{"sqlite:state.db", "sqlite:", "postgres://u:pw@h/db", "postgresql:///x?host=/tmp", "x.db", "postgres://u:pw@h:bad/db", "sqlite:~/a.db",
		"sqlite:a.db?synchronous=full", "sqlite:a.db?synchronous=NORMAL", "sqlite:a.db?synchronous=off", "sqlite:a.db?x=1&synchronous=full", "sqlite:a?b.db", "sqlite:a.db?synchronous=full&synchronous=full"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := ParseDatabase(spec, "/project")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		switch d.Kind {
		case SQLite:
			if d.Path == "" || d.DSN != "" || strings.Contains(d.Path, "?") {
				t.Fatalf("sqlite %+v", d)
			}
			if d.Synchronous != "" && d.Synchronous != "NORMAL" && d.Synchronous != "FULL" {
				t.Fatalf("sqlite synchronous %q", d.Synchronous)
			}
			if again, err := ParseDatabase(d.String(), "/project"); err != nil || again != d {
				t.Fatalf("%q read as %+v, whose String %q reads back as %+v, %v", spec, d, d.String(), again, err)
			}
		case Postgres:
			if d.DSN == "" || d.Path != "" {
				t.Fatalf("postgres %+v", d)
			}
			if u, perr := url.Parse(d.DSN); perr == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && pw != "" && pw != "xxxxx" && strings.Contains(d.String(), ":"+pw+"@") {
					t.Fatalf("String shows the password: %s", d.String())
				}
			}
		default:
			t.Fatalf("kind %q", d.Kind)
		}
	})
}

// FuzzParseInterruptOnFlag checks that --interrupt-on yields tool names
// only, each allowing every decision.
func FuzzParseInterruptOnFlag(f *testing.F) {
	for _, s := range []string{"write_file", "write_file,edit_file", " , ", "a b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ParseInterruptOnFlag(text)
		if err != nil {
			if m != nil {
				t.Fatal("a map with an error")
			}
			return
		}
		if len(m) == 0 {
			t.Fatal("no tools and no error")
		}
		for name, a := range m {
			if !nameRe.MatchString(name) || len(a.Allowed) != 0 {
				t.Fatalf("entry %q: %+v", name, a)
			}
		}
	})
}
