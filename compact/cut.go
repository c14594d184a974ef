package compact

import (
	"encoding/json"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// keepFrom returns the index into msgs of the first message to keep as it
// is; the messages in msgs[start:cut] are summarised. The result is never a
// tool result (the cut moves back to the assistant message that made the
// call) and is <= start when there is nothing to summarise.
func keepFrom(msgs []llm.Message, start int, cfg Config) int {
	n := len(msgs)
	var cut int
	switch {
	case cfg.KeepMessages > 0:
		cut = n - cfg.KeepMessages
	case cfg.Window > 0:
		budget := cfg.Window / 10
		cut = n - 1 // always keep the newest message
		used := tokens.EstimateMessage(msgs[cut])
		for cut > start {
			t := tokens.EstimateMessage(msgs[cut-1])
			if used+t > budget {
				break
			}
			used += t
			cut--
		}
	default:
		cut = n - DefaultKeepMessages
	}
	cut = max(min(cut, n-1), start)
	// Never split a call from its results: a kept tool result takes its
	// assistant message (and that message's other results) with it.
	for cut > start && cut < n && msgs[cut].Role == llm.RoleTool {
		cut--
	}
	return cut
}

// Texts of the results put in for calls that have none in a request.
const (
	cancelledText = "This tool call did not run (it was cancelled or its result was lost), so it has no result."
	malformedText = "This tool call could not run: its arguments were malformed or cut off."
)

// balance returns msgs with every tool call of an assistant message followed
// by a result (one is put in for a call without), and without tool results
// that answer no call of the assistant message before them. msgs is
// returned as it is when it is balanced.
func balance(msgs []llm.Message) []llm.Message {
	if balanced(msgs) {
		return msgs
	}
	out := make([]llm.Message, 0, len(msgs)+2)
	for i := 0; i < len(msgs); {
		m := msgs[i]
		if m.Role == llm.RoleTool {
			i++ // a result with no call just before it
			continue
		}
		out = append(out, m)
		i++
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, c := range m.ToolCalls {
			want[c.ID] = true
		}
		got := map[string]bool{}
		for ; i < len(msgs) && msgs[i].Role == llm.RoleTool; i++ {
			id := msgs[i].ToolCallID
			if want[id] && !got[id] {
				got[id] = true
				out = append(out, msgs[i])
			}
		}
		for _, c := range m.ToolCalls {
			if got[c.ID] {
				continue
			}
			got[c.ID] = true
			text := cancelledText
			if len(c.Args) > 0 && !json.Valid(c.Args) {
				text = malformedText
			}
			out = append(out, llm.ToolResult(c, text, true))
		}
	}
	return out
}

// balanced reports whether every call has exactly one result right after
// its message and every result answers such a call.
func balanced(msgs []llm.Message) bool {
	var open map[string]bool
	for _, m := range msgs {
		switch {
		case m.Role == llm.RoleTool:
			if !open[m.ToolCallID] {
				return false
			}
			delete(open, m.ToolCallID)
		default:
			if len(open) > 0 {
				return false
			}
			open = nil
			if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
				open = make(map[string]bool, len(m.ToolCalls))
				for _, c := range m.ToolCalls {
					if open[c.ID] {
						return false
					}
					open[c.ID] = true
				}
			}
		}
	}
	return len(open) == 0
}
