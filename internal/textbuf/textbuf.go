// Package textbuf is a text buffer that grows in chunks of 64 KiB. A long
// text built from many pieces (a streamed model response) is then never
// copied into ever larger arrays as it grows: the memory it holds stays
// close to its length, and the garbage it leaves is small pieces the
// runtime reuses, not arrays of megabytes that a process keeps resident.
package textbuf

import "strings"

// chunkSize is the size of every chunk but the first, which grows to it.
const chunkSize = 64 << 10

// Buffer accumulates text. The zero value is empty and ready to use.
type Buffer struct {
	chunks [][]byte
	n      int
}

// WriteString appends s.
func (b *Buffer) WriteString(s string) {
	b.n += len(s)
	if k := len(b.chunks); k > 0 {
		last := &b.chunks[k-1]
		if room := chunkSize - len(*last); room > 0 {
			m := min(room, len(s))
			*last = append(*last, s[:m]...)
			s = s[m:]
		}
	}
	for len(s) > 0 {
		m := min(chunkSize, len(s))
		var c []byte
		if len(b.chunks) == 0 {
			c = append([]byte(nil), s[:m]...) // a short text stays short
		} else {
			c = append(make([]byte, 0, chunkSize), s[:m]...)
		}
		b.chunks = append(b.chunks, c)
		s = s[m:]
	}
}

// Len is the length of the text in bytes.
func (b *Buffer) Len() int { return b.n }

// String returns the text (one allocation of its length).
func (b *Buffer) String() string {
	switch len(b.chunks) {
	case 0:
		return ""
	case 1:
		return string(b.chunks[0])
	}
	var s strings.Builder
	s.Grow(b.n)
	for _, c := range b.chunks {
		s.Write(c)
	}
	return s.String()
}

// Reset empties the buffer.
func (b *Buffer) Reset() { *b = Buffer{} }
