package approve_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/approve"
)

// FuzzParseJudgement: any answer of the classifier is read as a verdict or
// refused, never a panic; a verdict always has a reason, on one line and
// capped.
func FuzzParseJudgement(f *testing.F) {
	for _, s := range []string{`{"safe": true, "reason": "reads"}`, "```json\n{\"safe\":false}\n```", `x {"safe": true, "reason": 3} y`, `{`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		j, err := approve.ParseJudgement(text)
		if err != nil {
			return
		}
		if j.Reason == "" || strings.ContainsAny(j.Reason, "\n\r") || len(j.Reason) > 600 {
			t.Fatalf("reason %q", j.Reason)
		}
		if utf8.ValidString(text) && !utf8.ValidString(j.Reason) {
			t.Fatalf("reason %q is not UTF-8", j.Reason)
		}
	})
}

// FuzzParseMode: a name is one of the four modes or refused, and a mode's
// own name reads back as itself.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"manual", "accept-edits", "Auto", "yolo", "bypassPermissions", "", "careful"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := approve.ParseMode(s)
		if err != nil {
			return
		}
		back, err := approve.ParseMode(string(m))
		if err != nil || back != m {
			t.Fatalf("ParseMode(%q) = %q, which reads back as %q, %v", s, m, back, err)
		}
	})
}
