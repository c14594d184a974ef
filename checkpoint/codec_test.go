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
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
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

// The golden files the first codec wrote come out of Encode and
// EncodeWrite byte for byte after a round trip.
func TestGoldenFilesReencode(t *testing.T) {
	for _, name := range []string{"checkpoint_v1_delta.json", "checkpoint_v1_snapshot.json", "write_v1_result.json"} {
		data := bytes.TrimSpace(mustRead(t, filepath.Join("testdata", name)))
		var got []byte
		if strings.HasPrefix(name, "write") {
			w, err := checkpoint.DecodeWrite(data)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = checkpoint.EncodeWrite(w); err != nil {
				t.Fatal(err)
			}
		} else {
			r, err := checkpoint.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = checkpoint.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s re-encodes as\n%s\nwant\n%s", name, got, data)
		}
	}
}

// A typical write, as the agent loop stores it, encodes to these bytes and
// reads back: times in RFC 3339 (the write's own in UTC), HTML characters
// escaped, raw data compacted.
func TestEncodeWriteTypical(t *testing.T) {
	at := time.Date(2026, 12, 3, 8, 30, 0, 123, time.FixedZone("CET", 3600))
	w := checkpoint.Write{CallID: "call_1", Result: llm.Message{Role: llm.RoleTool, Content: "line 1\nline <2> & \"3\"", ToolCallID: "call_1", Name: "read_file"},
		Files: vfs.Delta{{Path: "/a.md", File: &vfs.File{Content: "x", CreatedAt: at, ModifiedAt: at}}, {Path: "/gone"}},
		Data:  json.RawMessage(` {"k": [1, 2]} `), Time: at}
	got, err := checkpoint.EncodeWrite(w)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"call_id":"call_1","kind":"result","result":{"role":"tool","content":"line 1\nline \u003c2\u003e \u0026 \"3\"","tool_call_id":"call_1","name":"read_file"},` +
		`"files":[{"path":"/a.md","file":{"content":"x","created_at":"2026-12-03T08:30:00.000000123+01:00","modified_at":"2026-12-03T08:30:00.000000123+01:00"}},{"path":"/gone"}],` +
		`"data":{"k":[1,2]},"time":"2026-12-03T07:30:00.000000123Z"}`
	if string(got) != want {
		t.Errorf("EncodeWrite =\n%s\nwant\n%s", got, want)
	}
	back, err := checkpoint.DecodeWrite(got)
	if err != nil || back.Result.Content != w.Result.Content || len(back.Files) != 2 || !back.Time.Equal(at) {
		t.Errorf("DecodeWrite = %+v, %v", back, err)
	}
}

// A message with parts is stored as JSON; its tool calls' arguments are
// compacted and escaped, and arguments that are not JSON are kept as a
// string with a flag.
func TestEncodeMessageToolCallArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		want string
	}{
		{"nil", "", `{"id":"c","name":"n","args":null}`},
		{"compacted and escaped", " { \"q\" : \"<a & b>\" } ", `{"id":"c","name":"n","args":{"q":"\u003ca \u0026 b\u003e"}}`},
		{"line separator in a string", "[\"\u2028\"]", `{"id":"c","name":"n","args":["\u2028"]}`},
		{"cut off", `{"q":"abc`, `{"id":"c","name":"n","args":"{\"q\":\"abc","args_invalid":true}`},
		{"broken UTF-8 made valid first", "\"a\xff\xfeb\"", `{"id":"c","name":"n","args":"a` + "\ufffd" + `b"}`},
		{"broken UTF-8 in broken JSON", "{\xff", `{"id":"c","name":"n","args":"{` + "\ufffd" + `","args_invalid":true}`},
	}
	for _, tc := range tests {
		m := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "n", Args: json.RawMessage(tc.args)}},
			Parts: []llm.Part{{Type: llm.PartText, Text: "t"}}}
		got, err := msgcodec.EncodeMessage(m)
		want := `{"role":"assistant","content":"","tool_calls":[` + tc.want + `],"parts":[{"type":"text","text":"t"}]}`
		if err != nil || string(got) != want {
			t.Errorf("%s: EncodeMessage = %s, %v; want %s", tc.name, got, err, want)
		}
	}
}

// Deeply nested raw JSON is accepted and stored as it is; a value that is
// not JSON is refused.
func TestDeepRawJSON(t *testing.T) {
	deep := json.RawMessage(strings.Repeat("[", 1000) + strings.Repeat("]", 1000))
	r := &checkpoint.Record{ThreadID: "t", ID: "i", Values: map[string]json.RawMessage{"deep": deep}}
	got, err := checkpoint.Encode(r)
	if err != nil || !strings.Contains(string(got), `"values":{"deep":`+string(deep)+`}`) {
		t.Errorf("Encode = %s, %v", got, err)
	}
	if _, err := checkpoint.Encode(&checkpoint.Record{ThreadID: "t", ID: "i", Values: map[string]json.RawMessage{"bad": json.RawMessage(`[`)}}); err == nil {
		t.Error("Encode accepted a value that is not JSON")
	}
}
