package llm

import (
	"encoding/json"
	"testing"
)

func TestPlainTextKeepsItsCompactJSON(t *testing.T) {
	m := NewMessage(RoleUser, TextPart("a"), TextPart("b"))
	if m.Parts != nil || m.Content != "ab" {
		t.Fatalf("text-only parts should collapse to Content: %+v", m)
	}
	b, _ := json.Marshal(m)
	if string(b) != `{"role":"user","content":"ab"}` {
		t.Errorf("JSON = %s", b)
	}
}

func TestPartsKeepOrderAndText(t *testing.T) {
	m := NewMessage(RoleAssistant,
		ReasoningPart("think", &Reasoning{Provider: "anthropic", Signature: "s1"}),
		TextPart("answer "),
		ImagePart("image/png", []byte("x")),
		TextPart("more"),
		ReasoningPart("", &Reasoning{Provider: "gemini", Signature: "g"}))
	if m.Content != "answer more" {
		t.Errorf("Content = %q, want the text parts only", m.Content)
	}
	if m.ReasoningText() != "think" || !m.HasText() {
		t.Errorf("ReasoningText = %q", m.ReasoningText())
	}
	if got := m.ReasoningFor("anthropic"); len(got) != 1 || got[0].Reasoning.Signature != "s1" {
		t.Errorf("ReasoningFor(anthropic) = %+v", got)
	}
	if got := m.ReasoningFor("openai"); len(got) != 0 {
		t.Errorf("ReasoningFor(openai) = %+v", got)
	}
	plain := m.WithoutReasoning()
	if plain.HasParts(PartReasoning) || !plain.HasParts(PartImage) || plain.Content != "answer more" || len(plain.Parts) != 3 {
		t.Errorf("WithoutReasoning = %+v", plain)
	}
	if !m.HasParts(PartReasoning) || len(m.Parts) != 5 {
		t.Error("WithoutReasoning changed the original")
	}
	onlyThinking := NewMessage(RoleAssistant, ReasoningPart("hmm", nil)).WithoutReasoning()
	if onlyThinking.Parts != nil || onlyThinking.Content != "" || onlyThinking.HasText() {
		t.Errorf("a message of reasoning only has nothing left: %+v", onlyThinking)
	}
	if got := (Message{Content: "x"}).AllParts(); len(got) != 1 || got[0] != TextPart("x") {
		t.Errorf("AllParts of plain text = %+v", got)
	}
	if got := (Message{}).AllParts(); got != nil {
		t.Errorf("AllParts of an empty message = %+v", got)
	}
}

func TestUsageAddKeepsReasoningAndUnknown(t *testing.T) {
	u := Usage{InputTokens: 1, OutputTokens: 10, ReasoningTokens: 7}.Add(Usage{Unknown: true})
	if u.OutputTokens != 10 || u.ReasoningTokens != 7 || !u.Unknown {
		t.Errorf("sum = %+v", u)
	}
	if (Usage{}).Add(Usage{}).Unknown {
		t.Error("two measured usages make an unknown sum")
	}
}

func TestAccumulatorKeepsReasoningApart(t *testing.T) {
	var a Accumulator
	a.Add(StreamEvent{Type: EventReasoningDelta, Text: "let me see"})
	a.Add(StreamEvent{Type: EventTextDelta, Text: "42"})
	resp := a.Add(StreamEvent{Type: EventDone})
	if resp.Message.Content != "42" || resp.Message.ReasoningText() != "let me see" {
		t.Errorf("message = %+v", resp.Message)
	}
}
