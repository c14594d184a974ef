package checkpoint_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// Typical values of a durable step, as the agent loop stores them.
var (
	benchTime = time.Date(2026, 12, 3, 8, 30, 0, 123456789, time.UTC)
	benchLoop = json.RawMessage(`{"v":1,"status":"running","step":12,"calls":[{"id":"call_12","name":"read_file","args":{"file_path":"/src/main.go","offset":0}}],"usage":{"input_tokens":5120,"output_tokens":230},"interrupts":null}`)
)

func benchDelta() *checkpoint.Record {
	return &checkpoint.Record{
		V: 1, ThreadID: "b-17", ID: "cp-000013", ParentID: "cp-000012", Step: 13,
		Metadata: map[string]string{"source": "loop"}, Status: checkpoint.StatusRunning, Time: benchTime,
		StepUsage: llm.Usage{InputTokens: 5120, OutputTokens: 230}, Usage: llm.Usage{InputTokens: 61000, OutputTokens: 2900, CachedInputTokens: 50000},
		Messages: checkpoint.Range{From: 24, To: 26},
		Files:    map[string]checkpoint.FileRef{"/notes.md": {Hash: strings.Repeat("ab", 32), Size: 812, Created: benchTime, Modified: benchTime}},
		Values:   map[string]json.RawMessage{"loop": benchLoop, "todos": json.RawMessage(`[{"content":"read the code","status":"in_progress"}]`)},
		Depth:    13,
	}
}

func benchSnapshot() *checkpoint.Record {
	r := benchDelta()
	r.Depth = 0
	files := map[string]checkpoint.FileRef{}
	for i := range 20 {
		files[fmt.Sprintf("/src/pkg%d/file%d.go", i%4, i)] = checkpoint.FileRef{Hash: strings.Repeat("cd", 32), Size: int64(1000 + i), Created: benchTime, Modified: benchTime}
	}
	r.Snapshot = &checkpoint.Snapshot{Messages: []checkpoint.Range{{From: 0, To: 26}}, Files: files, Values: r.Values}
	return r
}

// BenchmarkEncodeRecord measures Encode of a typical delta and snapshot.
func BenchmarkEncodeRecord(b *testing.B) {
	for _, c := range []struct {
		name string
		rec  *checkpoint.Record
	}{{"delta", benchDelta()}, {"snapshot", benchSnapshot()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := checkpoint.Encode(c.rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeWrite measures EncodeWrite of a read_file result.
func BenchmarkEncodeWrite(b *testing.B) {
	var sb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sb, "%6d\t\tif err := s.store(ctx, \"key\", value); err != nil { return err }\n", i+1)
	}
	w := checkpoint.Write{CallID: "call_12", Result: llm.Message{Role: llm.RoleTool, Content: sb.String(), ToolCallID: "call_12", Name: "read_file"},
		Files: vfs.Delta{{Path: "/notes.md", File: &vfs.File{Content: "notes", CreatedAt: benchTime, ModifiedAt: benchTime}}},
		Time:  benchTime}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkpoint.EncodeWrite(w); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild measures Build of a typical step (its values compacted).
func BenchmarkBuild(b *testing.B) {
	parent := benchDelta()
	st := &checkpoint.Step{ThreadID: "b-17", ID: "cp-000014", ParentID: "cp-000013", Step: 14, Status: checkpoint.StatusRunning, Time: benchTime,
		Metadata: map[string]string{"source": "loop"}, Usage: llm.Usage{InputTokens: 5200, OutputTokens: 120},
		Messages: []llm.Message{llm.Assistant("", llm.ToolCall{ID: "call_13", Name: "read_file", Args: json.RawMessage(`{"file_path":"/a"}`)}), {Role: llm.RoleTool, Content: "text", ToolCallID: "call_13"}},
		Values:   map[string]json.RawMessage{"loop": benchLoop}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkpoint.Build(st, parent, nil, 26, checkpoint.DefaultSnapshotEvery); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeMessageJSON measures the JSON form of EncodeMessage (a
// message with reasoning parts).
func BenchmarkEncodeMessageJSON(b *testing.B) {
	m := llm.Message{Role: llm.RoleAssistant, Content: "Reading the file first.",
		ToolCalls: []llm.ToolCall{{ID: "call_13", Name: "read_file", Args: json.RawMessage(`{"file_path":"/src/main.go"}`)}},
		Parts: []llm.Part{{Type: llm.PartReasoning, Text: "The user wants the main file; read it before editing.",
			Reasoning: &llm.Reasoning{Provider: "anthropic", Signature: strings.Repeat("EqQBCkgIARABGAIiQL", 8)}},
			{Type: llm.PartText, Text: "Reading the file first."}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := msgcodec.EncodeMessage(m); err != nil {
			b.Fatal(err)
		}
	}
}
