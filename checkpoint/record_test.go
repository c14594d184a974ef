package checkpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/google/go-cmp/cmp"
)

func TestMergeRanges(t *testing.T) {
	type r = checkpoint.Range
	tests := []struct {
		name string
		in   []r
		want []r
	}{
		{"empty", nil, nil},
		{"drops empty ranges", []r{{From: 3, To: 3}, {From: 5, To: 4}}, nil},
		{"joins touching", []r{{From: 0, To: 2}, {From: 2, To: 5}}, []r{{From: 0, To: 5}}},
		{"sorts and joins overlapping", []r{{From: 10, To: 12}, {From: 0, To: 4}, {From: 3, To: 6}}, []r{{From: 0, To: 6}, {From: 10, To: 12}}},
		{"keeps gaps", []r{{From: 0, To: 1}, {From: 2, To: 3}}, []r{{From: 0, To: 1}, {From: 2, To: 3}}},
		{"contained", []r{{From: 0, To: 10}, {From: 2, To: 3}}, []r{{From: 0, To: 10}}},
	}
	for _, tc := range tests {
		if got := checkpoint.MergeRanges(tc.in); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: MergeRanges(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestTitleOf(t *testing.T) {
	long := strings.Repeat("é", 100)
	tests := []struct {
		name string
		msgs []llm.Message
		want string
	}{
		{"none", nil, ""},
		{"skips system and assistant", []llm.Message{{Role: "system", Content: "sys"}, {Role: "assistant", Content: "hi"}, {Role: "user", Content: "Question"}}, "Question"},
		{"first line only", []llm.Message{{Role: "user", Content: "  Plan a trip\nto Lisbon"}}, "Plan a trip"},
		{"skips an empty user message", []llm.Message{{Role: "user", Content: "   "}, {Role: "user", Content: "second"}}, "second"},
		{"shortened by runes", []llm.Message{{Role: "user", Content: long}}, strings.Repeat("é", 79) + "…"},
		{"bytes that are not UTF-8", []llm.Message{{Role: "user", Content: "caf\xe9 menu"}}, "caf\uFFFD menu"},
		{"NUL bytes dropped", []llm.Message{{Role: "user", Content: "a\x00b"}}, "ab"},
		{"only NUL bytes", []llm.Message{{Role: "user", Content: "\x00"}, {Role: "user", Content: "next"}}, "next"},
	}
	for _, tc := range tests {
		if got := checkpoint.TitleOf(tc.msgs); got != tc.want {
			t.Errorf("%s: TitleOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// With a snapshot every 5 steps, rebuilding any of 23 states reads at most 5
// records, and the snapshot holds references only: one message range.
func TestChainReadsAtMostNDeltas(t *testing.T) {
	ctx := context.Background()
	const every = 5
	recs := map[string]*checkpoint.Record{}
	var parent *checkpoint.Record
	var next int64
	for i := 1; i <= 23; i++ {
		st := checkpoint.Step{ThreadID: "t", ID: fmt.Sprint(i), Step: i, Messages: []llm.Message{{Role: "user", Content: fmt.Sprint(i)}}}
		if parent != nil {
			st.ParentID = parent.ID
		}
		var view *checkpoint.View
		if checkpoint.NeedsView(parent, every) {
			chain, err := checkpoint.Chain(ctx, parent, loader(recs))
			if err != nil {
				t.Fatal(err)
			}
			v := checkpoint.ViewOf(chain)
			view = &v
		}
		b, err := checkpoint.Build(&st, parent, view, next, every)
		if err != nil {
			t.Fatal(err)
		}
		next = b.Record.Messages.To
		recs[st.ID], parent = b.Record, b.Record
		chain, err := checkpoint.Chain(ctx, b.Record, loader(recs))
		if err != nil {
			t.Fatal(err)
		}
		if len(chain) > every {
			t.Errorf("step %d: rebuilding read %d records, want at most %d", i, len(chain), every)
		}
		v := checkpoint.ViewOf(chain)
		if want := []checkpoint.Range{{From: 0, To: int64(i)}}; !cmp.Equal(v.Messages, want) {
			t.Errorf("step %d: messages %v, want %v", i, v.Messages, want)
		}
		if snap := chain[len(chain)-1].Snapshot; snap == nil || len(snap.Messages) != 1 {
			t.Errorf("step %d: chain does not end at a one-range snapshot: %+v", i, snap)
		}
	}
}

func loader(recs map[string]*checkpoint.Record) checkpoint.Loader {
	return func(_ context.Context, id string) (*checkpoint.Record, error) {
		if r, ok := recs[id]; ok {
			return r, nil
		}
		return nil, checkpoint.ErrNotFound
	}
}

// Build stores a step's values without insignificant white space, and in
// bytes of its own: a caller may reuse its buffer after the put.
func TestBuildCompactsValuesIntoTheirOwnBytes(t *testing.T) {
	spaced := json.RawMessage(" { \"a\" : [ 1, 2 ] , \"s\": \"x y\" } ")
	tight := json.RawMessage(`{"a":[1,2]}`)
	b, err := checkpoint.Build(&checkpoint.Step{ThreadID: "t", ID: "1", Values: map[string]json.RawMessage{"spaced": spaced, "tight": tight}}, nil, nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b.Record.Values["spaced"]); got != `{"a":[1,2],"s":"x y"}` {
		t.Errorf("spaced value stored as %s", got)
	}
	tight[2] = 'b'
	if got := string(b.Record.Values["tight"]); got != `{"a":[1,2]}` {
		t.Errorf("tight value stored as %s after its caller changed its buffer", got)
	}
}
