package memory_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/memory"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// Whatever a memory file holds: stripping comments only removes text,
// import lines name a path without spaces, and the rendered block keeps
// the file's contents within the cap, as valid UTF-8 when the file was,
// and inside one block that the file cannot close.
func FuzzMemoryText(f *testing.F) {
	f.Add("Fact.\n@docs/style.md\n<!-- note -->", 100)
	f.Add("a<!--b<!--c-->d-->e", 5)
	f.Add("€€€€ </agent_memory> x", 4)
	f.Add("@", 0)
	f.Add("<!-- open", 1)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		s := memory.StripComments(text)
		if len(s) > len(text) || !strings.Contains(text, "<!--") && s != text {
			t.Fatalf("StripComments(%q) = %q", text, s)
		}
		for _, ln := range strings.Split(text, "\n") {
			if p, ok := memory.ImportLine(ln); ok && (p == "" || strings.ContainsAny(p, " \t")) {
				t.Fatalf("ImportLine(%q) = %q", ln, p)
			}
		}
		limit = limit%200 + 1
		if limit < 1 {
			limit = -limit + 1
		}
		b := memory.Render([]memory.File{{Source: memory.Source{Path: "/m.md"}, Text: text}}, limit)
		_, body, ok := strings.Cut(b.Text, "## /m.md\n\n")
		if !ok || !strings.HasSuffix(body, "\n</agent_memory>") {
			t.Fatalf("block %q", b.Text)
		}
		if strings.Count(b.Text, "</agent_memory>") != 1 {
			t.Fatalf("the file closed the block: %q", b.Text)
		}
		if utf8.ValidString(text) && !utf8.ValidString(b.Text) {
			t.Fatalf("invalid UTF-8 out of valid text: %q", b.Text)
		}
		if len(text) > limit && len(b.Cut) != 1 {
			t.Fatalf("over the cap (%d > %d) without a cut: %q", len(text), limit, b.Cut)
		}
	})
}

// Whatever path a tool sends to the mounted memory files, only the memory
// file itself is read or written, on its own disk path: nothing else in
// its directory or outside it.
func FuzzFilesPath(f *testing.F) {
	dir := f.TempDir()
	disk := filepath.Join(dir, "home", "AGENTS.md")
	if err := os.MkdirAll(filepath.Dir(disk), 0o755); err != nil {
		f.Fatal(err)
	}
	secret := filepath.Join(dir, "home", "config.toml")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o644); err != nil {
		f.Fatal(err)
	}
	mw, err := memory.Middleware(memory.Config{Sources: []memory.Source{{Path: disk, Show: "/memory/user/AGENTS.md"}}})
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{"/memory/user/AGENTS.md", "/memory/user/config.toml", "/memory/user/../user/AGENTS.md", "/memory/user/x/../../config.toml", "/memory/user"} {
		f.Add(p, "note")
	}
	f.Fuzz(func(t *testing.T, p, content string) {
		env := &tool.Env{Files: vfs.NewMemory(nil)}
		call := &agent.ToolCall{Call: llm.ToolCall{Name: "write_file"}, Env: env}
		_, _ = mw.WrapTool(t.Context(), call, func(ctx context.Context, c *agent.ToolCall) (tool.Result, error) {
			if s, err := c.Env.Files.Read(ctx, p); err == nil && strings.Contains(s, "SECRET") {
				t.Fatalf("Read(%q) reached a file beside the memory file", p)
			}
			err := c.Env.Files.Write(ctx, p, content)
			clean, cerr := vfs.Clean(p)
			if err == nil && cerr == nil && (clean == "/memory/user" || strings.HasPrefix(clean, "/memory/user/")) && clean != "/memory/user/AGENTS.md" {
				t.Fatalf("Write(%q) went through", p)
			}
			return tool.Result{}, nil
		})
		entries, err := os.ReadDir(filepath.Join(dir, "home"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "AGENTS.md" && e.Name() != "config.toml" {
				t.Fatalf("a stray file %s was written", e.Name())
			}
		}
		if data, _ := os.ReadFile(secret); string(data) != "SECRET" {
			t.Fatal("the file beside the memory file changed")
		}
		if others, _ := os.ReadDir(dir); len(others) != 1 {
			t.Fatalf("files written outside: %d entries", len(others))
		}
	})
}
