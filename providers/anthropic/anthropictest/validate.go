package anthropictest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

var (
	toolNameRE  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
	toolUseIDRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// MaxCacheBreakpoints is the API's limit on cache_control blocks.
const MaxCacheBreakpoints = 4

// Validate checks a request against the rules the real Messages API
// enforces (and a few it only implies), returning the first violation in
// the API's style ("messages.2.content.0: ..."). The server answers an
// invalid request with 400 invalid_request_error and this message.
//
// Rules: model and max_tokens present; no temperature/top_p/top_k (removed
// in API version 2026-10-21); at least one message, the first from the
// user, roles strictly alternating; no empty turns or whitespace-only text;
// tool_use only from the assistant, with valid ids unique in the request
// and object inputs; every tool_result in the user turn right after the
// assistant turn holding its tool_use, before any other block of that turn,
// and every tool_use of a turn that is followed by a user turn answered
// exactly once there; thinking blocks signed, only in assistant turns, not
// cached; tools uniquely and validly named with an object input_schema;
// tool_choice of a known type naming a defined tool, and not forcing tool
// use while thinking is enabled; with thinking of type "enabled", an
// assistant turn in progress (a tool loop) that starts with a thinking
// block; image blocks with a base64 source of a supported media type whose
// data decodes and matches it, or an http(s) URL; at most four ephemeral
// cache breakpoints; a final assistant turn that does not end in whitespace.
func Validate(r *MessagesRequest) error {
	if r.Model == "" {
		return fmt.Errorf("model: Field required")
	}
	if r.MaxTokens == nil {
		return fmt.Errorf("max_tokens: Field required")
	}
	if *r.MaxTokens < 0 {
		return fmt.Errorf("max_tokens: must be at least 0")
	}
	for name, v := range map[string]json.RawMessage{"temperature": r.Temperature, "top_p": r.TopP, "top_k": r.TopK} {
		if v != nil {
			return fmt.Errorf("%s: Extra inputs are not permitted", name)
		}
	}
	if len(r.Messages) == 0 {
		return fmt.Errorf("messages: at least one message is required")
	}

	breakpoints := 0
	checkCache := func(where string, cc *CacheControl) error {
		if cc == nil {
			return nil
		}
		breakpoints++
		if cc.Type != "ephemeral" {
			return fmt.Errorf("%s.cache_control.type: Input should be 'ephemeral'", where)
		}
		if cc.TTL != "" && cc.TTL != "5m" && cc.TTL != "1h" {
			return fmt.Errorf("%s.cache_control.ttl: Input should be '5m' or '1h'", where)
		}
		return nil
	}

	for i, b := range r.System {
		where := fmt.Sprintf("system.%d", i)
		if b.Type != "text" {
			return fmt.Errorf("%s.type: system blocks must be text", where)
		}
		if strings.TrimSpace(b.Text) == "" {
			return fmt.Errorf("%s: text content blocks must contain non-whitespace text", where)
		}
		if err := checkCache(where, b.CacheControl); err != nil {
			return err
		}
	}

	names := map[string]bool{}
	for i, t := range r.Tools {
		where := fmt.Sprintf("tools.%d", i)
		if !toolNameRE.MatchString(t.Name) {
			return fmt.Errorf("%s.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", where)
		}
		if names[t.Name] {
			return fmt.Errorf("tools: Tool names must be unique (%q)", t.Name)
		}
		names[t.Name] = true
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
			return fmt.Errorf("%s.input_schema: Input should be a valid dictionary", where)
		}
		if schema["type"] != "object" {
			return fmt.Errorf("%s.input_schema.type: Input should be 'object'", where)
		}
		if err := checkCache(where, t.CacheControl); err != nil {
			return err
		}
	}

	thinking := r.ThinkingType() == "enabled" || r.ThinkingType() == "adaptive"
	if tc := r.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if !names[tc.Name] {
				return fmt.Errorf("tool_choice.name: tool %q is not defined in tools", tc.Name)
			}
		default:
			return fmt.Errorf("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
		}
		if thinking && (tc.Type == "any" || tc.Type == "tool") {
			return fmt.Errorf("Thinking may not be enabled when tool_choice forces tool use.")
		}
	}

	used := map[string]bool{}
	var pending []string // tool_use ids of the previous assistant turn
	for i, m := range r.Messages {
		where := fmt.Sprintf("messages.%d", i)
		switch {
		case m.Role != "user" && m.Role != "assistant":
			return fmt.Errorf("%s.role: Input should be 'user' or 'assistant'", where)
		case i == 0 && m.Role != "user":
			return fmt.Errorf("messages: first message must use the \"user\" role")
		case i > 0 && m.Role == r.Messages[i-1].Role:
			return fmt.Errorf("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", m.Role)
		}
		if len(m.Content) == 0 {
			return fmt.Errorf("%s: all messages must have non-empty content", where)
		}
		if m.Role == "user" {
			answered := map[string]bool{}
			seenOther := false
			for j, b := range m.Content {
				bw := fmt.Sprintf("%s.content.%d", where, j)
				switch b.Type {
				case "tool_result":
					if seenOther {
						return fmt.Errorf("%s: tool_result blocks must come before any other content in a user message", bw)
					}
					if !contains(pending, b.ToolUseID) {
						return fmt.Errorf("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", bw, b.ToolUseID)
					}
					if answered[b.ToolUseID] {
						return fmt.Errorf("%s: each tool_use must have a single result; found several for %s", bw, b.ToolUseID)
					}
					answered[b.ToolUseID] = true
					for k, c := range b.Content {
						if c.Type != "text" && c.Type != "image" && c.Type != "document" && c.Type != "search_result" {
							return fmt.Errorf("%s.content.%d.type: unsupported tool_result content", bw, k)
						}
						if c.Type == "text" && strings.TrimSpace(c.Text) == "" {
							return fmt.Errorf("%s.content.%d: text content blocks must contain non-whitespace text", bw, k)
						}
						if c.Type == "image" {
							if err := checkImage(fmt.Sprintf("%s.content.%d", bw, k), c.Source); err != nil {
								return err
							}
						}
					}
				case "text":
					seenOther = true
					if strings.TrimSpace(b.Text) == "" {
						return fmt.Errorf("%s: text content blocks must contain non-whitespace text", bw)
					}
				case "image":
					seenOther = true
					if err := checkImage(bw, b.Source); err != nil {
						return err
					}
				case "document", "search_result":
					seenOther = true
				default:
					return fmt.Errorf("%s.type: %q blocks are not allowed in user messages", bw, b.Type)
				}
				if err := checkCache(bw, b.CacheControl); err != nil {
					return err
				}
			}
			for _, id := range pending {
				if !answered[id] {
					return fmt.Errorf("%s: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", where, id)
				}
			}
			pending = nil
			continue
		}
		pending = nil
		for j, b := range m.Content {
			bw := fmt.Sprintf("%s.content.%d", where, j)
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					return fmt.Errorf("%s: text content blocks must contain non-whitespace text", bw)
				}
			case "tool_use":
				if !toolUseIDRE.MatchString(b.ID) {
					return fmt.Errorf("%s.id: String should match pattern '^[a-zA-Z0-9_-]+$'", bw)
				}
				if used[b.ID] {
					return fmt.Errorf("%s: `tool_use` ids must be unique, found %s more than once", bw, b.ID)
				}
				used[b.ID] = true
				if b.Name == "" {
					return fmt.Errorf("%s.name: Field required", bw)
				}
				if in := bytes.TrimSpace(b.Input); len(in) == 0 || in[0] != '{' || !json.Valid(in) {
					return fmt.Errorf("%s.input: Input should be a valid dictionary", bw)
				}
				pending = append(pending, b.ID)
			case "thinking":
				if b.Signature == "" {
					return fmt.Errorf("%s.signature: Field required", bw)
				}
				if b.CacheControl != nil {
					return fmt.Errorf("%s: thinking blocks cannot have cache_control", bw)
				}
			case "redacted_thinking":
				if b.Data == "" {
					return fmt.Errorf("%s.data: Field required", bw)
				}
				if b.CacheControl != nil {
					return fmt.Errorf("%s: thinking blocks cannot have cache_control", bw)
				}
			default:
				return fmt.Errorf("%s.type: %q blocks are not allowed in assistant messages", bw, b.Type)
			}
			if err := checkCache(bw, b.CacheControl); err != nil {
				return err
			}
		}
		if i == len(r.Messages)-1 {
			if last := m.Content[len(m.Content)-1]; last.Type == "text" && strings.TrimRight(last.Text, " \t\r\n") != last.Text {
				return fmt.Errorf("messages: final assistant content cannot end with trailing whitespace")
			}
		}
	}
	if start := r.TurnStart(); start >= 0 && r.ThinkingType() == "enabled" {
		if first := r.Messages[start].Content[0]; first.Type != "thinking" && first.Type != "redacted_thinking" {
			return fmt.Errorf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.", start, first.Type)
		}
	}
	if breakpoints > MaxCacheBreakpoints {
		return fmt.Errorf("A maximum of %d blocks with cache_control may be provided. Found %d.", MaxCacheBreakpoints, breakpoints)
	}
	return nil
}

// ImageMediaTypes are the media types of base64 images the API reads.
var ImageMediaTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// checkImage validates an image block's source.
func checkImage(where string, src *ImageSource) error {
	if src == nil {
		return fmt.Errorf("%s.source: Field required", where)
	}
	switch src.Type {
	case "base64":
		if !contains(ImageMediaTypes, src.MediaType) {
			return fmt.Errorf("%s.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", where)
		}
		data, err := base64.StdEncoding.DecodeString(src.Data)
		if err != nil || len(data) == 0 {
			return fmt.Errorf("%s.source.base64.data: The image data is not valid base64", where)
		}
		if got := http.DetectContentType(data); got != src.MediaType {
			return fmt.Errorf("%s.source.base64: Image does not match the provided media type %s", where, src.MediaType)
		}
	case "url":
		u, err := url.Parse(src.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%s.source.url.url: Input should be a valid URL", where)
		}
	default:
		return fmt.Errorf("%s.source.type: Input tag %q found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'", where, src.Type)
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
