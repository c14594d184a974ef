package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/vfs"
)

// FuzzParseResume: any command.resume either fails with an error or gives
// decisions that pass their own shape check.
func FuzzParseResume(f *testing.F) {
	waiting := []agent.Interrupt{{Path: agent.RootPath("agent"), CallID: "w1", Tool: "write_file"}, {Path: agent.RootPath("agent"), CallID: "w2", Tool: "edit_file"}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ds, err := parseResume(raw, waiting, "00000004")
		if err != nil {
			if ds != nil {
				t.Fatalf("decisions %v with error %v", ds, err)
			}
			return
		}
		for _, d := range ds {
			if err := d.Check(); err != nil {
				t.Fatalf("decision %+v passed but fails its check: %v", d, err)
			}
		}
	})
}

// FuzzParseInput: any run input either fails or gives messages whose roles
// are user, assistant or tool (never system), tool messages with a call id.
func FuzzParseInput(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := parseInput(json.RawMessage(raw))
		if err != nil {
			return
		}
		for _, m := range msgs {
			switch m.Role {
			case "user", "assistant":
			case "tool":
				if m.ToolCallID == "" {
					t.Fatalf("tool message without a call id from %q", raw)
				}
			default:
				t.Fatalf("role %q from %q", m.Role, raw)
			}
		}
	})
}

// FuzzParseModes: the modes accepted are only those served.
func FuzzParseModes(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		modes, err := parseModes(json.RawMessage(raw))
		if err != nil {
			return
		}
		for m := range modes {
			switch m {
			case "values", "updates", "messages-tuple", "custom":
			default:
				t.Fatalf("mode %q accepted from %q", m, raw)
			}
		}
	})
}

// FuzzParseFileUpdate: accepted updates name clean, distinct paths.
func FuzzParseFileUpdate(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := parseFileUpdate(json.RawMessage(raw))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range d {
			if clean, err := vfs.Clean(c.Path); err != nil || clean != c.Path || seen[c.Path] {
				t.Fatalf("path %q accepted from %q", c.Path, raw)
			}
			seen[c.Path] = true
		}
	})
}

// FuzzTaskPath: a task path has one "task:" segment per level below the
// top, and resolves back to the same path's segments' call ids.
func FuzzTaskPath(f *testing.F) {
	f.Fuzz(func(t *testing.T, path string) {
		tp := taskPath(path)
		p, err := agent.ParsePath(path)
		if err != nil || len(p) < 2 {
			if tp != "" {
				t.Fatalf("taskPath(%q) = %q for a top-level or bad path", path, tp)
			}
			return
		}
		parts := strings.Split(tp, "|")
		if len(parts) != len(p)-1 {
			t.Fatalf("taskPath(%q) = %q: %d parts for %d levels", path, tp, len(parts), len(p)-1)
		}
		for i, part := range parts {
			if part != "task:"+p[i+1].CallID {
				t.Fatalf("taskPath(%q) part %d = %q", path, i, part)
			}
		}
	})
}
