package main

import (
	"fmt"
	"strings"
)

// termText is text from the model, a tool or a file as a terminal shows it:
// control characters (the escape that starts a terminal's commands — set
// the title, write the clipboard, move the cursor, clear the screen — a
// carriage return that writes over the line, a backspace), DEL, C1
// controls and invisible format characters (direction overrides,
// zero-width marks) are spelled as \uXXXX escapes, so that what such text
// holds is shown, never acted on, and what is shown is what is there.
// Newlines and tabs stay.
func termText(s string) string { return spellOut(s, unsafeOnTerminal) }

// spellOut writes the runes of s that unsafe picks as \uXXXX escapes.
func spellOut(s string, unsafe func(rune) bool) string {
	if !strings.ContainsFunc(s, unsafe) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafe(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unsafeOnTerminal says whether a terminal may act on r, or show nothing
// for it.
func unsafeOnTerminal(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || hidden(r)
}

// termError is an error whose text quotes a file the user did not write:
// its message is termText's, and it unwraps to the error as it was.
type termError struct{ err error }

func (e termError) Error() string { return termText(e.err.Error()) }
func (e termError) Unwrap() error { return e.err }
