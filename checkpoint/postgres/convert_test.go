package postgres

import (
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/internal/msgcodec"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// A database at schema version 2 (the saver's own model before the shared
// record format) opens, is converted, and reads and grows as before: a
// history with values, file changes and a pending write, and a pruned
// history whose first survivor held its whole state.
func TestConvertFromSchema2(t *testing.T) {
	ctx := t.Context()
	dsn, schema := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET search_path TO " + schema)
	exec(`CREATE TABLE deepagents_migrations (v integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	exec(migrations[0].sql)
	exec(migrations[1].sql)
	exec(`INSERT INTO deepagents_migrations (v) VALUES (1), (2)`)

	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	sha := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	usage := func(in int) []byte { b, _ := json.Marshal(llm.Usage{InputTokens: in}); return b }
	hi := llm.Message{Role: llm.RoleUser, Content: "hi"}
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "ls", Args: json.RawMessage(`{}`)}}}
	hiJSON, _ := json.Marshal(hi) // version 1 stored JSON bodies
	callBody, err := msgcodec.EncodeMessage(call)
	if err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, depth, metadata, status, at, step_usage, usage, title, vals)
		VALUES ('th', '', 'c1', '', 0, 1, '{"source":"input"}', 'running', $1, $2, $2, 'hi', '{"todos":[1]}'),
		       ('th', '', 'c2', 'c1', 1, 2, '{}', 'done', $1, $3, $4, 'hi', '{"todos":null}')`,
		fmtTime(at), usage(10), usage(5), usage(15))
	exec(`INSERT INTO messages (thread_id, ns, checkpoint_id, idx, body) VALUES ('th', '', 'c1', 0, $1), ('th', '', 'c2', 0, $2)`, hiJSON, callBody)
	exec(`INSERT INTO blobs (sha, content) VALUES ($1, 'A'), ($2, 'B'), ($3, 'S')`, sha("A"), sha("B"), sha("S"))
	exec(`INSERT INTO file_changes (thread_id, ns, checkpoint_id, idx, path, sha, created_at, modified_at)
		VALUES ('th', '', 'c1', 0, '/a.txt', $1, $3, $3), ('th', '', 'c2', 0, '/a.txt', NULL, '', ''), ('th', '', 'c2', 1, '/b.txt', $2, $3, $3)`,
		sha("A"), sha("B"), fmtTime(at))
	w, err := checkpoint.EncodeWrite(checkpoint.Write{CallID: "call_1", Result: llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: "a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO writes (thread_id, ns, checkpoint_id, call_id, kind, body) VALUES ('th', '', 'c2', 'call_1', 'result', $1)`, w)
	// A pruned thread: r5's parent r4 is gone; r5 holds every message of
	// its history, its files and values in its snapshot.
	exec(`INSERT INTO checkpoints (thread_id, ns, id, parent_id, step, depth, metadata, status, at, step_usage, usage, title, snapshot)
		VALUES ('p', '', 'r5', 'r4', 5, 5, '{}', 'running', $1, $2, $3, 'first', '{"chain":["r5"],"values":{"v":1}}')`,
		fmtTime(at), usage(2), usage(42))
	for i, text := range []string{"first", "second", "third"} {
		body, _ := msgcodec.EncodeMessage(llm.Message{Role: llm.RoleUser, Content: text})
		exec(`INSERT INTO messages (thread_id, ns, checkpoint_id, idx, body) VALUES ('p', '', 'r5', $1, $2)`, i, body)
	}
	exec(`INSERT INTO snapshot_files (thread_id, ns, checkpoint_id, path, sha, created_at, modified_at) VALUES ('p', '', 'r5', '/s.txt', $1, $2, $2)`, sha("S"), fmtTime(at))

	s, err := Open(ctx, dsn, Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]llm.Message{hi, call}, c.State.Messages); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}
	if len(c.State.Files) != 1 || c.State.Files["/b.txt"].Content != "B" || !c.State.Files["/b.txt"].ModifiedAt.Equal(at) {
		t.Errorf("files: %+v", c.State.Files)
	}
	if len(c.State.Values) != 0 || c.Usage.InputTokens != 15 || c.StepUsage.InputTokens != 5 || c.Status != "done" || c.ParentID != "c1" {
		t.Errorf("checkpoint c2: %+v", c)
	}
	if len(c.Pending) != 1 || c.Pending[0].Result.Content != "a.txt" {
		t.Errorf("pending: %+v", c.Pending)
	}
	first, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th", ID: "c1"})
	if err != nil || string(first.State.Values["todos"]) != "[1]" || first.Metadata["source"] != "input" || first.State.Files["/a.txt"].Content != "A" {
		t.Errorf("checkpoint c1: %+v, %v", first, err)
	}
	p, err := s.Get(ctx, checkpoint.Ref{ThreadID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range p.State.Messages {
		texts = append(texts, m.Content)
	}
	if !cmp.Equal(texts, []string{"first", "second", "third"}) || p.ParentID != "r4" || p.Usage.InputTokens != 42 ||
		string(p.State.Values["v"]) != "1" || p.State.Files["/s.txt"].Content != "S" {
		t.Errorf("pruned survivor: %q parent %q usage %d values %v files %v", texts, p.ParentID, p.Usage.InputTokens, p.State.Values, p.State.Files)
	}
	if err := s.Put(ctx, checkpoint.Step{ThreadID: "th", ID: "c3", ParentID: "c2", Messages: []llm.Message{{Role: llm.RoleUser, Content: "more"}}}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Get(ctx, checkpoint.Ref{ThreadID: "th"}); err != nil || len(c.State.Messages) != 3 || c.State.Files["/b.txt"].Content != "B" {
		t.Errorf("after a put on the converted thread: %+v, %v", c, err)
	}
	var old bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'messages')`, schema).Scan(&old); err != nil || old {
		t.Errorf("the old messages table is still there (%v)", err)
	}
}
