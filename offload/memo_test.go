package offload

import (
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// Long user messages are measured once, not on every step; short ones are
// never measured.
func TestUserMessageMeasuredOnce(t *testing.T) {
	o := &offloader{cfg: Config{UserMessageTokens: 100}, memo: map[[32]byte]measure{}}
	long := strings.Repeat("a line of a long pasted document\n", 100)
	msgs := []llm.Message{llm.User("hi"), llm.User(long), llm.User(strings.Repeat("x", 100))}
	files := vfs.NewMemory(nil)
	for range 3 {
		req := &llm.Request{Messages: msgs}
		if err := o.beforeModel(t.Context(), agent.StepInfo{Files: files}, req); err != nil {
			t.Fatal(err)
		}
		if req.Messages[1].Content == long {
			t.Fatal("the long message was not offloaded")
		}
	}
	if len(o.memo) != 1 {
		t.Errorf("memo holds %d entries, want 1 (the long message only)", len(o.memo))
	}
	// Poison the memo: a message it says is short must be left alone, which
	// proves the memo (and not a fresh count) decides.
	for k := range o.memo {
		o.memo[k] = measure{n: 1, exact: true}
	}
	req := &llm.Request{Messages: msgs}
	if err := o.beforeModel(t.Context(), agent.StepInfo{Files: files}, req); err != nil {
		t.Fatal(err)
	}
	if req.Messages[1].Content != long {
		t.Error("the message was counted again instead of using the memo")
	}
}

func TestMemoIsBounded(t *testing.T) {
	o := &offloader{cfg: Config{UserMessageTokens: 5}, memo: map[[32]byte]measure{}}
	for i := range maxMemo + 10 {
		o.measure([32]byte{byte(i), byte(i >> 8)}, "some words that are long enough", 5)
	}
	if len(o.memo) > maxMemo {
		t.Errorf("memo grew to %d entries", len(o.memo))
	}
}
