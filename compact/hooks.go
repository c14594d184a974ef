package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/llm"
)

// ErrVetoed is wrapped by the error Compact returns when Config.PreCompact
// declined the compaction.
var ErrVetoed = errors.New("compaction declined by PreCompact")

// Cut is what a compaction is about to do, as Config.PreCompact sees it.
// The slices are copies: changing them changes nothing.
type Cut struct {
	// Agent is the path of the agent whose conversation is compacted.
	Agent string
	// Trigger is "auto", "overflow" or "manual" (the compact_conversation
	// tool, or Compact).
	Trigger string
	// TokensBefore is the estimated size of the request (for Compact, of
	// the conversation) before compaction.
	TokensBefore int
	// Summarised are the messages about to be summarised (after the
	// previous summary, when there is one); Kept those sent as they are.
	Summarised []llm.Message
	Kept       []llm.Message
	// PreviousSummary is the summary the new one replaces, if any.
	PreviousSummary string
	// Focus is what a person asked the summary to keep in detail
	// (/compact FOCUS), empty otherwise.
	Focus string
}

// Compacted is a compaction that happened, as Config.PostCompact sees it.
type Compacted struct {
	Agent   string
	Trigger string
	// Summary is the summary made (facts it had lost appended, as the
	// model will read it).
	Summary string
	// Summarised are the messages it stands for.
	Summarised []llm.Message
	// Info is what the compaction.end event reports: tokens before and
	// after, cutoff, history file, summariser calls and usage.
	Info Info
}

// preCompact asks Config.PreCompact about a cut. It returns the focus to
// summarise with (the person's, then the hook's) or the reason for a veto.
func (c *compactor) preCompact(ctx context.Context, in compactInput, start, cut int) (focus string, veto error) {
	focus = strings.TrimSpace(in.focus)
	if c.cfg.PreCompact == nil {
		return focus, nil
	}
	extra, err := c.cfg.PreCompact(ctx, Cut{Agent: in.agent, Trigger: in.trigger, TokensBefore: in.before,
		Summarised: slices.Clone(in.eff[start:cut]), Kept: slices.Clone(in.eff[cut:]),
		PreviousSummary: in.prior.Summary, Focus: focus})
	if err != nil {
		return "", err
	}
	if extra = strings.TrimSpace(extra); extra != "" {
		if focus != "" {
			focus += "\n"
		}
		focus += extra
	}
	return focus, nil
}

// postCompact tells Config.PostCompact about a compaction made.
func (c *compactor) postCompact(ctx context.Context, agentPath string, next State, info *Info, summarised []llm.Message) {
	if c.cfg.PostCompact == nil || info == nil {
		return
	}
	i := *info
	i.Verbatim = slices.Clone(info.Verbatim)
	c.cfg.PostCompact(ctx, Compacted{Agent: agentPath, Trigger: info.Trigger, Summary: next.Summary,
		Summarised: slices.Clone(summarised), Info: i})
}

// vetoText is the compaction.end error of a vetoed compaction.
func vetoText(err error) string {
	return fmt.Sprintf("PreCompact declined this compaction: %v", err)
}
