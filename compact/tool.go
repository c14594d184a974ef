package compact

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
)

// ToolName is the name of the manual compaction tool.
const ToolName = "compact_conversation"

type toolArgs struct{}

// tool is compact_conversation: the model asks for a compaction, which
// happens when the conversation is at least half the trigger.
func (c *compactor) tool() tool.Tool {
	desc := "Summarise the older part of this conversation to free context space. The full history stays readable in a file under " +
		HistoryDir + ". Use it before starting a large new piece of work when the conversation is long; it does nothing while the conversation is still short."
	return tool.MustFunc(ToolName, desc, func(ctx context.Context, env *tool.Env, _ toolArgs) (tool.Result, error) {
		return c.manual(ctx, env), nil
	})
}

func (c *compactor) manual(ctx context.Context, env *tool.Env) tool.Result {
	st := &agent.State{Values: env.State}
	prior, err := loadState(st)
	if err != nil {
		return tool.Result{Content: "Compaction failed: " + err.Error(), IsError: true}
	}
	if env.Request == nil {
		return tool.Result{Content: "Compaction failed: this call has no conversation to compact.", IsError: true}
	}
	req := *env.Request
	est := c.estimate(agent.StepInfo{}, &req)
	need := c.cfg.Trigger() / 2
	if est < need {
		return tool.Result{Content: fmt.Sprintf("Not compacted: the conversation is about %d tokens, and compaction is available from %d (half of the %d-token threshold). Carry on.", est, need, c.cfg.Trigger())}
	}
	eff := req.Messages
	consistent := len(eff) > 0 && (prior.Summary == "" && !IsSummary(eff[0]) ||
		prior.Summary != "" && eff[0].Content == summaryMessage(prior).Content)
	if c.cfg.Model == nil || !consistent {
		return tool.Result{Content: "Not compacted: compaction is not available in this step; the conversation is compacted automatically when it reaches its threshold."}
	}
	var raw []llm.Message
	if prior.Summary == "" {
		raw = eff
	}
	next, info, res, cerr := c.compact(ctx, compactInput{prior: prior, eff: eff, raw: raw, agent: env.Agent, files: env.Files,
		gen: limited(c.cfg.Model), trigger: "manual", before: est, emit: func(agent.Event) {}, state: st})
	switch res {
	case notNeeded:
		return tool.Result{Content: "Not compacted: the conversation has too few messages before the part that is always kept."}
	case vetoed:
		prior.Announce = info
		return tool.Result{Content: "Not compacted: " + cerr.Error() + ". Carry on.", State: stateValue(prior)}
	case failed:
		prior.Failures++
		prior.Announce = info
		return tool.Result{Content: "Compaction failed; nothing was lost and the conversation goes on unchanged: " + cerr.Error(),
			IsError: true, State: stateValue(prior)}
	}
	after := req
	after.Messages = rewrite(next, eff)
	tokensAfter := c.estimate(agent.StepInfo{}, &after)
	if env.Progress != nil {
		env.Progress(fmt.Sprintf("compacted %d messages: about %d tokens before, %d after", info.Evicted, est, tokensAfter))
	}
	info.TokensAfter = tokensAfter
	c.postCompact(ctx, env.Agent, next, info, summarised(prior, eff, next))
	next.Announce = info
	text := fmt.Sprintf("Compacted: %d earlier messages were summarised (about %d tokens before, %d after).", info.Evicted, est, tokensAfter)
	if next.File != "" {
		text += " They are saved in full in " + next.File + "."
	}
	return tool.Result{Content: text, State: stateValue(next)}
}

func stateValue(s State) map[string]json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	return map[string]json.RawMessage{StateKey: b}
}
