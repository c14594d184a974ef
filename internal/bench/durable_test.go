package bench

import (
	"os"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/llm/scripted"
)

// Durable mode saves every phase on a thread of its own in an SQLite store
// on a temporary file, reports what was stored, and removes the file.
func TestDurableRun(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rep, err := Run(t.Context(), Options{K: 24, Fanouts: []int{2}, SubRounds: 2, Checkpointer: "sqlite"})
	if err != nil {
		t.Fatal(err)
	}
	if cut := rep.Cut(); len(cut) != 0 {
		t.Fatalf("cut: %q", cut)
	}
	if rep.Checkpointer != "sqlite" || rep.DBBytes <= 0 {
		t.Errorf("report: checkpointer %q, db_bytes %d", rep.Checkpointer, rep.DBBytes)
	}
	seq := rep.Phases["sequential"]
	// One checkpoint per model call, and the run's start.
	if seq.ModelCalls != 25 || seq.Checkpoints != 26 {
		t.Errorf("sequential: %d model calls, %d checkpoints; want 25 and 26", seq.ModelCalls, seq.Checkpoints)
	}
	if seq.StoredBytes <= 0 || seq.StoredBytesPerModelRound != float64(seq.StoredBytes)/25 {
		t.Errorf("sequential: stored %d bytes, %.1f per round", seq.StoredBytes, seq.StoredBytesPerModelRound)
	}
	if seq.First10MSPerRound <= 0 || seq.Last10MSPerRound <= 0 {
		t.Errorf("sequential: growth %.3f / %.3f ms per round", seq.First10MSPerRound, seq.Last10MSPerRound)
	}
	// The fan-out's children are saved under the phase's thread too.
	if fan := rep.Phases["fanout_2"]; fan.Checkpoints <= 3 || fan.StoredBytes <= 0 {
		t.Errorf("fanout_2: %d checkpoints, %d bytes", fan.Checkpoints, fan.StoredBytes)
	}
	left, err := os.ReadDir(tmp)
	if err != nil || len(left) != 0 {
		t.Errorf("the temporary store was left behind: %v %v", left, err)
	}

	plain, err := Run(t.Context(), Options{K: 3, Fanouts: []int{1}, SubRounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Checkpointer != "none" || plain.DBBytes != 0 || plain.Phases["sequential"].Checkpoints != 0 {
		t.Errorf("in-memory run reports a store: %+v", plain)
	}
	if _, err := Run(t.Context(), Options{K: 1, Checkpointer: "postgres"}); err == nil {
		t.Error("an unknown checkpointer was accepted")
	}
}

// growth measures the mean gap between model-call starts at both ends of a
// phase, in the order the calls started.
func TestGrowth(t *testing.T) {
	var recs []scripted.Record
	at := time.Duration(0)
	for i := range 30 {
		step := time.Millisecond
		if i > 18 {
			step = 3 * time.Millisecond
		}
		recs = append(recs, scripted.Record{Start: at})
		at += step
	}
	recs[0], recs[5] = recs[5], recs[0] // records need not come sorted
	first, last := growth(recs)
	if first != 1 || last != 3 {
		t.Errorf("growth = %v, %v; want 1, 3", first, last)
	}
}
