package offload

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
)

// Where offloaded text is saved.
const (
	ToolResultDir  = "/large_tool_results"
	UserMessageDir = "/conversation_history"
)

// Preview sizes: how many lines are shown from each end of an offloaded text,
// and the most characters shown of one line.
const (
	PreviewLines     = 5
	PreviewLineChars = 1000
)

// maxIDLen is the longest call id used as a file name as it is; longer ids
// are hashed, so every saved path stays short.
const maxIDLen = 40

// safeID reports whether id can be a file name as it is: 1 to maxIDLen
// ASCII letters, digits, '-' and '_' (no dots, slashes, spaces or other
// bytes a backend or a shell could read differently).
func safeID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// shortHash is the first 16 hex digits of the SHA-256 of the parts joined
// by NUL bytes.
func shortHash(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ResultPath is where the result of tool call callID, made by the agent at
// agentPath, is saved. The call id is the file name when it is short and
// path-safe and the caller is a top-level agent; otherwise the name is a
// short hash of both, because subagents (and providers that number calls
// per run) reuse call ids that would otherwise overwrite each other's files.
func ResultPath(agentPath, callID string) string {
	if safeID(callID) && topLevel(agentPath) {
		return ToolResultDir + "/" + callID
	}
	return ToolResultDir + "/" + shortHash(agentPath, callID)
}

// topLevel reports whether agentPath names a top-level agent (one segment).
func topLevel(agentPath string) bool {
	p, err := agent.ParsePath(agentPath)
	return err == nil && len(p) == 1
}

// MessagePath is where a user message with this content is saved: a short
// hash of the content, so the same message maps to the same file on every
// step and is written once.
func MessagePath(content string) string {
	return UserMessageDir + "/" + shortHash(content) + ".md"
}

// splitLines splits text the way read_file numbers it: on "\n", without a
// final empty line after a trailing newline, and with a "\r" before the
// newline dropped.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// Preview renders the first and last PreviewLines lines of text with
// read_file's line-number gutter, each clipped to PreviewLineChars
// characters, and a line saying how many lines between them were left out.
// A text of at most 2×PreviewLines lines is shown whole (still clipped). It
// also returns the text's line count.
func Preview(text string) (string, int) {
	lines := splitLines(text)
	var b strings.Builder
	write := func(i int) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		label := strconv.Itoa(i + 1)
		b.WriteString(strings.Repeat(" ", 6-min(6, len(label))))
		b.WriteString(label)
		b.WriteByte('\t')
		b.WriteString(clip(lines[i], PreviewLineChars))
	}
	if len(lines) <= 2*PreviewLines {
		for i := range lines {
			write(i)
		}
		return b.String(), len(lines)
	}
	for i := range PreviewLines {
		write(i)
	}
	left := len(lines) - 2*PreviewLines
	fmt.Fprintf(&b, "\n[... %s left out: lines %d to %d ...]", count(left, "line"), PreviewLines+1, len(lines)-PreviewLines)
	for i := len(lines) - PreviewLines; i < len(lines); i++ {
		write(i)
	}
	return b.String(), len(lines)
}

// clip cuts s to at most n characters, saying how many were cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	seen := 0
	for i := range s {
		if seen == n {
			rest := utf8.RuneCountInString(s[i:])
			return s[:i] + " [... " + count(rest, "more character") + "]"
		}
		seen++
	}
	return s
}

func count(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
