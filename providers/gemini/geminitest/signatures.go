package geminitest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Thought signatures, as the real API treats them:
//   - every signature sent back must be one this server issued, on a part
//     like the one it was issued on (the same function name, the same text
//     or thought text); anything else is "Corrupted thought signature.";
//   - on Gemini 3 and later models, the first function call of every model
//     step of the current turn (the turn starts at the last user content
//     that holds no function response) must carry a signature, or the
//     request fails with the API's "missing a thought_signature" error;
//   - skipSignature, the placeholder the API documents for calls that come
//     from elsewhere, is accepted in place of any signature.

var skipSignature, _ = base64.URLEncoding.DecodeString("skip_thought_signature_validator")

// fingerprint names what a signature is bound to.
func fingerprint(p Part) string {
	switch {
	case p.FunctionCall != nil:
		return "call:" + p.FunctionCall.Name
	case p.Thought:
		return "thought:" + p.TextOf()
	case p.Text != nil:
		return "text:" + p.TextOf()
	}
	return "part"
}

// issue records the signatures of a response (or stream chunk) sent.
func (s *Server) issue(resp GenerateContentResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range resp.Candidates {
		if c.Content == nil {
			continue
		}
		for _, p := range c.Content.Parts {
			if p.ThoughtSignature == "" {
				continue
			}
			if s.issued == nil {
				s.issued = map[string]string{}
			}
			s.issued[p.ThoughtSignature] = fingerprint(p)
		}
	}
}

// RequiresSignatures reports whether the request's model refuses function
// calls without a thought signature in the current turn, as Gemini 3 and
// later do (they always think); Gemini 2.5 accepts them.
func (r *Request) RequiresSignatures() bool {
	rest, ok := strings.CutPrefix(r.Model, "gemini-")
	if !ok {
		return false
	}
	major, _, _ := strings.Cut(rest, ".")
	major, _, _ = strings.Cut(major, "-")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 3
}

// checkSignatures applies the signature rules above, and refuses images in
// function responses for models before Gemini 3, which do not take them.
func (s *Server) checkSignatures(r *Request) error {
	var errs []error
	if !r.RequiresSignatures() {
		for i, c := range r.Body.Contents {
			for j, p := range c.Parts {
				if p.FunctionResponse != nil && len(p.FunctionResponse.Parts) > 0 {
					errs = append(errs, fmt.Errorf("contents[%d].parts[%d]: multimodal function responses are not supported by model %s", i, j, r.Model))
				}
			}
		}
	}
	s.mu.Lock()
	for i, c := range r.Body.Contents {
		for j, p := range c.Parts {
			if p.ThoughtSignature == "" {
				continue
			}
			b, err := DecodeSignature(p.ThoughtSignature)
			if err != nil || bytes.Equal(b, skipSignature) {
				continue // Validate reports bad base64
			}
			fp, ok := s.issued[base64.StdEncoding.EncodeToString(b)]
			if !ok || c.Role != "model" || fp != fingerprint(p) {
				errs = append(errs, fmt.Errorf("Corrupted thought signature. Additional data, contents[%d].parts[%d]", i, j))
			}
		}
	}
	s.mu.Unlock()
	if !r.RequiresSignatures() {
		return errors.Join(errs...)
	}
	start := 0
	for i, c := range r.Body.Contents {
		if c.Role == "user" && len(responses(c)) == 0 {
			start = i
		}
	}
	for i := start; i < len(r.Body.Contents); i++ {
		c := r.Body.Contents[i]
		if c.Role != "model" {
			continue
		}
		for j, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			if p.ThoughtSignature == "" {
				errs = append(errs, fmt.Errorf("Function call is missing a thought_signature in functionCall parts. "+
					"This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. "+
					"Additional data, function call `default_api:%s` , position %d. "+
					"Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, j+1))
			}
			break
		}
	}
	return errors.Join(errs...)
}

// responses returns the function responses of a content.
func responses(c Content) []FunctionResponse {
	var out []FunctionResponse
	for _, p := range c.Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}
