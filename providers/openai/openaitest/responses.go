package openaitest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/deepagents-go/deepagents/providers/internal/fakewire"
)

// ResponsesBody is the decoded body of a Responses API request.
type ResponsesBody struct {
	Model             string          `json:"model"`
	Instructions      string          `json:"instructions"`
	Input             json.RawMessage `json:"input"`
	Tools             []RTool         `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	Temperature       *float64        `json:"temperature"`
	TopP              *float64        `json:"top_p"`
	Reasoning         *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
	Include []string        `json:"include"`
	Store   *bool           `json:"store"`
	Stream  bool            `json:"stream"`
	Text    json.RawMessage `json:"text"`
	// PromptCacheKey routes the request to a prompt cache.
	PromptCacheKey string `json:"prompt_cache_key"`

	// Items is Input as a list of items (a string input is one user item).
	Items []Item `json:"-"`
	// Params are the names of the body's top-level fields.
	Params []string `json:"-"`
}

// RTool is a tool definition of a Responses API request.
type RTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// Item is one input item: a message (Role set), "reasoning",
// "function_call" or "function_call_output".
type Item struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ID               string          `json:"id"`
	Summary          []ItemPart      `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        string          `json:"arguments"`
	Output           json.RawMessage `json:"output"`
}

// ItemPart is a content part of an input message or tool output, or a
// reasoning summary.
type ItemPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
}

// Parts returns the parts of raw content or output (nil for a string).
func Parts(raw json.RawMessage) []ItemPart {
	var parts []ItemPart
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	return parts
}

// responsesParams are the top-level fields the fake knows; any other is
// refused, as the API refuses unknown parameters (stop, messages, ...).
var responsesParams = []string{"model", "instructions", "input", "tools", "tool_choice", "parallel_tool_calls",
	"max_output_tokens", "temperature", "top_p", "reasoning", "include", "store", "stream", "text", "metadata",
	"previous_response_id", "truncation", "user", "service_tier", "prompt_cache_key", "safety_identifier",
	"background", "max_tool_calls", "top_logprobs", "stream_options", "prompt", "conversation"}

// issued remembers the reasoning items the server handed out: their
// encrypted content, and which reasoning item each function call came with.
type issued struct {
	mu        sync.Mutex
	encrypted map[string]string // reasoning item id -> encrypted content
	callOf    map[string]string // call id -> reasoning item id
}

func (is *issued) add(rsID, enc string, callIDs []string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.encrypted == nil {
		is.encrypted, is.callOf = map[string]string{}, map[string]string{}
	}
	is.encrypted[rsID] = enc
	for _, c := range callIDs {
		is.callOf[c] = rsID
	}
}

func (is *issued) lookup(rsID, callID string) (enc string, known bool, reasoningOfCall string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	enc, known = is.encrypted[rsID]
	return enc, known, is.callOf[callID]
}

// seal is the encrypted content of a reasoning item: opaque, and tied to
// the item and its thinking.
func seal(id, thinking string) string {
	mac := hmac.New(sha256.New, []byte("openaitest"))
	mac.Write([]byte(id + "\x00" + thinking))
	return "gAAAA" + base64.StdEncoding.EncodeToString(append([]byte(id+":"), mac.Sum(nil)...))
}

func (s *Server) serveResponses(w http.ResponseWriter, hr *http.Request) {
	var body bytes.Buffer
	if _, err := body.ReadFrom(hr.Body); err != nil {
		return
	}
	req, err := decodeResponses(body.Bytes())
	if err != nil {
		writeError(w, Reply{Status: 400, Error: &Error{Message: "We could not parse the JSON body of your request: " + err.Error(), Type: "invalid_request_error"}})
		return
	}
	s.answer(w, hr, req)
}

// decodeResponses decodes a Responses API body into a Request whose
// Messages group the input items: an assistant turn's reasoning, message
// and function call items become one assistant message with ToolCalls, a
// function call output a tool message.
func decodeResponses(body []byte) (*Request, error) {
	var rb ResponsesBody
	if err := json.Unmarshal(body, &rb); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	for k := range top {
		rb.Params = append(rb.Params, k)
	}
	slices.Sort(rb.Params)
	var str string
	if json.Unmarshal(rb.Input, &str) == nil {
		c, _ := json.Marshal(str)
		rb.Items = []Item{{Role: "user", Content: c}}
	} else if len(rb.Input) > 0 {
		if err := json.Unmarshal(rb.Input, &rb.Items); err != nil {
			return nil, fmt.Errorf("invalid 'input': %v", err)
		}
	}
	r := &Request{API: "responses", Responses: &rb, Body: append(json.RawMessage(nil), body...),
		Model: rb.Model, Stream: rb.Stream, ParallelToolCalls: rb.ParallelToolCalls, Temperature: rb.Temperature,
		TopP: rb.TopP, MaxCompletionTokens: rb.MaxOutputTokens, ToolChoice: rb.ToolChoice, PromptCacheKey: rb.PromptCacheKey}
	if rb.Reasoning != nil {
		r.ReasoningEffort = rb.Reasoning.Effort
	}
	for _, t := range rb.Tools {
		var tool Tool
		tool.Type = t.Type
		tool.Function.Name = t.Name
		tool.Function.Description = t.Description
		tool.Function.Parameters = t.Parameters
		tool.Function.Strict = t.Strict
		r.Tools = append(r.Tools, tool)
	}
	if rb.Instructions != "" {
		c, _ := json.Marshal(rb.Instructions)
		r.Messages = append(r.Messages, Message{Role: "system", Content: c})
	}
	inTurn := false // the last message is an assistant turn still being assembled
	turn := func() *Message {
		if !inTurn {
			r.Messages = append(r.Messages, Message{Role: "assistant"})
			inTurn = true
		}
		return &r.Messages[len(r.Messages)-1]
	}
	for _, it := range rb.Items {
		switch {
		case it.Type == "reasoning":
			turn()
		case it.Type == "function_call":
			a := turn()
			var c ToolCall
			c.ID, c.Type = it.CallID, "function"
			c.Function.Name, c.Function.Arguments = it.Name, it.Arguments
			a.ToolCalls = append(a.ToolCalls, c)
		case it.Type == "function_call_output":
			inTurn = false
			r.Messages = append(r.Messages, Message{Role: "tool", ToolCallID: it.CallID, Content: it.Output})
		case it.Role == "assistant":
			a := turn()
			a.Content = it.Content
		default:
			inTurn = false
			r.Messages = append(r.Messages, Message{Role: it.Role, Content: it.Content})
		}
	}
	return r, nil
}

// validateResponses checks a Responses API request the way the API does,
// including the reasoning items the server handed out (see the package
// documentation).
func (s *Server) validateResponses(r *Request) error {
	rb := r.Responses
	for _, p := range rb.Params {
		if !slices.Contains(responsesParams, p) {
			return fmt.Errorf("Unknown parameter: '%s'.", p)
		}
	}
	if rb.Model == "" {
		return fmt.Errorf("Missing required parameter: 'model'.")
	}
	if len(rb.Items) == 0 {
		return fmt.Errorf("Missing required parameter: 'input'.")
	}
	if rb.Reasoning != nil && rb.Reasoning.Effort != "" && !slices.Contains([]string{"none", "minimal", "low", "medium", "high", "xhigh"}, rb.Reasoning.Effort) {
		return fmt.Errorf("Invalid value: '%s'. Supported values are: 'minimal', 'low', 'medium', and 'high'.", rb.Reasoning.Effort)
	}
	calls := map[string]bool{}    // function calls so far
	answered := map[string]bool{} // function calls with an output
	var order []string
	seen := map[string]bool{} // reasoning items of the current assistant turn
	for i, it := range rb.Items {
		switch it.Type {
		case "reasoning":
			if it.ID == "" {
				return fmt.Errorf("Missing required parameter: 'input[%d].id'.", i)
			}
			if it.EncryptedContent == nil || *it.EncryptedContent == "" {
				return fmt.Errorf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.ID)
			}
			enc, known, _ := s.issued.lookup(it.ID, "")
			if !known || enc != *it.EncryptedContent {
				return fmt.Errorf("The encrypted content for item %s could not be verified.", it.ID)
			}
			seen[it.ID] = true
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return fmt.Errorf("Missing required parameter: 'input[%d].call_id' or 'input[%d].name'.", i, i)
			}
			if _, _, rs := s.issued.lookup("", it.CallID); rs != "" && !seen[rs] {
				return fmt.Errorf("Item 'fc_%s' of type 'function_call' was provided without its required 'reasoning' item: '%s'.", it.CallID, rs)
			}
			if calls[it.CallID] {
				return fmt.Errorf("Duplicate item found with call_id '%s'.", it.CallID)
			}
			calls[it.CallID] = true
			order = append(order, it.CallID)
		case "function_call_output":
			if !calls[it.CallID] {
				return fmt.Errorf("No tool call found for function call output with call_id %s.", it.CallID)
			}
			answered[it.CallID] = true
			clear(seen)
			if err := checkParts(it.Output, fmt.Sprintf("input[%d].output", i), true); err != nil {
				return err
			}
		case "", "message":
			switch it.Role {
			case "user", "system", "developer":
				clear(seen)
				if err := checkParts(it.Content, fmt.Sprintf("input[%d].content", i), it.Role == "user"); err != nil {
					return err
				}
			case "assistant":
			default:
				return fmt.Errorf("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", it.Role)
			}
		default:
			return fmt.Errorf("Invalid value: '%s'. Supported values for 'input[%d].type' are: 'message', 'reasoning', 'function_call', and 'function_call_output'.", it.Type, i)
		}
	}
	for _, id := range order {
		if !answered[id] {
			return fmt.Errorf("No tool output found for function call %s.", id)
		}
	}
	if err := checkModelSettings(rb.Model, rb.Temperature, rb.TopP, r.ReasoningEffort, "reasoning.effort"); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, t := range rb.Tools {
		if t.Type != "function" {
			return fmt.Errorf("Invalid value: '%s'. Supported values for 'tools[%d].type' include 'function'.", t.Type, i)
		}
		if t.Name == "" {
			return fmt.Errorf("Missing required parameter: 'tools[%d].name'.", i)
		}
		if names[t.Name] {
			return fmt.Errorf("Duplicate tool name %q.", t.Name)
		}
		names[t.Name] = true
		var obj map[string]any
		if json.Unmarshal(t.Parameters, &obj) != nil || (obj["type"] != nil && obj["type"] != "object") {
			return fmt.Errorf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", t.Name)
		}
	}
	return nil
}

// checkParts checks message content or tool output: a string, or parts of
// input_text (or output_text) and, where images are allowed, input_image.
func checkParts(raw json.RawMessage, where string, images bool) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil
	}
	var parts []ItemPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("Invalid type for '%s': expected one of a string or array of objects.", where)
	}
	for j, p := range parts {
		switch {
		case p.Type == "input_text", p.Type == "output_text":
		case p.Type == "input_image" && images:
			if err := CheckImageURL(p.ImageURL); err != nil {
				return fmt.Errorf("Invalid '%s[%d].image_url': %v.", where, j, err)
			}
		default:
			return fmt.Errorf("Invalid value: '%s'. Supported values for '%s[%d].type' here are: 'input_text'%s.", p.Type, where, j, map[bool]string{true: " and 'input_image'"}[images])
		}
	}
	return nil
}

// responseObject renders a reply as a response object, remembering the
// reasoning item it hands out.
func (s *Server) responseObject(req *Request, rep Reply) map[string]any {
	rb := req.Responses
	seq := req.Seq
	var output []any
	rsID := ""
	if rep.Reasoning != "" {
		rsID = fmt.Sprintf("rs_test%d", seq)
		summary := []any{}
		if rb.Reasoning != nil && rb.Reasoning.Summary != "" {
			summary = append(summary, map[string]any{"type": "summary_text", "text": rep.Reasoning})
		}
		item := map[string]any{"type": "reasoning", "id": rsID, "summary": summary}
		if slices.Contains(rb.Include, "reasoning.encrypted_content") {
			enc := seal(rsID, rep.Reasoning)
			item["encrypted_content"] = enc
			var ids []string
			for _, c := range rep.ToolCalls {
				ids = append(ids, c.ID)
			}
			s.issued.add(rsID, enc, ids)
		}
		output = append(output, item)
	}
	if rep.Content != "" || rep.Refusal != "" || (len(rep.ToolCalls) == 0 && rep.Reasoning == "") {
		var content []any
		if rep.Refusal != "" {
			content = append(content, map[string]any{"type": "refusal", "refusal": rep.Refusal})
		} else {
			content = append(content, map[string]any{"type": "output_text", "text": rep.Content, "annotations": []any{}})
		}
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_test%d", seq),
			"status": "completed", "role": "assistant", "content": content})
	}
	for _, c := range rep.ToolCalls {
		output = append(output, map[string]any{"type": "function_call", "id": "fc_" + c.ID, "call_id": c.ID,
			"name": c.Name, "arguments": c.Args, "status": "completed"})
	}
	out := map[string]any{
		"id": fmt.Sprintf("resp_test%d", seq), "object": "response", "created_at": s.created,
		"status": "completed", "model": model(req, rep), "output": output, "error": nil, "incomplete_details": nil,
		"store": rb.Store != nil && *rb.Store,
	}
	switch rep.FinishReason {
	case "length":
		out["status"] = "incomplete"
		out["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	case "content_filter":
		out["status"] = "incomplete"
		out["incomplete_details"] = map[string]any{"reason": "content_filter"}
	}
	if !rep.NoUsage {
		u := replyUsage(req, rep)
		out["usage"] = map[string]any{
			"input_tokens": u.Prompt, "input_tokens_details": map[string]any{"cached_tokens": u.Cached},
			"output_tokens": u.Completion, "output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
			"total_tokens": u.Prompt + u.Completion,
		}
	}
	return out
}

// responseEvents renders a response object as the typed events of a stream.
func responseEvents(rep Reply, out map[string]any) []map[string]any {
	size := rep.ChunkSize
	if size <= 0 {
		size = 3
	}
	var evs []map[string]any
	add := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = len(evs)
		evs = append(evs, fields)
	}
	start := map[string]any{}
	for k, v := range out {
		start[k] = v
	}
	start["status"], start["output"] = "in_progress", []any{}
	delete(start, "usage")
	add("response.created", map[string]any{"response": start})
	add("response.in_progress", map[string]any{"response": start})
	for i, raw := range out["output"].([]any) {
		item := raw.(map[string]any)
		id := item["id"]
		switch item["type"] {
		case "reasoning":
			add("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
			for j, sp := range item["summary"].([]any) {
				text := sp.(map[string]any)["text"].(string)
				add("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "part": map[string]any{"type": "summary_text", "text": ""}})
				for _, f := range split(text, size) {
					add("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "delta": f})
				}
				add("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "text": text})
				add("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "part": sp})
			}
		case "message":
			add("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}})
			for j, cp := range item["content"].([]any) {
				c := cp.(map[string]any)
				add("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": j, "part": map[string]any{"type": c["type"]}})
				if c["type"] == "refusal" {
					for _, f := range split(c["refusal"].(string), size) {
						add("response.refusal.delta", map[string]any{"item_id": id, "output_index": i, "content_index": j, "delta": f})
					}
				} else {
					for _, f := range split(c["text"].(string), size) {
						add("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": j, "delta": f})
					}
				}
				add("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": j, "part": c})
			}
		case "function_call":
			add("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "function_call", "id": id, "call_id": item["call_id"], "name": item["name"], "arguments": "", "status": "in_progress"}})
			for _, f := range split(item["arguments"].(string), size) {
				add("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": f})
			}
			add("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": item["arguments"]})
		}
		add("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	if out["status"] == "incomplete" {
		add("response.incomplete", map[string]any{"response": out})
	} else {
		add("response.completed", map[string]any{"response": out})
	}
	return evs
}

func (s *Server) streamResponses(w http.ResponseWriter, hr *http.Request, rep Reply, out map[string]any) {
	sse := fakewire.StartSSE(w, nil, "\n")
	events := responseEvents(rep, out)
	for i := 0; i < len(events); i++ {
		if rep.CutAfter > 0 && i == rep.CutAfter {
			if rep.CleanCut {
				return
			}
			fakewire.Drop()
		}
		if rep.StallAfter > 0 && i == rep.StallAfter {
			fakewire.Hang(hr, s.wire.Done())
			return
		}
		b, _ := json.Marshal(events[i])
		if err := sse.Event(events[i]["type"].(string), b); err != nil {
			return
		}
	}
}
