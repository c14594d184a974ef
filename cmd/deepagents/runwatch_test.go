package main

import (
	"errors"
	"testing"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
)

// A run's watch passes PendingWrites on to a saver that has it, so that a
// resumed run reads its finished steps' writes at once, and says it is
// unsupported for one that has not, so that the run reads them with Get.
func TestRunWatchPassesPendingWritesOn(t *testing.T) {
	ctx := t.Context()
	mem := checkpoint.NewMemory(0)
	if err := mem.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := mem.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", ID: "a"}, checkpoint.Write{CallID: "c1", Result: llm.Message{Role: llm.RoleTool, Content: "done"}}); err != nil {
		t.Fatal(err)
	}
	got, err := (&runWatch{Saver: mem, thread: "th"}).PendingWrites(ctx, "th", "")
	if err != nil || len(got["a"]) != 1 || got["a"][0].Result.Content != "done" {
		t.Fatalf("through the watch: %+v, %v", got, err)
	}
	hidden := struct{ checkpoint.Saver }{mem}
	if _, err := (&runWatch{Saver: hidden, thread: "th"}).PendingWrites(ctx, "th", ""); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("a saver without PendingWrites: %v, want errors.ErrUnsupported", err)
	}
}
