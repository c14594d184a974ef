package llm

import (
	"encoding/json"
	"strings"
)

// PartType names what a content Part holds.
type PartType string

// The kinds of content a message can carry besides plain text.
const (
	PartText      PartType = "text"
	PartImage     PartType = "image"
	PartReasoning PartType = "reasoning"
)

// Part is one piece of a message's content. A message whose content is only
// text keeps it in Message.Content and has no parts; a message with an image
// or a model's reasoning lists all its content, text included, in
// Message.Parts, in order.
type Part struct {
	Type PartType `json:"type"`
	// Text is a text part's text, or a reasoning part's readable thinking
	// (or the provider's summary of it; empty when the provider hid it).
	Text string `json:"text,omitempty"`
	// Image is set on image parts.
	Image *Image `json:"image,omitempty"`
	// Reasoning is set on reasoning parts: what the provider needs back.
	Reasoning *Reasoning `json:"reasoning,omitempty"`
}

// Image is a picture a message carries, as bytes or as a URL.
type Image struct {
	// MediaType is the image's MIME type ("image/png", "image/jpeg", ...).
	MediaType string `json:"media_type"`
	// Data is the image itself (base64 in JSON). Empty when URL is set.
	Data []byte `json:"data,omitempty"`
	// URL points at the image instead of Data.
	URL string `json:"url,omitempty"`
}

// Reasoning is the opaque part of a model's thinking that its provider
// requires back, unchanged, on the next request (Anthropic's signed thinking,
// Gemini's thought signatures, OpenAI's encrypted reasoning items). It is
// only ever sent to the provider that produced it.
type Reasoning struct {
	// Provider is who produced it: "anthropic", "openai", "gemini", ...
	Provider string `json:"provider"`
	// Signature is the provider's proof that the thinking is unaltered.
	Signature string `json:"signature,omitempty"`
	// Encrypted is thinking the provider keeps unreadable (Anthropic's
	// redacted thinking, OpenAI's encrypted content).
	Encrypted string `json:"encrypted,omitempty"`
	// ID is the provider's id for the reasoning item, where it has one.
	ID string `json:"id,omitempty"`
	// Extra is any other provider data needed to send the part back.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Type: PartText, Text: text} }

// ImagePart returns an image part holding data of the given media type.
func ImagePart(mediaType string, data []byte) Part {
	return Part{Type: PartImage, Image: &Image{MediaType: mediaType, Data: data}}
}

// ReasoningPart returns a reasoning part: readable text (may be empty) and
// what the provider needs back (may be nil for reasoning that is only shown).
func ReasoningPart(text string, r *Reasoning) Part {
	return Part{Type: PartReasoning, Text: text, Reasoning: r}
}

// ReasoningThenText returns the parts of a reply that thought (reasoning, with
// nothing to send back) and then answered text (omitted when empty).
func ReasoningThenText(reasoning, text string) []Part {
	parts := []Part{ReasoningPart(reasoning, nil)}
	if text != "" {
		parts = append(parts, TextPart(text))
	}
	return parts
}

// NewMessage returns a message of role made of parts, with Content set to
// the text of its text parts. A message of text parts only is stored as plain
// Content, so it keeps its compact form.
func NewMessage(role Role, parts ...Part) Message {
	m := Message{Role: role}
	m.SetParts(parts)
	return m
}

// SetParts replaces the message's content with parts, keeping Content equal
// to the concatenated text parts.
func (m *Message) SetParts(parts []Part) {
	var b strings.Builder
	plain := true
	for _, p := range parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		} else {
			plain = false
		}
	}
	m.Content = b.String()
	if plain {
		m.Parts = nil
	} else {
		m.Parts = parts
	}
}

// AllParts returns the message's content as parts: Parts when it has them,
// else one text part for non-empty Content.
func (m Message) AllParts() []Part {
	if len(m.Parts) > 0 {
		return m.Parts
	}
	if m.Content == "" {
		return nil
	}
	return []Part{TextPart(m.Content)}
}

// ReasoningText returns the readable reasoning of the message's reasoning
// parts, joined by blank lines.
func (m Message) ReasoningText() string {
	var out []string
	for _, p := range m.Parts {
		if p.Type == PartReasoning && p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n\n")
}

// HasParts reports whether the message carries a part of type t.
func (m Message) HasParts(t PartType) bool {
	for _, p := range m.Parts {
		if p.Type == t {
			return true
		}
	}
	return false
}

// WithoutReasoning returns the message without its reasoning parts, for a
// history that moves to another provider or a context that must not see a
// model's thinking. The message is returned as is when it has none.
func (m Message) WithoutReasoning() Message {
	if !m.HasParts(PartReasoning) {
		return m
	}
	kept := make([]Part, 0, len(m.Parts))
	for _, p := range m.Parts {
		if p.Type != PartReasoning {
			kept = append(kept, p)
		}
	}
	m.SetParts(kept)
	return m
}

// ReasoningFor returns the opaque reasoning of provider in the message's
// parts, in order, for an adapter replaying its own model's turns.
func (m Message) ReasoningFor(provider string) []Part {
	var out []Part
	for _, p := range m.Parts {
		if p.Type == PartReasoning && p.Reasoning != nil && p.Reasoning.Provider == provider {
			out = append(out, p)
		}
	}
	return out
}

// ReasoningEffort is a provider-neutral amount of thinking.
type ReasoningEffort string

// Reasoning efforts. The zero value leaves thinking at the model's default.
const (
	EffortLow    ReasoningEffort = "low"
	EffortMedium ReasoningEffort = "medium"
	EffortHigh   ReasoningEffort = "high"
)

// ReasoningConfig asks a model to think before it answers: an effort, or a
// budget of thinking tokens (providers that take one map to the other).
type ReasoningConfig struct {
	Effort       ReasoningEffort `json:"effort,omitempty"`
	BudgetTokens int             `json:"budget_tokens,omitempty"`
}

// IsZero reports whether no reasoning was asked for.
func (r ReasoningConfig) IsZero() bool { return r.Effort == "" && r.BudgetTokens == 0 }

// Capabilities say what a model accepts beyond text and tools.
type Capabilities struct {
	// Images: the model reads image parts in user and tool messages.
	Images bool
	// Reasoning: the model honours Settings.Reasoning.
	Reasoning bool
}

// CapabilityReporter is implemented by models that know their capabilities.
type CapabilityReporter interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns m's capabilities, or none for a model that does
// not report them.
func CapabilitiesOf(m Model) Capabilities {
	if c, ok := m.(CapabilityReporter); ok {
		return c.Capabilities()
	}
	return Capabilities{}
}

// SettingsChecker is implemented by models that can tell before any call
// which settings they refuse. CheckSettings returns an error for a
// combination the provider rejects, and the names of settings it will drop
// (each dropped setting is reported as a warning, never silently).
type SettingsChecker interface {
	CheckSettings(s Settings) (dropped []string, err error)
}
