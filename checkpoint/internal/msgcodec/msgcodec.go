// Package msgcodec is how the checkpoint savers store messages: one
// entry per message, in a compact binary form or as JSON, joined into
// chunks of consecutive sequence numbers.
package msgcodec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/deepagents-go/deepagents/checkpoint/internal/ckerr"
	"github.com/deepagents-go/deepagents/llm"
)

// Stored messages.
//
// A message is stored as an entry that says how it is encoded by its first
// byte: '{' starts the JSON of llm.Message (what the first savers wrote, and
// still the form of messages with parts or provider extras); compactV1 starts
// a compact binary form of the common fields (role, text, tool calls and
// their results), which decodes about twenty times faster than JSON. Long
// threads are read back whole on every resume, so decoding speed matters.
//
// Savers may keep entries one per row or join them into chunks: a chunk is a
// run of entries with consecutive sequence numbers, each preceded by its
// length as a uvarint, so that joining two chunks is joining their bytes.

// compactV1 is the first byte of a message in the compact form:
//
//	0x01 role content tool_call_id name is_error(1 byte) ncalls {id name args}
//
// where every string is a uvarint length and its bytes, and args is a uvarint
// holding 0 for nil arguments or 1 + their length, followed by the bytes.
const compactV1 = 0x01

// MaxMessageSize caps one stored message entry the decoder accepts.
const MaxMessageSize = 64 << 20

// compactFields says whether the compact form covers every field of
// llm.Message and llm.ToolCall. A field added to either type later makes it
// false until the codec learns the field, so that nothing is lost: every
// message then goes through JSON.
var compactFields = func() bool {
	var names []string
	for f := range reflect.TypeFor[llm.Message]().Fields() {
		names = append(names, f.Name)
	}
	var call []string
	for f := range reflect.TypeFor[llm.ToolCall]().Fields() {
		call = append(call, f.Name)
	}
	return fmt.Sprint(names) == "[Role Content ToolCalls ToolCallID Name IsError Parts Extra]" &&
		fmt.Sprint(call) == "[ID Name Args]"
}()

// EncodeMessage returns the stored entry of one message: the compact form
// when it holds all of the message, else JSON.
func EncodeMessage(m llm.Message) ([]byte, error) {
	if !compactFields || len(m.Parts) > 0 || len(m.Extra) > 0 {
		data, err := json.Marshal(m)
		if err != nil {
			return nil, ckerr.Invalidf("a message does not encode: %v", err)
		}
		return data, nil
	}
	n := 1 + 4*binary.MaxVarintLen64 + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name) + 1 + binary.MaxVarintLen64
	for _, c := range m.ToolCalls {
		n += 3*binary.MaxVarintLen64 + len(c.ID) + len(c.Name) + len(c.Args)
	}
	b := make([]byte, 0, n)
	b = append(b, compactV1)
	b = appendString(b, string(m.Role))
	b = appendString(b, m.Content)
	b = appendString(b, m.ToolCallID)
	b = appendString(b, m.Name)
	if m.IsError {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		b = appendString(b, c.ID)
		b = appendString(b, c.Name)
		if c.Args == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(c.Args))+1)
			b = append(b, c.Args...)
		}
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// DecodeMessage decodes one stored entry (compact or JSON).
func DecodeMessage(data []byte) (llm.Message, error) {
	if len(data) > 0 && data[0] == compactV1 {
		return decodeCompact(string(data), nil, nil)
	}
	return decodeJSONMessage(data)
}

func decodeJSONMessage(data []byte) (llm.Message, error) {
	var m llm.Message
	if len(data) == 0 || data[0] != '{' {
		return m, errors.New("stored message is in an unknown encoding")
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return llm.Message{}, err
	}
	return m, nil
}

// decodeCompact decodes a compact entry held in s. Its strings are slices of
// s, so one conversion of a whole chunk serves all of its messages. When b
// holds the same bytes as s, tool-call arguments are slices of b (capped, so
// an append copies) instead of copies; calls, when given, is a block the
// message's tool calls are carved from.
func decodeCompact(s string, b []byte, calls *[]llm.ToolCall) (llm.Message, error) {
	d := reader{s: s, i: 1}
	var m llm.Message
	m.Role = llm.Role(d.str())
	m.Content = d.str()
	m.ToolCallID = d.str()
	m.Name = d.str()
	switch d.byte() {
	case 0:
	case 1:
		m.IsError = true
	default:
		d.fail()
	}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(s)-d.i)/3 { // each call takes at least 3 bytes
		d.fail()
	}
	if d.err == nil && n > 0 {
		if calls != nil && n <= 64 {
			if uint64(cap(*calls)-len(*calls)) < n {
				*calls = make([]llm.ToolCall, 0, 256)
			}
			k := len(*calls)
			*calls = (*calls)[:k+int(n)]
			m.ToolCalls = (*calls)[k : k+int(n) : k+int(n)]
		} else {
			m.ToolCalls = make([]llm.ToolCall, n)
		}
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			c.ID = d.str()
			c.Name = d.str()
			if a := d.uvarint(); a > 0 {
				if b != nil {
					start := d.i
					d.take(a - 1)
					if d.err == nil {
						c.Args = json.RawMessage(b[start:d.i:d.i])
					}
				} else {
					c.Args = json.RawMessage(d.bytes(a - 1))
				}
			}
		}
	}
	if d.err == nil && d.i != len(s) {
		d.fail()
	}
	if d.err != nil {
		return llm.Message{}, d.err
	}
	return m, nil
}

type reader struct {
	s   string
	i   int
	err error
}

var errCorrupt = errors.New("stored message is truncated or corrupt")

func (d *reader) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.i = len(d.s)
}

func (d *reader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	var x uint64
	var shift uint
	for k := 0; k < binary.MaxVarintLen64; k++ {
		if d.i >= len(d.s) {
			break
		}
		b := d.s[d.i]
		d.i++
		if b < 0x80 {
			if k == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			return x | uint64(b)<<shift
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	d.fail()
	return 0
}

func (d *reader) take(n uint64) string {
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.s)-d.i) {
		d.fail()
		return ""
	}
	s := d.s[d.i : d.i+int(n)]
	d.i += int(n)
	return s
}

func (d *reader) str() string { return d.take(d.uvarint()) }

func (d *reader) bytes(n uint64) []byte {
	s := d.take(n)
	if d.err != nil {
		return nil
	}
	return []byte(s)
}

func (d *reader) byte() byte {
	if d.err != nil || d.i >= len(d.s) {
		d.fail()
		return 0
	}
	b := d.s[d.i]
	d.i++
	return b
}

// AppendChunk appends entries to the chunk dst, each preceded by its length.
func AppendChunk(dst []byte, entries ...[]byte) []byte {
	for _, e := range entries {
		dst = binary.AppendUvarint(dst, uint64(len(e)))
		dst = append(dst, e...)
	}
	return dst
}

// ChunkEntries splits a chunk into its entries (slices of chunk).
func ChunkEntries(chunk []byte) ([][]byte, error) {
	var out [][]byte
	for len(chunk) > 0 {
		n, k := binary.Uvarint(chunk)
		if k <= 0 || n > MaxMessageSize || n > uint64(len(chunk)-k) {
			return nil, errCorrupt
		}
		out = append(out, chunk[k:k+int(n)])
		chunk = chunk[k+int(n):]
	}
	return out, nil
}

// Range is the half-open range [From, To) of message sequence numbers.
type Range struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Len is the number of messages in r.
func (r Range) Len() int64 { return r.To - r.From }

// Chunk is a stored run of messages: From is the sequence number of its
// first entry, To the number after its last (0 when not known), Data the
// entries (see AppendChunk).
type Chunk struct {
	From, To int64
	Data     []byte
}

// Messages decodes the messages numbered in want from chunks, which must be
// sorted by From, hold consecutive numbers each and may hold messages
// outside want. It fails when a message of want is missing. The messages
// share memory with the chunks' Data, which must not change afterwards.
func Messages(want []Range, chunks []Chunk) ([]llm.Message, error) {
	// Room for the messages asked for, but never more than the chunks
	// hold: the ranges come from a record, which a damaged or forged
	// database may make as large as it likes (a missing message is an
	// error below).
	total, have := int64(0), int64(0)
	for _, r := range want {
		total += max(r.Len(), 0)
	}
	for _, c := range chunks {
		have += chunkEntryCount(c.Data) // not c.To: a number read from the database
	}
	if total < 0 || total > have {
		total = have
	}
	out := make([]llm.Message, 0, total)
	var calls []llm.ToolCall
	ci := 0
	for _, r := range want {
		next := r.From
		for next < r.To {
			// Skip chunks that end before next.
			for ci < len(chunks) && chunkEnd(chunks[ci]) <= next {
				ci++
			}
			if ci >= len(chunks) || chunks[ci].From > next {
				return nil, ckerr.Damagedf("messages %d..%d are missing", next, r.To)
			}
			var err error
			was := next
			out, next, err = decodeChunk(out, &calls, chunks[ci], next, r.To)
			if err != nil {
				return nil, ckerr.Damagedf("message chunk from %d: %w", chunks[ci].From, err)
			}
			if next <= was {
				// The chunk was said to hold message was, and does not.
				return nil, ckerr.Damagedf("message chunk from %d ends before message %d, which it was recorded to hold", chunks[ci].From, was)
			}
		}
	}
	return out, nil
}

// chunkEnd is the number after the last message of c, counted without
// decoding when not given; a corrupt chunk counts as far as it can be read.
func chunkEnd(c Chunk) int64 {
	if c.To > c.From {
		return c.To
	}
	return c.From + chunkEntryCount(c.Data)
}

// chunkEntryCount counts the entries of a chunk's data without decoding
// them, as far as it can be read.
func chunkEntryCount(data []byte) int64 {
	n := int64(0)
	for len(data) > 0 {
		l, k := binary.Uvarint(data)
		if k <= 0 || l > uint64(len(data)-k) {
			break
		}
		data = data[k+int(l):]
		n++
	}
	return n
}

// decodeChunk appends the messages of c numbered from `from` up to (not
// including) `to` and returns the number after the last one appended.
func decodeChunk(dst []llm.Message, calls *[]llm.ToolCall, c Chunk, from, to int64) ([]llm.Message, int64, error) {
	s := ""
	seq := c.From
	data := c.Data
	for len(data) > 0 && seq < to {
		l, k := binary.Uvarint(data)
		if k <= 0 || l > uint64(len(data)-k) {
			return dst, seq, errCorrupt
		}
		e := data[k : k+int(l)]
		data = data[k+int(l):]
		if seq >= from {
			var m llm.Message
			var err error
			if len(e) > 0 && e[0] == compactV1 {
				if s == "" {
					s = string(c.Data) // one copy shared by the chunk's strings
				}
				off := len(c.Data) - len(data) - len(e)
				m, err = decodeCompact(s[off:off+len(e)], c.Data[off:off+len(e)], calls)
			} else {
				m, err = decodeJSONMessage(e)
			}
			if err != nil {
				return dst, seq, fmt.Errorf("message %d: %w", seq, err)
			}
			dst = append(dst, m)
		}
		seq++
	}
	return dst, seq, nil
}

// TrimChunk returns the parts of chunk c that hold messages in keep (sorted,
// disjoint ranges), as chunks of their own; a chunk wholly kept comes back
// as it is.
func TrimChunk(c Chunk, keep []Range) ([]Chunk, error) {
	entries, err := ChunkEntries(c.Data)
	if err != nil {
		return nil, err
	}
	end := c.From + int64(len(entries))
	var out []Chunk
	for _, r := range keep {
		from, to := max(r.From, c.From), min(r.To, end)
		if from >= to {
			continue
		}
		if from == c.From && to == end {
			return []Chunk{c}, nil
		}
		out = append(out, Chunk{From: from, Data: AppendChunk(nil, entries[from-c.From:to-c.From]...)})
	}
	return out, nil
}
