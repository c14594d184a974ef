package compact_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/compact"
)

// A compaction event's JSON has its payload under "compaction", after the
// fields every event has, and reads back to the same payload and bytes.
func TestCompactionEventJSON(t *testing.T) {
	ev := agent.Event{Type: compact.EventEnd, Agent: agent.RootPath("parent"), Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Payload: &agent.Payload{Key: "compaction", Value: &compact.Info{Trigger: "auto", TokensBefore: 10, TokensAfter: 5,
			Cutoff: 3, Evicted: 2, File: "/conversation_history/s.md", SummarizerCalls: 1, Verbatim: []string{"<a&b>"}}}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"compaction.end","agent":"parent","time":"2026-01-02T03:04:05Z","compaction":{"trigger":"auto",` +
		`"tokens_before":10,"tokens_after":5,"cutoff":3,"evicted":2,"file":"/conversation_history/s.md","summarizer_calls":1,` +
		`"verbatim":["\u003ca\u0026b\u003e"]}}`
	if string(b) != want {
		t.Fatalf("JSON\n%s\nwant\n%s", b, want)
	}
	var back agent.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	info, ok := compact.InfoOf(back)
	if !ok || info.Cutoff != 3 || info.Verbatim[0] != "<a&b>" {
		t.Fatalf("read back: %+v %v", info, ok)
	}
	again, err := json.Marshal(back)
	if err != nil || string(again) != want {
		t.Fatalf("written again:\n%s\n%v", again, err)
	}
	if _, ok := compact.InfoOf(agent.Event{Type: agent.Notice, Notice: &agent.NoticeInfo{Text: "x"}}); ok {
		t.Error("a notice read as a compaction")
	}
}
