// Package checkpointtest is the conformance suite every checkpoint.Saver
// passes: call Run from a test with a function that returns a fresh, empty
// saver.
package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/google/go-cmp/cmp"
)

// Factory returns a new empty saver; Run closes it when the test ends.
type Factory func(t *testing.T) checkpoint.Saver

var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// Run runs the whole suite against savers made by newSaver.
func Run(t *testing.T, newSaver Factory) {
	open := func(t *testing.T) checkpoint.Saver {
		t.Helper()
		s := newSaver(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	tests := []struct {
		name string
		fn   func(*testing.T, checkpoint.Saver)
	}{
		{"RoundTrip", testRoundTrip},
		{"GetMissing", testGetMissing},
		{"InvalidInput", testInvalidInput},
		{"IdempotentPut", testIdempotentPut},
		{"IdempotentWrites", testIdempotentWrites},
		{"WritesPerCheckpoint", testWritesPerCheckpoint},
		{"PendingWrites", testPendingWrites},
		{"Ordering", testOrdering},
		{"ThreadIsolation", testThreadIsolation},
		{"Namespaces", testNamespaces},
		{"ListMatrix", testListMatrix},
		{"CarriedOverValues", testCarriedOverValues},
		{"FilesByHash", testFilesByHash},
		{"DeletedFiles", testDeletedFiles},
		{"LongHistory", testLongHistory},
		{"Branches", testBranches},
		{"DeleteThread", testDeleteThread},
		{"CopyThread", testCopyThread},
		{"CopyThreadKeepsEarlierNamespaces", testCopyThreadKeepsEarlierNamespaces},
		{"PruneKeepLast", testPruneKeepLast},
		{"PruneBefore", testPruneBefore},
		{"PruneKeepsSnapshotContents", testPruneKeepsSnapshotContents},
		{"PruneNamespaces", testPruneNamespaces},
		{"ManyFiles", testManyFiles},
		{"Leases", testLeases},
		{"Threads", testThreads},
		{"OddText", testOddText},
		{"Concurrency", testConcurrency},
		{"Cancelled", testCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func user(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: text} }
func assistant(text string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: text}
}

func file(content string, at time.Time) *vfs.File {
	return &vfs.File{Content: content, CreatedAt: at, ModifiedAt: at}
}

func cpID(i int) string { return fmt.Sprintf("cp-%05d", i) }

// chain puts n steps on thread/ns, each appending one assistant message
// "m<i>"; step i's id is cpID(i), its parent cpID(i-1).
func chain(t *testing.T, s checkpoint.Saver, thread, ns string, n int, edit func(i int, st *checkpoint.Step)) {
	t.Helper()
	for i := 1; i <= n; i++ {
		st := checkpoint.Step{
			ThreadID: thread, NS: ns, ID: cpID(i), Step: i,
			Messages: []llm.Message{assistant(fmt.Sprintf("m%d", i))},
			Status:   checkpoint.StatusRunning,
			Time:     t0.Add(time.Duration(i) * time.Second),
			Usage:    llm.Usage{InputTokens: 10, OutputTokens: 1},
		}
		if i > 1 {
			st.ParentID = cpID(i - 1)
		}
		if edit != nil {
			edit(i, &st)
		}
		if err := s.Put(context.Background(), st); err != nil {
			t.Fatalf("put step %d: %v", i, err)
		}
	}
}

func get(t *testing.T, s checkpoint.Saver, thread, ns, id string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: thread, NS: ns, ID: id})
	if err != nil {
		t.Fatalf("get %s/%q/%s: %v", thread, ns, id, err)
	}
	return c
}

func texts(ms []llm.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func ids(cs []checkpoint.Checkpoint) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func testRoundTrip(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	at := t0.Add(time.Minute)
	first := checkpoint.Step{
		ThreadID: "th", ID: "a", Step: 0,
		Metadata: map[string]string{"source": "input", "run": "r1"},
		Messages: []llm.Message{user("hello"), {Role: llm.RoleAssistant, Content: "call", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "write_file", Args: json.RawMessage(`{"path":"/a"}`)}}}},
		Files:    vfs.Delta{{Path: "/a.txt", File: file("alpha", at)}, {Path: "/b.txt", File: file("beta", at)}},
		Values:   map[string]json.RawMessage{"todos": json.RawMessage(`[{"content":"x","status":"pending"}]`)},
		Usage:    llm.Usage{InputTokens: 100, OutputTokens: 20, ReasoningTokens: 5},
		Status:   checkpoint.StatusRunning,
		Time:     at,
	}
	if err := s.Put(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := checkpoint.Step{
		ThreadID: "th", ID: "b", ParentID: "a", Step: 1,
		Messages: []llm.Message{{Role: llm.RoleTool, ToolCallID: "c1", Name: "write_file", Content: "ok"}},
		Files:    vfs.Delta{{Path: "/b.txt"}, {Path: "/c.txt", File: file("gamma", at.Add(time.Second))}},
		Usage:    llm.Usage{InputTokens: 7, OutputTokens: 3},
		Status:   checkpoint.StatusDone,
		Time:     at.Add(time.Second),
	}
	if err := s.Put(ctx, second); err != nil {
		t.Fatal(err)
	}
	c := get(t, s, "th", "", "")
	want := &checkpoint.Checkpoint{
		ThreadID: "th", ID: "b", ParentID: "a", Step: 1,
		Status: "done", Time: at.Add(time.Second),
		StepUsage: llm.Usage{InputTokens: 7, OutputTokens: 3},
		Usage:     llm.Usage{InputTokens: 107, OutputTokens: 23, ReasoningTokens: 5},
		State: checkpoint.State{
			Messages: []llm.Message{
				{Role: "user", Content: "hello"},
				{Role: "assistant", Content: "call", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "write_file", Args: json.RawMessage(`{"path":"/a"}`)}}},
				{Role: "tool", ToolCallID: "c1", Name: "write_file", Content: "ok"},
			},
			Files: map[string]vfs.File{
				"/a.txt": {Content: "alpha", CreatedAt: at, ModifiedAt: at},
				"/c.txt": {Content: "gamma", CreatedAt: at.Add(time.Second), ModifiedAt: at.Add(time.Second)},
			},
			Values: map[string]json.RawMessage{"todos": json.RawMessage(`[{"content":"x","status":"pending"}]`)},
		},
	}
	if d := cmp.Diff(want, c, cmpOpts...); d != "" {
		t.Errorf("latest (-want +got):\n%s", d)
	}
	a := get(t, s, "th", "", "a")
	if got := texts(a.State.Messages); !cmp.Equal(got, []string{"hello", "call"}) {
		t.Errorf("messages at a = %q", got)
	}
	if len(a.State.Files) != 2 || a.State.Files["/b.txt"].Content != "beta" {
		t.Errorf("files at a = %v", a.State.Files)
	}
	if a.Metadata["source"] != "input" || a.Metadata["run"] != "r1" || len(a.Metadata) != 2 {
		t.Errorf("metadata at a = %v", a.Metadata)
	}
}

// cmpOpts compares JSON values by meaning and times by instant.
var cmpOpts = []cmp.Option{
	cmp.Comparer(func(a, b json.RawMessage) bool {
		var x, y any
		if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
			return string(a) == string(b)
		}
		return cmp.Equal(x, y)
	}),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
}

func testGetMissing(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	for _, ref := range []checkpoint.Ref{{ThreadID: "none"}, {ThreadID: "none", ID: "x"}} {
		if _, err := s.Get(ctx, ref); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("get %+v on empty saver: err = %v, want ErrNotFound", ref, err)
		}
	}
	chain(t, s, "th", "", 1, nil)
	for _, ref := range []checkpoint.Ref{{ThreadID: "th", ID: "nope"}, {ThreadID: "th", NS: "child"}} {
		if _, err := s.Get(ctx, ref); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("get %+v: err = %v, want ErrNotFound", ref, err)
		}
	}
}

func testInvalidInput(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	long := strings.Repeat("x", 256)
	bad := []struct {
		name string
		step checkpoint.Step
	}{
		{"no thread", checkpoint.Step{ID: "a"}},
		{"long thread", checkpoint.Step{ThreadID: long, ID: "a"}},
		{"no id", checkpoint.Step{ThreadID: "t"}},
		{"own parent", checkpoint.Step{ThreadID: "t", ID: "a", ParentID: "a"}},
		{"missing parent", checkpoint.Step{ThreadID: "t", ID: "b", ParentID: "zzz"}},
		{"negative step", checkpoint.Step{ThreadID: "t", ID: "a", Step: -1}},
		{"bad value", checkpoint.Step{ThreadID: "t", ID: "a", Values: map[string]json.RawMessage{"v": json.RawMessage(`{`)}}},
		{"bad utf8", checkpoint.Step{ThreadID: "t\xff", ID: "a"}},
		// A NUL byte or invalid UTF-8 in a name is refused by every saver
		// alike: PostgreSQL's text columns cannot hold them.
		{"nul in thread", checkpoint.Step{ThreadID: "t\x00", ID: "a"}},
		{"nul in namespace", checkpoint.Step{ThreadID: "t", NS: "kid\x00", ID: "a"}},
		{"bad utf8 namespace", checkpoint.Step{ThreadID: "t", NS: "kid\xff", ID: "a"}},
		{"nul in id", checkpoint.Step{ThreadID: "t", ID: "a\x00"}},
	}
	for _, tc := range bad {
		err := s.Put(ctx, tc.step)
		if !errors.Is(err, checkpoint.ErrInvalid) && !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("%s: put err = %v, want ErrInvalid or ErrNotFound", tc.name, err)
		}
	}
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "t"}, checkpoint.Write{CallID: "c"}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("write without checkpoint id: %v", err)
	}
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "t", ID: "nope"}, checkpoint.Write{CallID: "c"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("write for a missing checkpoint: %v", err)
	}
	chain(t, s, "t", "", 1, nil)
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "t", ID: cpID(1)}, checkpoint.Write{}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("write without call id: %v", err)
	}
	for _, w := range []checkpoint.Write{{CallID: "c\x00"}, {CallID: "c\xff"}, {CallID: "c", Kind: "k\x00"}, {CallID: "c", Kind: "k\xff"}, {CallID: "c", Kind: strings.Repeat("k", checkpoint.MaxIDLen+1)}} {
		if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "t", ID: cpID(1)}, w); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("write with call id %q and kind %q: %v, want ErrInvalid", w.CallID, w.Kind, err)
		}
	}
	if c := get(t, s, "t", "", cpID(1)); len(c.Pending) != 0 {
		t.Errorf("refused writes were stored: %+v", c.Pending)
	}
	if _, err := s.List(ctx, checkpoint.ListOptions{}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("list without thread: %v", err)
	}
	if _, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "t", Limit: -1}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("list with a negative limit: %v", err)
	}
	if err := s.Prune(ctx, "t", checkpoint.PruneOptions{KeepLast: -3}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("prune keeping a negative count: %v", err)
	}
	// Nothing bad was stored.
	cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "t", AllNamespaces: true})
	if err != nil || !cmp.Equal(ids(cs), []string{cpID(1)}) {
		t.Errorf("thread t after refused puts = %v, %v", ids(cs), err)
	}
}

func testIdempotentPut(t *testing.T, s checkpoint.Saver) {
	chain(t, s, "th", "", 3, nil)
	chain(t, s, "th", "", 3, nil)
	cs, err := s.List(context.Background(), checkpoint.ListOptions{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(ids(cs), []string{cpID(3), cpID(2), cpID(1)}) {
		t.Errorf("after putting the same steps twice: %v", ids(cs))
	}
	c := get(t, s, "th", "", "")
	if got := texts(c.State.Messages); !cmp.Equal(got, []string{"m1", "m2", "m3"}) {
		t.Errorf("messages = %q, want each once", got)
	}
	if c.Usage.InputTokens != 30 {
		t.Errorf("usage counted twice: %+v", c.Usage)
	}
	// A put of a stored id keeps the first record even when the second
	// differs: a retried put never rewrites history.
	if err := s.Put(context.Background(), checkpoint.Step{ThreadID: "th", ID: cpID(3), ParentID: cpID(2), Step: 3,
		Messages: []llm.Message{assistant("other"), assistant("more")}, Usage: llm.Usage{InputTokens: 99}}); err != nil {
		t.Fatal(err)
	}
	c = get(t, s, "th", "", "")
	if got := texts(c.State.Messages); !cmp.Equal(got, []string{"m1", "m2", "m3"}) || c.Usage.InputTokens != 30 {
		t.Errorf("after a differing put of a stored id: messages %q, usage %+v", got, c.Usage)
	}
	st, err := s.Stats(context.Background(), "th")
	if err != nil {
		t.Fatal(err)
	}
	if st.Checkpoints != 3 || st.Messages != 3 {
		t.Errorf("stats = %+v, want 3 checkpoints and 3 messages", st)
	}
}

func testIdempotentWrites(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "th", "", 1, nil)
	ref := checkpoint.Ref{ThreadID: "th", ID: cpID(1)}
	w := checkpoint.Write{CallID: "c1", Result: llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "done"},
		Files: vfs.Delta{{Path: "/out.txt", File: file("out", t0)}}, Time: t0}
	for range 2 {
		if err := s.PutWrite(ctx, ref, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutWrite(ctx, ref, checkpoint.Write{CallID: "c1", Kind: "interrupt", Data: json.RawMessage(`{"tool":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	// A later write of the same key replaces the earlier one.
	if err := s.PutWrite(ctx, ref, checkpoint.Write{CallID: "c0", Result: llm.Message{Role: llm.RoleTool, Content: "first"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWrite(ctx, ref, checkpoint.Write{CallID: "c0", Result: llm.Message{Role: llm.RoleTool, Content: "second"}}); err != nil {
		t.Fatal(err)
	}
	c := get(t, s, "th", "", "")
	var got []string
	for _, p := range c.Pending {
		got = append(got, p.CallID+"/"+p.Kind+"/"+p.Result.Content+"/"+string(p.Data))
	}
	want := []string{"c0/result/second/", "c1/interrupt//{\"tool\":\"x\"}", "c1/result/done/"}
	if !cmp.Equal(got, want) {
		t.Errorf("pending = %q, want %q", got, want)
	}
	for _, p := range c.Pending {
		if p.CallID == "c1" && p.Kind == "result" {
			if len(p.Files) != 1 || p.Files[0].Path != "/out.txt" || p.Files[0].File.Content != "out" || !p.Time.Equal(t0) {
				t.Errorf("write files/time not kept: %+v", p)
			}
		}
	}
	st, _ := s.Stats(ctx, "th")
	if st.Writes != 3 {
		t.Errorf("stats writes = %d, want 3", st.Writes)
	}
}

func testWritesPerCheckpoint(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "th", "", 2, nil)
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", ID: cpID(1)}, checkpoint.Write{CallID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if c := get(t, s, "th", "", ""); len(c.Pending) != 0 {
		t.Errorf("the next checkpoint carries writes of the previous one: %+v", c.Pending)
	}
	if c := get(t, s, "th", "", cpID(1)); len(c.Pending) != 1 {
		t.Errorf("checkpoint 1 pending = %+v", c.Pending)
	}
	if cs, _ := s.List(ctx, checkpoint.ListOptions{ThreadID: "th"}); len(cs) != 2 || cs[1].Pending != nil || len(cs[1].State.Messages) != 0 {
		t.Errorf("list carries state or writes: %+v", cs)
	}
}

// testPendingWrites holds a saver that implements checkpoint.PendingReader
// to it: a namespace's writes, read at once, are those Get returns with each
// of its checkpoints, and no others.
func testPendingWrites(t *testing.T, s checkpoint.Saver) {
	pr, ok := s.(checkpoint.PendingReader)
	if !ok {
		t.Skipf("%T does not implement checkpoint.PendingReader", s)
	}
	ctx := context.Background()
	for _, th := range []string{"th", "other"} {
		chain(t, s, th, "", 4, nil)
		chain(t, s, th, "kid", 2, nil)
	}
	put := func(thread, ns, cp string, w checkpoint.Write) {
		t.Helper()
		if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: thread, NS: ns, ID: cp}, w); err != nil {
			t.Fatal(err)
		}
	}
	result := func(id, text, path string) checkpoint.Write {
		return checkpoint.Write{CallID: id, Result: llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: text},
			Files: vfs.Delta{{Path: path, File: file(text, t0)}}, Time: t0}
	}
	put("th", "", cpID(1), result("c2", "two", "/two"))
	put("th", "", cpID(1), result("c1", "first", "/one"))
	put("th", "", cpID(1), result("c1", "one", "/one")) // replaces the first
	put("th", "", cpID(1), checkpoint.Write{CallID: "c1", Kind: "interrupt", Data: json.RawMessage(`{"tool":"x"}`)})
	put("th", "", cpID(3), result("c9", "nine", "/nine"))
	put("th", "", cpID(3), checkpoint.Write{CallID: "c8", Kind: "decision", Data: json.RawMessage(`{"type":"approve"}`), Time: t0})
	put("th", "kid", cpID(2), result("k1", "kid", "/kid"))
	put("other", "", cpID(1), result("o1", "other", "/other"))

	for _, ns := range []string{"", "kid"} {
		got, err := pr.PendingWrites(ctx, "th", ns)
		if err != nil {
			t.Fatalf("namespace %q: %v", ns, err)
		}
		cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "th", NS: ns})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]checkpoint.Write{}
		for _, c := range cs {
			if p := get(t, s, "th", ns, c.ID).Pending; len(p) > 0 {
				want[c.ID] = p
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("namespace %q: PendingWrites differs from Get's Pending (-Get +PendingWrites):\n%s", ns, diff)
		}
	}
	if got, _ := pr.PendingWrites(ctx, "th", ""); len(got) != 2 || len(got[cpID(1)]) != 3 || got[cpID(1)][1].Result.Content != "one" || got[cpID(3)][0].Kind != "decision" {
		t.Errorf("writes of namespace \"\" = %+v", got)
	}
	for _, ref := range []checkpoint.Ref{{ThreadID: "none"}, {ThreadID: "th", NS: "nobody"}} {
		if got, err := pr.PendingWrites(ctx, ref.ThreadID, ref.NS); err != nil || len(got) != 0 {
			t.Errorf("writes of %+v: %v, %v; want none and no error", ref, got, err)
		}
	}
	// A copy has the writes of what it copied.
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "th", ID: cpID(2)}, "copy"); err != nil {
		t.Fatal(err)
	}
	if got, err := pr.PendingWrites(ctx, "copy", ""); err != nil || len(got) != 1 || len(got[cpID(1)]) != 3 {
		t.Errorf("writes of the copy: %+v, %v", got, err)
	}
	if err := s.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	if got, err := pr.PendingWrites(ctx, "th", ""); err != nil || len(got) != 0 {
		t.Errorf("writes of a deleted thread: %+v, %v", got, err)
	}
	if _, err := pr.PendingWrites(ctx, "", ""); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("writes without a thread: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := pr.PendingWrites(cctx, "other", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("writes with a cancelled context: %v", err)
	}
}

func testOrdering(t *testing.T, s checkpoint.Saver) {
	// Ids that sort backwards: order is the order of puts, not of ids.
	ctx := context.Background()
	prev := ""
	for i, id := range []string{"z", "y", "x", "w"} {
		if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: id, ParentID: prev, Step: i, Time: t0}); err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(ids(cs), []string{"w", "x", "y", "z"}) {
		t.Errorf("order = %v, want newest first", ids(cs))
	}
	if c := get(t, s, "th", "", ""); c.ID != "w" || c.Step != 3 || c.ParentID != "x" {
		t.Errorf("latest = %s (step %d, parent %s)", c.ID, c.Step, c.ParentID)
	}
}

func testThreadIsolation(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "one", "", 3, func(i int, st *checkpoint.Step) {
		st.Files = vfs.Delta{{Path: "/f", File: file("one", t0)}}
	})
	chain(t, s, "two", "", 2, func(i int, st *checkpoint.Step) {
		st.Messages = []llm.Message{user(fmt.Sprintf("two-%d", i))}
	})
	a, b := get(t, s, "one", "", ""), get(t, s, "two", "", "")
	if !cmp.Equal(texts(a.State.Messages), []string{"m1", "m2", "m3"}) || a.State.Files["/f"].Content != "one" {
		t.Errorf("thread one = %q %v", texts(a.State.Messages), a.State.Files)
	}
	if !cmp.Equal(texts(b.State.Messages), []string{"two-1", "two-2"}) || len(b.State.Files) != 0 {
		t.Errorf("thread two = %q %v", texts(b.State.Messages), b.State.Files)
	}
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "one", ID: cpID(2)}, checkpoint.Write{CallID: "c"}); err != nil {
		t.Fatal(err)
	}
	if c := get(t, s, "two", "", cpID(2)); len(c.Pending) != 0 {
		t.Errorf("a write of thread one shows in thread two")
	}
	if err := s.DeleteThread(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if a2 := get(t, s, "one", "", ""); !cmp.Equal(texts(a2.State.Messages), texts(a.State.Messages)) {
		t.Errorf("deleting thread two changed thread one")
	}
}

func testNamespaces(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	child := "parent / researcher#call_1"
	chain(t, s, "th", "", 2, nil)
	chain(t, s, "th", child, 3, func(i int, st *checkpoint.Step) {
		st.Messages = []llm.Message{assistant(fmt.Sprintf("child%d", i))}
	})
	top, ch := get(t, s, "th", "", ""), get(t, s, "th", child, "")
	if !cmp.Equal(texts(top.State.Messages), []string{"m1", "m2"}) || top.NS != "" {
		t.Errorf("top = %q", texts(top.State.Messages))
	}
	if !cmp.Equal(texts(ch.State.Messages), []string{"child1", "child2", "child3"}) || ch.NS != child {
		t.Errorf("child = %q ns %q", texts(ch.State.Messages), ch.NS)
	}
	// The same checkpoint ids in two namespaces are two checkpoints.
	if c := get(t, s, "th", child, cpID(1)); c.State.Messages[0].Content != "child1" {
		t.Errorf("child cp 1 = %q", texts(c.State.Messages))
	}
	all, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "th", AllNamespaces: true})
	if err != nil || len(all) != 5 {
		t.Fatalf("all namespaces: %d, %v", len(all), err)
	}
	if all[0].NS != child || all[4].NS != "" {
		t.Errorf("namespaces newest first: %q ... %q", all[0].NS, all[4].NS)
	}
}

// testListMatrix crosses thread × namespace × before × limit × metadata and
// compares each result with the same filter applied to the known history.
func testListMatrix(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	type rec struct {
		thread, ns, id string
		md             map[string]string
	}
	var all []rec // in put order
	threads := []string{"t1", "t2", "t3"}
	nss := []string{"", "child#1"}
	sources := []string{"input", "loop", "loop", "update"}
	for round := range 4 {
		for _, th := range threads {
			for _, ns := range nss {
				id := fmt.Sprintf("%s-%d", th, round)
				parent := ""
				if round > 0 {
					parent = fmt.Sprintf("%s-%d", th, round-1)
				}
				md := map[string]string{"source": sources[round], "round": fmt.Sprint(round)}
				if th == "t2" {
					md["owner"] = "x"
				}
				if err := s.Put(ctx, checkpoint.Step{ThreadID: th, NS: ns, ID: id, ParentID: parent, Step: round, Metadata: md, Time: t0}); err != nil {
					t.Fatal(err)
				}
				all = append(all, rec{th, ns, id, md})
			}
		}
	}
	befores := []string{"", "t1-2", "t2-1", "t3-0", "t1-9"}
	limits := []int{0, 1, 2, 10}
	filters := []map[string]string{nil, {}, {"source": "loop"}, {"source": "loop", "round": "2"}, {"owner": "x"}, {"source": "nope"}}
	nsOpts := []struct {
		ns  string
		all bool
	}{{"", false}, {"child#1", false}, {"", true}, {"missing", false}}
	n := 0
	for _, th := range append(threads, "t9") {
		for _, nso := range nsOpts {
			for _, before := range befores {
				for _, limit := range limits {
					for _, md := range filters {
						n++
						opts := checkpoint.ListOptions{ThreadID: th, NS: nso.ns, AllNamespaces: nso.all, Before: before, Limit: limit, Metadata: md}
						got, err := s.List(ctx, opts)
						beforeKnown := before == ""
						for _, r := range all {
							if r.thread == th && r.id == before {
								beforeKnown = true
							}
						}
						if !beforeKnown {
							if !errors.Is(err, checkpoint.ErrNotFound) && (err != nil || len(got) != 0) {
								t.Errorf("%+v: unknown before gave %v, %v; want ErrNotFound or nothing", opts, ids(got), err)
							}
							continue
						}
						if err != nil {
							t.Fatalf("%+v: %v", opts, err)
						}
						// Expected: newest first; before cuts at the first put
						// of that id in the thread (its first namespace).
						var want []string
						cut := len(all)
						if before != "" {
							for i, r := range all {
								if r.thread == th && r.id == before {
									cut = i
									break
								}
							}
						}
						for i := cut - 1; i >= 0; i-- {
							r := all[i]
							if r.thread != th || (!nso.all && r.ns != nso.ns) {
								continue
							}
							ok := true
							for k, v := range md {
								if r.md[k] != v {
									ok = false
								}
							}
							if ok && (limit == 0 || len(want) < limit) {
								want = append(want, r.ns+"|"+r.id)
							}
						}
						var gotKeys []string
						for _, c := range got {
							gotKeys = append(gotKeys, c.NS+"|"+c.ID)
						}
						if !cmp.Equal(gotKeys, want) {
							t.Errorf("%+v:\n got %v\nwant %v", opts, gotKeys, want)
						}
					}
				}
			}
		}
	}
	if n < 400 {
		t.Fatalf("matrix has only %d cases", n)
	}
}

func testCarriedOverValues(t *testing.T, s checkpoint.Saver) {
	chain(t, s, "th", "", 9, func(i int, st *checkpoint.Step) {
		switch i {
		case 2:
			st.Values = map[string]json.RawMessage{"todos": json.RawMessage(`["a"]`), "memo": json.RawMessage(`"x"`)}
		case 5:
			st.Values = map[string]json.RawMessage{"memo": json.RawMessage(`"y"`), "gone": json.RawMessage(`1`)}
		case 7:
			st.Values = map[string]json.RawMessage{"gone": nil}
		}
	})
	want := map[int]map[string]string{
		1: {},
		2: {"todos": `["a"]`, "memo": `"x"`},
		4: {"todos": `["a"]`, "memo": `"x"`},
		6: {"todos": `["a"]`, "memo": `"y"`, "gone": `1`},
		9: {"todos": `["a"]`, "memo": `"y"`},
	}
	for step, w := range want {
		c := get(t, s, "th", "", cpID(step))
		got := map[string]string{}
		for k, v := range c.State.Values {
			got[k] = string(v)
		}
		if !cmp.Equal(got, w) {
			t.Errorf("values at step %d = %v, want %v", step, got, w)
		}
	}
}

func testFilesByHash(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	big := strings.Repeat("the same content, again and again\n", 300) // ~10 KB
	small := strings.Repeat("x", len(fmt.Sprint(len(big))))           // same size digits
	for th, content := range map[string]string{"th": big, "control": small} {
		chain(t, s, th, "", 100, func(i int, st *checkpoint.Step) {
			st.Files = vfs.Delta{{Path: fmt.Sprintf("/copy%d.txt", i%7), File: file(content, t0.Add(time.Duration(i)*time.Second))}}
		})
	}
	stats, err := s.Stats(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	control, err := s.Stats(ctx, "control")
	if err != nil {
		t.Fatal(err)
	}
	if stats.Blobs != 1 {
		t.Errorf("blobs = %d, want the content stored once", stats.Blobs)
	}
	// The big content costs what it weighs once, not 100 times.
	if extra := stats.Bytes - control.Bytes; extra > int64(len(big))*2 {
		t.Errorf("a %d-byte content written 100 times cost %d bytes more than a tiny one", len(big), extra)
	}
	c := get(t, s, "th", "", "")
	if len(c.State.Files) != 7 {
		t.Fatalf("files = %d, want 7", len(c.State.Files))
	}
	f := c.State.Files["/copy2.txt"]
	if f.Content != big || !f.ModifiedAt.Equal(t0.Add(100*time.Second)) {
		t.Errorf("/copy2.txt modified %v, content %d bytes", f.ModifiedAt, len(f.Content))
	}
	// A second thread with the same content shares it.
	chain(t, s, "other", "", 1, func(i int, st *checkpoint.Step) {
		st.Files = vfs.Delta{{Path: "/x", File: file(big, t0)}}
	})
	if all, _ := s.Stats(ctx, ""); all.Blobs != 2 {
		t.Errorf("saver-wide blobs = %d, want 2 (big and the control's)", all.Blobs)
	}
}

func testDeletedFiles(t *testing.T, s checkpoint.Saver) {
	chain(t, s, "th", "", 6, func(i int, st *checkpoint.Step) {
		switch i {
		case 1:
			st.Files = vfs.Delta{{Path: "/a", File: file("a", t0)}, {Path: "/b", File: file("b", t0)}}
		case 3:
			st.Files = vfs.Delta{{Path: "/a"}}
		case 5:
			st.Files = vfs.Delta{{Path: "/a", File: file("a again", t0)}, {Path: "/b"}}
		}
	})
	want := map[int]map[string]string{
		2: {"/a": "a", "/b": "b"},
		3: {"/b": "b"},
		4: {"/b": "b"},
		6: {"/a": "a again"},
	}
	for step, w := range want {
		got := map[string]string{}
		for p, f := range get(t, s, "th", "", cpID(step)).State.Files {
			got[p] = f.Content
		}
		if !cmp.Equal(got, w) {
			t.Errorf("files at step %d = %v, want %v", step, got, w)
		}
	}
}

// testLongHistory crosses several snapshot intervals and checks every state.
func testLongHistory(t *testing.T, s checkpoint.Saver) {
	const n = 130
	chain(t, s, "th", "", n, func(i int, st *checkpoint.Step) {
		st.Files = vfs.Delta{{Path: fmt.Sprintf("/f%d", i%5), File: file(fmt.Sprint(i), t0)}}
		if i%10 == 0 {
			st.Values = map[string]json.RawMessage{"last10": json.RawMessage(fmt.Sprint(i))}
		}
	})
	for _, step := range []int{1, 49, 50, 51, 99, 100, 101, 129, 130} {
		c := get(t, s, "th", "", cpID(step))
		if len(c.State.Messages) != step || c.State.Messages[step-1].Content != fmt.Sprintf("m%d", step) {
			t.Errorf("step %d: %d messages", step, len(c.State.Messages))
		}
		if f := c.State.Files[fmt.Sprintf("/f%d", step%5)]; f.Content != fmt.Sprint(step) {
			t.Errorf("step %d: file = %q", step, f.Content)
		}
		if want := fmt.Sprint(step / 10 * 10); step >= 10 && string(c.State.Values["last10"]) != want {
			t.Errorf("step %d: last10 = %s, want %s", step, c.State.Values["last10"], want)
		}
		if c.Usage.InputTokens != 10*step {
			t.Errorf("step %d: usage %+v", step, c.Usage)
		}
	}
}

// testBranches forks a history inside one thread: each branch sees its own
// messages only.
func testBranches(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "th", "", 3, nil)
	put := func(id, parent, msg string) {
		t.Helper()
		if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: id, ParentID: parent, Messages: []llm.Message{user(msg)}, Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	put("b1", cpID(2), "branch b")
	put("a4", cpID(3), "branch a")
	put("b2", "b1", "branch b 2")
	if got := texts(get(t, s, "th", "", "b2").State.Messages); !cmp.Equal(got, []string{"m1", "m2", "branch b", "branch b 2"}) {
		t.Errorf("branch b = %q", got)
	}
	if got := texts(get(t, s, "th", "", "a4").State.Messages); !cmp.Equal(got, []string{"m1", "m2", "m3", "branch a"}) {
		t.Errorf("branch a = %q", got)
	}
}

func testDeleteThread(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "th", "", 3, func(i int, st *checkpoint.Step) {
		st.Files = vfs.Delta{{Path: "/f", File: file(fmt.Sprint("unique to th ", i), t0)}}
	})
	chain(t, s, "th", "kid", 2, nil)
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", ID: cpID(3)}, checkpoint.Write{CallID: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "th", "me", t0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "kid"} {
		if _, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", NS: ns}); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("ns %q after delete: %v", ns, err)
		}
	}
	st, err := s.Stats(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if st != (checkpoint.Stats{}) {
		t.Errorf("stats after deleting the only thread = %+v, want all zero", st)
	}
	if _, err := s.Acquire(ctx, "th", "other", t0, time.Minute); err != nil {
		t.Errorf("the lease survived the delete: %v", err)
	}
	if err := s.DeleteThread(ctx, "never"); err != nil {
		t.Errorf("deleting a missing thread: %v", err)
	}
}

func testCopyThread(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "src", "", 5, func(i int, st *checkpoint.Step) {
		st.Files = vfs.Delta{{Path: "/f", File: file(fmt.Sprint(i), t0)}}
	})
	chain(t, s, "src", "kid", 1, nil)
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "src", ID: cpID(3)}, checkpoint.Write{CallID: "c3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "src", ID: cpID(3)}, "dst"); err != nil {
		t.Fatal(err)
	}
	c := get(t, s, "dst", "", "")
	if c.ID != cpID(3) || c.ThreadID != "dst" || !cmp.Equal(texts(c.State.Messages), []string{"m1", "m2", "m3"}) || c.State.Files["/f"].Content != "3" {
		t.Errorf("fork latest = %s %q %v", c.ID, texts(c.State.Messages), c.State.Files)
	}
	if len(c.Pending) != 1 || c.Pending[0].CallID != "c3" {
		t.Errorf("fork pending = %+v", c.Pending)
	}
	cs, _ := s.List(ctx, checkpoint.ListOptions{ThreadID: "dst"})
	if !cmp.Equal(ids(cs), []string{cpID(3), cpID(2), cpID(1)}) {
		t.Errorf("fork history = %v", ids(cs))
	}
	// The child namespace was put after cp 5, so after the fork point.
	if _, err := s.Get(ctx, checkpoint.Ref{ThreadID: "dst", NS: "kid"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("fork has the later child namespace: %v", err)
	}
	// The two threads now diverge.
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "dst", ID: "new", ParentID: cpID(3), Messages: []llm.Message{user("fork")}}); err != nil {
		t.Fatal(err)
	}
	if got := texts(get(t, s, "src", "", "").State.Messages); len(got) != 5 {
		t.Errorf("source changed: %q", got)
	}
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "src"}, "dst"); !errors.Is(err, checkpoint.ErrThreadExists) {
		t.Errorf("copy onto an existing thread: %v", err)
	}
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "nope"}, "x"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("copy of a missing thread: %v", err)
	}
	// Without a checkpoint id the whole thread is copied.
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "src"}, "all"); err != nil {
		t.Fatal(err)
	}
	if k := get(t, s, "all", "kid", ""); k.ID != cpID(1) {
		t.Errorf("whole copy lacks the child namespace")
	}
	if cs, _ := s.List(ctx, checkpoint.ListOptions{ThreadID: "all", AllNamespaces: true}); len(cs) != 6 {
		t.Errorf("whole copy has %d checkpoints, want 6", len(cs))
	}
}

// testCopyThreadKeepsEarlierNamespaces forks a thread at a top-level
// checkpoint put after a subagent's first step and before its second: the
// fork has the subagent's namespace up to that point, with its state and
// its writes, and nothing put later.
func testCopyThreadKeepsEarlierNamespaces(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	kid := "parent / researcher#call_1"
	put := func(ns, id, parent, text string) {
		t.Helper()
		if err := s.Put(ctx, checkpoint.Step{ThreadID: "src", NS: ns, ID: id, ParentID: parent, Time: t0,
			Messages: []llm.Message{assistant(text)}, Files: vfs.Delta{{Path: "/" + text, File: file(text, t0)}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("", "r1", "", "r1")
	put(kid, "k1", "", "k1")
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "src", NS: kid, ID: "k1"}, checkpoint.Write{CallID: "kc", Result: llm.Message{Role: llm.RoleTool, ToolCallID: "kc", Content: "kid result"}}); err != nil {
		t.Fatal(err)
	}
	put("", "r2", "r1", "r2")
	put(kid, "k2", "k1", "k2")
	put("", "r3", "r2", "r3")
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "src", ID: "r2"}, "dst"); err != nil {
		t.Fatal(err)
	}
	cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "dst", AllNamespaces: true})
	var got []string
	for _, c := range cs {
		got = append(got, c.NS+"|"+c.ID)
	}
	if err != nil || !cmp.Equal(got, []string{"|r2", kid + "|k1", "|r1"}) {
		t.Errorf("fork at r2 = %q, %v; want r2, the subagent's k1, r1", got, err)
	}
	k := get(t, s, "dst", kid, "")
	if k.ID != "k1" || !cmp.Equal(texts(k.State.Messages), []string{"k1"}) || k.State.Files["/k1"].Content != "k1" || len(k.State.Files) != 1 {
		t.Errorf("fork's subagent = %s %q %v", k.ID, texts(k.State.Messages), k.State.Files)
	}
	if len(k.Pending) != 1 || k.Pending[0].Result.Content != "kid result" {
		t.Errorf("fork's subagent writes = %+v", k.Pending)
	}
}

// testPruneNamespaces prunes a thread with a subagent namespace: KeepLast
// counts per namespace, Before cuts every namespace at one point of the
// thread's put order, and the survivors keep their full state.
func testPruneNamespaces(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	kid := "parent / researcher#call_1"
	for _, th := range []string{"last", "before"} {
		prev := map[string]string{}
		for i := 1; i <= 6; i++ {
			for _, ns := range []string{"", kid} {
				id := fmt.Sprint("r", i)
				if ns != "" {
					id = fmt.Sprint("k", i)
				}
				if err := s.Put(ctx, checkpoint.Step{ThreadID: th, NS: ns, ID: id, ParentID: prev[ns], Time: t0,
					Messages: []llm.Message{assistant(id)}, Files: vfs.Delta{{Path: "/" + id, File: file(id, t0)}}}); err != nil {
					t.Fatal(err)
				}
				prev[ns] = id
			}
		}
	}
	if err := s.Prune(ctx, "last", checkpoint.PruneOptions{KeepLast: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(ctx, "before", checkpoint.PruneOptions{Before: "r5"}); err != nil {
		t.Fatal(err)
	}
	for th, want := range map[string][]string{
		"last":   {kid + "|k6", "|r6", kid + "|k5", "|r5"},
		"before": {kid + "|k6", "|r6", kid + "|k5", "|r5"},
	} {
		cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: th, AllNamespaces: true})
		var got []string
		for _, c := range cs {
			got = append(got, c.NS+"|"+c.ID)
		}
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("%s: kept %q, %v; want %q", th, got, err, want)
		}
		for _, ns := range []string{"", kid} {
			c := get(t, s, th, ns, "")
			if len(c.State.Messages) != 6 || len(c.State.Files) != 6 {
				t.Errorf("%s, namespace %q: %d messages and %d files after the prune, want 6 and 6", th, ns, len(c.State.Messages), len(c.State.Files))
			}
		}
	}
}

func testPruneKeepLast(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "th", "", 70, func(i int, st *checkpoint.Step) {
		st.Files = vfs.Delta{{Path: fmt.Sprintf("/f%d", i), File: file(fmt.Sprint("content ", i), t0)}}
		if i == 3 {
			st.Values = map[string]json.RawMessage{"v": json.RawMessage(`3`)}
		}
	})
	if err := s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", ID: cpID(10)}, checkpoint.Write{CallID: "old"}); err != nil {
		t.Fatal(err)
	}
	before := get(t, s, "th", "", "")
	if err := s.Prune(ctx, "th", checkpoint.PruneOptions{KeepLast: 5}); err != nil {
		t.Fatal(err)
	}
	cs, _ := s.List(ctx, checkpoint.ListOptions{ThreadID: "th"})
	if !cmp.Equal(ids(cs), []string{cpID(70), cpID(69), cpID(68), cpID(67), cpID(66)}) {
		t.Errorf("kept = %v", ids(cs))
	}
	after := get(t, s, "th", "", "")
	if d := cmp.Diff(before, after, cmpOpts...); d != "" {
		t.Errorf("latest state changed by prune (-before +after):\n%s", d)
	}
	oldest := get(t, s, "th", "", cpID(66))
	if len(oldest.State.Messages) != 66 || len(oldest.State.Files) != 66 || string(oldest.State.Values["v"]) != "3" {
		t.Errorf("oldest survivor lost state: %d messages, %d files", len(oldest.State.Messages), len(oldest.State.Files))
	}
	st, _ := s.Stats(ctx, "th")
	if st.Checkpoints != 5 || st.Writes != 0 {
		t.Errorf("stats after prune = %+v", st)
	}
	// The pruned history keeps growing normally.
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "next", ParentID: cpID(70), Messages: []llm.Message{user("more")}}); err != nil {
		t.Fatal(err)
	}
	if n := len(get(t, s, "th", "", "").State.Messages); n != 71 {
		t.Errorf("after prune and put: %d messages", n)
	}
}

// A put stores references only for the files its own step changed. When a
// prune keeps a record that is already a snapshot and drops the records
// that brought its files in, the contents must survive the sweep. With a
// snapshot every 3 steps, snapshots fall on c1, c4, c7 and c10, and keeping
// the newest four keeps c7, a snapshot, as the oldest survivor; with other
// intervals the case still checks that a prune keeps every file.
func testPruneKeepsSnapshotContents(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	prev := ""
	for i := 1; i <= 10; i++ {
		id := fmt.Sprint("c", i)
		st := checkpoint.Step{ThreadID: "th", ID: id, ParentID: prev, Files: vfs.Delta{{Path: fmt.Sprintf("/f%d", i), File: &vfs.File{Content: fmt.Sprint("content ", i)}}}}
		if err := s.Put(ctx, st); err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	if err := s.Prune(ctx, "th", checkpoint.PruneOptions{KeepLast: 4}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{7, 10} {
		c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", ID: fmt.Sprint("c", n)})
		if err != nil {
			t.Fatalf("c%d after prune: %v", n, err)
		}
		if len(c.State.Files) != n {
			t.Errorf("c%d after prune has %d files, want %d", n, len(c.State.Files), n)
		}
		for i := 1; i <= n; i++ {
			path := fmt.Sprintf("/f%d", i)
			if f, ok := c.State.Files[path]; !ok || f.Content != fmt.Sprint("content ", i) {
				t.Errorf("c%d after prune: %s = %+v", n, path, f)
			}
		}
	}
}

func testPruneBefore(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "th", "", 8, func(i int, st *checkpoint.Step) {
		if i == 1 {
			st.Files = vfs.Delta{{Path: "/gone-later", File: file("only in early history", t0)}}
		}
		if i == 2 {
			st.Files = vfs.Delta{{Path: "/gone-later"}}
		}
	})
	before := get(t, s, "th", "", cpID(6))
	if err := s.Prune(ctx, "th", checkpoint.PruneOptions{Before: cpID(5)}); err != nil {
		t.Fatal(err)
	}
	cs, _ := s.List(ctx, checkpoint.ListOptions{ThreadID: "th"})
	if !cmp.Equal(ids(cs), []string{cpID(8), cpID(7), cpID(6), cpID(5)}) {
		t.Errorf("kept = %v", ids(cs))
	}
	if d := cmp.Diff(before, get(t, s, "th", "", cpID(6)), cmpOpts...); d != "" {
		t.Errorf("state at 6 changed (-before +after):\n%s", d)
	}
	st, _ := s.Stats(ctx, "th")
	if st.Blobs != 0 {
		t.Errorf("content no survivor uses is still stored: %d blobs", st.Blobs)
	}
	if err := s.Prune(ctx, "th", checkpoint.PruneOptions{Before: "nope"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("prune before a missing checkpoint: %v", err)
	}
}

func testLeases(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	l, err := s.Acquire(ctx, "th", "proc-a", t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Holder != "proc-a" || !l.Expires.Equal(t0.Add(time.Minute)) {
		t.Errorf("lease = %+v", l)
	}
	_, err = s.Acquire(ctx, "th", "proc-b", t0.Add(30*time.Second), time.Minute)
	var le *checkpoint.LeasedError
	if !errors.Is(err, checkpoint.ErrLeased) || !errors.As(err, &le) || le.Holder != "proc-a" || !le.Expires.Equal(t0.Add(time.Minute)) {
		t.Fatalf("second holder: err = %v", err)
	}
	if !strings.Contains(err.Error(), "proc-a") {
		t.Errorf("error does not name the holder: %v", err)
	}
	// Different threads lease independently.
	if _, err := s.Acquire(ctx, "other", "proc-b", t0, time.Minute); err != nil {
		t.Errorf("other thread: %v", err)
	}
	// Renew pushes the expiry.
	if l, err = s.Renew(ctx, "th", "proc-a", t0.Add(50*time.Second), time.Minute); err != nil || !l.Expires.Equal(t0.Add(110*time.Second)) {
		t.Errorf("renew = %+v, %v", l, err)
	}
	if _, err := s.Acquire(ctx, "th", "proc-b", t0.Add(100*time.Second), time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Errorf("renewed lease taken: %v", err)
	}
	if _, err := s.Renew(ctx, "th", "proc-b", t0, time.Minute); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("renew by a non-holder: %v", err)
	}
	// Expired (holder died): taken over.
	if l, err = s.Acquire(ctx, "th", "proc-b", t0.Add(111*time.Second), time.Minute); err != nil || l.Holder != "proc-b" {
		t.Fatalf("takeover = %+v, %v", l, err)
	}
	if _, err := s.Renew(ctx, "th", "proc-a", t0.Add(112*time.Second), time.Minute); !errors.Is(err, checkpoint.ErrNotHeld) {
		t.Errorf("old holder renewed after takeover: %v", err)
	}
	// Releasing someone else's lease does nothing; one's own frees it.
	if err := s.Release(ctx, "th", "proc-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "th", "proc-c", t0.Add(112*time.Second), time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Errorf("a non-holder's release freed the lease: %v", err)
	}
	if err := s.Release(ctx, "th", "proc-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "th", "proc-c", t0.Add(112*time.Second), time.Minute); err != nil {
		t.Errorf("after release: %v", err)
	}
	if _, err := s.Acquire(ctx, "th", "", t0, time.Minute); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("empty holder: %v", err)
	}
	if _, err := s.Acquire(ctx, "th2", "x", t0, 0); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("zero ttl: %v", err)
	}
	for _, h := range []string{"", "h\x00", "h\xff", strings.Repeat("h", checkpoint.MaxIDLen+1)} {
		if _, err := s.Acquire(ctx, "th3", h, t0, time.Minute); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("acquire by holder %q: %v, want ErrInvalid", h, err)
		}
		if _, err := s.Renew(ctx, "th3", h, t0, time.Minute); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("renew by holder %q: %v, want ErrInvalid", h, err)
		}
		if err := s.Release(ctx, "th3", h); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("release by holder %q: %v, want ErrInvalid", h, err)
		}
	}
}

func testThreads(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	chain(t, s, "old", "", 2, func(i int, st *checkpoint.Step) {
		if i == 1 {
			st.Messages = []llm.Message{{Role: llm.RoleSystem, Content: "sys"}, user("Plan the trip to Lisbon\nwith details")}
		}
		st.Time = t0.Add(time.Duration(i) * time.Minute)
	})
	chain(t, s, "new", "", 3, func(i int, st *checkpoint.Step) {
		st.Time = t0.Add(time.Hour + time.Duration(i)*time.Minute)
		if i == 3 {
			st.Status = checkpoint.StatusInterrupted
		}
	})
	chain(t, s, "new", "kid", 4, nil) // child steps do not count
	got, err := s.Threads(ctx, checkpoint.ThreadsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []checkpoint.ThreadInfo{
		{ID: "new", Title: "", Updated: t0.Add(time.Hour + 3*time.Minute), Status: "interrupted", Steps: 3, Tokens: 33},
		{ID: "old", Title: "Plan the trip to Lisbon", Updated: t0.Add(2 * time.Minute), Status: "running", Steps: 2, Tokens: 22},
	}
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("threads (-want +got):\n%s", d)
	}
	if got, _ := s.Threads(ctx, checkpoint.ThreadsOptions{Limit: 1}); len(got) != 1 || got[0].ID != "new" {
		t.Errorf("limit 1 = %+v", got)
	}
}

// testOddText puts text no saver may choke on: a first user message (the
// thread's title) with a NUL byte and bytes that are not UTF-8, as a prompt
// read from a Latin-1 file has. Every saver stores the step, gives the
// messages back byte for byte, and lists the thread under a title that is
// valid UTF-8 without NUL bytes.
func testOddText(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	for i, text := range []string{"caf\xe9 menu\nmore", "nul\x00 inside", "\x00\xff"} {
		th := fmt.Sprint("odd", i)
		msgs := []llm.Message{user(text), {Role: llm.RoleTool, ToolCallID: "c\xe9", Content: "x\x00\xfe"}}
		if err := s.Put(ctx, checkpoint.Step{ThreadID: th, ID: "a", Messages: msgs, Time: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatalf("put with first message %q: %v", text, err)
		}
		c := get(t, s, th, "", "")
		if len(c.State.Messages) != 2 || c.State.Messages[0].Content != text || c.State.Messages[1].Content != "x\x00\xfe" || c.State.Messages[1].ToolCallID != "c\xe9" {
			t.Errorf("%s: messages came back as %+v", th, c.State.Messages)
		}
	}
	ts, err := s.Threads(ctx, checkpoint.ThreadsOptions{})
	if err != nil || len(ts) != 3 {
		t.Fatalf("threads = %+v, %v", ts, err)
	}
	for _, th := range ts {
		if !utf8.ValidString(th.Title) || strings.ContainsRune(th.Title, 0) {
			t.Errorf("thread %s: title %q is not valid UTF-8 without NUL bytes", th.ID, th.Title)
		}
	}
}

func testConcurrency(t *testing.T, s checkpoint.Saver) {
	const threads, steps = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, threads*2)
	for i := range threads {
		wg.Go(func() {
			th := fmt.Sprintf("th%d", i)
			prev := ""
			for j := 1; j <= steps; j++ {
				id := cpID(j)
				st := checkpoint.Step{ThreadID: th, ID: id, ParentID: prev, Step: j, Time: t0,
					Messages: []llm.Message{user(fmt.Sprintf("%s-%d", th, j))},
					Files:    vfs.Delta{{Path: "/shared", File: file("same everywhere", t0)}}}
				if err := s.Put(context.Background(), st); err != nil {
					errs <- err
					return
				}
				if err := s.PutWrite(context.Background(), checkpoint.Ref{ThreadID: th, ID: id}, checkpoint.Write{CallID: "c"}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: th}); err != nil {
					errs <- err
					return
				}
				prev = id
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range threads {
		th := fmt.Sprintf("th%d", i)
		c := get(t, s, th, "", "")
		if len(c.State.Messages) != steps || c.State.Messages[steps-1].Content != fmt.Sprintf("%s-%d", th, steps) {
			t.Errorf("%s: %q", th, texts(c.State.Messages))
		}
	}
	if st, _ := s.Stats(context.Background(), ""); st.Blobs != 1 || st.Checkpoints != threads*steps {
		t.Errorf("stats = %+v", st)
	}
}

func testCancelled(t *testing.T, s checkpoint.Saver) {
	chain(t, s, "th", "", 2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ref := checkpoint.Ref{ThreadID: "th"}
	checks := map[string]error{
		"put":      s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "x", ParentID: cpID(2)}),
		"putwrite": s.PutWrite(ctx, checkpoint.Ref{ThreadID: "th", ID: cpID(2)}, checkpoint.Write{CallID: "c"}),
		"delete":   s.DeleteThread(ctx, "th"),
		"prune":    s.Prune(ctx, "th", checkpoint.PruneOptions{KeepLast: 1}),
		"copy":     s.CopyThread(ctx, ref, "copy"),
	}
	_, checks["get"] = s.Get(ctx, ref)
	_, checks["list"] = s.List(ctx, checkpoint.ListOptions{ThreadID: "th"})
	_, checks["acquire"] = s.Acquire(ctx, "th", "h", t0, time.Minute)
	_, checks["threads"] = s.Threads(ctx, checkpoint.ThreadsOptions{})
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: err = %v, want context.Canceled", name, err)
		}
	}
	// Nothing changed.
	cs, err := s.List(context.Background(), checkpoint.ListOptions{ThreadID: "th"})
	if err != nil || !cmp.Equal(ids(cs), []string{cpID(2), cpID(1)}) {
		t.Errorf("after cancelled calls: %v, %v", ids(cs), err)
	}
	if _, err := s.Get(context.Background(), checkpoint.Ref{ThreadID: "copy"}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("cancelled copy made a thread: %v", err)
	}
}

// testManyFiles: a history that gains a file at every step, past the point
// where its snapshots are spaced further apart (checkpoint.SnapshotSpan),
// reads back every checkpoint's files, also after a copy and a prune.
func testManyFiles(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	const n = 260
	prev := ""
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("m%03d", i)
		if err := s.Put(ctx, checkpoint.Step{ThreadID: "many", ID: id, ParentID: prev, Step: i, Time: t0,
			Messages: []llm.Message{assistant(id)}, Files: vfs.Delta{{Path: "/f/" + id, File: file(id, t0)}}}); err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	for _, i := range []int{1, 99, 150, 151, 200, 226, 227, n} {
		c := get(t, s, "many", "", fmt.Sprintf("m%03d", i))
		if len(c.State.Files) != i || len(c.State.Messages) != i || c.State.Files[fmt.Sprintf("/f/m%03d", i)].Content != fmt.Sprintf("m%03d", i) {
			t.Fatalf("checkpoint %d: %d files and %d messages, want %d", i, len(c.State.Files), len(c.State.Messages), i)
		}
	}
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "many", ID: "m240"}, "many-copy"); err != nil {
		t.Fatal(err)
	}
	if c := get(t, s, "many-copy", "", ""); len(c.State.Files) != 240 {
		t.Errorf("copy at 240: %d files", len(c.State.Files))
	}
	if err := s.Prune(ctx, "many", checkpoint.PruneOptions{KeepLast: 5}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{n - 4, n} {
		if c := get(t, s, "many", "", fmt.Sprintf("m%03d", i)); len(c.State.Files) != i {
			t.Errorf("after the prune, checkpoint %d: %d files", i, len(c.State.Files))
		}
	}
	// The history goes on from the pruned one.
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "many", ID: "m261", ParentID: prev, Step: n + 1, Time: t0,
		Messages: []llm.Message{assistant("m261")}}); err != nil {
		t.Fatal(err)
	}
	if c := get(t, s, "many", "", ""); len(c.State.Files) != n {
		t.Errorf("after a put on the pruned history: %d files", len(c.State.Files))
	}
}
