package gemini

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/providers/gemini/geminitest"
	"github.com/deepagents-go/deepagents/providers/retry"
)

var (
	sigThought = []byte("thought-signature-0\x01\xfe")
	sigCall1   = []byte("call-signature-1")
	sigCall2   = []byte("call-signature-2\x00")
	sigText    = []byte("text-signature-3")
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// loopScript is a three-step tool loop: think and read a file (signed thought
// and call), list two folders at once (only the first call signed, as Gemini
// 3 does with parallel calls), then answer with signed text. check records a
// problem found in a request.
func loopScript(check func(error)) geminitest.Handler {
	return geminitest.Turns(
		geminitest.Reply{Thought: "I need the file first.", ThoughtSignature: sigThought,
			Calls: []geminitest.Call{{ID: "fc-1", Name: "read_file", Args: map[string]any{"path": "/a.txt"}, Signature: sigCall1}}},
		geminitest.Reply{Thought: "Now list both folders.",
			Calls: []geminitest.Call{{Name: "ls", Signature: sigCall2}, {Name: "ls", Args: map[string]any{"path": "/b"}}}},
		geminitest.Reply{Text: "Both folders are listed.", TextSignature: sigText},
	)
}

// stepSignatures lists, for each model content of a request, its parts as
// "kind:signature" (signature in base64, "-" for none).
func stepSignatures(r *geminitest.Request) [][]string {
	var out [][]string
	for _, c := range r.Body.Contents {
		if c.Role != "model" {
			continue
		}
		var step []string
		for _, p := range c.Parts {
			kind := "text"
			switch {
			case p.FunctionCall != nil:
				kind = "call " + p.FunctionCall.Name
			case p.Thought:
				kind = "thought"
			}
			sig := p.ThoughtSignature
			if sig == "" {
				sig = "-"
			}
			step = append(step, kind+":"+sig)
		}
		out = append(out, step)
	}
	return out
}

func generate(t *testing.T, m *Model, stream bool, req *llm.Request) (*llm.Response, []llm.StreamEvent, error) {
	t.Helper()
	if !stream {
		resp, err := m.Generate(context.Background(), req)
		return resp, nil, err
	}
	evs, err := collect(m.Stream(context.Background(), req))
	if err != nil {
		return nil, evs, err
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != llm.EventDone {
		return nil, evs, errors.New("the stream did not end with EventDone")
	}
	return evs[len(evs)-1].Response, evs, nil
}

// TestThinkingToolLoopSendsSignaturesBack: a multi-step tool loop with
// thinking on, streamed or not, on a Gemini 3 model (which refuses unsigned
// calls) and on 2.5: every signature goes back on the part it came on, after
// a checkpoint of the conversation, or the fake server refuses the request.
func TestThinkingToolLoopSendsSignaturesBack(t *testing.T) {
	want := [][]string{
		{"thought:" + b64(sigThought), "call read_file:" + b64(sigCall1)},
		{"thought:-", "call ls:" + b64(sigCall2), "call ls:-"},
	}
	for _, tc := range []struct {
		model     string
		reasoning llm.ReasoningConfig
	}{
		{"gemini-3-flash-preview", llm.ReasoningConfig{Effort: llm.EffortHigh}},
		{"gemini-2.5-flash", llm.ReasoningConfig{BudgetTokens: 4096}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.model, stream), func(t *testing.T) {
				var problems []error
				srv := geminitest.NewServer(t, loopScript(func(err error) { problems = append(problems, err) }))
				m, _ := newTestModel(t, srv, func(c *Config) { c.Model = tc.model })
				msgs := []llm.Message{llm.User("Read /a.txt, then list the folders.")}
				var reasoningDeltas strings.Builder
				for round := 0; ; round++ {
					if round > 3 {
						t.Fatal("the loop does not end")
					}
					resp, evs, err := generate(t, m, stream, &llm.Request{Messages: msgs, Tools: testTools,
						Settings: llm.Settings{Reasoning: &tc.reasoning}})
					if err != nil {
						t.Fatalf("round %d: %v", round, err)
					}
					for _, ev := range evs {
						if ev.Type == llm.EventReasoningDelta {
							reasoningDeltas.WriteString(ev.Text)
						}
					}
					a := checkpoint(t, resp.Message)
					msgs = append(msgs, a)
					if len(a.ToolCalls) == 0 {
						break
					}
					for _, c := range a.ToolCalls {
						msgs = append(msgs, llm.ToolResult(c, "output of "+c.Name, false))
					}
				}
				assertValid(t, srv)
				for _, p := range problems {
					t.Error(p)
				}
				reqs := srv.Requests()
				if len(reqs) != 3 {
					t.Fatalf("%d requests", len(reqs))
				}
				// The last request carries the first two steps.
				want := want
				if stream {
					// The thought streamed in two pieces, the signature on
					// the second, and goes back so.
					want = [][]string{append([]string{"thought:-"}, want[0]...), want[1]}
				}
				got := stepSignatures(reqs[2])
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("steps sent back = %v\nwant %v", got, want[:2])
				}
				// The answer goes back as it came: one signed part, or, streamed,
				// in pieces with the signature on the last.
				back, _ := modelParts(msgs[len(msgs)-1])
				var text strings.Builder
				for i, p := range back {
					text.WriteString(p.Text)
					if signed := len(p.ThoughtSignature) > 0; signed != (i == len(back)-1) {
						t.Errorf("part %d of the answer: signature %q", i, p.ThoughtSignature)
					}
				}
				if text.String() != "Both folders are listed." || string(back[len(back)-1].ThoughtSignature) != string(sigText) || (len(back) > 1) != stream {
					t.Errorf("the signed answer goes back as %s", mustJSON(t, back))
				}
				first := msgs[1]
				if first.ReasoningText() != "I need the file first." || first.Content != "" {
					t.Errorf("first step: reasoning %q content %q", first.ReasoningText(), first.Content)
				}
				if stream && reasoningDeltas.String() != "I need the file first.Now list both folders." {
					t.Errorf("reasoning deltas = %q", reasoningDeltas.String())
				}
				for _, p := range first.Parts {
					if p.Type != llm.PartReasoning || p.Reasoning == nil || p.Reasoning.Provider != "gemini" {
						t.Errorf("part %+v should be Gemini reasoning", p)
					}
				}
				if second := msgs[3]; first.Extra == nil || second.Role != llm.RoleAssistant || second.Extra != nil {
					t.Errorf("Extra holds Gemini's own call ids only: %s / %s", first.Extra["gemini"], second.Extra["gemini"])
				}
				tc := reqs[0].Body.GenerationConfig.ThinkingConfig
				if tc == nil || !tc.IncludeThoughts {
					t.Errorf("thinkingConfig = %s", mustJSON(t, tc))
				}
			})
		}
	}
}

// TestAlteredReasoningIsRefused: the fake server, like the API, refuses a
// signature that was changed, moved, or whose thought text was changed.
func TestAlteredReasoningIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alter func(m *llm.Message)
	}{
		{"call signature changed", func(m *llm.Message) {
			for i, p := range m.Parts {
				if p.Reasoning != nil && strings.Contains(string(p.Reasoning.Extra), `"call"`) {
					m.Parts[i].Reasoning.Signature = b64([]byte("call-signature-X"))
				}
			}
		}},
		{"thought text changed", func(m *llm.Message) {
			m.Parts[0].Text = "I need nothing."
		}},
		{"signature moved to the thought", func(m *llm.Message) {
			m.Parts[0].Reasoning.Signature = m.Parts[1].Reasoning.Signature
		}},
	} {
		for _, stream := range []bool{false, true} {
			srv := geminitest.NewServer(t, loopScript(func(error) {}))
			m, _ := newTestModel(t, srv, func(c *Config) { c.Model = "gemini-3-pro-preview"; c.Retry = retry.Policy{MaxRetries: -1} })
			req := &llm.Request{Messages: []llm.Message{llm.User("Read /a.txt.")}, Tools: testTools}
			resp, _, err := generate(t, m, stream, req)
			if err != nil {
				t.Fatal(err)
			}
			a := llm.Clone([]llm.Message{resp.Message})[0]
			tc.alter(&a)
			req.Messages = append(req.Messages, a, llm.ToolResult(a.ToolCalls[0], "hello", false))
			_, _, err = generate(t, m, stream, req)
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.Kind != llm.ErrKindBadRequest || ae.StatusCode != 400 || !strings.Contains(ae.Message, "Corrupted thought signature") {
				t.Errorf("%s stream=%v: err = %v", tc.name, stream, err)
			}
		}
	}
}

// TestHistoryFromAnotherProvider: a conversation started on another provider
// (its reasoning signed or encrypted) continues on Gemini mid-turn: none of
// the foreign reasoning reaches the wire, not even its readable text, and the
// foreign call gets the placeholder signature Gemini 3 documents for such
// histories (2.5 needs none).
func TestHistoryFromAnotherProvider(t *testing.T) {
	claude := llm.NewMessage(llm.RoleAssistant,
		llm.ReasoningPart("Claude thinks the calendar matters.", &llm.Reasoning{Provider: "anthropic", Signature: "RXFBQkNERUZH"}),
		llm.ReasoningPart("", &llm.Reasoning{Provider: "anthropic", Encrypted: "cmVkYWN0ZWQ="}),
		llm.TextPart("Checking the calendar."))
	claude.ToolCalls = []llm.ToolCall{call("toolu_01", "read_file", `{"path":"/cal.txt"}`)}
	gpt := llm.NewMessage(llm.RoleAssistant,
		llm.ReasoningPart("GPT summary of its thinking.", &llm.Reasoning{Provider: "openai", ID: "rs_1", Encrypted: "gAAAAABencrypted"}),
		llm.ReasoningPart("Unattributed thoughts.", nil))
	gpt.ToolCalls = []llm.ToolCall{call("call_abc", "ls", `{}`)}
	history := []llm.Message{
		llm.User("Plan the trip."), claude, llm.ToolResult(claude.ToolCalls[0], "May 4: free", false),
		gpt, llm.ToolResult(gpt.ToolCalls[0], "cal.txt", false),
	}
	for _, tc := range []struct {
		model   string
		wantSig string
	}{
		{"gemini-3-flash-preview", "skip_thought_signature_validator"},
		{"gemini-2.5-pro", ""},
	} {
		for _, stream := range []bool{false, true} {
			srv := geminitest.NewServer(t, geminitest.Sequence(geminitest.Text("Booked for May 4.")))
			m, _ := newTestModel(t, srv, func(c *Config) { c.Model = tc.model })
			resp, _, err := generate(t, m, stream, &llm.Request{Messages: history, Tools: testTools,
				Settings: llm.Settings{Reasoning: &llm.ReasoningConfig{Effort: llm.EffortMedium}}})
			if err != nil {
				t.Fatalf("%s stream=%v: %v", tc.model, stream, err)
			}
			if resp.Message.Content != "Booked for May 4." {
				t.Errorf("answer = %q", resp.Message.Content)
			}
			assertValid(t, srv)
			r := lastRequest(t, srv)
			raw := string(r.Raw)
			for _, foreign := range []string{"Claude thinks", "RXFBQkNERUZH", "cmVkYWN0ZWQ=", "GPT summary", "gAAAAABencrypted", "rs_1", "Unattributed", "toolu_01", "call_abc"} {
				if strings.Contains(raw, foreign) {
					t.Errorf("%s: %q reached the wire: %s", tc.model, foreign, raw)
				}
			}
			steps := r.Body.Contents
			if len(steps) != 5 || len(steps[1].Parts) != 2 || steps[1].Parts[0].TextOf() != "Checking the calendar." || steps[1].Parts[0].Thought {
				t.Fatalf("%s: contents = %s", tc.model, mustJSON(t, steps))
			}
			for _, i := range []int{1, 3} {
				fc := steps[i].Parts[len(steps[i].Parts)-1]
				if fc.FunctionCall == nil || fc.ThoughtSignature != tc.wantSig {
					t.Errorf("%s: call of step %d = %s, want signature %q", tc.model, i, mustJSON(t, fc), tc.wantSig)
				}
			}
			if tc.wantSig != "" && !strings.Contains(raw, `"thoughtSignature":"skip_thought_signature_validator"`) {
				t.Errorf("the placeholder is not written as documented: %s", raw)
			}
		}
	}
}
