package scenario

import (
	"strings"
	"testing"

	compaction "github.com/deepagents-go/deepagents/compact"
)

func TestCompactionSetting(t *testing.T) {
	base := `{"input": "hi", "script": {"parent": [{"content": "ok"}]}, "agent": %s}`
	for _, tc := range []struct {
		agent string
		want  *Compaction
		err   string
	}{
		{`{}`, nil, ""},
		{`{"compaction": false}`, &Compaction{Off: true}, ""},
		{`{"compaction": true}`, &Compaction{}, ""},
		{`{"compaction": {"trigger_tokens": 900, "keep_messages": 3, "tool": true}}`, &Compaction{TriggerTokens: 900, KeepMessages: 3, Tool: true}, ""},
		{`{"compaction": {"trigger_tokens": -1}}`, nil, "1:103: agent.compaction.trigger_tokens must not be negative"},
		{`{"compaction": "on"}`, nil, `agent.compaction must be false, true or {"trigger_tokens": N, "keep_messages": M}, not a string`},
		{`{"compaction": {"trigger_tokens": "9"}}`, nil, "trigger_tokens"},
		{`{"context_window": -5}`, nil, "agent.context_window must not be negative"},
		{`{"subagents": [{"name": "r", "description": "d", "compaction": {"keep_messages": -2}}]}`, nil, "agent.subagents[0].compaction.keep_messages must not be negative"},
	} {
		s, err := Parse([]byte(strings.Replace(base, "%s", tc.agent, 1)))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.agent, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.agent, err)
		}
		got := s.Agent.Compaction
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: %+v, want %+v", tc.agent, got, tc.want)
		}
	}
	s, err := Parse([]byte(`{"input": "hi", "script": {"parent": [{"content": "ok"}]}, "agent": {"compaction": {"keep_messages": 2, "extra": 1}}}`))
	if err != nil || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], `unknown key "extra"`) {
		t.Fatalf("warnings %q, %v", s.Warnings, err)
	}
}

// The transcript shows input_tokens and compacted only when the scenario
// manages its context.
func TestRoundsShowInputTokensOnlyWithCompaction(t *testing.T) {
	for _, tc := range []struct {
		agent string
		shown bool
	}{{`{}`, false}, {`{"context_window": 200000}`, true}, {`{"compaction": false}`, true}} {
		s, err := Parse([]byte(`{"input": "hi", "script": {"parent": [{"content": "ok"}]}, "agent": ` + tc.agent + `}`))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := s.Run(t.Context())
		if err != nil || tr.Error != nil {
			t.Fatalf("%v %v", err, tr.Error)
		}
		r := tr.Rounds[0]
		if (r.Compacted != nil) != tc.shown || tc.shown && (r.InputTokens < 100 || *r.Compacted) {
			t.Errorf("%s: round %+v", tc.agent, r)
		}
	}
}

// A summariser that fails three times in a row ends the run with a clear
// error; every failure is in the events and no message is lost.
func TestFailingSummarizerEndsTheRun(t *testing.T) {
	s, err := Load("testdata/compaction-failing-summarizer.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status != "error" || tr.Error == nil || !strings.Contains(*tr.Error, "compaction failed: the summariser failed 3 times in a row") {
		t.Fatalf("status %s, error %v", tr.Status, tr.Error)
	}
	for _, c := range tr.Checks {
		if !c.Pass {
			t.Errorf("check %s failed (got %v)", c.Name, c.Got)
		}
	}
	failures := 0
	for _, e := range tr.Events {
		if info, ok := compaction.InfoOf(e); ok && e.Type == "compaction.end" && strings.Contains(info.Error, "summariser service unavailable") {
			failures++
		}
	}
	if failures != 3 {
		t.Fatalf("%d failed compactions in the events", failures)
	}
}
