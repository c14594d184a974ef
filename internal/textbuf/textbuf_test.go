package textbuf

import (
	"strings"
	"testing"
)

// Pieces of every size, across chunk boundaries, come back in order.
func TestBufferKeepsTheText(t *testing.T) {
	var b Buffer
	var want strings.Builder
	if b.String() != "" || b.Len() != 0 {
		t.Fatal("the zero buffer is not empty")
	}
	for i, n := range []int{0, 1, 7, chunkSize - 8, 3, chunkSize, 2*chunkSize + 5, 1, 0, 100} {
		s := strings.Repeat(string(rune('a'+i)), n)
		b.WriteString(s)
		want.WriteString(s)
		if b.Len() != want.Len() || b.String() != want.String() {
			t.Fatalf("after %d pieces: %d bytes, want %d", i+1, b.Len(), want.Len())
		}
	}
	for i, c := range b.chunks[:len(b.chunks)-1] {
		if len(c) != chunkSize {
			t.Errorf("chunk %d holds %d bytes, want %d", i, len(c), chunkSize)
		}
	}
	b.Reset()
	if b.String() != "" || b.Len() != 0 {
		t.Error("Reset left text")
	}
}

// A short text is not given a whole chunk.
func TestShortTextStaysSmall(t *testing.T) {
	var b Buffer
	b.WriteString("{}")
	if c := cap(b.chunks[0]); c > 64 {
		t.Errorf("a 2-byte text holds %d bytes", c)
	}
}

func FuzzBuffer(f *testing.F) {
	f.Add("hello", uint16(3))
	f.Add(strings.Repeat("x", 70000), uint16(65535))
	f.Fuzz(func(t *testing.T, s string, step uint16) {
		var b Buffer
		n := int(step)%len(s+"x") + 1
		for i := 0; i < len(s); i += n {
			b.WriteString(s[i:min(i+n, len(s))])
		}
		if b.String() != s || b.Len() != len(s) {
			t.Fatalf("got %d bytes back of %d", b.Len(), len(s))
		}
	})
}
