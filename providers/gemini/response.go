package gemini

import (
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/internal/textbuf"
	"github.com/deepagents-go/deepagents/llm"
)

// collector folds generateContent responses (one, or the chunks of a stream)
// into an llm.Response, emitting stream events for each new part.
type collector struct {
	ids           *idGen
	model         string
	parts         []*genai.Part
	calls         []llm.ToolCall
	finish        genai.FinishReason
	finishMessage string
	blocked       bool
	blockReason   genai.BlockedReason
	blockMessage  string
	candidate     bool // some response carried a candidate
	usage         *genai.GenerateContentResponseUsageMetadata
	// joined gathers the text of the last part while a stream's pieces
	// are joined to it (joining), so the text is not copied whole with
	// every piece; flush moves it into the part.
	joined  textbuf.Buffer
	joining bool
	// hidden counts what is kept but not streamed (thought signatures,
	// inline data, code and its results) against the response's limits;
	// err is set once it passes them.
	hidden *llm.Meter
	err    error
}

func newCollector(ids *idGen, model string, limits llm.ResponseLimits) *collector {
	return &collector{ids: ids, model: model, hidden: llm.NewMeter(limits)}
}

// flush ends the joining of pieces into the last part.
func (c *collector) flush() {
	if c.joining {
		c.parts[len(c.parts)-1].Text = c.joined.String()
		c.joined.Reset()
		c.joining = false
	}
}

// keep counts n bytes kept without being streamed.
func (c *collector) keep(n int) {
	if c.err == nil && n > 0 {
		c.err = c.hidden.Count(n)
	}
}

// hiddenSize is the size of what a part carries besides its text and
// function call.
func hiddenSize(p *genai.Part) int {
	n := len(p.ThoughtSignature)
	if d := p.InlineData; d != nil {
		n += len(d.Data)
	}
	if d := p.FileData; d != nil {
		n += len(d.FileURI)
	}
	if e := p.ExecutableCode; e != nil {
		n += len(e.Code)
	}
	if r := p.CodeExecutionResult; r != nil {
		n += len(r.Output)
	}
	return n
}

// addResponse folds in one response or stream chunk. emit, when not nil,
// receives the stream events of the chunk's parts.
func (c *collector) addResponse(r *genai.GenerateContentResponse, emit func(llm.StreamEvent)) {
	if r == nil {
		return
	}
	if r.ModelVersion != "" {
		c.model = r.ModelVersion
	}
	if r.UsageMetadata != nil {
		// Within one request every chunk reports the running total.
		c.usage = r.UsageMetadata
	}
	if f := r.PromptFeedback; f != nil && f.BlockReason != "" {
		c.blocked, c.blockReason, c.blockMessage = true, f.BlockReason, f.BlockReasonMessage
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return
	}
	cand := r.Candidates[0]
	c.candidate = true
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		c.finish = cand.FinishReason
	}
	if cand.FinishMessage != "" {
		c.finishMessage = cand.FinishMessage
	}
	if cand.Content == nil {
		return
	}
	for _, p := range cand.Content.Parts {
		c.addPart(p, emit)
	}
}

// textLike reports whether p is a text or thought part (possibly empty and
// carrying only a signature).
func textLike(p *genai.Part) bool {
	return p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil && p.FileData == nil &&
		p.ExecutableCode == nil && p.CodeExecutionResult == nil && p.ToolCall == nil && p.ToolResponse == nil
}

func (c *collector) addPart(p *genai.Part, emit func(llm.StreamEvent)) {
	if p == nil {
		return
	}
	if emit == nil {
		emit = func(llm.StreamEvent) {}
	}
	c.keep(hiddenSize(p))
	cp := *p
	switch {
	case p.FunctionCall != nil:
		fc := *p.FunctionCall
		cp.FunctionCall = &fc
		args := []byte("{}")
		if len(fc.Args) > 0 {
			if b, err := json.Marshal(fc.Args); err == nil {
				args = b
			}
		}
		call := llm.ToolCall{ID: c.ids.take(fc.ID), Name: fc.Name, Args: args}
		i := len(c.calls)
		c.calls = append(c.calls, call)
		c.flush()
		c.parts = append(c.parts, &cp)
		emit(llm.StreamEvent{Type: llm.EventToolCallStart, Index: i, ToolCall: &llm.ToolCall{ID: call.ID, Name: call.Name}})
		emit(llm.StreamEvent{Type: llm.EventToolCallDelta, Index: i, ArgsDelta: string(args)})
	case textLike(p):
		if p.Text == "" && len(p.ThoughtSignature) == 0 {
			return
		}
		if p.Thought {
			if p.Text != "" {
				emit(llm.StreamEvent{Type: llm.EventReasoningDelta, Text: p.Text})
			}
		} else {
			if p.Text != "" {
				emit(llm.StreamEvent{Type: llm.EventTextDelta, Text: p.Text})
			}
		}
		// A stream splits one text part into many; join the pieces back, but
		// never a signed one: a signature stays on the exact part it came on.
		if n := len(c.parts); n > 0 && len(p.ThoughtSignature) == 0 {
			last := c.parts[n-1]
			if textLike(last) && last.Thought == p.Thought && len(last.ThoughtSignature) == 0 && plainText(last) && plainText(p) {
				if !c.joining {
					c.joined.WriteString(last.Text)
					c.joining = true
				}
				c.joined.WriteString(p.Text)
				return
			}
		}
		c.flush()
		c.parts = append(c.parts, &cp)
	default:
		// Server-side code execution and the like: kept for the round trip.
		c.flush()
		c.parts = append(c.parts, &cp)
	}
}

// plainText reports whether a text-like part carries nothing but text,
// thought flag and signature, so two of them can be joined.
func plainText(p *genai.Part) bool {
	q := *p
	q.Text, q.Thought, q.ThoughtSignature = "", false, nil
	return q.MediaResolution == nil && q.VideoMetadata == nil && q.PartMetadata == nil &&
		q.AudioTranscription == nil && q.MediaProcessing == "" && q.SpeechMetadata == nil
}

// finished reports whether the API ended the response: a finish reason or a
// blocked prompt. A stream that ends without either was cut.
func (c *collector) finished() bool { return c.finish != "" || c.blocked }

// refusal returns the reason the API withheld the answer, in its own words
// when it gave some, or "" when it did not.
func (c *collector) refusal() string {
	if c.blocked {
		if c.blockMessage != "" {
			return c.blockMessage
		}
		return fmt.Sprintf("Gemini blocked the prompt (block reason %s).", c.blockReason)
	}
	switch c.finish {
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		if c.finishMessage != "" {
			return c.finishMessage
		}
		return fmt.Sprintf("Gemini withheld the answer (finish reason %s).", c.finish)
	}
	return ""
}

func (c *collector) stopReason() llm.StopReason {
	if c.refusal() != "" {
		return llm.StopRefusal
	}
	switch c.finish {
	case "", genai.FinishReasonStop:
		if len(c.calls) > 0 {
			return llm.StopToolCalls
		}
		return llm.StopEnd
	case genai.FinishReasonMaxTokens:
		return llm.StopMaxTokens
	}
	return llm.StopOther
}

// response builds the final answer: the parts as llm parts (thoughts and
// signatures as reasoning parts, in order), the calls, the refusal and usage.
// Thought tokens are added to OutputTokens and also reported as
// ReasoningTokens; tool-use prompt tokens count as input; cached prompt
// tokens are CachedInputTokens (Gemini's implicit caching reports no cache
// writes, so CacheWriteTokens stays 0). A response that carried no usage
// metadata at all has Usage.Unknown set.
func (c *collector) response() *llm.Response {
	c.flush()
	msg := llm.Message{Role: llm.RoleAssistant, ToolCalls: c.calls}
	parts, ex := fromWire(c.parts, c.calls)
	msg.SetParts(parts)
	if ex != nil {
		if b, err := json.Marshal(ex); err == nil {
			msg.Extra = map[string]json.RawMessage{Provider: b}
		}
	}
	resp := &llm.Response{Message: msg, StopReason: c.stopReason(), Model: c.model, Refusal: c.refusal()}
	if u := c.usage; u != nil {
		resp.Usage = llm.Usage{
			InputTokens:       int(u.PromptTokenCount) + int(u.ToolUsePromptTokenCount),
			OutputTokens:      int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount),
			CachedInputTokens: int(u.CachedContentTokenCount),
			ReasoningTokens:   int(u.ThoughtsTokenCount),
		}
	} else {
		resp.Usage.Unknown = true
	}
	return resp
}
