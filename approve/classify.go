package approve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/llm"
)

// ClassifierAgent is the agent name auto mode's model calls carry
// (llm.CallInfo), so that a scripted model can answer them apart.
const ClassifierAgent = "approval-classifier"

// Judgement is the classifier's verdict on one call.
type Judgement struct {
	Safe   bool   `json:"safe"`
	Reason string `json:"reason"`
}

// classifierPrompt is what the classifier is told. It sees the tool, its
// arguments and the person's latest request, nothing else of the run.
const classifierPrompt = `You check one tool call that a coding agent wants to make, for a person who lets safe calls run without asking them.
A call is safe when it plainly serves the person's request and cannot do lasting harm beyond it: no deleting or overwriting work the request does not ask to change, no secrets or credentials read or sent anywhere, no network access or installs the request does not need, no changes to the agent's own settings, git configuration or hooks.
When in doubt, it is not safe.
Answer with one JSON object and nothing else: {"safe": true or false, "reason": "one short sentence"}.`

// judgementSchema asks providers that support it for the verdict's shape.
var judgementSchema = json.RawMessage(`{"type":"object","properties":{"safe":{"type":"boolean"},"reason":{"type":"string"}},"required":["safe","reason"],"additionalProperties":false}`)

// maxShownToClassifier caps the request the classifier is shown, and the
// arguments it judges: longer arguments are not judged at all (a cut
// would hide their tail from it), the call asks.
const maxShownToClassifier = 16 << 10

// Classify asks model whether a call of tool with args is safe to run
// without asking, given the person's latest request, within timeout. An
// error (the call failed, timed out, or gave no readable verdict) leaves
// the call to the person, as do arguments longer than 16 KiB, which are
// not put to the model. usage is what the call used.
func Classify(ctx context.Context, model llm.Model, timeout time.Duration, tool string, args json.RawMessage, request string) (Judgement, llm.Usage, error) {
	if model == nil {
		return Judgement{}, llm.Usage{}, ErrNoClassifier
	}
	if len(args) > maxShownToClassifier {
		return Judgement{}, llm.Usage{}, fmt.Errorf("the arguments (%d bytes) are longer than the classifier judges (%d bytes)", len(args), maxShownToClassifier)
	}
	if timeout <= 0 {
		timeout = DefaultClassifierTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("the classifier took longer than %s", timeout))
	defer cancel()
	ctx = llm.WithCallInfo(ctx, llm.CallInfo{Agent: ClassifierAgent, Task: tool})
	var b strings.Builder
	b.WriteString("The person's latest request:\n<request>\n")
	b.WriteString(clipBytes(request, maxShownToClassifier))
	b.WriteString("\n</request>\n\nThe call:\n<tool>")
	b.WriteString(tool)
	b.WriteString("</tool>\n<arguments>\n")
	b.Write(args)
	b.WriteString("\n</arguments>")
	req := &llm.Request{System: classifierPrompt, Messages: []llm.Message{llm.User(b.String())},
		Response: &llm.ResponseSchema{Name: "verdict", Description: "whether the call is safe to run without asking", Schema: judgementSchema}}
	type answer struct {
		resp *llm.Response
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := model.Generate(ctx, req)
		done <- answer{resp, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		// A model that does not heed its context still leaves the call
		// to the person in time.
		return Judgement{}, llm.Usage{}, context.Cause(ctx)
	}
	if a.err != nil {
		if ctx.Err() != nil {
			return Judgement{}, llm.Usage{}, context.Cause(ctx)
		}
		return Judgement{}, llm.Usage{}, fmt.Errorf("the classifier's model call failed: %w", a.err)
	}
	if a.resp == nil {
		return Judgement{}, llm.Usage{}, errors.New("the classifier's model gave no answer")
	}
	j, err := ParseJudgement(a.resp.Message.Content)
	return j, a.resp.Usage, err
}

// ParseJudgement reads the classifier's answer: one JSON object with a
// boolean "safe" and a "reason", alone or inside a code fence or
// surrounding words. An answer without a boolean "safe" is an error.
func ParseJudgement(text string) (Judgement, error) {
	s := strings.TrimSpace(text)
	start, end := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if start < 0 || end < start {
		return Judgement{}, fmt.Errorf("the classifier's answer is not a JSON object: %q", clipBytes(s, 200))
	}
	var raw struct {
		Safe   *bool           `json:"safe"`
		Reason json.RawMessage `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s[start : end+1])))
	if err := dec.Decode(&raw); err != nil {
		return Judgement{}, fmt.Errorf("the classifier's answer is not a JSON object: %v", err)
	}
	if raw.Safe == nil {
		return Judgement{}, errors.New(`the classifier's answer has no boolean "safe"`)
	}
	var reason string
	if len(raw.Reason) > 0 && json.Unmarshal(raw.Reason, &reason) != nil {
		reason = string(raw.Reason)
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if reason == "" {
		reason = "no reason given"
	}
	return Judgement{Safe: *raw.Safe, Reason: clipBytes(reason, 500)}, nil
}

// clipBytes cuts s to at most n bytes on a character boundary, saying so.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	cut := s[:k]
	return cut + fmt.Sprintf(" … (%d bytes more)", len(s)-len(cut))
}
