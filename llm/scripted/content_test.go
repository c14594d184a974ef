package scripted

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
)

// A step's reasoning becomes a signed reasoning part ahead of the text, and
// is counted as reasoning tokens inside the output tokens.
func TestStepReasoning(t *testing.T) {
	var s Script
	if err := json.Unmarshal([]byte(`{"parent":[{"reasoning":"Let me think.","content":"Answer."},{"reasoning":"Only thinking."}]}`), &s); err != nil {
		t.Fatal(err)
	}
	m := New(s, Options{})
	req := &llm.Request{Messages: []llm.Message{llm.User("q")}}
	resp, err := m.Generate(ctxFor("parent", "", ""), req)
	if err != nil {
		t.Fatal(err)
	}
	msg := resp.Message
	if msg.Content != "Answer." || len(msg.Parts) != 2 || msg.Parts[0].Type != llm.PartReasoning || msg.Parts[1].Text != "Answer." {
		t.Fatalf("message %+v", msg)
	}
	r := msg.Parts[0].Reasoning
	if msg.Parts[0].Text != "Let me think." || r == nil || r.Provider != "scripted" || !strings.HasPrefix(r.Signature, "sig_") || len(r.Signature) != 20 {
		t.Errorf("reasoning part %+v %+v", msg.Parts[0], r)
	}
	if Signature("Let me think.") != r.Signature || Signature("Let me think!") == r.Signature {
		t.Error("the signature must depend on the text alone, and on every byte of it")
	}
	want := tokens.Count(tokens.O200k, "Let me think.")
	if resp.Usage.ReasoningTokens != want || resp.Usage.OutputTokens <= want {
		t.Errorf("usage %+v: want %d reasoning tokens within the output", resp.Usage, want)
	}
	// A reply of reasoning alone has no text.
	req.Messages = append(req.Messages, msg, llm.User("more"))
	resp2, err := m.Generate(ctxFor("parent", "", ""), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp2.Message.Content != "" || len(resp2.Message.Parts) != 1 {
		t.Errorf("reasoning-only reply %+v", resp2.Message)
	}
}

// Like the real services, the model refuses a history whose reasoning it
// signed has been altered or stripped of its signature; another provider's
// reasoning is not its business.
func TestAlteredReasoningIsRefused(t *testing.T) {
	signed := llm.NewMessage(llm.RoleAssistant, llm.ReasoningPart("plan", &llm.Reasoning{Provider: "scripted", Signature: Signature("plan")}), llm.TextPart("ok"))
	altered := llm.NewMessage(llm.RoleAssistant, llm.ReasoningPart("a different plan", &llm.Reasoning{Provider: "scripted", Signature: Signature("plan")}), llm.TextPart("ok"))
	unsigned := llm.NewMessage(llm.RoleAssistant, llm.ReasoningPart("plan", &llm.Reasoning{Provider: "scripted"}), llm.TextPart("ok"))
	foreign := llm.NewMessage(llm.RoleAssistant, llm.ReasoningPart("plan", &llm.Reasoning{Provider: "anthropic", Signature: "xyz"}), llm.TextPart("ok"))
	cases := []struct {
		name    string
		msg     llm.Message
		wantErr string
	}{
		{"intact", signed, ""},
		{"altered", altered, "scripted model: the reasoning in message 1 was altered (its signature does not match its text)"},
		{"signature removed", unsigned, "scripted model: the reasoning in message 1 was altered (its signature does not match its text)"},
		{"another provider's", foreign, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(Script{"parent": {Steps: []Step{{Content: "next"}}}}, Options{})
			_, err := m.Generate(ctxFor("parent", "", ""), &llm.Request{Messages: []llm.Message{llm.User("q"), c.msg, llm.User("go on")}})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.wantErr {
				t.Errorf("error %q, want %q", got, c.wantErr)
			}
		})
	}
}

func TestStepRefusalAndCapabilities(t *testing.T) {
	m := New(Script{"parent": {Steps: []Step{{Refusal: "No.", Usage: &llm.Usage{Unknown: true}}}}}, Options{})
	resp, err := m.Generate(ctxFor("parent", "", ""), &llm.Request{Messages: []llm.Message{llm.User("q")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != llm.StopRefusal || resp.Refusal != "No." || resp.Usage != (llm.Usage{Unknown: true}) {
		t.Errorf("response %+v", resp)
	}
	if c := llm.CapabilitiesOf(m); !c.Images || !c.Reasoning {
		t.Errorf("capabilities %+v", c)
	}
	if c := llm.CapabilitiesOf(New(nil, Options{NoImages: true})); c.Images {
		t.Errorf("NoImages: capabilities %+v", c)
	}
}

func TestCheckSettings(t *testing.T) {
	effort := &llm.ReasoningConfig{Effort: llm.EffortLow}
	cases := []struct {
		name string
		opts Options
		s    llm.Settings
		want []string
	}{
		{"takes reasoning", Options{}, llm.Settings{Reasoning: effort}, nil},
		{"drops reasoning", Options{NoReasoning: true}, llm.Settings{Reasoning: effort}, []string{"reasoning"}},
		{"nothing to drop", Options{NoReasoning: true}, llm.Settings{}, nil},
	}
	for _, c := range cases {
		m := New(nil, c.opts)
		got, err := m.CheckSettings(c.s)
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: dropped %v (err %v), want %v", c.name, got, err, c.want)
		}
		if m.Capabilities().Reasoning == c.opts.NoReasoning {
			t.Errorf("%s: capabilities %+v", c.name, m.Capabilities())
		}
	}
}

// Streaming sends the reasoning as reasoning deltas before the text, and
// the final response keeps the signed part.
func TestStreamReasoning(t *testing.T) {
	m := New(Script{"parent": {Steps: []Step{{Reasoning: "a fairly long line of thought", Content: "short answer"}}}}, Options{})
	var reasoning, text strings.Builder
	var done *llm.Response
	for ev, err := range m.Stream(ctxFor("parent", "", ""), &llm.Request{Messages: []llm.Message{llm.User("q")}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case llm.EventReasoningDelta:
			if text.Len() > 0 {
				t.Error("reasoning after text")
			}
			reasoning.WriteString(ev.Text)
		case llm.EventTextDelta:
			text.WriteString(ev.Text)
		case llm.EventDone:
			done = ev.Response
		}
	}
	if reasoning.String() != "a fairly long line of thought" || text.String() != "short answer" {
		t.Errorf("deltas %q / %q", reasoning.String(), text.String())
	}
	if done == nil || len(done.Message.ReasoningFor(Provider)) != 1 {
		t.Errorf("final response %+v", done)
	}
}
