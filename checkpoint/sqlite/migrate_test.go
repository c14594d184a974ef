package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/google/go-cmp/cmp"
)

// A database written by the first schema (one JSON message per row) opens,
// is migrated to chunks, and reads back and grows as before.
func TestMigrateFromSchema1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(migrations[0].sql + `; PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	var want []llm.Message
	var parent *checkpoint.Record
	next := int64(0)
	for i := 1; i <= 3; i++ {
		st := checkpoint.Step{ThreadID: "old", ID: fmt.Sprint("c", i), Step: i, Time: at,
			Messages: []llm.Message{
				{Role: llm.RoleAssistant, Content: fmt.Sprint("step ", i), ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("call_", i), Name: "ls", Args: json.RawMessage(`{}`)}}},
				{Role: llm.RoleTool, ToolCallID: fmt.Sprint("call_", i), Name: "ls", Content: "a.txt"},
			}}
		if parent != nil {
			st.ParentID = parent.ID
		}
		b, err := checkpoint.Build(&st, parent, nil, next, 50)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := checkpoint.Encode(b.Record)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO checkpoints (thread, ns, id, title, record) VALUES (?, '', ?, '', ?)`, "old", st.ID, raw); err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Messages {
			data, _ := json.Marshal(m) // the first schema's form
			if _, err := db.Exec(`INSERT INTO messages (thread, ns, seq, data) VALUES ('old', '', ?, ?)`, next, data); err != nil {
				t.Fatal(err)
			}
			next++
		}
		want = append(want, st.Messages...)
		parent = b.Record
	}
	w, err := checkpoint.EncodeWrite(checkpoint.Write{CallID: "call_3", Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call_3", Content: "ran"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO writes (thread, ns, cp, call_id, kind, data) VALUES ('old', '', 'c3', 'call_3', 'result', ?)`, w); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, c.State.Messages); d != "" {
		t.Errorf("migrated messages (-want +got):\n%s", d)
	}
	if len(c.Pending) != 1 || c.Pending[0].Result.Content != "ran" {
		t.Errorf("migrated pending writes: %+v", c.Pending)
	}
	if st, _ := s.Stats(ctx, "old"); st.Messages != 6 {
		t.Errorf("stats after migration: %+v", st)
	}
	more := llm.Message{Role: llm.RoleUser, Content: "and now?"}
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "old", ID: "c4", ParentID: "c3", Step: 4, Messages: []llm.Message{more}}); err != nil {
		t.Fatal(err)
	}
	c, err = s.Get(ctx, checkpoint.Ref{ThreadID: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(want, more), c.State.Messages); d != "" {
		t.Errorf("after a put on the migrated thread (-want +got):\n%s", d)
	}
	var v int
	if err := s.r.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("schema version %d, %v", v, err)
	}
	if err := s.r.QueryRow(`SELECT 1 FROM sqlite_master WHERE name = 'messages'`).Scan(new(int)); err != sql.ErrNoRows {
		t.Errorf("the old messages table is still there: %v", err)
	}
}

// Packing at snapshots keeps a long history to a few rows, and forks,
// prunes and copies still see exactly their messages.
func TestChunksArePacked(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{SnapshotEvery: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(thread, id, parent string, text string) {
		t.Helper()
		if err := s.Put(ctx, checkpoint.Step{ThreadID: thread, ID: id, ParentID: parent, Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	prev := ""
	for i := 1; i <= 95; i++ {
		id := fmt.Sprint("c", i)
		put("th", id, prev, fmt.Sprint("m", i))
		prev = id
	}
	// A branch from c42: its messages are numbered after the main line's.
	put("th", "b1", "c42", "branch")
	var rows, unpacked int
	if err := s.r.QueryRow(`SELECT COUNT(*), COALESCE(SUM(packed = 0), 0) FROM msgchunks WHERE thread = 'th'`).Scan(&rows, &unpacked); err != nil {
		t.Fatal(err)
	}
	// Snapshots at steps 1, 11, ..., 91 packed everything before them.
	if rows > 15 || unpacked > 10 {
		t.Errorf("%d chunk rows (%d unpacked) for 96 puts", rows, unpacked)
	}
	texts := func(thread, id string) []string {
		t.Helper()
		c, err := s.Get(ctx, checkpoint.Ref{ThreadID: thread, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range c.State.Messages {
			out = append(out, m.Content)
		}
		return out
	}
	line := func(n int, extra ...string) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprint("m", i))
		}
		return append(out, extra...)
	}
	if got := texts("th", "c95"); !cmp.Equal(got, line(95)) {
		t.Errorf("c95: %q", got)
	}
	if got := texts("th", "b1"); !cmp.Equal(got, line(42, "branch")) {
		t.Errorf("b1: %q", got)
	}
	if err := s.CopyThread(ctx, checkpoint.Ref{ThreadID: "th", ID: "b1"}, "fork"); err != nil {
		t.Fatal(err)
	}
	if got := texts("fork", "b1"); !cmp.Equal(got, line(42, "branch")) {
		t.Errorf("fork b1: %q", got)
	}
	if st, _ := s.Stats(ctx, "fork"); st.Messages != 43 {
		t.Errorf("the fork holds %d messages, want 43", st.Messages)
	}
	if err := s.Prune(ctx, "th", checkpoint.PruneOptions{KeepLast: 3}); err != nil {
		t.Fatal(err)
	}
	// The newest three are c94, c95 and b1.
	if got := texts("th", "c94"); !cmp.Equal(got, line(94)) {
		t.Errorf("c94 after prune: %q", got)
	}
	if got := texts("th", "b1"); !cmp.Equal(got, line(42, "branch")) {
		t.Errorf("b1 after prune: %q", got)
	}
	if st, _ := s.Stats(ctx, "th"); st.Messages != 96 {
		t.Errorf("after prune the thread holds %d messages, want 96", st.Messages)
	}
	if err := s.Prune(ctx, "th", checkpoint.PruneOptions{Before: "b1"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(ctx, "th"); st.Messages != 43 {
		t.Errorf("after pruning the main line the thread holds %d messages, want 43", st.Messages)
	}
	if got := texts("th", "b1"); !cmp.Equal(got, line(42, "branch")) {
		t.Errorf("b1 after the second prune: %q", got)
	}
}

// A namespace's first put (a snapshot) leaves its chunk for the next
// snapshot to pack: nothing is read back or rewritten for it.
func TestFirstChunkJoinsTheNextPack(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{SnapshotEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunks := func() string {
		t.Helper()
		rows, err := s.r.Query(`SELECT seq_from, seq_to, packed FROM msgchunks WHERE thread = 'th' ORDER BY seq_from`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var from, to, packed int
			if err := rows.Scan(&from, &to, &packed); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d-%d:%d", from, to, packed))
		}
		// And the chunks checkpoint rows hold, not packed yet.
		rows, err = s.r.Query(`SELECT seq_from, seq_to FROM checkpoints WHERE thread = 'th' AND msgs IS NOT NULL ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var from, to int
			if err := rows.Scan(&from, &to); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d-%d:row", from, to))
		}
		return strings.Join(out, " ")
	}
	prev := ""
	var want []string
	for i := 1; i <= 4; i++ {
		id := fmt.Sprint("c", i)
		text := fmt.Sprint("m", i)
		if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: id, ParentID: prev, Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}); err != nil {
			t.Fatal(err)
		}
		prev = id
		want = append(want, text)
		if i == 1 {
			if got := chunks(); got != "0-1:row" {
				t.Errorf("after the first put: chunks %q, want 0-1:row", got)
			}
		}
	}
	// c4 is the next snapshot (depth 3): one pack of all four messages.
	if got := chunks(); got != "0-4:1" {
		t.Errorf("after the snapshot: chunks %q, want 0-4:1", got)
	}
	c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.State.Messages {
		got = append(got, m.Content)
	}
	if !cmp.Equal(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
}

// A database written by the second schema (an index of checkpoints by
// thread, blobs with a rowid) opens, is migrated, and reads back
// everything it held: records in their thread-wide order, states, file
// contents and pending writes; new puts list after the old ones.
func TestMigrateFromSchema2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	// The history is written by this build into a database of its own,
	// then copied, row for row, into one of the second schema.
	srcPath := filepath.Join(t.TempDir(), "src.db")
	old, err := Open(srcPath, Options{SnapshotEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	last := map[string]string{}
	put := func(thread, ns string, i int, file bool) {
		t.Helper()
		id := fmt.Sprint(thread, ns, "-", i)
		st := checkpoint.Step{ThreadID: thread, NS: ns, ID: id, ParentID: last[thread+"/"+ns], Step: i, Time: at,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint("message ", id)}}}
		if file {
			st.Files = vfs.Delta{{Path: "/notes.md", File: &vfs.File{Content: "notes of " + id, CreatedAt: at, ModifiedAt: at}}}
		}
		if err := old.Put(ctx, st); err != nil {
			t.Fatal(err)
		}
		last[thread+"/"+ns] = id
	}
	// Two threads interleaved, one with a subagent's namespace.
	for i := 1; i <= 5; i++ {
		put("a", "", i, i == 2)
		put("b", "", i, i == 4)
		if i <= 2 {
			put("a", "sub", i, false)
		}
	}
	w := checkpoint.Write{CallID: "call_1", Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "ran"}}
	if err := old.PutWrite(ctx, checkpoint.Ref{ThreadID: "a", ID: "a-5"}, w); err != nil {
		t.Fatal(err)
	}
	type view struct {
		List    []string
		Latest  map[string]*checkpoint.Checkpoint
		Threads []checkpoint.ThreadInfo
	}
	read := func(s *Saver) view {
		t.Helper()
		v := view{Latest: map[string]*checkpoint.Checkpoint{}}
		for _, th := range []string{"a", "b"} {
			cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: th, AllNamespaces: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				v.List = append(v.List, c.ID)
			}
			for _, ns := range []string{"", "sub"} {
				if c, err := s.Get(ctx, checkpoint.Ref{ThreadID: th, NS: ns}); err == nil {
					v.Latest[th+"/"+ns] = c
				}
			}
		}
		if v.Threads, err = s.Threads(ctx, checkpoint.ThreadsOptions{}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := read(old)
	// Every message into the chunks table, where the second schema kept
	// them all.
	if err := old.writeTx(ctx, func(q querier) error {
		for _, th := range []string{"a", "b"} {
			if err := q.spill(ctx, th); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	writeSchema2(t, path, srcPath)

	s, err := Open(path, Options{SnapshotEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := read(s)
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("after the migration (-before +after):\n%s", d)
	}
	// The spot checks that the comparison above rests on.
	wantA := []string{"a-5", "a-4", "a-3", "asub-2", "a-2", "asub-1", "a-1"}
	if !cmp.Equal(after.List[:7], wantA) {
		t.Errorf("thread a lists %q, want %q", after.List[:7], wantA)
	}
	if c := after.Latest["a/"]; c == nil || c.State.Files["/notes.md"].Content != "notes of a-2" || len(c.Pending) != 1 || c.Pending[0].Result.Content != "ran" {
		t.Errorf("latest of a after the migration: %+v", c)
	}
	if c := after.Latest["b/"]; c == nil || c.State.Files["/notes.md"].Content != "notes of b-4" || len(c.State.Messages) != 5 {
		t.Errorf("latest of b after the migration: %+v", c)
	}
	var v int
	if err := s.r.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("schema version %d, %v; want %d", v, err, SchemaVersion)
	}
	for _, name := range []string{"checkpoints_by_thread", "sqlite_autoindex_blobs_1", "oplog"} {
		if err := s.r.QueryRow(`SELECT 1 FROM sqlite_master WHERE name = ?`, name).Scan(new(int)); err != sql.ErrNoRows {
			t.Errorf("%s is still there: %v", name, err)
		}
	}
	// A new put in the migrated thread lists first, and one in the
	// other thread does not disturb it.
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "b", ID: "b-6", ParentID: "b-5", Step: 6, Time: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "a", NS: "sub", ID: "asub-3", ParentID: "asub-2", Step: 3, Time: at}); err != nil {
		t.Fatal(err)
	}
	cs, err := s.List(ctx, checkpoint.ListOptions{ThreadID: "a", AllNamespaces: true, Limit: 2})
	if err != nil || len(cs) != 2 || cs[0].ID != "asub-3" || cs[1].ID != "a-5" {
		t.Fatalf("thread a after a new put: %v %v", cs, err)
	}
	cs, err = s.List(ctx, checkpoint.ListOptions{ThreadID: "a", AllNamespaces: true, Before: "a-4"})
	if err != nil || len(cs) != 5 || cs[0].ID != "a-3" {
		t.Errorf("thread a before a-4: %v %v", cs, err)
	}
}

// Savers opening a new file at the same time (processes started together)
// set up its schema once: none fails on tables another has just made.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "state.db")
		const n = 6
		errs := make(chan error, n)
		var start sync.WaitGroup
		start.Add(1)
		for range n {
			go func() {
				start.Wait()
				s, err := Open(path, Options{})
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		start.Done()
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// writeSchema2 makes path a database of the second schema holding the rows
// of the database at src (of this build's schema, its messages all in the
// chunks table).
func writeSchema2(t *testing.T, path, src string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, m := range migrations[:2] {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(m.sql); err != nil {
			t.Fatal(err)
		}
		if m.fn != nil {
			if err := m.fn(context.Background(), tx); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`PRAGMA user_version = 2`,
		`ATTACH DATABASE '` + src + `' AS src`,
		`INSERT INTO checkpoints (seq, thread, ns, id, title, record) SELECT seq, thread, ns, id, title, record FROM src.checkpoints`,
		`INSERT INTO chunks SELECT * FROM src.msgchunks`,
		`INSERT INTO blobs (hash, data) SELECT hash, data FROM src.blobs`,
		`INSERT INTO refs SELECT * FROM src.refs`,
		`INSERT INTO writes SELECT * FROM src.writes`,
		`DETACH DATABASE src`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
