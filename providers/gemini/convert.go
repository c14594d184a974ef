package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
)

// extra is what Message.Extra["gemini"] holds: the model turn's parts exactly
// as the API returned them (consecutive text pieces of a stream joined), so
// thought signatures, thought parts and function-call ids go back unchanged.
type extra struct {
	Parts []*genai.Part `json:"parts"`
}

// prepared is a request converted once and sent by every attempt.
type prepared struct {
	contents []*genai.Content
	cfg      genai.GenerateContentConfig
	ids      *idGen
}

// config returns a fresh shallow copy, since the SDK normalises the config it
// is given.
func (p *prepared) config() *genai.GenerateContentConfig {
	c := p.cfg
	c.HTTPOptions = &genai.HTTPOptions{Headers: http.Header{}, ExtrasRequestProvider: keepEmptyText}
	return &c
}

// keepEmptyText restores the empty text of parts that carry only a thought
// signature. Gemini streams such parts ({"text": "", "thoughtSignature": …})
// and wants them back as they came, but the SDK drops empty strings, which
// would leave the part without any data field.
func keepEmptyText(body map[string]any) map[string]any {
	for _, content := range objects(body["contents"]) {
		for _, part := range objects(content["parts"]) {
			if part == nil || part["thoughtSignature"] == nil {
				continue
			}
			hasData := false
			for _, k := range dataFields {
				if part[k] != nil {
					hasData = true
					break
				}
			}
			if !hasData {
				part["text"] = ""
			}
		}
	}
	return body
}

// objects reads a list of JSON objects from the SDK's request map, which
// holds them as []map[string]any or []any depending on the converter.
func objects(v any) []map[string]any {
	switch l := v.(type) {
	case []map[string]any:
		return l
	case []any:
		out := make([]map[string]any, 0, len(l))
		for _, e := range l {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

// dataFields are the members of the Part "data" oneof in the v1beta REST API.
var dataFields = []string{"text", "inlineData", "functionCall", "functionResponse", "fileData",
	"executableCode", "codeExecutionResult", "toolCall", "toolResponse"}

func badRequest(format string, args ...any) error {
	return &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: Provider, Message: fmt.Sprintf(format, args...)}
}

// prepare converts req into the SDK's contents and config. It rejects what
// the SDK would otherwise mangle silently (it drops the whole body when a
// value fails to encode), such as an invalid schema.
func (m *Model) prepare(req *llm.Request) (*prepared, error) {
	if req == nil {
		return nil, badRequest("nil request")
	}
	contents, system := toContents(req.Messages)
	if req.System != "" {
		system = append([]string{req.System}, system...)
	}
	p := &prepared{contents: contents, ids: newIDGen(req.Messages)}
	cfg := &p.cfg
	// The SDK would otherwise re-send a stream that broke (or ended without a
	// finish reason) on its own; retries are retry.Policy's job.
	cfg.AutomaticContinuation = genai.Ptr(false)
	if len(system) > 0 {
		cfg.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: strings.Join(system, "\n\n")}}}
	}

	s := req.Settings
	maxTokens := s.MaxTokens
	if maxTokens == 0 {
		maxTokens = m.cfg.MaxTokens
	}
	if maxTokens < 0 {
		return nil, badRequest("max tokens must not be negative, got %d", maxTokens)
	}
	cfg.MaxOutputTokens = int32(min(maxTokens, math.MaxInt32))
	var err error
	if cfg.Temperature, err = float32Ptr("temperature", s.Temperature); err != nil {
		return nil, err
	}
	if cfg.TopP, err = float32Ptr("top_p", s.TopP); err != nil {
		return nil, err
	}
	if len(s.Stop) > 0 {
		cfg.StopSequences = append([]string(nil), s.Stop...)
	}
	if m.cfg.IncludeThoughts || m.cfg.ThinkingBudget != nil {
		tc := &genai.ThinkingConfig{IncludeThoughts: m.cfg.IncludeThoughts}
		if b := m.cfg.ThinkingBudget; b != nil {
			tc.ThinkingBudget = genai.Ptr(int32(max(min(*b, math.MaxInt32), math.MinInt32)))
		}
		cfg.ThinkingConfig = tc
	}

	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, 0, len(req.Tools))
		for _, t := range req.Tools {
			if t.Name == "" {
				return nil, badRequest("a tool has an empty name")
			}
			d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if params := bytes.TrimSpace(t.Parameters); len(params) > 0 && !bytes.Equal(params, []byte("null")) {
				if !isJSONObject(params) {
					return nil, badRequest("the parameters of tool %q are not a JSON schema object", t.Name)
				}
				d.ParametersJsonSchema = json.RawMessage(params)
			}
			decls = append(decls, d)
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
		fc := &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto}
		switch req.ToolChoice.Mode {
		case llm.ToolChoiceAuto:
		case llm.ToolChoiceNone:
			fc.Mode = genai.FunctionCallingConfigModeNone
		case llm.ToolChoiceRequired:
			fc.Mode = genai.FunctionCallingConfigModeAny
		case llm.ToolChoiceTool:
			if req.ToolChoice.Name == "" {
				return nil, badRequest("tool choice %q needs a tool name", req.ToolChoice.Mode)
			}
			fc.Mode = genai.FunctionCallingConfigModeAny
			fc.AllowedFunctionNames = []string{req.ToolChoice.Name}
		default:
			return nil, badRequest("unknown tool choice mode %q", req.ToolChoice.Mode)
		}
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: fc}
	}

	if rs := req.Response; rs != nil {
		cfg.ResponseMIMEType = "application/json"
		if schema := bytes.TrimSpace(rs.Schema); len(schema) > 0 {
			if !isJSONObject(schema) {
				return nil, badRequest("the response schema %q is not a JSON schema object", rs.Name)
			}
			cfg.ResponseJsonSchema = json.RawMessage(schema)
		}
	}
	return p, nil
}

func float32Ptr(name string, v *float64) (*float32, error) {
	if v == nil {
		return nil, nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || math.Abs(*v) > math.MaxFloat32 {
		return nil, badRequest("%s must be a finite number, got %v", name, *v)
	}
	return genai.Ptr(float32(*v)), nil
}

func isJSONObject(b []byte) bool {
	var v map[string]any
	return json.Unmarshal(b, &v) == nil && v != nil
}

// contentBuilder appends contents, merging consecutive ones of the same role
// so the roles alternate as Gemini expects.
type contentBuilder struct {
	contents []*genai.Content
}

func (b *contentBuilder) add(role string, parts ...*genai.Part) {
	if len(parts) == 0 {
		return
	}
	if n := len(b.contents); n > 0 && b.contents[n-1].Role == role {
		b.contents[n-1].Parts = append(b.contents[n-1].Parts, parts...)
		return
	}
	b.contents = append(b.contents, &genai.Content{Role: role, Parts: parts})
}

// toContents converts a conversation. System messages found among the
// messages are returned separately for the system instruction. The tool
// results that follow an assistant turn become one user content holding a
// functionResponse for every call, in call order: a call without a result
// gets an error response, and a result that answers no call of that turn
// becomes user text, so the request always pairs calls and responses.
func toContents(msgs []llm.Message) (contents []*genai.Content, system []string) {
	var b contentBuilder
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case llm.RoleAssistant:
			parts, wireIDs := modelParts(m)
			b.add(genai.RoleModel, parts...)
			if len(m.ToolCalls) == 0 {
				continue
			}
			j := i + 1
			for j < len(msgs) && msgs[j].Role == llm.RoleTool {
				j++
			}
			b.add(genai.RoleUser, responseParts(m.ToolCalls, wireIDs, msgs[i+1:j])...)
			i = j - 1
		case llm.RoleTool:
			b.add(genai.RoleUser, orphanResult(m))
		default: // user, and any unknown role
			if m.Content != "" {
				b.add(genai.RoleUser, &genai.Part{Text: m.Content})
			}
		}
	}
	return b.contents, system
}

// modelParts returns the parts of an assistant turn and the wire id of each
// tool call ("" when the model gave none). The parts saved in Extra are used
// verbatim when they still match the message; if the message was edited, the
// parts are rebuilt from it and the saved signatures of the calls that are
// unchanged in name and position are kept.
func modelParts(m llm.Message) (parts []*genai.Part, wireIDs []string) {
	stored := storedParts(m)
	if stored != nil && consistent(stored, m) {
		for _, p := range stored {
			if p.FunctionCall != nil {
				wireIDs = append(wireIDs, p.FunctionCall.ID)
			}
		}
		return stored, wireIDs
	}
	var fcs []*genai.Part
	for _, p := range stored {
		if p.FunctionCall != nil {
			fcs = append(fcs, p)
		}
	}
	if m.Content != "" {
		parts = append(parts, &genai.Part{Text: m.Content})
	}
	for i, c := range m.ToolCalls {
		fc := &genai.FunctionCall{Name: c.Name, Args: decodeArgs(c.Args)}
		p := &genai.Part{FunctionCall: fc}
		if i < len(fcs) && fcs[i].FunctionCall.Name == c.Name {
			p.ThoughtSignature = fcs[i].ThoughtSignature
			if id := fcs[i].FunctionCall.ID; id != "" && id == c.ID {
				fc.ID = id
			}
		}
		wireIDs = append(wireIDs, fc.ID)
		parts = append(parts, p)
	}
	return parts, wireIDs
}

// storedParts decodes Extra["gemini"], nil when absent or unreadable.
func storedParts(m llm.Message) []*genai.Part {
	raw, ok := m.Extra[Provider]
	if !ok {
		return nil
	}
	var e extra
	if json.Unmarshal(raw, &e) != nil {
		return nil
	}
	parts := e.Parts[:0]
	for _, p := range e.Parts {
		// A model turn never holds function responses; drop any that a
		// corrupted Extra carries rather than send an invalid turn.
		if p != nil && p.FunctionResponse == nil {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return parts
}

// consistent reports whether the saved parts still say what the message
// says: the same answer text and the same calls in the same order.
func consistent(parts []*genai.Part, m llm.Message) bool {
	var text strings.Builder
	var calls []*genai.FunctionCall
	for _, p := range parts {
		switch {
		case p.FunctionCall != nil:
			calls = append(calls, p.FunctionCall)
		case !p.Thought:
			text.WriteString(p.Text)
		}
	}
	if text.String() != m.Content || len(calls) != len(m.ToolCalls) {
		return false
	}
	for i, fc := range calls {
		c := m.ToolCalls[i]
		if fc.Name != c.Name || (fc.ID != "" && fc.ID != c.ID) || !argsEqual(fc.Args, c.Args) {
			return false
		}
	}
	return true
}

func argsEqual(stored map[string]any, raw json.RawMessage) bool {
	got := decodeArgs(raw)
	if len(stored) == 0 || len(got) == 0 {
		return len(stored) == 0 && len(got) == 0
	}
	// Normalise the stored side through JSON too, so numbers compare alike.
	b, err := json.Marshal(stored)
	if err != nil {
		return false
	}
	return reflect.DeepEqual(decodeArgs(b), got)
}

// decodeArgs turns a call's raw JSON arguments into the object Gemini wants;
// anything but a JSON object becomes no arguments.
func decodeArgs(raw json.RawMessage) map[string]any {
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// responseParts answers every call of one assistant turn from results, in
// call order. Results are matched by call id, then (for results without an
// id) by name in order.
func responseParts(calls []llm.ToolCall, wireIDs []string, results []llm.Message) []*genai.Part {
	used := make([]bool, len(results))
	parts := make([]*genai.Part, 0, len(calls)+len(results))
	for i, c := range calls {
		k := -1
		for j, r := range results {
			if !used[j] && c.ID != "" && r.ToolCallID == c.ID {
				k = j
				break
			}
		}
		if k < 0 {
			for j, r := range results {
				if !used[j] && r.ToolCallID == "" && (r.Name == "" || r.Name == c.Name) {
					k = j
					break
				}
			}
		}
		var body map[string]any
		if k >= 0 {
			used[k] = true
			body = responseBody(results[k])
		} else {
			body = map[string]any{"error": "No result was recorded for this call."}
		}
		id := ""
		if i < len(wireIDs) {
			id = wireIDs[i]
		}
		parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: c.Name, Response: body}})
	}
	for j, r := range results {
		if !used[j] {
			parts = append(parts, orphanResult(r))
		}
	}
	return parts
}

func responseBody(r llm.Message) map[string]any {
	if r.IsError {
		return map[string]any{"error": r.Content}
	}
	return map[string]any{"output": r.Content}
}

// orphanResult is a tool result that answers no call of the turn before it;
// Gemini rejects unpaired function responses, so it is sent as text.
func orphanResult(r llm.Message) *genai.Part {
	who := r.Name
	if who == "" {
		who = "a tool"
	}
	if r.ToolCallID != "" {
		who += " (call " + r.ToolCallID + ")"
	}
	kind := "Result"
	if r.IsError {
		kind = "Error"
	}
	return &genai.Part{Text: fmt.Sprintf("[%s of %s]\n%s", kind, who, r.Content)}
}

// idGen names the function calls Gemini returns without an id: "call_<n>",
// numbered after the calls already in the conversation and skipping ids in
// use, so a conversation's ids are unique and the same on every attempt.
type idGen struct {
	used map[string]bool
	n    int
}

func newIDGen(msgs []llm.Message) *idGen {
	g := &idGen{used: map[string]bool{}}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			g.used[c.ID] = true
			g.n++
		}
		if m.ToolCallID != "" {
			g.used[m.ToolCallID] = true
		}
	}
	return g
}

func (g *idGen) clone() *idGen {
	c := &idGen{used: make(map[string]bool, len(g.used)), n: g.n}
	for k := range g.used {
		c.used[k] = true
	}
	return c
}

// take returns the model's id when it gave one, else a fresh one.
func (g *idGen) take(id string) string {
	if id != "" { // the model's own id is kept: its result must echo it
		g.used[id] = true
		return id
	}
	for {
		g.n++
		id = fmt.Sprintf("call_%d", g.n)
		if !g.used[id] {
			g.used[id] = true
			return id
		}
	}
}
