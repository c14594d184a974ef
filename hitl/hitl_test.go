package hitl_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/hitl"
)

func TestParseDecisions(t *testing.T) {
	cases := []struct {
		name, in string
		want     []agent.Decision
		err      string
	}{
		{name: "list", in: `[{"type":"approve","call_id":"c1"},{"type":"reject","call_id":"c2","message":"no"}]`,
			want: []agent.Decision{{Type: "approve", CallID: "c1"}, {Type: "reject", CallID: "c2", Message: "no"}}},
		{name: "langchain object", in: `{"decisions":[{"type":"edit","id":"c3","edited_action":{"name":"write_file","args":{"a":1}}}]}`,
			want: []agent.Decision{{Type: "edit", CallID: "c3", Args: json.RawMessage(`{"a":1}`), Tool: "write_file"}}},
		{name: "older clients say arguments", in: `[{"type":"edit","call_id":"c4","edited_action":{"arguments":{"b":2}}}]`,
			want: []agent.Decision{{Type: "edit", CallID: "c4", Args: json.RawMessage(`{"b":2}`)}}},
		{name: "path narrows", in: `[{"type":"approve","call_id":"c","path":"parent / general-purpose#t1"}]`,
			want: []agent.Decision{{Type: "approve", CallID: "c", Path: agent.RootPath("parent").Child("general-purpose", "t1")}}},
		{name: "unknown type", in: `[{"type":"ignore","call_id":"c"}]`, err: `decision 1: decision type "ignore" is not one of approve, edit, reject, respond`},
		{name: "respond", in: `[{"type":"respond","call_id":"c","message":"42"}]`, want: []agent.Decision{{Type: "respond", CallID: "c", Message: "42"}}},
		{name: "respond without message", in: `[{"type":"respond","call_id":"c"}]`, err: `the respond to call "c" has no "message"`},
		{name: "no type", in: `[{"call_id":"c"}]`, err: `decision 1: the decision has no "type"`},
		{name: "no call id", in: `[{"type":"approve"}]`, err: "names no call_id"},
		{name: "edit without args", in: `[{"type":"edit","call_id":"c"}]`, err: `an edit of call "c" has no arguments`},
		{name: "edit with list args", in: `[{"type":"edit","call_id":"c","args":[1]}]`, err: "are not a JSON object"},
		{name: "edit with null args", in: `[{"type":"edit","call_id":"c","args":null}]`, err: "has no arguments"},
		{name: "object without list", in: `{"approve":"c"}`, err: `no "decisions" list`},
		{name: "not json", in: `approve c1`, err: "decisions:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := hitl.ParseDecisions([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(c.want)
			if string(gb) != string(wb) {
				t.Fatalf("got %s, want %s", gb, wb)
			}
		})
	}
}

// FuzzParseDecisions: any input is parsed or refused without a panic, and
// every decision accepted passes Check and survives a JSON round trip.
func FuzzParseDecisions(f *testing.F) {
	for _, s := range []string{`[]`, `[{"type":"approve","call_id":"c1"}]`, `{"decisions":[{"type":"edit","id":"x","edited_action":{"args":{}}}]}`,
		`[{"type":"reject","call_id":"c","message":"why"}]`, `{"decisions":null}`, `[null]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := hitl.ParseDecisions(b)
		if err != nil {
			return
		}
		for _, d := range ds {
			if err := d.Check(); err != nil {
				t.Fatalf("accepted %+v fails Check: %v", d, err)
			}
		}
		enc, err := json.Marshal(ds)
		if err != nil {
			t.Fatal(err)
		}
		again, err := hitl.ParseDecisions(enc)
		if err != nil || len(again) != len(ds) {
			t.Fatalf("round trip of %s: %v", enc, err)
		}
	})
}

// Decisions that name no call answer the waiting calls at their positions,
// keeping a path they give; decisions that name a call are left alone; more
// unnamed decisions than waiting calls, or none waiting, are refused.
func TestDecisionsInOrder(t *testing.T) {
	waiting := []agent.Interrupt{{Path: agent.RootPath("parent"), CallID: "c1", Tool: "write_file"}, {Path: agent.RootPath("parent").Child("w", "t1"), CallID: "c1", Tool: "edit_file"}}
	raws := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, x := range s {
			out[i] = json.RawMessage(x)
		}
		return out
	}
	ds, err := hitl.InOrder(raws(`{"type":"approve"}`, `{"type":"reject","message":"no"}`), waiting)
	if err != nil || len(ds) != 2 || ds[0].CallID != "c1" || ds[0].Path.String() != "parent" || ds[1].Path.String() != "parent / w#t1" || ds[1].Type != agent.Reject {
		t.Fatalf("by position: %+v, %v", ds, err)
	}
	ds, err = hitl.InOrder(raws(`{"type":"approve","call_id":"c9","path":"x"}`, `{"type":"approve","path":"mine"}`), waiting)
	if err != nil || ds[0].CallID != "c9" || ds[0].Path.String() != "x" || ds[1].CallID != "c1" || ds[1].Path.String() != "mine" {
		t.Fatalf("named and given a path: %+v, %v", ds, err)
	}
	for _, c := range []struct {
		list    []json.RawMessage
		waiting []agent.Interrupt
		want    string
	}{
		{raws(`{"type":"approve"}`, `{"type":"approve"}`, `{"type":"approve"}`), waiting, "3 decisions for 2 waiting calls (write_file c1, edit_file c1)"},
		{raws(`{"type":"approve"}`), nil, "decision 1 names no call_id, and no call is waiting"},
		{raws(`[1]`), waiting, "decision 1 is not a JSON object"},
		{raws(`{"type":"maybe"}`), waiting, "decision 1"},
	} {
		if _, err := hitl.InOrder(c.list, c.waiting); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.list, err, c.want)
		}
	}
}

// FuzzDecisionsInOrder: any list is taken or refused without a panic, and
// every decision taken names a call and passes Check.
func FuzzDecisionsInOrder(f *testing.F) {
	for _, s := range []string{`[]`, `[{"type":"approve"}]`, `[{"type":"edit","args":{"a":1}},{"type":"approve","id":"x"}]`, `[null]`, `[{"type":"reject","path":""}]`} {
		f.Add([]byte(s))
	}
	waiting := []agent.Interrupt{{Path: agent.RootPath("parent"), CallID: "c1", Tool: "t"}, {Path: agent.RootPath("parent"), CallID: "c2", Tool: "t"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var list []json.RawMessage
		if json.Unmarshal(b, &list) != nil {
			return
		}
		ds, err := hitl.InOrder(list, waiting)
		if err != nil {
			return
		}
		if len(ds) != len(list) {
			t.Fatalf("%d decisions for %d given", len(ds), len(list))
		}
		for _, d := range ds {
			if err := d.Check(); err != nil || d.CallID == "" {
				t.Fatalf("taken %+v: %v", d, err)
			}
		}
	})
}

// ParseDecision reads one decision in LangChain's shape as in ours: "id"
// names the call, an edit's edited_action gives the tool and the arguments,
// and a "tool" key of its own is not read (only edited_action names it).
func TestParseDecision(t *testing.T) {
	d, err := hitl.ParseDecision([]byte(`{"type":"edit","id":"c1","tool":"x","edited_action":{"name":"write_file","args":{"a":1}}}`))
	if err != nil || d.CallID != "c1" || d.Tool != "write_file" || string(d.Args) != `{"a":1}` || d.Type != agent.Edit {
		t.Fatalf("LangChain's edit: %+v, %v", d, err)
	}
	d, err = hitl.ParseDecision([]byte(`{"type":"reject","call_id":"c2","id":"c9","message":"no","tool":"x"}`))
	if err != nil || d.CallID != "c2" || d.Message != "no" || d.Tool != "" {
		t.Fatalf("our reject: %+v, %v", d, err)
	}
	if _, err := hitl.ParseDecision([]byte(`[1]`)); err == nil {
		t.Fatal("a list was read as one decision")
	}
}
