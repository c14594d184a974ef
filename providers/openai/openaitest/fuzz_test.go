package openaitest

import "testing"

// FuzzResponsesRequest decodes and validates arbitrary Responses API bodies:
// neither may panic, and an accepted request's messages answer every tool
// call of an earlier assistant message and nothing else.
func FuzzResponsesRequest(f *testing.F) {
	f.Add(`{"model":"m","input":"hi"}`)
	f.Add(`{"model":"m","instructions":"sys","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}]}`)
	f.Add(`{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}],"reasoning":{"effort":"low","summary":"auto"},"include":["reasoning.encrypted_content"],"store":false}`)
	f.Add(`{"model":"m","input":[{"type":"function_call_output","call_id":"x","output":"y"}],"tools":[{"type":"function","name":"f","parameters":{"type":"array"}}]}`)
	f.Add(`{"model":"m","input":{"nested":true},"stop":"x"}`)
	s := &Server{}
	f.Fuzz(func(t *testing.T, body string) {
		r, err := decodeResponses([]byte(body))
		if err != nil {
			return
		}
		if s.validateResponses(r) != nil {
			return
		}
		calls := map[string]bool{}
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
			if m.Role == "tool" && !calls[m.ToolCallID] {
				t.Fatalf("accepted a tool output for %q, which no earlier call made: %s", m.ToolCallID, body)
			}
		}
		for _, it := range r.Responses.Items {
			for _, p := range append(Parts(it.Content), Parts(it.Output)...) {
				if p.Type == "input_image" && CheckImageURL(p.ImageURL) != nil {
					t.Fatalf("accepted a bad image %q", p.ImageURL)
				}
			}
		}
	})
}
