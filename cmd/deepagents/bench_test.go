package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/internal/bench"
)

func TestBenchDurable(t *testing.T) {
	code, out, errs := runCLI(t, "bench", "--checkpointer", "sqlite", "-k", "3", "-n", "1", "--sub-rounds", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Checkpointer != "sqlite" || rep.DBBytes <= 0 || rep.Phases["sequential"].Checkpoints != 5 {
		t.Errorf("durable report: checkpointer %q, db_bytes %d, phases %+v", rep.Checkpointer, rep.DBBytes, rep.Phases)
	}
	code, out, errs = runCLI(t, "bench", "--checkpointer", "sqlite", "-k", "3", "-n", "1", "--sub-rounds", "2")
	if code != 0 || !strings.Contains(out, "checkpointer sqlite: database") || !strings.Contains(out, "stored B/round") {
		t.Errorf("durable table: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "bench", "--checkpointer", "postgres")
	if code != 2 || !strings.Contains(errs, "--checkpointer must be one of none, sqlite") {
		t.Errorf("bad --checkpointer: exit %d, %q", code, errs)
	}
}

// --runs starts each fresh process with the same checkpointer.
func TestBenchRunsPassTheCheckpointer(t *testing.T) {
	var seen [][]string
	prev := benchCommand
	benchCommand = func(ctx context.Context, args ...string) (*exec.Cmd, error) {
		seen = append(seen, args)
		cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestBenchChildProcess$", "--"}, args...)...)
		cmd.Env = append(os.Environ(), "DEEPAGENTS_BENCH_CHILD=1")
		return cmd, nil
	}
	t.Cleanup(func() { benchCommand = prev })
	code, out, errs := runCLI(t, "bench", "--runs", "2", "--checkpointer", "sqlite", "-k", "2", "-n", "1", "--sub-rounds", "2", "--json")
	if code != 0 || len(seen) != 2 {
		t.Fatalf("exit %d after %d children: %s", code, len(seen), errs)
	}
	for _, args := range seen {
		if i := slices.Index(args, "--checkpointer"); i < 0 || args[i+1] != "sqlite" {
			t.Errorf("child args %q lack --checkpointer sqlite", args)
		}
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Checkpointer != "sqlite" || rep.Phases["sequential"].Checkpoints != 4 {
		t.Errorf("median report: %v %+v", err, rep)
	}
}

// --compare with a durable bench.mjs report also compares the databases.
func TestBenchCompareDurable(t *testing.T) {
	js := filepath.Join(t.TempDir(), "js.json")
	ref := `{"impl":"deepagents-js","versions":{"deepagents":"1.14.1"},"checkpointer":"sqlite","db_bytes":10485760,` +
		`"phases":{"sequential":{"ms_per_model_round":7,"cpu_ms_per_model_round":11},"fanout_1":{"ms_per_model_round":7,"cpu_ms_per_model_round":10}}}`
	if err := os.WriteFile(js, []byte(ref+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "bench", "--checkpointer", "sqlite", "-k", "3", "-n", "1", "--sub-rounds", "2", "--compare", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "database at the end: JS (sqlite) 10.00 MB, Go (sqlite)") || !strings.Contains(out, "CPU ratio") {
		t.Errorf("compare output:\n%s", out)
	}
}
