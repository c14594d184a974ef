package gemini

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
)

// A model turn comes back from Gemini as parts, some of which carry a thought
// signature that must go back on the very part it came on. In an
// llm.Message the turn becomes:
//   - a thought part: a reasoning part with its text and signature (the
//     pieces of a streamed thought, the last one signed, are one reasoning
//     part that records where they were cut);
//   - a signature on answer text: a reasoning part without text right after
//     that text part ("on": "text"), or, for a signature that came on an
//     empty text part of its own, a reasoning part marking that empty part
//     ("on": "empty");
//   - a signature on a function call: a reasoning part naming the call by
//     its tool-call id ("on": "call");
//   - the model's own function-call ids and any server-side parts (code
//     execution), which are not reasoning: Message.Extra["gemini"].

// sentinel is the value the Gemini API documents for a function call whose
// signature cannot be had (a history written by another model, or edited):
// it skips the signature check for that part. Its wire form is these bytes
// written in URL-safe base64.
const sentinel = "skip_thought_signature_validator"

var sentinelBytes, _ = base64.URLEncoding.DecodeString(sentinel)

// mark says which part a reasoning part's signature belongs to.
type mark struct {
	On     string `json:"on,omitempty"`      // "text", "empty" or "call"; "" for a thought
	CallID string `json:"call_id,omitempty"` // on "call": the tool call's id
	Name   string `json:"name,omitempty"`    // on "call": the function's name
	Index  int    `json:"index,omitempty"`   // on "call": its place among the calls
	// Split, on a thought, are the offsets in its text where the stream's
	// parts ended: a stream sends a thought in pieces and the signature on
	// the last, and the pieces go back as they came.
	Split []int `json:"split,omitempty"`
}

// extra is what Message.Extra["gemini"] holds: replay data that is not
// reasoning.
type extra struct {
	// CallIDs are the tool-call ids that Gemini itself gave (the others were
	// made up here and are not sent back).
	CallIDs []string `json:"call_ids,omitempty"`
	// Parts are server-side parts (code execution and the like), sent back
	// after the text.
	Parts []*genai.Part `json:"parts,omitempty"`
}

func signature(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(b)
}

func markPart(sig []byte, m mark) llm.Part {
	raw, _ := json.Marshal(m)
	return llm.ReasoningPart("", &llm.Reasoning{Provider: Provider, Signature: signature(sig), Extra: raw})
}

// fromWire turns a model turn's parts (calls[i] being the i-th function
// call) into the message's parts and its Extra (nil when none is needed).
func fromWire(wire []*genai.Part, calls []llm.ToolCall) ([]llm.Part, *extra) {
	var parts []llm.Part
	ex := &extra{}
	k := 0
	for _, p := range wire {
		switch {
		case p.FunctionCall != nil:
			if k < len(calls) {
				c := calls[k]
				if p.FunctionCall.ID != "" {
					ex.CallIDs = append(ex.CallIDs, c.ID)
				}
				if len(p.ThoughtSignature) > 0 {
					parts = append(parts, markPart(p.ThoughtSignature, mark{On: "call", CallID: c.ID, Name: c.Name, Index: k}))
				}
			}
			k++
		case textLike(p) && p.Thought:
			if n := len(parts); n > 0 && joinable(parts[n-1]) {
				prev := &parts[n-1]
				var mk mark
				_ = json.Unmarshal(prev.Reasoning.Extra, &mk)
				mk.Split = append(mk.Split, len(prev.Text))
				prev.Text += p.Text
				prev.Reasoning.Signature = signature(p.ThoughtSignature)
				prev.Reasoning.Extra, _ = json.Marshal(mk)
				continue
			}
			parts = append(parts, llm.ReasoningPart(p.Text, &llm.Reasoning{Provider: Provider, Signature: signature(p.ThoughtSignature)}))
		case textLike(p):
			if p.Text != "" {
				parts = append(parts, llm.TextPart(p.Text))
				if len(p.ThoughtSignature) > 0 {
					parts = append(parts, markPart(p.ThoughtSignature, mark{On: "text"}))
				}
			} else if len(p.ThoughtSignature) > 0 {
				parts = append(parts, markPart(p.ThoughtSignature, mark{On: "empty"}))
			}
		default:
			ex.Parts = append(ex.Parts, p)
		}
	}
	if len(ex.CallIDs) == 0 && len(ex.Parts) == 0 {
		ex = nil
	}
	return parts, ex
}

// joinable reports whether a later thought piece continues part: an
// unsigned Gemini thought.
func joinable(part llm.Part) bool {
	r := part.Reasoning
	if part.Type != llm.PartReasoning || r == nil || r.Provider != Provider || r.Signature != "" {
		return false
	}
	var mk mark
	return len(r.Extra) == 0 || json.Unmarshal(r.Extra, &mk) == nil && mk.On == ""
}

// thoughtPieces cuts a thought's text where the stream cut it; the whole text
// when the offsets do not fit it.
func thoughtPieces(text string, split []int) []string {
	var out []string
	last := 0
	for _, at := range split {
		if at < last || at > len(text) {
			return []string{text}
		}
		out = append(out, text[last:at])
		last = at
	}
	return append(out, text[last:])
}

// storedExtra decodes Extra["gemini"]; an absent or unreadable one is empty.
func storedExtra(m llm.Message) extra {
	var e extra
	if raw, ok := m.Extra[Provider]; ok && json.Unmarshal(raw, &e) != nil {
		return extra{}
	}
	kept := e.Parts[:0]
	for _, p := range e.Parts {
		// Only server-side parts belong here: text, calls and responses
		// found in a corrupted Extra are dropped rather than sent.
		if p != nil && !textLike(p) && p.FunctionCall == nil && p.FunctionResponse == nil {
			kept = append(kept, p)
		}
	}
	e.Parts = kept
	return e
}

// upgradeLegacy reads a message saved before reasoning parts existed, whose
// Extra["gemini"] held the turn's parts as Gemini sent them: when the message
// has no Gemini reasoning parts and those saved parts still match its text,
// they become its reasoning parts and Extra, so old checkpoints keep their
// signatures.
func upgradeLegacy(m llm.Message) llm.Message {
	raw, ok := m.Extra[Provider]
	if !ok || len(m.ReasoningFor(Provider)) > 0 || m.HasParts(llm.PartImage) {
		return m
	}
	var old struct {
		Parts []*genai.Part `json:"parts"`
	}
	if json.Unmarshal(raw, &old) != nil {
		return m
	}
	var wire []*genai.Part
	legacy := false
	for _, p := range old.Parts {
		if p == nil || p.FunctionResponse != nil {
			continue
		}
		if textLike(p) || p.FunctionCall != nil {
			legacy = true
		}
		wire = append(wire, p)
	}
	if !legacy {
		return m
	}
	parts, ex := fromWire(wire, m.ToolCalls)
	up := llm.NewMessage(m.Role, parts...)
	if up.Content != m.Content {
		return m
	}
	m.Parts, m.Extra = up.Parts, nil
	if ex != nil {
		b, _ := json.Marshal(ex)
		m.Extra = map[string]json.RawMessage{Provider: b}
	}
	return m
}

// decodeSignature reads a reasoning part's signature; nil when it is not
// base64.
func decodeSignature(s string) []byte {
	if s == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}

// modelParts returns the parts of an assistant turn for Gemini and the wire id
// of each tool call ("" when Gemini gave none). Gemini's own reasoning parts
// go back on the parts they came on; reasoning of any other provider (its
// readable text included) is left out. When the message's text no longer
// matches its text parts (a middleware rewrote Content), the text is sent as
// one part without its signature, and the thoughts and call signatures are
// kept.
func modelParts(m llm.Message) (parts []*genai.Part, wireIDs []string) {
	m = upgradeLegacy(m)
	ex := storedExtra(m)
	all := m.AllParts()
	var text strings.Builder
	for _, p := range all {
		if p.Type == llm.PartText {
			text.WriteString(p.Text)
		}
	}
	consistent := text.String() == m.Content
	textSent := false
	type callSig struct {
		key   string
		index int
		sig   []byte
	}
	var callSigs []callSig
	for _, p := range all {
		switch p.Type {
		case llm.PartText:
			if consistent {
				if p.Text != "" {
					parts = append(parts, &genai.Part{Text: p.Text})
				}
			} else if !textSent && m.Content != "" {
				parts = append(parts, &genai.Part{Text: m.Content})
				textSent = true
			}
		case llm.PartImage:
			parts = append(parts, imagePart(p.Image))
		case llm.PartReasoning:
			r := p.Reasoning
			if r == nil || r.Provider != Provider {
				continue
			}
			sig := decodeSignature(r.Signature)
			var mk mark
			if len(r.Extra) > 0 && json.Unmarshal(r.Extra, &mk) != nil {
				continue
			}
			switch mk.On {
			case "":
				pieces := thoughtPieces(p.Text, mk.Split)
				for i, piece := range pieces {
					wp := &genai.Part{Thought: true, Text: piece}
					if i == len(pieces)-1 {
						wp.ThoughtSignature = sig
					}
					if wp.Text != "" || len(wp.ThoughtSignature) > 0 {
						parts = append(parts, wp)
					}
				}
			case "text":
				if n := len(parts); consistent && n > 0 && len(sig) > 0 {
					last := parts[n-1]
					if textLike(last) && !last.Thought && last.Text != "" && len(last.ThoughtSignature) == 0 {
						last.ThoughtSignature = sig
					}
				}
			case "empty":
				if consistent && len(sig) > 0 {
					parts = append(parts, &genai.Part{ThoughtSignature: sig})
				}
			case "call":
				if len(sig) > 0 && mk.CallID != "" {
					callSigs = append(callSigs, callSig{mk.CallID + "\x00" + mk.Name, mk.Index, sig})
				}
			}
		}
	}
	if !consistent && !textSent && m.Content != "" {
		parts = append(parts, &genai.Part{Text: m.Content})
	}
	parts = append(parts, ex.Parts...)
	own := map[string]bool{}
	for _, id := range ex.CallIDs {
		own[id] = true
	}
	// A call takes the signature marked with its id, name and place; the
	// signatures left then go to calls of the same id and name that have
	// none (the calls were reordered).
	sigs := make([][]byte, len(m.ToolCalls))
	for pass := 0; pass < 2; pass++ {
		for i, c := range m.ToolCalls {
			for k, cs := range callSigs {
				if sigs[i] == nil && cs.sig != nil && cs.key == c.ID+"\x00"+c.Name && (pass == 1 || cs.index == i) {
					sigs[i], callSigs[k].sig = cs.sig, nil
				}
			}
		}
	}
	for i, c := range m.ToolCalls {
		fc := &genai.FunctionCall{Name: c.Name, Args: decodeArgs(c.Args)}
		if c.ID != "" && own[c.ID] {
			fc.ID = c.ID
		}
		wireIDs = append(wireIDs, fc.ID)
		parts = append(parts, &genai.Part{FunctionCall: fc, ThoughtSignature: sigs[i]})
	}
	return parts, wireIDs
}

// fillCallSignatures gives the first function call of every model turn that
// has none the documented placeholder signature, for models that refuse
// unsigned calls (Gemini 3 and later): a history written by another model,
// or whose signatures were lost, is then still accepted.
func fillCallSignatures(contents []*genai.Content) {
	for _, c := range contents {
		if c.Role != genai.RoleModel {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				if len(p.ThoughtSignature) == 0 {
					p.ThoughtSignature = sentinelBytes
				}
				break
			}
		}
	}
}
