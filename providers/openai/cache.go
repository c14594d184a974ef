package openai

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// systemText is the system prompt as sent: the static part, then the
// changing tail after a blank line. OpenAI caches by prefix on its own, so
// the tail only has to come last.
func systemText(req *llm.Request) string {
	if strings.TrimSpace(req.SystemTail) == "" {
		return req.System
	}
	if req.System == "" {
		return req.SystemTail
	}
	return req.System + "\n\n" + req.SystemTail
}

// promptCacheKey routes requests that share a static prefix to the same
// cache: the first 32 hex digits of the sha256 of the static system prompt
// and the tool definitions, so every round of an agent, and every subagent
// of one kind, sends the same key whatever its todo list or history holds.
// Empty (not sent) for a request with neither, or when Config turns it off.
func (m *Model) promptCacheKey(req *llm.Request) string {
	if m.cfg.NoPromptCacheKey || (req.System == "" && len(req.Tools) == 0) {
		return ""
	}
	tools, err := json.Marshal(req.Tools)
	if err != nil {
		// Unreachable for tools the request already checked; no key then.
		return ""
	}
	h := sha256.New()
	h.Write([]byte(req.System))
	h.Write([]byte{0})
	h.Write(tools)
	return hex.EncodeToString(h.Sum(nil))[:32]
}
