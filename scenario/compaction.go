package scenario

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	compaction "github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
)

// Compaction is a scenario's compaction setting: false turns it off, true
// or an object turns it on ({"trigger_tokens": N, "keep_messages": M,
// "tool": true}, an absent key keeping the default; tool binds
// compact_conversation).
type Compaction struct {
	Off           bool
	TriggerTokens int
	KeepMessages  int
	// Tool binds the compact_conversation tool.
	Tool bool
}

// compactionFields are the keys of the object form.
type compactionFields struct {
	TriggerTokens *int  `json:"trigger_tokens,omitempty"`
	KeepMessages  *int  `json:"keep_messages,omitempty"`
	Tool          *bool `json:"tool,omitempty"`
}

// MarshalJSON writes the form it was read from: false, or the object.
func (c Compaction) MarshalJSON() ([]byte, error) {
	if c.Off {
		return []byte("false"), nil
	}
	var f compactionFields
	if c.TriggerTokens > 0 {
		f.TriggerTokens = &c.TriggerTokens
	}
	if c.KeepMessages > 0 {
		f.KeepMessages = &c.KeepMessages
	}
	if c.Tool {
		f.Tool = &c.Tool
	}
	return json.Marshal(f)
}

const compactionForms = `false, true or {"trigger_tokens": N, "keep_messages": M}`

func decodeCompaction(d *decoder, n *node, v reflect.Value, path string) error {
	var c Compaction
	switch n.kind {
	case kBool:
		c.Off = !n.boolean
	case kObject:
		var f compactionFields
		if err := d.value(n, reflect.ValueOf(&f).Elem(), path); err != nil {
			return err
		}
		c.Tool = f.Tool != nil && *f.Tool
		for _, x := range []struct {
			key string
			p   *int
			dst *int
		}{{"trigger_tokens", f.TriggerTokens, &c.TriggerTokens}, {"keep_messages", f.KeepMessages, &c.KeepMessages}} {
			if x.p == nil {
				continue
			}
			if *x.p < 0 {
				off := n.start
				if m := n.get(x.key); m != nil {
					off = m.start
				}
				return errAt(off, "%s.%s must not be negative (0 means the default)", path, x.key)
			}
			*x.dst = *x.p
		}
	default:
		return errAt(n.start, "%s must be %s, not %s", path, compactionForms, n.kind.words())
	}
	v.Set(reflect.ValueOf(c))
	return nil
}

// middleware returns the compaction middleware for an agent with the given
// window and setting, or nothing when compaction is off or not asked for.
// The scenario's scripted model writes the summaries (script key
// "summarizer"), and estimates are not calibrated, so the trigger compares
// with the input_tokens the transcript shows.
func compactionMiddleware(window int, c *Compaction, model llm.Model) ([]agent.Middleware, error) {
	if (c == nil && window == 0) || (c != nil && c.Off) {
		return nil, nil
	}
	cfg := compaction.Config{Window: window, Model: model, NoCalibration: true}
	if c != nil {
		cfg.TriggerTokens, cfg.KeepMessages, cfg.Tool = c.TriggerTokens, c.KeepMessages, c.Tool
	}
	m, err := compaction.New(cfg)
	if err != nil {
		return nil, err
	}
	return []agent.Middleware{m}, nil
}

// contextManaged reports whether the scenario sets a context window or
// compaction anywhere: its transcript rounds then show input_tokens and
// compacted.
func (s *Scenario) contextManaged() bool {
	if s.Agent.ContextWindow > 0 || s.Agent.Compaction != nil {
		return true
	}
	for _, sa := range s.Agent.Subagents {
		if sa.ContextWindow > 0 || sa.Compaction != nil {
			return true
		}
	}
	return false
}

var summarizedAt = regexp.MustCompile(`(?m)^## Summarized at \S+$`)

// normalizeHistory replaces the times of the history files' sections.
func normalizeHistory(files map[string]string) {
	for p, c := range files {
		if strings.HasPrefix(p, compaction.HistoryDir+"/session_") {
			files[p] = summarizedAt.ReplaceAllString(c, "## Summarized at (time)")
		}
	}
}
