package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/engine"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/google/go-cmp/cmp"
)

// chunkStore keeps the message chunks of threads in memory: the part of
// engine.Writer that packing and trimming use (the rest is left nil and
// panics when called).
type chunkStore struct {
	engine.Writer
	chunks map[string][]storedChunk // by thread, sorted by From
	packs  []engine.Pack
}

type storedChunk struct {
	c      msgcodec.Chunk
	packed bool
}

func (s *chunkStore) put(thread string, c msgcodec.Chunk, packed bool) {
	if s.chunks == nil {
		s.chunks = map[string][]storedChunk{}
	}
	s.chunks[thread] = append(s.chunks[thread], storedChunk{c, packed})
	slices.SortFunc(s.chunks[thread], func(a, b storedChunk) int { return int(a.c.From - b.c.From) })
}

func (s *chunkStore) find(thread string, from int64) int {
	for i, sc := range s.chunks[thread] {
		if sc.c.From == from {
			return i
		}
	}
	return -1
}

func (s *chunkStore) Unpacked(_ context.Context, thread, _ string) ([]msgcodec.Chunk, error) {
	var out []msgcodec.Chunk
	for _, sc := range s.chunks[thread] {
		if sc.packed {
			out = out[:0]
			continue
		}
		out = append(out, sc.c)
	}
	return out, nil
}

func (s *chunkStore) WritePacks(_ context.Context, thread, _ string, packs []engine.Pack) error {
	s.packs = append(s.packs, packs...)
	for _, p := range packs {
		kept := s.chunks[thread][:0]
		for _, sc := range s.chunks[thread] {
			if p.Chunks > 1 && sc.c.From >= p.From && sc.c.From < p.To {
				continue
			}
			if sc.c.From == p.From {
				sc.packed = true
			}
			kept = append(kept, sc)
		}
		s.chunks[thread] = kept
		if p.Chunks > 1 {
			s.put(thread, msgcodec.Chunk{From: p.From, To: p.To, Data: p.Data}, true)
		}
	}
	return nil
}

func (s *chunkStore) Spans(_ context.Context, thread, _ string) ([]checkpoint.Range, error) {
	var out []checkpoint.Range
	for _, sc := range s.chunks[thread] {
		out = append(out, checkpoint.Range{From: sc.c.From, To: sc.c.To})
	}
	return out, nil
}

func (s *chunkStore) ChunkData(_ context.Context, thread, _ string, from int64) ([]byte, error) {
	if i := s.find(thread, from); i >= 0 {
		return s.chunks[thread][i].c.Data, nil
	}
	return nil, fmt.Errorf("no chunk at %d", from)
}

func (s *chunkStore) CopyChunk(_ context.Context, thread, _ string, from int64, dst string) error {
	i := s.find(thread, from)
	if i < 0 {
		return fmt.Errorf("no chunk at %d", from)
	}
	s.put(dst, s.chunks[thread][i].c, s.chunks[thread][i].packed)
	return nil
}

func (s *chunkStore) DeleteChunk(_ context.Context, thread, _ string, from int64) error {
	i := s.find(thread, from)
	if i < 0 {
		return fmt.Errorf("no chunk at %d", from)
	}
	s.chunks[thread] = slices.Delete(s.chunks[thread], i, i+1)
	return nil
}

func (s *chunkStore) InsertChunk(_ context.Context, thread, _ string, c msgcodec.Chunk, packed bool) error {
	s.put(thread, c, packed)
	return nil
}

// entries returns a chunk of messages from..to-1, each entry "m<n>".
func entries(from, to int64) msgcodec.Chunk {
	var msgs [][]byte
	for n := from; n < to; n++ {
		msgs = append(msgs, fmt.Appendf(nil, "m%d", n))
	}
	return msgcodec.Chunk{From: from, To: to, Data: msgcodec.AppendChunk(nil, msgs...)}
}

// layout describes a thread's chunks as "from-to:entries" (with a "p"
// after packed ones), checking that each chunk holds to-from entries.
func layout(t *testing.T, s *chunkStore, thread string) []string {
	t.Helper()
	var out []string
	for _, sc := range s.chunks[thread] {
		es, err := msgcodec.ChunkEntries(sc.c.Data)
		if err != nil {
			t.Fatalf("chunk from %d: %v", sc.c.From, err)
		}
		if int64(len(es)) != sc.c.To-sc.c.From {
			t.Errorf("chunk %d-%d holds %d entries", sc.c.From, sc.c.To, len(es))
		}
		d := fmt.Sprintf("%d-%d:%s", sc.c.From, sc.c.To, bytes.Join(es, []byte(",")))
		if sc.packed {
			d += " p"
		}
		out = append(out, d)
	}
	return out
}

func TestPackChunks(t *testing.T) {
	// Packing joins bytes without reading them: big fills a pack with the
	// 6 bytes of entries(5, 7) exactly.
	big := msgcodec.Chunk{From: 7, To: 8, Data: bytes.Repeat([]byte("x"), engine.MaxPack-6)}
	tests := []struct {
		name   string
		chunks []msgcodec.Chunk
		packed int // how many of the first chunks are already packed
		want   []engine.Pack
	}{
		{name: "nothing unpacked", chunks: []msgcodec.Chunk{entries(0, 2)}, packed: 1},
		{
			name:   "one run after the last pack",
			chunks: []msgcodec.Chunk{entries(0, 2), entries(2, 3), entries(3, 5)},
			packed: 1,
			want:   []engine.Pack{{From: 2, To: 5, Chunks: 2, Data: entries(2, 5).Data}},
		},
		{
			name:   "a lone chunk is only marked",
			chunks: []msgcodec.Chunk{entries(0, 2)},
			want:   []engine.Pack{{From: 0, To: 2, Chunks: 1}},
		},
		{
			// A branch's messages are numbered after a gap: the runs on
			// either side pack apart.
			name:   "a gap splits runs",
			chunks: []msgcodec.Chunk{entries(0, 1), entries(1, 2), entries(5, 6), entries(6, 8)},
			want: []engine.Pack{
				{From: 0, To: 2, Chunks: 2, Data: entries(0, 2).Data},
				{From: 5, To: 8, Chunks: 2, Data: entries(5, 8).Data},
			},
		},
		{
			name:   "a pack stays under MaxPack",
			chunks: []msgcodec.Chunk{entries(5, 7), big, entries(8, 9), entries(9, 10)},
			want: []engine.Pack{
				{From: 5, To: 8, Chunks: 2, Data: append(entries(5, 7).Data, big.Data...)},
				{From: 8, To: 10, Chunks: 2, Data: entries(8, 10).Data},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &chunkStore{}
			for i, c := range tc.chunks {
				s.put("th", c, i < tc.packed)
			}
			if err := engine.PackChunks(context.Background(), s, "th", ""); err != nil {
				t.Fatal(err)
			}
			// Compared by length and equality: a diff of a 1 MiB pack is slow.
			sum := func(ps []engine.Pack) []string {
				var out []string
				for _, p := range ps {
					out = append(out, fmt.Sprintf("%d-%d of %d chunks, %d bytes", p.From, p.To, p.Chunks, len(p.Data)))
				}
				return out
			}
			if d := cmp.Diff(sum(tc.want), sum(s.packs)); d != "" {
				t.Errorf("packs (-want +got):\n%s", d)
			}
			for i := range min(len(tc.want), len(s.packs)) {
				if !bytes.Equal(tc.want[i].Data, s.packs[i].Data) {
					t.Errorf("pack %d holds other bytes than its chunks", i)
				}
			}
			for _, sc := range s.chunks["th"] {
				if !sc.packed {
					t.Errorf("chunk %d-%d is still unpacked", sc.c.From, sc.c.To)
				}
			}
		})
	}
}

func TestKeepMessages(t *testing.T) {
	tests := []struct {
		name     string
		keep     []checkpoint.Range
		dst      string
		wantSrc  []string
		wantDest []string
	}{
		{
			name:    "prune cuts and drops",
			keep:    []checkpoint.Range{{From: 1, To: 3}, {From: 4, To: 6}},
			wantSrc: []string{"1-3:m1,m2 p", "4-6:m4,m5"},
		},
		{
			name:    "prune of everything",
			wantSrc: nil,
		},
		{
			name:    "prune keeping a chunk's two ends",
			keep:    []checkpoint.Range{{From: 0, To: 1}, {From: 3, To: 5}},
			wantSrc: []string{"0-1:m0 p", "3-4:m3 p", "4-5:m4 p"},
		},
		{
			name:     "copy takes whole and cut chunks, leaves the source",
			keep:     []checkpoint.Range{{From: 2, To: 6}},
			dst:      "fork",
			wantSrc:  []string{"0-4:m0,m1,m2,m3 p", "4-6:m4,m5", "7-8:m7"},
			wantDest: []string{"2-4:m2,m3 p", "4-6:m4,m5"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &chunkStore{}
			s.put("th", entries(0, 4), true)
			s.put("th", entries(4, 6), false)
			s.put("th", entries(7, 8), false)
			if err := engine.KeepMessages(context.Background(), s, "th", "", tc.keep, tc.dst); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantSrc, layout(t, s, "th")); d != "" {
				t.Errorf("source chunks (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantDest, layout(t, s, tc.dst)); tc.dst != "" && d != "" {
				t.Errorf("copied chunks (-want +got):\n%s", d)
			}
		})
	}
}
