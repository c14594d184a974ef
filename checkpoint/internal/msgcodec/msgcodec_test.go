package msgcodec_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint/internal/ckerr"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/google/go-cmp/cmp"
)

var codecCases = []struct {
	name    string
	m       llm.Message
	compact bool
}{
	{"user", llm.Message{Role: llm.RoleUser, Content: "hello, wörld\nsecond line"}, true},
	{"empty", llm.Message{}, true},
	{"assistant calls", llm.Message{Role: llm.RoleAssistant, Content: "Reading two files.", ToolCalls: []llm.ToolCall{
		{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path": "/a.txt"}`)},
		{ID: "call_2", Name: "ls", Args: nil},
		{ID: "call_3", Name: "ls", Args: json.RawMessage{}},
		{ID: "call_4", Name: "write_file", Args: json.RawMessage(`{"path":"/b`)}, // cut off mid-stream
	}}, true},
	{"tool error", llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "Error: no such file", IsError: true}, true},
	{"bytes that are not UTF-8", llm.Message{Role: llm.RoleTool, Content: "caf\xe9 \xff"}, true},
	{"parts", llm.Message{Role: llm.RoleUser, Content: "look", Parts: []llm.Part{{Type: llm.PartText, Text: "look"}, {Type: llm.PartImage, Image: &llm.Image{MediaType: "image/png", Data: []byte{1, 2, 3}}}}}, false},
	{"extra", llm.Message{Role: llm.RoleAssistant, Content: "x", Extra: map[string]json.RawMessage{"anthropic": json.RawMessage(`{"sig":"abc"}`)}}, false},
}

// Every message comes back exactly as it was put: the compact form keeps
// arguments byte for byte (nil, empty and broken ones too) and bytes that
// are not UTF-8; messages with parts or extras go through JSON.
func TestMessageCodecRoundTrip(t *testing.T) {
	for _, tc := range codecCases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := msgcodec.EncodeMessage(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if compact := data[0] != '{'; compact != tc.compact {
				t.Errorf("compact form = %v, want %v (first byte %q)", compact, tc.compact, data[0])
			}
			got, err := msgcodec.DecodeMessage(data)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.m, got); d != "" {
				t.Errorf("round trip (-put +got):\n%s", d)
			}
			// The same entry read from a chunk.
			msgs, err := msgcodec.Messages([]msgcodec.Range{{From: 7, To: 8}}, []msgcodec.Chunk{{From: 7, Data: msgcodec.AppendChunk(nil, data)}})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]llm.Message{tc.m}, msgs); d != "" {
				t.Errorf("from a chunk (-put +got):\n%s", d)
			}
		})
	}
}

// Messages stored by the first savers are plain JSON, one per entry; they
// still decode, alone and mixed with compact entries in one chunk.
func TestMessageCodecReadsJSONEntries(t *testing.T) {
	legacy := []byte(`{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"ls","args":"{\"pa","args_invalid":true}]}`)
	want := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ls", Args: json.RawMessage(`{"pa`)}}}
	got, err := msgcodec.DecodeMessage(legacy)
	if err != nil || !cmp.Equal(got, want) {
		t.Fatalf("legacy entry = %+v, %v", got, err)
	}
	compact, _ := msgcodec.EncodeMessage(llm.Message{Role: llm.RoleUser, Content: "next"})
	msgs, err := msgcodec.Messages([]msgcodec.Range{{From: 0, To: 2}}, []msgcodec.Chunk{{From: 0, Data: msgcodec.AppendChunk(nil, legacy, compact)}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]llm.Message{want, {Role: llm.RoleUser, Content: "next"}}, msgs); d != "" {
		t.Error(d)
	}
	for _, bad := range [][]byte{nil, []byte("x"), {0x01}, {0x01, 5, 'a'}, {0x02, 0}, []byte(`{"role":`)} {
		if _, err := msgcodec.DecodeMessage(bad); err == nil {
			t.Errorf("DecodeMessage(%q) accepted a broken entry", bad)
		}
	}
}

func user(text string) []byte {
	b, err := msgcodec.EncodeMessage(llm.Message{Role: llm.RoleUser, Content: text})
	if err != nil {
		panic(err)
	}
	return b
}

func texts(ms []llm.Message) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Content)
	}
	return strings.Join(s, ",")
}

// A view's ranges are read from chunks that may hold more than the view
// (other branches' messages) and may be shared by two ranges; a message the
// chunks do not hold is an error, never a silently shorter history.
func TestMessagesFromChunks(t *testing.T) {
	chunks := []msgcodec.Chunk{
		{From: 0, Data: msgcodec.AppendChunk(nil, user("m0"), user("m1"), user("m2"))},
		{From: 3, To: 5, Data: msgcodec.AppendChunk(nil, user("m3"), user("m4"))},
		{From: 7, Data: msgcodec.AppendChunk(nil, user("m7"))},
	}
	for _, tc := range []struct {
		want []msgcodec.Range
		got  string
		err  string
	}{
		{want: []msgcodec.Range{{From: 0, To: 5}}, got: "m0,m1,m2,m3,m4"},
		{want: []msgcodec.Range{{From: 1, To: 2}, {From: 2, To: 3}, {From: 4, To: 5}, {From: 7, To: 8}}, got: "m1,m2,m4,m7"},
		{want: []msgcodec.Range{{From: 4, To: 8}}, err: "messages 5..8 are missing"},
		{want: []msgcodec.Range{{From: 8, To: 9}}, err: "messages 8..9 are missing"},
		{want: nil, got: ""},
	} {
		msgs, err := msgcodec.Messages(tc.want, chunks)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.want, err, tc.err)
			}
			continue
		}
		if err != nil || texts(msgs) != tc.got {
			t.Errorf("%v: got %q, %v; want %q", tc.want, texts(msgs), err, tc.got)
		}
	}
	// A corrupt chunk is an error.
	if _, err := msgcodec.Messages([]msgcodec.Range{{From: 0, To: 2}}, []msgcodec.Chunk{{From: 0, Data: []byte{9, 1, 2}}}); err == nil {
		t.Error("a truncated chunk was accepted")
	}
}

func TestTrimChunk(t *testing.T) {
	c := msgcodec.Chunk{From: 10, Data: msgcodec.AppendChunk(nil, user("a"), user("b"), user("c"), user("d"))}
	for _, tc := range []struct {
		keep []msgcodec.Range
		want []string // per part: first number and texts
	}{
		{keep: []msgcodec.Range{{From: 0, To: 100}}, want: []string{"10:a,b,c,d"}},
		{keep: []msgcodec.Range{{From: 11, To: 12}, {From: 13, To: 20}}, want: []string{"11:b", "13:d"}},
		{keep: []msgcodec.Range{{From: 0, To: 10}, {From: 14, To: 20}}, want: nil},
	} {
		parts, err := msgcodec.TrimChunk(c, tc.keep)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range parts {
			entries, err := msgcodec.ChunkEntries(p.Data)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := msgcodec.Messages([]msgcodec.Range{{From: p.From, To: p.From + int64(len(entries))}}, []msgcodec.Chunk{p})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, itoa(p.From)+":"+texts(msgs))
		}
		if !cmp.Equal(got, tc.want) {
			t.Errorf("keep %v: parts %q, want %q", tc.keep, got, tc.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The compact form is stored on disk: checkpoint/testdata/chunk_v1.bin, written by the
// first version of the codec, must decode to these messages forever.
func TestGoldenV1Chunk(t *testing.T) {
	want := []llm.Message{
		{Role: llm.RoleUser, Content: "Summarise /notes.md"},
		{Role: llm.RoleAssistant, Content: "Reading it.", ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"/notes.md"}`)}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "Error: file not found", IsError: true},
		{Role: llm.RoleAssistant, Content: "It is not there.", Extra: map[string]json.RawMessage{"openai": json.RawMessage(`{"id":"rs_1"}`)}},
	}
	path := filepath.Join("..", "..", "testdata", "chunk_v1.bin")
	if os.Getenv("CHECKPOINT_WRITE_GOLDEN_CHUNK") != "" {
		var entries [][]byte
		for _, m := range want {
			e, err := msgcodec.EncodeMessage(m)
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		if err := os.WriteFile(path, msgcodec.AppendChunk(nil, entries...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := msgcodec.Messages([]msgcodec.Range{{From: 100, To: 104}}, []msgcodec.Chunk{{From: 100, Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("golden chunk (-want +got):\n%s", d)
	}
}

// FuzzDecodeMessage: no input makes the decoder panic, and whatever it
// accepts encodes and decodes back to the same message.
func FuzzDecodeMessage(f *testing.F) {
	for _, tc := range codecCases {
		data, err := msgcodec.EncodeMessage(tc.m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{0x01, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := msgcodec.DecodeMessage(data)
		if err != nil {
			return
		}
		enc, err := msgcodec.EncodeMessage(m)
		if err != nil {
			return // JSON the decoder took but the encoder refuses (a bad extra)
		}
		again, err := msgcodec.DecodeMessage(enc)
		if err != nil {
			t.Fatalf("re-encoded message refused: %v\n%q", err, enc)
		}
		if d := cmp.Diff(m, again); d != "" && data[0] != '{' {
			t.Fatalf("round trip changed the message:\n%s", d)
		}
	})
}

// FuzzMessages: arbitrary chunk bytes and ranges never panic, and what
// comes back has exactly the length the ranges ask for.
func FuzzMessages(f *testing.F) {
	f.Add(msgcodec.AppendChunk(nil, user("a"), user("b")), int64(0), int64(2))
	f.Add([]byte{3, 0x01, 0, 0}, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, data []byte, from, to int64) {
		if to-from > 1<<16 || to < from || from < 0 {
			return
		}
		msgs, err := msgcodec.Messages([]msgcodec.Range{{From: from, To: to}}, []msgcodec.Chunk{{From: 0, Data: data}})
		if err == nil && int64(len(msgs)) != to-from {
			t.Fatalf("%d messages for the range %d..%d", len(msgs), from, to)
		}
		// Cutting the chunk to the range keeps exactly the entries in it.
		entries, err := msgcodec.ChunkEntries(data)
		if err != nil {
			return
		}
		parts, err := msgcodec.TrimChunk(msgcodec.Chunk{From: 0, Data: data}, []msgcodec.Range{{From: from, To: to}})
		if err != nil {
			t.Fatalf("TrimChunk refused a chunk ChunkEntries read: %v", err)
		}
		kept := 0
		for _, p := range parts {
			pe, err := msgcodec.ChunkEntries(p.Data)
			if err != nil {
				t.Fatalf("a part does not split: %v", err)
			}
			for i, e := range pe {
				if want := entries[p.From+int64(i)]; string(e) != string(want) {
					t.Fatalf("part entry %d differs", p.From+int64(i))
				}
			}
			kept += len(pe)
		}
		if want := max(0, min(to, int64(len(entries)))-from); int64(kept) != want {
			t.Fatalf("kept %d entries of %d for %d..%d", kept, len(entries), from, to)
		}
	})
}

// BenchmarkDecodeMessages compares the compact form with JSON on 20,000
// messages of a tool-using thread.
func BenchmarkDecodeMessages(b *testing.B) {
	var entries, jsons [][]byte
	for i := range 10000 {
		call := llm.ToolCall{ID: "call_" + itoa(int64(i)), Name: "fetch", Args: json.RawMessage(`{"url":"https://example.com/page/` + itoa(int64(i)) + `"}`)}
		for _, m := range []llm.Message{
			{Role: llm.RoleAssistant, Content: "Fetching the next page.", ToolCalls: []llm.ToolCall{call}},
			{Role: llm.RoleTool, ToolCallID: call.ID, Name: "fetch", Content: strings.Repeat("line of a fetched page. ", 3)},
		} {
			e, _ := msgcodec.EncodeMessage(m)
			entries = append(entries, e)
			j, _ := json.Marshal(m)
			jsons = append(jsons, j)
		}
	}
	for name, es := range map[string][][]byte{"compact": entries, "json": jsons} {
		b.Run(name, func(b *testing.B) {
			var chunks []msgcodec.Chunk
			for i := 0; i < len(es); i += 100 {
				chunks = append(chunks, msgcodec.Chunk{From: int64(i), Data: msgcodec.AppendChunk(nil, es[i:i+100]...)})
			}
			for b.Loop() {
				msgs, err := msgcodec.Messages([]msgcodec.Range{{From: 0, To: int64(len(es))}}, chunks)
				if err != nil || len(msgs) != len(es) {
					b.Fatal(err)
				}
			}
		})
	}
}

// Ranges that ask for more messages than the chunks hold, as a damaged or
// forged record may (up to overflowing their sum), are an error matching
// ErrDamaged, with no room made for what they ask.
func TestMessagesBeyondTheChunks(t *testing.T) {
	chunks := []msgcodec.Chunk{{From: 0, To: 1 << 40, Data: msgcodec.AppendChunk(nil, user("a"), user("b"))}}
	for _, want := range [][]msgcodec.Range{
		{{From: 0, To: 1 << 40}},
		{{From: 0, To: 1<<62 + 1}, {From: 0, To: 1<<62 + 1}},
		{{From: 1, To: 3}},
	} {
		_, err := msgcodec.Messages(want, chunks)
		if !errors.Is(err, ckerr.ErrDamaged) {
			t.Errorf("%v: %v, want an error matching ErrDamaged", want, err)
		}
	}
	if msgs, err := msgcodec.Messages([]msgcodec.Range{{From: 0, To: 2}}, chunks); err != nil || len(msgs) != 2 {
		t.Errorf("the messages there: %v %v", msgs, err)
	}
}

// FuzzMessagesRecordedBounds: chunks whose recorded end (To, read from the
// database) says anything, and ranges of any size, never panic, hang or
// make room for messages the chunks do not hold; what comes back has the
// length the range asks for.
func FuzzMessagesRecordedBounds(f *testing.F) {
	f.Add(msgcodec.AppendChunk(nil, user("a"), user("b")), int64(0), int64(2), int64(2))
	f.Add(msgcodec.AppendChunk(nil, user("a"), user("b")), int64(0), int64(1<<40), int64(1<<40))
	f.Add(msgcodec.AppendChunk(nil, user("a")), int64(1), int64(3), int64(5))
	f.Fuzz(func(t *testing.T, data []byte, from, to, chunkTo int64) {
		if to < from || from < 0 {
			return
		}
		msgs, err := msgcodec.Messages([]msgcodec.Range{{From: from, To: to}}, []msgcodec.Chunk{{From: 0, To: chunkTo, Data: data}})
		if err == nil && int64(len(msgs)) != to-from {
			t.Fatalf("%d messages for the range %d..%d", len(msgs), from, to)
		}
		if err != nil && !errors.Is(err, ckerr.ErrDamaged) {
			t.Fatalf("an error that does not say the data is damaged: %v", err)
		}
	})
}
