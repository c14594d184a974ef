package offload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/tokens"
)

// Very long texts: ordinary text is judged by a prefix (and reported as
// "over N tokens"); text that packs many bytes into few tokens is counted in
// full, so the threshold stays exact.
func TestMeasureVeryLongTexts(t *testing.T) {
	defer func(v int) { exactBelow = v }(exactBelow)
	exactBelow = 4096

	spaces := strings.Repeat(" ", 100000)
	n := tokens.Count(tokens.O200k, spaces)
	if n*2*prefixBytesPerToken >= len(spaces) {
		t.Fatalf("%d spaces are %d tokens; the test needs a text of few tokens", len(spaces), n)
	}
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "row %d: alpha beta gamma delta epsilon\n", i)
	}
	prose := b.String()
	cases := []struct {
		name  string
		text  string
		limit int
		over  bool
		shown string
	}{
		{"compressible, at the threshold", spaces, n, false, fmt.Sprintf("%d tokens", n)},
		{"compressible, one over", spaces, n - 1, true, fmt.Sprintf("%d tokens", n)},
		{"prose far over: judged by a prefix", prose, 500, true, "over "},
		{"short: not counted", "tiny", 500, false, "0 tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := measureText(c.text, c.limit)
			if m.over(c.limit) != c.over {
				t.Errorf("over = %v, want %v (%+v)", m.over(c.limit), c.over, m)
			}
			if s := m.String(); !strings.HasPrefix(s, c.shown) {
				t.Errorf("shown as %q, want %q...", s, c.shown)
			}
			if !m.exact {
				if full := tokens.Count(tokens.O200k, c.text); m.n >= full {
					t.Errorf("claims over %d tokens but the text has %d", m.n, full)
				}
			}
		})
	}
}
