package sandbox

import (
	"strings"
	"testing"
)

func TestCapped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		writes  []string
		want    string
		omitted int64
	}{
		{"under the cap", 10, []string{"abc", "def"}, "abcdef", 0},
		{"exactly the cap", 6, []string{"abc", "def"}, "abcdef", 0},
		{"one write over", 6, []string{"abcdefgh"}, "abc\n[... 2 bytes of output omitted ...]\nfgh", 2},
		{"many small writes", 4, []string{"1", "2", "3", "4", "5", "6", "7"}, "12\n[... 3 bytes of output omitted ...]\n67", 3},
		{"tail wraps twice", 4, []string{"ab", "cde", "fgh", "ij"}, "ab\n[... 6 bytes of output omitted ...]\nij", 6},
		{"head ends a line", 6, []string{"ab\n", "xxxxxx", "yz\n"}, "ab\n[... 6 bytes of output omitted ...]\nyz\n", 6},
		{"odd cap", 5, []string{"abcdefghij"}, "ab\n[... 5 bytes of output omitted ...]\nhij", 5},
		{"cut inside a character", 4, []string{"é", "xxxx", "é"}, "\xc3\xa9\n[... 4 bytes of output omitted ...]\n\xc3\xa9", 4},
		{"cut splits a character", 4, []string{"aé", "xxxx", "éb"}, "a\uFFFD\n[... 6 bytes of output omitted ...]\n\uFFFDb", 6},
		{"nothing", 4, nil, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapped(tc.max)
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			got, omitted := c.text()
			if got != tc.want || omitted != tc.omitted {
				t.Errorf("text() = %q, %d; want %q, %d", got, omitted, tc.want, tc.omitted)
			}
		})
	}
}

// The kept text is always the first and last bytes of what was written,
// whatever the sizes of the writes.
func TestCappedMatchesWhole(t *testing.T) {
	whole := strings.Repeat("0123456789abcdefghij", 50)
	for _, max := range []int{1, 2, 7, 64, 999, 1000, 2000} {
		for _, chunk := range []int{1, 3, 17, 256, 1000} {
			c := newCapped(max)
			for i := 0; i < len(whole); i += chunk {
				c.Write([]byte(whole[i:min(i+chunk, len(whole))]))
			}
			got, omitted := c.text()
			if len(whole) <= max {
				if got != whole || omitted != 0 {
					t.Fatalf("max %d chunk %d: %q", max, chunk, got)
				}
				continue
			}
			h := max / 2
			if omitted != int64(len(whole)-max) {
				t.Fatalf("max %d chunk %d: omitted %d", max, chunk, omitted)
			}
			head, tail, ok := strings.Cut(got, "[... ")
			_, tail, _ = strings.Cut(tail, "...]\n")
			if !ok || strings.TrimSuffix(head, "\n") != whole[:h] || tail != whole[len(whole)-(max-h):] {
				t.Fatalf("max %d chunk %d: %q", max, chunk, got)
			}
		}
	}
}
