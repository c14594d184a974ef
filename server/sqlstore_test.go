package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/postgres"
	"github.com/deepagents-go/deepagents/internal/pgtest"
)

// storeSuite checks a Store's contract.
func storeSuite(t *testing.T, st Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := ThreadRecord{ID: "a", CreatedAt: t0, UpdatedAt: t0, Metadata: map[string]any{"owner": "ann", "n": 1.0}, Status: "idle"}
	b := ThreadRecord{ID: "b", CreatedAt: t0.Add(time.Second), UpdatedAt: t0.Add(time.Second), Metadata: map[string]any{"owner": "bob"}, Status: "busy"}
	for _, th := range []ThreadRecord{a, b} {
		if err := st.CreateThread(ctx, th); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateThread(ctx, a); err != ErrExists {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	got, err := st.GetThread(ctx, "a")
	if err != nil || got.Metadata["owner"] != "ann" || !got.CreatedAt.Equal(t0) || got.Status != "idle" {
		t.Fatalf("get a = %+v, %v", got, err)
	}
	if _, err := st.GetThread(ctx, "zz"); err != ErrNotFound {
		t.Fatalf("get missing: %v", err)
	}
	got.Status, got.Error = "error", "boom"
	if err := st.UpdateThread(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateThread(ctx, ThreadRecord{ID: "zz"}); err != ErrNotFound {
		t.Fatalf("update missing: %v", err)
	}
	list, total, err := st.SearchThreads(ctx, ThreadQuery{Metadata: map[string]any{"n": 1}, SortBy: "created_at"})
	if err != nil || total != 1 || list[0].ID != "a" || list[0].Error != "boom" {
		t.Fatalf("search n=1: %+v %d %v", list, total, err)
	}
	list, total, _ = st.SearchThreads(ctx, ThreadQuery{SortBy: "created_at", SortOrder: "asc", Limit: 1, Offset: 1})
	if total != 2 || len(list) != 1 || list[0].ID != "b" {
		t.Fatalf("page 2: %+v %d", list, total)
	}
	list, total, _ = st.SearchThreads(ctx, ThreadQuery{SortBy: "thread_id"})
	if total != 2 || len(list) != 2 || list[0].ID != "b" || list[1].ID != "a" {
		t.Fatalf("by thread_id, descending: %+v %d", list, total)
	}
	list, total, _ = st.SearchThreads(ctx, ThreadQuery{Offset: 5})
	if total != 2 || len(list) != 0 {
		t.Fatalf("past the end: %+v %d", list, total)
	}
	list, total, _ = st.SearchThreads(ctx, ThreadQuery{Status: "busy"})
	if total != 1 || list[0].ID != "b" {
		t.Fatalf("status busy: %+v", list)
	}

	r1 := RunRecord{Run: Run{RunID: "r1", ThreadID: "a", Status: "running", Metadata: map[string]any{}}}
	r2 := RunRecord{Run: Run{RunID: "r2", ThreadID: "a", Status: "pending"}}
	for _, r := range []RunRecord{r1, r2} {
		if err := st.PutRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	r1.Status, r1.Error = "error", "bad"
	if err := st.PutRun(ctx, r1); err != nil {
		t.Fatal(err)
	}
	runs, err := st.ListRuns(ctx, "a", 10, 0)
	if err != nil || len(runs) != 2 || runs[0].RunID != "r2" || runs[1].Status != "error" || runs[1].Error != "bad" {
		t.Fatalf("runs %+v %v", runs, err)
	}
	if _, err := st.GetRun(ctx, "b", "r1"); err != ErrNotFound {
		t.Fatalf("run of another thread: %v", err)
	}
	evs := []StoredEvent{{Seq: 1, Event: "metadata", Data: []byte(`{"a":1}`)}, {Seq: 2, Event: "values", Data: []byte(`{}`)}}
	if err := st.AppendEvents(ctx, "r1", evs); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "r1", []StoredEvent{{Seq: 3, Event: "end", Data: []byte(`null`)}}); err != nil {
		t.Fatal(err)
	}
	out, err := st.Events(ctx, "r1", 1)
	if err != nil || len(out) != 2 || out[0].Seq != 2 || out[1].Event != "end" || string(out[0].Data) != "{}" {
		t.Fatalf("events after 1: %+v %v", out, err)
	}
	if pager, ok := st.(EventPager); ok {
		for _, c := range []struct {
			after   int64
			limit   int
			first   int64
			howMany int
		}{{0, 2, 1, 2}, {2, 2, 3, 1}, {3, 2, 0, 0}, {0, 0, 0, 0}, {0, -1, 1, 3}} {
			out, err := pager.EventsPage(ctx, "r1", c.after, c.limit)
			if err != nil || len(out) != c.howMany || c.howMany > 0 && out[0].Seq != c.first {
				t.Errorf("page after %d of %d: %+v %v", c.after, c.limit, out, err)
			}
		}
	} else {
		t.Errorf("%T pages no events", st)
	}
	// A fleet's logs of the thread's runs and of the thread go with it;
	// another thread's stay.
	for _, log := range []string{runInfoLog("r1"), ThreadLog("a"), ThreadLog("b")} {
		if err := st.AppendEvents(ctx, log, []StoredEvent{{Seq: 1, Event: "run", Data: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteThread(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, log := range []string{"r1", runInfoLog("r1"), ThreadLog("a")} {
		if out, _ := st.Events(ctx, log, 0); len(out) != 0 {
			t.Fatalf("events of a deleted thread's log %s: %+v", log, out)
		}
	}
	if out, _ := st.Events(ctx, ThreadLog("b"), 0); len(out) != 1 {
		t.Fatalf("another thread's log has %d events after a delete, want 1", len(out))
	}
	if runs, _ := st.ListRuns(ctx, "a", 0, 0); len(runs) != 0 {
		t.Fatalf("runs of a deleted thread: %+v", runs)
	}
}

func TestStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) { storeSuite(t, NewMemoryStore()) })
	eachSQLStore(t, func(t *testing.T, st *SQLStore) { storeSuite(t, st) })
}

// eachSQLStore runs fn on a new SQLite store and on a Postgres one (skipped
// with a message when no server is configured), as subtests.
func eachSQLStore(t *testing.T, fn func(t *testing.T, st *SQLStore)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "s.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		fn(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, schema := pgtest.Schema(t)
		st, err := OpenSQLStore(context.Background(), "postgres", withSearchPath(dsn, schema))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		fn(t, st)
	})
}

// withSearchPath points a connection string at schema.
func withSearchPath(dsn, schema string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&search_path=" + schema
	}
	return dsn + "?search_path=" + schema
}

// TestRejoinAfterRestart streams part of a run from one server, then
// rejoins it by Last-Event-ID on a fresh server over the same database
// files, as after a crash: the stored events follow the last one seen, with
// no gap and no repeat.
func TestRejoinAfterRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() (checkpoint.Saver, Store) {
		sv, st := openFiles(t, dir)
		return sv, st
	}
	restartCase(t, open)
}

func TestRejoinAfterRestartPostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	dsn = withSearchPath(dsn, schema)
	open := func() (checkpoint.Saver, Store) {
		sv, err := postgres.Open(context.Background(), dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := OpenSQLStore(context.Background(), "postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		return sv, st
	}
	restartCase(t, open)
}

func restartCase(t *testing.T, open func() (checkpoint.Saver, Store)) {
	agentA, err := DemoAgent("researcher", 0)
	if err != nil {
		t.Fatal(err)
	}
	svA, stA := open()
	hA := newHarness(t, Config{Agents: []AgentSpec{{Name: "researcher", Agent: agentA}}, Saver: svA, Store: stA})
	var th Thread
	hA.json("POST", "/threads", nil, 200, &th)
	resp, all := hA.stream("POST", "/threads/"+th.ThreadID+"/runs/stream", map[string]any{
		"assistant_id": "researcher", "input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "compare"}}},
		"stream_mode": []string{"values", "messages-tuple", "updates"}, "stream_subgraphs": true,
	})
	loc := resp.Header.Get("Content-Location")
	if len(all) < 10 {
		t.Fatalf("only %d events", len(all))
	}

	// A fresh server over the same files, as after a kill: no memory of A.
	agentB, err := DemoAgent("researcher", 0)
	if err != nil {
		t.Fatal(err)
	}
	svB, stB := open()
	hB := newHarness(t, Config{Agents: []AgentSpec{{Name: "researcher", Agent: agentB}}, Saver: svB, Store: stB})
	k := len(all) / 2
	_, rest := hB.stream("GET", loc+"/stream", nil, "Last-Event-ID", strconv.Itoa(k))
	if len(rest) != len(all)-k {
		t.Fatalf("rejoined after %d: got %d events, want %d", k, len(rest), len(all)-k)
	}
	for i, e := range rest {
		want := all[k+i]
		if e.ID != want.ID || e.Event != want.Event || !jsonSame(e.Data, want.Data) {
			t.Fatalf("rejoined event %d = %d %s, want %d %s", i, e.ID, e.Event, want.ID, want.Event)
		}
	}
	var run Run
	hB.json("GET", loc, nil, 200, &run)
	if run.Status != "interrupted" {
		t.Errorf("the run as the new server reads it: %q", run.Status)
	}
	var st ThreadState
	hB.json("GET", "/threads/"+th.ThreadID+"/state", nil, 200, &st)
	if len(st.Interrupts) != 1 {
		t.Errorf("the new server does not see the waiting call: %+v", st.Interrupts)
	}
	// The run is resumed on the new server.
	var res map[string]json.RawMessage
	hB.json("POST", "/threads/"+th.ThreadID+"/runs/wait", map[string]any{"assistant_id": "researcher",
		"command": map[string]any{"resume": []any{map[string]any{"type": "approve"}}}}, 200, &res)
	if _, ok := res["__interrupt__"]; ok {
		t.Errorf("still interrupted after resume: %s", res["__interrupt__"])
	}
}

func jsonSame(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && jsonEqual(x, y)
}

// A trigger planted in the database file (it would run on every event the
// server stores) makes the SQL store refuse the file, naming it; nothing is
// written.
func TestSQLStoreRefusesPlantedTrigger(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := OpenSQLStore(ctx, "sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE pwn (x); CREATE TRIGGER t_pwn AFTER INSERT ON server_events BEGIN INSERT INTO pwn VALUES (new.run_id); END`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, err = OpenSQLStore(ctx, "sqlite", path)
	if err == nil {
		st.Close()
		t.Fatal("opened a database with a planted trigger")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `trigger "t_pwn"`) {
		t.Errorf("error %v, want one naming %s and the trigger", err, path)
	}
}
