package main

import (
	"strings"
	"testing"

	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

func TestCompactCommandParsing(t *testing.T) {
	for _, tc := range []struct {
		line, focus string
		ok          bool
	}{
		{"/compact", "", true},
		{"/compact   the port numbers ", "the port numbers", true},
		{"/compact\tdb schema", "db schema", true},
		{"/compacted", "", false},
		{"/context", "", false},
		{"compact", "", false},
	} {
		focus, ok := compactCommand(tc.line)
		if ok != tc.ok || focus != tc.focus {
			t.Errorf("compactCommand(%q) = %q, %v; want %q, %v", tc.line, focus, ok, tc.focus, tc.ok)
		}
	}
}

// /compact [focus] in an interactive session summarises the older messages
// with the focus in the summariser's input, says what it saved, and the
// next turn's request starts with the summary and the kept messages.
func TestInteractiveCompactCommand(t *testing.T) {
	srv := ot.NewServer(t, func(r *ot.Request) ot.Reply {
		if strings.HasPrefix(r.System(), "You compress") {
			return ot.Text("Summary: the user sent m1 to m3 and asked about port 8443.")
		}
		return ot.Text("ok " + r.Last().Text())
	})
	in := "/compact\nm1 port 8443\nm2\nm3\nm4\nm5\n/compact keep the port numbers\nm6\n/context\n/compact\n"
	code, out, errb := interactive(t, srv, in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := errb.String()
	if !strings.Contains(got, "Nothing to compact yet") {
		t.Errorf("/compact before any turn:\n%s", got)
	}
	// Five turns are ten messages; with the window unknown the last six
	// are kept, so four are summarised.
	if !strings.Contains(got, "Compacted: 4 earlier messages summarised; the conversation is about ") ||
		!strings.Contains(got, " tokens instead of ") || !strings.Contains(got, "Your next message continues from the summary.") {
		t.Errorf("what /compact saved:\n%s", got)
	}
	// The turn that recorded it counted the summariser's call; /context
	// shows it.
	if !strings.Contains(got, "Compaction in this session: 1 compaction(s), 1 summariser call(s) using ") {
		t.Errorf("/context after the compaction:\n%s", got)
	}
	if !strings.Contains(out.String(), "ok m6\n") {
		t.Errorf("answers:\n%s", out.String())
	}
	var sums, turns []*ot.Request
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.System(), "You compress") {
			sums = append(sums, r)
		} else {
			turns = append(turns, r)
		}
	}
	// The second /compact, after the turn that recorded the first,
	// summarises again with the first summary as its opening part.
	if len(sums) != 2 || !strings.Contains(sums[1].Last().Text(), "<previous_summary>\nSummary: the user sent m1") || !strings.Contains(sums[0].Last().Text(), "keep the port numbers") || !strings.Contains(sums[0].Last().Text(), "m1 port 8443") {
		t.Fatalf("summariser requests: %d, first: %+v", len(sums), sums)
	}
	if len(turns) != 6 {
		t.Fatalf("%d turn requests, want 6 (/compact made no turn)", len(turns))
	}
	last := turns[5]
	first := last.FirstUser()
	if !strings.HasPrefix(first, "[Conversation summary]") || !strings.Contains(first, "port 8443") {
		t.Fatalf("the turn after /compact does not start with the summary: %q", first)
	}
	users := 0
	for _, m := range last.Messages {
		if m.Role == "user" {
			users++
		}
	}
	// summary, m3, m4, m5, m6: the kept six messages hold three user turns.
	if users != 5 || strings.Contains(last.Messages[len(last.Messages)-1].Text(), "Summary") {
		t.Errorf("the compacted request has %d user messages, want 5", users)
	}
}

// Whatever line is typed, compactCommand never panics, matches only the
// /compact command (alone or followed by blank space), and returns trimmed
// focus text that is part of the line.
func FuzzCompactCommand(f *testing.F) {
	for _, s := range []string{"/compact", "/compact the db", "/compacted", "/compact\t\tx ", "/context", "", "/compact\u00a0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		focus, ok := compactCommand(line)
		if !ok {
			if focus != "" {
				t.Fatalf("focus %q for a line that is not /compact", focus)
			}
			return
		}
		if !strings.HasPrefix(line, "/compact") || focus != strings.TrimSpace(focus) || !strings.Contains(line, focus) {
			t.Fatalf("line %q gave focus %q", line, focus)
		}
		if rest := line[len("/compact"):]; rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			t.Fatalf("%q taken for /compact", line)
		}
	})
}
