package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// schema5 is a database written by schema version 5 (checked in, made by
// this file with DEEPAGENTS_WRITE_SCHEMA5=1 before version 6 existed): two
// threads, a subagent's namespace, files written and deleted, values,
// pending writes and snapshots every 3 steps, so that it holds packed and
// unpacked message chunks.
const schema5 = "testdata/schema5/state.db"

// fixtureEvery is the snapshot interval the fixture was written with.
const fixtureEvery = 3

// fixtureOp is one put or write of the fixture's history.
type fixtureOp struct {
	step  *checkpoint.Step
	ref   checkpoint.Ref
	write checkpoint.Write
}

// fixtureOps returns the history the fixture holds (round 0), or more of
// the same threads after it (rounds 1, 2, ...).
func fixtureOps(round int) []fixtureOp {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC).Add(time.Duration(round) * time.Hour)
	var ops []fixtureOp
	type line struct{ thread, ns, prefix string }
	lines := []line{{"fx", "", "top"}, {"fx", "fx / sub#call_1", "sub"}, {"fx2", "", "other"}}
	steps := map[string]int{"fx/": 8, "fx/fx / sub#call_1": 5, "fx2/": 2}
	for _, l := range lines {
		n := steps[l.thread+"/"+l.ns]
		from := round * n
		for i := from; i < from+n; i++ {
			st := &checkpoint.Step{ThreadID: l.thread, NS: l.ns, ID: fmt.Sprintf("%08d", i+1), Step: i + 1,
				Metadata: map[string]string{"source": "loop"}, Status: checkpoint.StatusRunning,
				Time: at.Add(time.Duration(i) * time.Second), Usage: llm.Usage{InputTokens: 10 + i, OutputTokens: i}}
			if i > 0 {
				st.ParentID = fmt.Sprintf("%08d", i)
			}
			call := fmt.Sprintf("call_%s_%d", l.prefix, i)
			if i > 0 {
				st.Messages = append(st.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: fmt.Sprintf("call_%s_%d", l.prefix, i-1), Name: "write_file",
					Content: fmt.Sprintf("wrote %d", i-1)})
			} else {
				st.Messages = append(st.Messages, llm.Message{Role: llm.RoleUser, Content: l.prefix + " task"})
			}
			st.Messages = append(st.Messages, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("%s step %d", l.prefix, i),
				ToolCalls: []llm.ToolCall{{ID: call, Name: "write_file", Args: json.RawMessage(fmt.Sprintf(`{"file_path":"/%s/f%d.txt"}`, l.prefix, i%3))}}})
			if i%2 == 1 {
				st.Files = vfs.Delta{{Path: fmt.Sprintf("/%s/f%d.txt", l.prefix, i%3), File: &vfs.File{Content: fmt.Sprintf("content %d\n", i%4),
					CreatedAt: at, ModifiedAt: at.Add(time.Duration(i) * time.Second)}}}
			}
			if i%5 == 4 {
				st.Files = append(st.Files, vfs.Change{Path: fmt.Sprintf("/%s/f%d.txt", l.prefix, (i+1)%3)})
			}
			st.Values = map[string]json.RawMessage{"agent.loop": json.RawMessage(fmt.Sprintf(`{"rounds":%d}`, i+1))}
			if i%3 == 0 {
				st.Values["other"] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
			}
			ops = append(ops, fixtureOp{step: st})
			ref := checkpoint.Ref{ThreadID: l.thread, NS: l.ns, ID: st.ID}
			ops = append(ops, fixtureOp{ref: ref, write: checkpoint.Write{CallID: call, Kind: checkpoint.KindResult, Time: st.Time,
				Result: llm.Message{Role: llm.RoleTool, ToolCallID: call, Name: "write_file", Content: fmt.Sprintf("wrote %d", i)},
				Data:   json.RawMessage(`{"duration_ms":1}`)}})
		}
	}
	return ops
}

func applyOps(t *testing.T, s checkpoint.RunStore, ops []fixtureOp) {
	t.Helper()
	ctx := context.Background()
	for _, op := range ops {
		var err error
		if op.step != nil {
			err = s.Put(ctx, *op.step)
		} else {
			err = s.PutWrite(ctx, op.ref, op.write)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sameThreads checks that got holds what want holds: every checkpoint of
// the fixture's threads with its state and pending writes.
func sameThreads(t *testing.T, got, want checkpoint.Reader) {
	t.Helper()
	ctx := context.Background()
	for _, thread := range []string{"fx", "fx2"} {
		list, err := want.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
		if err != nil {
			t.Fatal(err)
		}
		gl, err := got.List(ctx, checkpoint.ListOptions{ThreadID: thread, AllNamespaces: true})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want2ids(list), want2ids(gl)); diff != "" {
			t.Fatalf("thread %s lists other checkpoints (-want +got):\n%s", thread, diff)
		}
		for _, c := range list {
			w, err := want.Get(ctx, c.Ref())
			if err != nil {
				t.Fatal(err)
			}
			g, err := got.Get(ctx, c.Ref())
			if err != nil {
				t.Fatalf("checkpoint %v: %v", c.Ref(), err)
			}
			if diff := cmp.Diff(w, g, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("checkpoint %v differs (-want +got):\n%s", c.Ref(), diff)
			}
		}
	}
}

func want2ids(cs []checkpoint.Checkpoint) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.NS+"@"+c.ID)
	}
	return out
}

// TestWriteSchema5Fixture writes the fixture. It ran once, on schema 5;
// it refuses to write it with any other schema.
func TestWriteSchema5Fixture(t *testing.T) {
	if os.Getenv("DEEPAGENTS_WRITE_SCHEMA5") == "" {
		t.Skip("set DEEPAGENTS_WRITE_SCHEMA5=1 to write " + schema5)
	}
	if SchemaVersion != 5 {
		t.Fatalf("this build writes schema %d; the fixture is of schema 5", SchemaVersion)
	}
	if err := os.MkdirAll(filepath.Dir(schema5), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(schema5)
	s, err := Open(schema5, Options{SnapshotEvery: fixtureEvery})
	if err != nil {
		t.Fatal(err)
	}
	applyOps(t, s, fixtureOps(0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyFixture copies the fixture into a new directory and returns its path.
func copyFixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(schema5)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A database of schema 5 opens with this build, reads back what was saved,
// and its threads go on: new steps, snapshots, a copy and a prune give what
// they give on a store that saw the same history from the start.
func TestSchema5FixtureReadsAndContinues(t *testing.T) {
	ctx := context.Background()
	path := copyFixture(t)
	var v int
	if err := openFixtureVersion(path, &v); err != nil {
		t.Fatal(err)
	}
	if v != 5 {
		t.Fatalf("the fixture has schema version %d, want 5", v)
	}
	s := openOpts(t, path, Options{SnapshotEvery: fixtureEvery})
	mem := checkpoint.NewMemory(fixtureEvery)
	applyOps(t, mem, fixtureOps(0))
	sameThreads(t, s, mem)

	for round := 1; round <= 2; round++ {
		applyOps(t, s, fixtureOps(round))
		applyOps(t, mem, fixtureOps(round))
		sameThreads(t, s, mem)
	}
	// A fresh saver on the file reads the same (no tips to lean on).
	s2 := openOpts(t, path, Options{SnapshotEvery: fixtureEvery})
	sameThreads(t, s2, mem)

	for _, st := range []checkpoint.Saver{s, mem} {
		if err := st.CopyThread(ctx, checkpoint.Ref{ThreadID: "fx", ID: "00000012"}, "fx-copy"); err != nil {
			t.Fatal(err)
		}
		if err := st.Prune(ctx, "fx", checkpoint.PruneOptions{KeepLast: 4}); err != nil {
			t.Fatal(err)
		}
	}
	sameThreads(t, s, mem)
	for _, ref := range []checkpoint.Ref{{ThreadID: "fx-copy"}, {ThreadID: "fx-copy", NS: "fx / sub#call_1"}} {
		w, err := mem.Get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.Get(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the copy %v differs (-want +got):\n%s", ref, diff)
		}
	}
	if err := s.DeleteThread(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, checkpoint.Ref{ThreadID: "fx-copy", NS: "fx / sub#call_1"}); err != nil {
		t.Fatalf("the copy does not read after its source is deleted: %v", err)
	}
}

// openFixtureVersion reads the schema version of the database at path.
func openFixtureVersion(path string, v *int) error {
	db, err := OpenDB(path, DBOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.QueryRow(`PRAGMA user_version`).Scan(v)
}

// A process of the schema-5 release that still has the file open when this
// build migrates it must fail on its next put rather than go on writing:
// it numbers messages from the chunk table alone, so its puts would reuse
// the numbers of messages this build keeps in checkpoint rows, and lose
// them. Its statements were prepared against the old schema; once the
// chunk table has another name, SQLite prepares them again and they fail.
func TestSchema5WriterFailsAfterMigration(t *testing.T) {
	path := copyFixture(t)
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	conn, err := old.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The schema-5 release's put of a chunk, and its numbering of the next
	// message, prepared before the migration as that process would have.
	insert, err := conn.PrepareContext(context.Background(),
		`INSERT INTO chunks (thread, ns, seq_from, seq_to, packed, data) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	defer insert.Close()
	tail, err := conn.PrepareContext(context.Background(),
		`SELECT seq_from, seq_to, packed FROM chunks WHERE thread = ? AND ns = ? ORDER BY seq_from DESC`)
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Close()

	s, err := Open(path, Options{SnapshotEvery: fixtureEvery})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if _, err := insert.ExecContext(context.Background(), "fx", "", 1000, 1001, 0, []byte("x")); err == nil {
		t.Fatal("a schema-5 writer's put went through after the migration")
	} else if !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("a schema-5 writer's put failed with %v, want a missing table", err)
	}
	rows, err := tail.QueryContext(context.Background(), "fx", "")
	if err == nil {
		rows.Close()
		t.Fatal("a schema-5 writer still reads the chunk table after the migration")
	}
}
