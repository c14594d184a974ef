package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"google.golang.org/genai"

	"github.com/deepagents-go/deepagents/llm"
)

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
// would leave the part without any data field. It also writes the
// placeholder signature in the documented spelling.
func keepEmptyText(body map[string]any) map[string]any {
	sentinelStd := base64.StdEncoding.EncodeToString(sentinelBytes)
	for _, content := range objects(body["contents"]) {
		for _, part := range objects(content["parts"]) {
			if part == nil || part["thoughtSignature"] == nil {
				continue
			}
			switch sig := part["thoughtSignature"].(type) {
			case string:
				if sig == sentinelStd {
					part["thoughtSignature"] = sentinel
				}
			case []byte:
				if bytes.Equal(sig, sentinelBytes) {
					part["thoughtSignature"] = sentinel
				}
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
	f := familyOf(m.cfg.Model)
	contents, system := toContents(req.Messages, f.wireOptions())
	if req.System != "" {
		system = append([]string{req.System}, system...)
	}
	// The changing tail goes last, so the prefix Gemini caches implicitly
	// ends where it begins.
	if strings.TrimSpace(req.SystemTail) != "" {
		system = append(system, req.SystemTail)
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
	if _, err := m.CheckSettings(s); err != nil {
		return nil, &llm.APIError{Kind: llm.ErrKindBadRequest, Provider: Provider, Message: err.Error(), Err: err}
	}
	if tc, err := thinkingConfig(f, s.Reasoning); err != nil {
		return nil, badRequest("%v", err)
	} else if tc != nil || (s.Reasoning != nil && !s.Reasoning.IsZero()) {
		// Reasoning on a model that does not think is dropped (CheckSettings
		// reports it), the Config's thinking defaults with it.
		cfg.ThinkingConfig = tc
	} else if m.cfg.IncludeThoughts || m.cfg.ThinkingBudget != nil {
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

// wireOptions are the model-dependent choices of the conversion.
type wireOptions struct {
	// imagesInResponses: function responses may carry images (Gemini 3 and
	// later); otherwise a tool result's images follow in a user part.
	imagesInResponses bool
	// signCalls: unsigned function calls get the placeholder signature.
	signCalls bool
}

// toContents converts a conversation. System messages found among the
// messages are returned separately for the system instruction. The tool
// results that follow an assistant turn become one user content holding a
// functionResponse for every call, in call order: a call without a result
// gets an error response, and a result that answers no call of that turn
// becomes user text, so the request always pairs calls and responses.
func toContents(msgs []llm.Message, opt wireOptions) (contents []*genai.Content, system []string) {
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
			b.add(genai.RoleUser, responseParts(m.ToolCalls, wireIDs, msgs[i+1:j], opt)...)
			i = j - 1
		case llm.RoleTool:
			b.add(genai.RoleUser, orphanResult(m)...)
		default: // user, and any unknown role
			b.add(genai.RoleUser, userParts(m)...)
		}
	}
	if opt.signCalls {
		fillCallSignatures(b.contents)
	}
	return b.contents, system
}

// userParts converts a user message: its text and images, in order. Reasoning
// parts have no place in a user turn and are left out.
func userParts(m llm.Message) []*genai.Part {
	var parts []*genai.Part
	for _, p := range m.AllParts() {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				parts = append(parts, &genai.Part{Text: p.Text})
			}
		case llm.PartImage:
			parts = append(parts, imagePart(p.Image))
		}
	}
	return parts
}

// acceptedImages are the image types Gemini reads.
var acceptedImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true, "image/heic": true, "image/heif": true}

// responseImages are the image types a function response may carry.
var responseImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true}

func mediaType(img *llm.Image) string {
	if img == nil {
		return ""
	}
	t, _, _ := strings.Cut(img.MediaType, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// imageWirePart is an image as inlineData (bytes) or fileData (URL), or nil
// when Gemini cannot take it (no data, or a type it does not read).
func imageWirePart(img *llm.Image) *genai.Part {
	t := mediaType(img)
	if !acceptedImages[t] {
		return nil
	}
	switch {
	case len(img.Data) > 0:
		return &genai.Part{InlineData: &genai.Blob{MIMEType: t, Data: img.Data}}
	case img.URL != "":
		return &genai.Part{FileData: &genai.FileData{MIMEType: t, FileURI: img.URL}}
	}
	return nil
}

// imagePart is imageWirePart, or a note saying why the image was not sent,
// so the model knows one was there.
func imagePart(img *llm.Image) *genai.Part {
	if p := imageWirePart(img); p != nil {
		return p
	}
	t := mediaType(img)
	if t == "" {
		t = "unknown"
	}
	if img == nil || (len(img.Data) == 0 && img.URL == "") {
		return &genai.Part{Text: fmt.Sprintf("[An image (type %s) was left out: it has no data.]", t)}
	}
	return &genai.Part{Text: fmt.Sprintf("[An image of type %s was left out: Gemini reads PNG, JPEG, WebP, HEIC and HEIF images only.]", t)}
}

// responseParts answers every call of one assistant turn from results, in
// call order. Results are matched by call id, then (for results without an
// id) by name in order. Images of a result go into its function response
// when the model allows it, else into a labelled user part after all the
// responses.
func responseParts(calls []llm.ToolCall, wireIDs []string, results []llm.Message, opt wireOptions) []*genai.Part {
	used := make([]bool, len(results))
	parts := make([]*genai.Part, 0, len(calls)+len(results))
	var after []*genai.Part
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
		id := ""
		if i < len(wireIDs) {
			id = wireIDs[i]
		}
		fr := &genai.FunctionResponse{ID: id, Name: c.Name}
		if k >= 0 {
			used[k] = true
			fr.Response = responseBody(results[k])
			var rest []*genai.Part
			for _, p := range results[k].Parts {
				if p.Type != llm.PartImage {
					continue
				}
				if frp := responseImage(p.Image); opt.imagesInResponses && frp != nil {
					fr.Parts = append(fr.Parts, frp)
				} else {
					rest = append(rest, imagePart(p.Image))
				}
			}
			if len(rest) > 0 {
				label := fmt.Sprintf("[Images from the result of %s%s]", c.Name, callRef(c.ID))
				after = append(append(after, &genai.Part{Text: label}), rest...)
			}
		} else {
			fr.Response = map[string]any{"error": "No result was recorded for this call."}
		}
		parts = append(parts, &genai.Part{FunctionResponse: fr})
	}
	parts = append(parts, after...)
	for j, r := range results {
		if !used[j] {
			parts = append(parts, orphanResult(r)...)
		}
	}
	return parts
}

func callRef(id string) string {
	if id == "" {
		return ""
	}
	return " (call " + id + ")"
}

// responseImage is an image as a function response part, nil when a
// function response cannot hold it.
func responseImage(img *llm.Image) *genai.FunctionResponsePart {
	t := mediaType(img)
	if !responseImages[t] {
		return nil
	}
	switch {
	case len(img.Data) > 0:
		return &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: t, Data: img.Data}}
	case img.URL != "":
		return &genai.FunctionResponsePart{FileData: &genai.FunctionResponseFileData{MIMEType: t, FileURI: img.URL}}
	}
	return nil
}

func responseBody(r llm.Message) map[string]any {
	if r.IsError {
		return map[string]any{"error": r.Content}
	}
	return map[string]any{"output": r.Content}
}

// orphanResult is a tool result that answers no call of the turn before it;
// Gemini rejects unpaired function responses, so it is sent as text (and its
// images after it).
func orphanResult(r llm.Message) []*genai.Part {
	who := r.Name
	if who == "" {
		who = "a tool"
	}
	who += callRef(r.ToolCallID)
	kind := "Result"
	if r.IsError {
		kind = "Error"
	}
	parts := []*genai.Part{{Text: fmt.Sprintf("[%s of %s]\n%s", kind, who, r.Content)}}
	for _, p := range r.Parts {
		if p.Type == llm.PartImage {
			parts = append(parts, imagePart(p.Image))
		}
	}
	return parts
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
