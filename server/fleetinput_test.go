package server

import (
	"context"
	"path/filepath"
	"testing"
)

// The input an Executor keeps for a run (RunInputLog) goes with the run's
// thread, in either store, and another thread's stays.
func TestDeletingAThreadDeletesItsRunsStoredInput(t *testing.T) {
	sql, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sql.Close()
	for name, st := range map[string]Store{"memory": NewMemoryStore(), "sqlite": sql} {
		ctx := t.Context()
		for _, th := range []string{"T", "U"} {
			if err := st.CreateThread(ctx, ThreadRecord{ID: th, CreatedAt: now(), UpdatedAt: now()}); err != nil {
				t.Fatal(err)
			}
			rec := RunRecord{Run: Run{RunID: "run-" + th, ThreadID: th, AssistantID: "a", Status: runSuccess, CreatedAt: now(), UpdatedAt: now()}}
			if err := st.PutRun(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if err := st.AppendEvents(ctx, RunInputLog(rec.RunID), []StoredEvent{{Seq: 1, Event: "message", Data: []byte(`{"role":"user","content":"hi"}`)}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.DeleteThread(ctx, "T"); err != nil {
			t.Fatal(err)
		}
		for run, want := range map[string]int{"run-T": 0, "run-U": 1} {
			evs, err := st.Events(ctx, RunInputLog(run), 0)
			if err != nil || len(evs) != want {
				t.Errorf("%s: %d input messages of %s stored after thread T is deleted (%v), want %d", name, len(evs), run, err, want)
			}
		}
	}
}
