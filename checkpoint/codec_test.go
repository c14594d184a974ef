package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/google/go-cmp/cmp"
)

// The v1 golden files were written by the first release of the codec and
// must load, with these exact contents, forever.
func TestGoldenV1Records(t *testing.T) {
	at := time.Date(2026, 12, 3, 8, 30, 0, 0, time.UTC)
	notes := checkpoint.FileRef{Hash: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", Size: 6, Created: at, Modified: at}
	todos := json.RawMessage(`[{"content":"write notes","status":"in_progress"}]`)
	want := map[string]*checkpoint.Record{
		"checkpoint_v1_snapshot.json": {
			V: 1, ThreadID: "thread-1", ID: "0193a8f0-0000-7000-8000-000000000001",
			Metadata: map[string]string{"source": "input"}, Status: "running", Time: at,
			StepUsage: llm.Usage{InputTokens: 120, OutputTokens: 30}, Usage: llm.Usage{InputTokens: 120, OutputTokens: 30},
			Messages: checkpoint.Range{From: 0, To: 2},
			Files:    map[string]checkpoint.FileRef{"/notes.md": notes},
			Values:   map[string]json.RawMessage{"todos": todos},
			Snapshot: &checkpoint.Snapshot{
				Messages: []checkpoint.Range{{From: 0, To: 2}},
				Files:    map[string]checkpoint.FileRef{"/notes.md": notes},
				Values:   map[string]json.RawMessage{"todos": todos},
			},
			Title: "Write my notes",
		},
		"checkpoint_v1_delta.json": {
			V: 1, ThreadID: "thread-1", NS: "researcher#call_1", ID: "0193a8f0-0000-7000-8000-000000000002",
			ParentID: "0193a8f0-0000-7000-8000-000000000001", Step: 1, Status: "done", Time: at.Add(time.Second),
			StepUsage: llm.Usage{InputTokens: 10, OutputTokens: 5, ReasoningTokens: 2},
			Usage:     llm.Usage{InputTokens: 130, OutputTokens: 35, ReasoningTokens: 2},
			Messages:  checkpoint.Range{From: 2, To: 3},
			Files:     map[string]checkpoint.FileRef{"/notes.md": {Deleted: true}},
			Values:    map[string]json.RawMessage{"todos": json.RawMessage(`null`)},
			Depth:     1,
		},
	}
	// A delta of a history whose snapshot lists many files (written since
	// snapshots of many files are spaced out): the next snapshot comes
	// after 120 deltas, not the saver's 50.
	want["checkpoint_v1_span.json"] = &checkpoint.Record{
		V: 1, ThreadID: "thread-1", ID: "0193a8f0-0000-7000-8000-000000000090", ParentID: "0193a8f0-0000-7000-8000-000000000089",
		Step: 90, Status: "running", Time: time.Date(2026, 12, 4, 8, 30, 0, 0, time.UTC),
		StepUsage: llm.Usage{InputTokens: 10, OutputTokens: 5}, Usage: llm.Usage{InputTokens: 900, OutputTokens: 450},
		Messages: checkpoint.Range{From: 180, To: 182}, Depth: 60, Span: 120,
	}
	for name, w := range want {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := checkpoint.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(w, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	if span, _ := checkpoint.Decode(mustRead(t, "testdata/checkpoint_v1_span.json")); checkpoint.NeedsView(span, 50) || !checkpoint.NeedsView(&checkpoint.Record{Depth: 119, Span: 120}, 50) {
		t.Error("a history's span does not set when its next snapshot comes")
	}
	// The snapshot and the delta resolve to the state they describe.
	snap, _ := os.ReadFile("testdata/checkpoint_v1_snapshot.json")
	r, err := checkpoint.Decode(snap)
	if err != nil {
		t.Fatal(err)
	}
	v := checkpoint.ViewOf([]*checkpoint.Record{r})
	if len(v.Files) != 1 || v.Files["/notes.md"].Size != 6 || len(v.Messages) != 1 {
		t.Errorf("snapshot view = %+v", v)
	}
}

func TestGoldenV1Write(t *testing.T) {
	data, err := os.ReadFile("testdata/write_v1_result.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.DecodeWrite(data)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 8, 30, 0, 0, time.UTC)
	want := checkpoint.Write{
		CallID: "call_7", Kind: "result", Time: at,
		Result: llm.Message{Role: "tool", ToolCallID: "call_7", Name: "write_file", Content: "wrote /a.txt"},
		Files:  vfs.Delta{{Path: "/a.txt", File: &vfs.File{Content: "A", CreatedAt: at, ModifiedAt: at}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("write (-want +got):\n%s", d)
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, err := os.ReadFile("testdata/checkpoint_v1_delta.json")
	if err != nil {
		t.Fatal(err)
	}
	hash := strings.Repeat("a", 64)
	cases := []struct {
		name, data, want string
	}{
		{"not json", `{`, "not valid JSON"},
		{"no version", `{"thread":"t","id":"a"}`, "no version"},
		{"future version", `{"v":2,"thread":"t","id":"a"}`, "version 2"},
		{"version zero", `{"v":0,"thread":"t","id":"a"}`, "version 0"},
		{"unknown field", `{"v":1,"thread":"t","id":"a","depth":0,"snapshot":{"messages":[]},"extra":1}`, "unknown field"},
		{"no id", `{"v":1,"thread":"t","depth":0,"snapshot":{"messages":[]}}`, "id missing"},
		{"bad range", `{"v":1,"thread":"t","id":"a","messages":{"from":5,"to":2},"depth":0,"snapshot":{"messages":[]}}`, "message range"},
		{"delta with snapshot", `{"v":1,"thread":"t","id":"a","depth":1,"snapshot":{"messages":[]}}`, "depth 1"},
		{"snapshot missing", `{"v":1,"thread":"t","id":"a","depth":0}`, "depth 0"},
		{"short hash", `{"v":1,"thread":"t","id":"a","files":{"/x":{"sha256":"ab"}},"depth":0,"snapshot":{"messages":[]}}`, "file reference"},
		{"deleted in snapshot", `{"v":1,"thread":"t","id":"a","depth":0,"snapshot":{"messages":[],"files":{"/x":{"sha256":"` + hash + `","deleted":true}}}}`, "snapshot file"},
		{"trailing data", string(bytes.TrimSpace(good)) + ` {}`, "not valid JSON"},
	}
	for _, tc := range cases {
		_, err := checkpoint.Decode([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecode: Decode never panics, and a record it accepts encodes and
// decodes back to itself.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"checkpoint_v1_snapshot.json", "checkpoint_v1_delta.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := checkpoint.Decode(data)
		if err != nil {
			return
		}
		enc, err := checkpoint.Encode(r)
		if err != nil {
			t.Fatalf("accepted record does not encode: %v", err)
		}
		again, err := checkpoint.Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded record refused: %v\n%s", err, enc)
		}
		enc2, err := checkpoint.Encode(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the record:\n%s\n%s", enc, enc2)
		}
		_ = checkpoint.ViewOf([]*checkpoint.Record{again})
	})
}

// FuzzDecodeWrite: DecodeWrite never panics, and a write it accepts encodes
// and decodes back to itself.
func FuzzDecodeWrite(f *testing.F) {
	data, err := os.ReadFile("testdata/write_v1_result.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := checkpoint.DecodeWrite(data)
		if err != nil {
			return
		}
		enc, err := checkpoint.EncodeWrite(w)
		if err != nil {
			return // a kind-less or otherwise odd write need not re-encode identically
		}
		again, err := checkpoint.DecodeWrite(enc)
		if err != nil {
			t.Fatalf("re-encoded write refused: %v\n%s", err, enc)
		}
		enc2, _ := checkpoint.EncodeWrite(again)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the write:\n%s\n%s", enc, enc2)
		}
	})
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
