package geminitest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/deepagents-go/deepagents/tool"
)

// DecodeRequest parses a generateContent body. Top-level fields the wire
// format does not define are collected in Other (Validate rejects them, as
// the real API does).
func DecodeRequest(raw []byte) (*GenerateContentRequest, error) {
	var body GenerateContentRequest
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("invalid JSON payload: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("invalid JSON payload: %w", err)
	}
	for k, v := range all {
		switch k {
		case "contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings", "cachedContent":
		default:
			if body.Other == nil {
				body.Other = map[string]json.RawMessage{}
			}
			body.Other[k] = v
		}
	}
	return &body, nil
}

var functionName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`)

// Validate checks a request the way the API would reject it, and more
// strictly where the provider should always be tidy:
//   - contents are present, every turn is "user" or "model", roles
//     alternate, and the conversation starts with a user turn;
//   - the system prompt travels only in systemInstruction;
//   - every part has exactly one data field and a valid base64 signature;
//   - function calls appear only in model turns, and every model turn with
//     calls is followed by a user turn holding exactly one functionResponse
//     per call, with the same names in the same order (and the same id when
//     the call had one); no functionResponse appears anywhere else;
//   - function declarations have valid, unique names and a parameter schema
//     that compiles and describes an object;
//   - the tool config and generation config are consistent.
//
// It returns all problems found, joined.
func Validate(body *GenerateContentRequest) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for k := range body.Other {
		bad("Invalid JSON payload received. Unknown name %q", k)
	}
	if si := body.SystemInstruction; si != nil {
		if si.Role != "" && si.Role != "user" {
			bad("systemInstruction.role must be empty or \"user\", got %q", si.Role)
		}
		if len(si.Parts) == 0 {
			bad("systemInstruction has no parts")
		}
		for j, p := range si.Parts {
			if p.Text == nil || dataFields(p) != 1 {
				bad("systemInstruction.parts[%d] must be a text part", j)
			}
		}
	}
	if len(body.Contents) == 0 {
		bad("contents is not specified")
	}
	for i, c := range body.Contents {
		switch c.Role {
		case "user", "model":
		case "system":
			bad("contents[%d].role is \"system\": the system prompt belongs in systemInstruction", i)
		default:
			bad("contents[%d].role must be \"user\" or \"model\", got %q", i, c.Role)
		}
		if i == 0 && c.Role != "user" {
			bad("contents[0] must be a user turn, got %q", c.Role)
		}
		if i > 0 && c.Role == body.Contents[i-1].Role {
			bad("contents[%d] and contents[%d] are both %q turns: roles must alternate", i-1, i, c.Role)
		}
		if len(c.Parts) == 0 {
			bad("contents[%d].parts must not be empty", i)
		}
		for j, p := range c.Parts {
			where := fmt.Sprintf("contents[%d].parts[%d]", i, j)
			if n := dataFields(p); n != 1 {
				bad("%s must have exactly one data field, has %d", where, n)
			}
			if p.ThoughtSignature != "" {
				if _, err := DecodeSignature(p.ThoughtSignature); err != nil {
					bad("%s.thoughtSignature is not valid base64", where)
				}
			}
			if p.InlineData != nil {
				if err := checkBlob(*p.InlineData, inputImages); err != nil {
					bad("%s.inlineData: %v", where, err)
				}
			}
			if p.FileData != nil {
				if err := checkFileData(*p.FileData, inputImages); err != nil {
					bad("%s.fileData: %v", where, err)
				}
			}
			if p.FunctionCall != nil {
				if c.Role != "model" {
					bad("%s: a functionCall in a %q turn", where, c.Role)
				}
				if p.FunctionCall.Name == "" {
					bad("%s.functionCall.name is empty", where)
				}
			}
			if p.FunctionResponse != nil {
				if c.Role != "user" {
					bad("%s: a functionResponse in a %q turn", where, c.Role)
				}
				if p.FunctionResponse.Name == "" {
					bad("%s.functionResponse.name is empty", where)
				}
				if p.FunctionResponse.Response == nil {
					bad("%s.functionResponse.response is missing", where)
				}
				for k, fp := range p.FunctionResponse.Parts {
					w := fmt.Sprintf("%s.functionResponse.parts[%d]", where, k)
					switch {
					case (fp.InlineData == nil) == (fp.FileData == nil):
						bad("%s must have exactly one of inlineData and fileData", w)
					case fp.InlineData != nil:
						if err := checkBlob(*fp.InlineData, responseImages); err != nil {
							bad("%s.inlineData: %v", w, err)
						}
					default:
						if err := checkFileData(*fp.FileData, responseImages); err != nil {
							bad("%s.fileData: %v", w, err)
						}
					}
				}
			}
			if p.Thought && c.Role != "model" {
				bad("%s: a thought part in a %q turn", where, c.Role)
			}
		}
	}
	errs = append(errs, checkPairs(body.Contents)...)

	declared := map[string]bool{}
	for ti, t := range body.Tools {
		for di, d := range t.FunctionDeclarations {
			where := fmt.Sprintf("tools[%d].functionDeclarations[%d]", ti, di)
			if !functionName.MatchString(d.Name) {
				bad("%s.name %q is not a valid function name", where, d.Name)
			}
			if declared[d.Name] {
				bad("%s: function %q is declared twice", where, d.Name)
			}
			declared[d.Name] = true
			if len(d.Parameters) > 0 && len(d.ParametersJSONSchema) > 0 {
				bad("%s: parameters and parametersJsonSchema are mutually exclusive", where)
			}
			if len(d.ParametersJSONSchema) > 0 {
				if err := checkObjectSchema(d.ParametersJSONSchema); err != nil {
					bad("%s.parametersJsonSchema: %v", where, err)
				}
			}
		}
	}
	if tc := body.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		fc := tc.FunctionCallingConfig
		if len(body.Tools) == 0 {
			bad("toolConfig is set but no tools are declared")
		}
		if !slices.Contains([]string{"", "MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"}, fc.Mode) {
			bad("toolConfig.functionCallingConfig.mode %q is not a mode", fc.Mode)
		}
		if len(fc.AllowedFunctionNames) > 0 && fc.Mode != "ANY" && fc.Mode != "VALIDATED" {
			bad("allowedFunctionNames may only be set with mode ANY, got %q", fc.Mode)
		}
		for _, n := range fc.AllowedFunctionNames {
			if !declared[n] {
				bad("allowedFunctionNames names %q, which is not declared", n)
			}
		}
	}
	if g := body.GenerationConfig; g != nil {
		if len(g.ResponseSchema) > 0 && len(g.ResponseJSONSchema) > 0 {
			bad("generationConfig: responseSchema and responseJsonSchema are mutually exclusive")
		}
		if len(g.ResponseJSONSchema) > 0 {
			if g.ResponseMIMEType != "application/json" {
				bad("generationConfig.responseJsonSchema needs responseMimeType application/json, got %q", g.ResponseMIMEType)
			}
			if _, err := tool.CompileSchema(g.ResponseJSONSchema); err != nil {
				bad("generationConfig.responseJsonSchema: %v", err)
			}
		}
		if t := g.Temperature; t != nil && (*t < 0 || *t > 2) {
			bad("generationConfig.temperature %v is outside [0, 2]", *t)
		}
		if p := g.TopP; p != nil && (*p < 0 || *p > 1) {
			bad("generationConfig.topP %v is outside [0, 1]", *p)
		}
		if g.MaxOutputTokens < 0 {
			bad("generationConfig.maxOutputTokens is negative")
		}
		if tc := g.ThinkingConfig; tc != nil {
			if tc.ThinkingBudget != nil && tc.ThinkingLevel != "" {
				bad("generationConfig.thinkingConfig: thinking_budget and thinking_level are not supported together")
			}
			if tc.ThinkingLevel != "" && !slices.Contains([]string{"MINIMAL", "LOW", "MEDIUM", "HIGH"}, tc.ThinkingLevel) {
				bad("generationConfig.thinkingConfig.thinkingLevel %q is not a level", tc.ThinkingLevel)
			}
			if b := tc.ThinkingBudget; b != nil && *b < -1 {
				bad("generationConfig.thinkingConfig.thinkingBudget %d is negative", *b)
			}
		}
	}
	return errors.Join(errs...)
}

// dataFields counts the members of the Part "data" oneof that are set.
func dataFields(p Part) int {
	n := 0
	for _, set := range []bool{p.Text != nil, p.FunctionCall != nil, p.FunctionResponse != nil,
		p.InlineData != nil, p.FileData != nil, len(p.ExecutableCode) > 0, len(p.CodeResult) > 0} {
		if set {
			n++
		}
	}
	return n
}

// checkPairs checks that function calls and responses pair up turn by turn.
func checkPairs(contents []Content) []error {
	var errs []error
	calls := func(c Content) []FunctionCall {
		var out []FunctionCall
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				out = append(out, *p.FunctionCall)
			}
		}
		return out
	}
	responses := func(c Content) []FunctionResponse {
		var out []FunctionResponse
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out = append(out, *p.FunctionResponse)
			}
		}
		return out
	}
	for i, c := range contents {
		if rs := responses(c); len(rs) > 0 {
			if i == 0 || len(calls(contents[i-1])) == 0 {
				errs = append(errs, fmt.Errorf("contents[%d] holds function responses but does not follow a model turn with function calls", i))
			}
		}
		cs := calls(c)
		if len(cs) == 0 {
			continue
		}
		if i+1 >= len(contents) {
			errs = append(errs, fmt.Errorf("contents[%d] has function calls but no function response turn follows", i))
			continue
		}
		rs := responses(contents[i+1])
		if len(rs) != len(cs) {
			errs = append(errs, fmt.Errorf("contents[%d] has %d function calls but contents[%d] has %d function responses: "+
				"the number of function response parts must equal the number of function call parts", i, len(cs), i+1, len(rs)))
			continue
		}
		for k := range cs {
			if rs[k].Name != cs[k].Name {
				errs = append(errs, fmt.Errorf("contents[%d] function response %d is for %q but call %d of contents[%d] is %q",
					i+1, k, rs[k].Name, k, i, cs[k].Name))
			}
			if cs[k].ID != "" && rs[k].ID != cs[k].ID {
				errs = append(errs, fmt.Errorf("contents[%d] function response %d has id %q but its call has id %q", i+1, k, rs[k].ID, cs[k].ID))
			}
		}
	}
	return errs
}

func checkObjectSchema(raw json.RawMessage) error {
	if _, err := tool.CompileSchema(raw); err != nil {
		return err
	}
	var top struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return err
	}
	if !bytes.Equal(bytes.TrimSpace(top.Type), []byte(`"object"`)) {
		return fmt.Errorf("the schema must describe an object (type %q)", string(top.Type))
	}
	return nil
}

// DecodeSignature reads a thoughtSignature the way the API reads bytes
// fields: standard or URL-safe base64.
func DecodeSignature(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.URLEncoding.DecodeString(s)
	}
	return b, err
}

// inputImages are the image types a user or model part may hold;
// responseImages those a function response may hold.
var (
	inputImages    = []string{"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}
	responseImages = []string{"image/png", "image/jpeg", "image/webp"}
)

// checkBlob checks inline media: a MIME type the API takes for images, and
// non-empty standard base64 data. Non-image media (audio, PDF, ...) only
// need a type of the form "kind/sub".
func checkBlob(b Blob, images []string) error {
	if err := checkMIME(b.MIMEType, images); err != nil {
		return err
	}
	if b.Data == "" {
		return errors.New("data is empty")
	}
	if _, err := base64.StdEncoding.DecodeString(b.Data); err != nil {
		return fmt.Errorf("data is not valid base64: %v", err)
	}
	return nil
}

func checkFileData(f FileData, images []string) error {
	if f.FileURI == "" {
		return errors.New("fileUri is empty")
	}
	return checkMIME(f.MIMEType, images)
}

func checkMIME(t string, images []string) error {
	kind, sub, ok := strings.Cut(t, "/")
	switch {
	case !ok || kind == "" || sub == "":
		return fmt.Errorf("mimeType %q is not a MIME type", t)
	case kind == "image" && !slices.Contains(images, t):
		return fmt.Errorf("unsupported MIME type: %s", t)
	}
	return nil
}
