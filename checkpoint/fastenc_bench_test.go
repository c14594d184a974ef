package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// Typical values of a durable step, as the agent loop stores them.
var (
	benchTime = time.Date(2026, 12, 3, 8, 30, 0, 123456789, time.UTC)
	benchLoop = json.RawMessage(`{"v":1,"status":"running","step":12,"calls":[{"id":"call_12","name":"read_file","args":{"file_path":"/src/main.go","offset":0}}],"usage":{"input_tokens":5120,"output_tokens":230},"interrupts":null}`)
)

func benchDelta() *Record {
	return &Record{
		V: 1, ThreadID: "b-17", ID: "cp-000013", ParentID: "cp-000012", Step: 13,
		Metadata: map[string]string{"source": "loop"}, Status: StatusRunning, Time: benchTime,
		StepUsage: llm.Usage{InputTokens: 5120, OutputTokens: 230}, Usage: llm.Usage{InputTokens: 61000, OutputTokens: 2900, CachedInputTokens: 50000},
		Messages: Range{From: 24, To: 26},
		Files:    map[string]FileRef{"/notes.md": {Hash: strings.Repeat("ab", 32), Size: 812, Created: benchTime, Modified: benchTime}},
		Values:   map[string]json.RawMessage{"loop": benchLoop, "todos": json.RawMessage(`[{"content":"read the code","status":"in_progress"}]`)},
		Depth:    13,
	}
}

func benchSnapshot() *Record {
	r := benchDelta()
	r.Depth = 0
	files := map[string]FileRef{}
	for i := range 20 {
		files[fmt.Sprintf("/src/pkg%d/file%d.go", i%4, i)] = FileRef{Hash: strings.Repeat("cd", 32), Size: int64(1000 + i), Created: benchTime, Modified: benchTime}
	}
	r.Snapshot = &Snapshot{Messages: []Range{{From: 0, To: 26}}, Files: files, Values: r.Values}
	return r
}

// benchSource is a read_file result: numbered lines of Go source.
var benchSource = func() string {
	var sb strings.Builder
	for i := range 40 {
		fmt.Fprintf(&sb, "%6d\t\tif err := s.store(ctx, \"key\", value); err != nil { return err }\n", i+1)
	}
	return sb.String()
}()

func benchWrite() Write {
	content := benchSource
	return Write{CallID: "call_12", Result: llm.Message{Role: llm.RoleTool, Content: content, ToolCallID: "call_12", Name: "read_file"},
		Files: vfs.Delta{{Path: "/notes.md", File: &vfs.File{Content: "notes", CreatedAt: benchTime, ModifiedAt: benchTime}}},
		Time:  benchTime}
}

// BenchmarkEncodeRecord compares Encode with the json.Marshal it replaces.
func BenchmarkEncodeRecord(b *testing.B) {
	for _, c := range []struct {
		name string
		rec  *Record
	}{{"delta", benchDelta()}, {"snapshot", benchSnapshot()}} {
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := *c.rec
				r.V = CodecVersion
				if _, err := json.Marshal(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(c.rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeWrite compares EncodeWrite with the json.Marshal it
// replaces.
func BenchmarkEncodeWrite(b *testing.B) {
	w := benchWrite()
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x := writeV1{V: CodecVersion, CallID: w.CallID, Kind: KindResult, Result: w.Result, Files: w.Files, Data: w.Data, Time: w.Time.UTC()}
			if _, err := json.Marshal(x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeWrite(w); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBuild measures Build of a typical step (its values compacted).
func BenchmarkBuild(b *testing.B) {
	parent := benchDelta()
	st := &Step{ThreadID: "b-17", ID: "cp-000014", ParentID: "cp-000013", Step: 14, Status: StatusRunning, Time: benchTime,
		Metadata: map[string]string{"source": "loop"}, Usage: llm.Usage{InputTokens: 5200, OutputTokens: 120},
		Messages: []llm.Message{llm.Assistant("", llm.ToolCall{ID: "call_13", Name: "read_file", Args: json.RawMessage(`{"file_path":"/a"}`)}), {Role: llm.RoleTool, Content: "text", ToolCallID: "call_13"}},
		Values:   map[string]json.RawMessage{"loop": benchLoop}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(st, parent, nil, 26, DefaultSnapshotEvery); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompactValue compares compactValue with json.Compact.
func BenchmarkCompactValue(b *testing.B) {
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			if err := json.Compact(&buf, benchLoop); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compactValue(benchLoop); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodeMessageJSON compares the JSON form of EncodeMessage (a
// message with reasoning parts) with the json.Marshal it replaces.
func BenchmarkEncodeMessageJSON(b *testing.B) {
	m := llm.Message{Role: llm.RoleAssistant, Content: "Reading the file first.",
		ToolCalls: []llm.ToolCall{{ID: "call_13", Name: "read_file", Args: json.RawMessage(`{"file_path":"/src/main.go"}`)}},
		Parts: []llm.Part{{Type: llm.PartReasoning, Text: "The user wants the main file; read it before editing.",
			Reasoning: &llm.Reasoning{Provider: "anthropic", Signature: strings.Repeat("EqQBCkgIARABGAIiQL", 8)}},
			{Type: llm.PartText, Text: "Reading the file first."}}}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeMessage(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkValidJSON compares validJSON with json.Valid on the data of a
// typical write (a tool's outcome, its output included).
func BenchmarkValidJSON(b *testing.B) {
	data, err := json.Marshal(map[string]any{"content": benchSource, "duration_ms": 3})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			if !json.Valid(data) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if !validJSON(data) {
				b.Fatal("invalid")
			}
		}
	})
}
