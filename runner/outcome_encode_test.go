package runner

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/deepagents-go/deepagents/agent"

	"github.com/deepagents-go/deepagents/llm"
)

// The hand-written encoding of a saved outcome writes what json.Marshal
// writes, for every field, including the values it hands to json.Marshal.
func TestOutcomeEncodeIsMarshal(t *testing.T) {
	child, _ := json.Marshal(summary(&agent.Result{Agent: "a / b#c1", Status: agent.StatusOK, Rounds: 2, Changed: []string{"/x<y>&.md"},
		Context: &agent.ContextLedger{Calls: 2, Last: agent.ContextReport{Tools: 5, Ratio: 1.25}}}))
	cases := []outcomeOut{
		{},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{Content: "line 1\n\t\"quoted\" <b>&</b> \u2028 \xff é"}}},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{Content: "x", IsError: true, Stop: true, DurationMS: 0.125}, InResult: true, Rejected: true}},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{DurationMS: 1234567.5}, InResult: true}, Child: child},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{DurationMS: 1e-9}}},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{DurationMS: math.Inf(1)}}},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{Structured: json.RawMessage(` {"a": [1, 2]} `)}}},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{Parts: []llm.Part{{Type: llm.PartText, Text: "t"}}}}},
		{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{State: map[string]json.RawMessage{"todos": json.RawMessage(`[]`)}}}},
	}
	for i, o := range cases {
		want, werr := json.Marshal(o)
		got, gerr := o.encode()
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Errorf("case %d:\n got %s (%v)\nwant %s (%v)", i, got, gerr, want, werr)
		}
	}
}

func FuzzOutcomeEncode(f *testing.F) {
	f.Add("done", false, 1.5, true, false, []byte(`{"agent":"x"}`))
	f.Add("<\xff\u2029>", true, 0.0, false, true, []byte(nil))
	f.Fuzz(func(t *testing.T, content string, isErr bool, dur float64, inResult, rejected bool, child []byte) {
		if len(child) > 0 {
			var v any
			if json.Unmarshal(child, &v) != nil {
				return
			}
			child, _ = json.Marshal(v) // encode takes a child json.Marshal wrote
		}
		o := outcomeOut{savedOutcome: savedOutcome{CallOutcome: agent.CallOutcome{Content: content, IsError: isErr, DurationMS: dur}, InResult: inResult, Rejected: rejected}, Child: child}
		want, werr := json.Marshal(o)
		got, gerr := o.encode()
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
		}
	})
}
