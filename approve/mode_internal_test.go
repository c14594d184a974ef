package approve

import (
	"testing"

	"github.com/deepagents-go/deepagents/llm/scripted"
)

// Call ids are unique only within an agent: the same id denied at two
// paths is two denials, and a person's decision that names no path counts
// no second time for a call already denied.
func TestDenialsAreCountedPerPath(t *testing.T) {
	s, err := NewSession(Auto, SessionOptions{Classifier: scripted.New(scripted.Script{}, scripted.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	s.deny(ModeEntry{Path: "parent", CallID: "call_0_0"}, "unsafe")
	s.deny(ModeEntry{Path: "parent / researcher#t1", CallID: "call_0_0"}, "unsafe")
	if got := s.Denials(); got != 2 {
		t.Fatalf("denials %d after one id was denied at two paths, want 2", got)
	}
	s.deny(ModeEntry{CallID: "call_0_0"}, "rejected")
	if got := s.Denials(); got != 2 {
		t.Fatalf("denials %d after a person's decision without a path on a call denied already, want 2", got)
	}
}
