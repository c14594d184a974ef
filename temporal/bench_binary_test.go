package temporal_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// benchLine is the part of bench --json's line the test reads.
type benchLine struct {
	Mode    string `json:"mode"`
	Runs    int    `json:"runs"`
	OK      int    `json:"ok"`
	Steps   int    `json:"steps"`
	StepP50 int64  `json:"step_p50_ns"`
	RSSKB   []int  `json:"rss_kb"`
}

// The bench of the binary, at CI's size: 50 concurrent runs of an agent
// that delegates once, on 3 worker processes, all ok, with three model
// steps each read from the histories and the workers' peak RSS; and the
// same load in process.
func TestBenchOnADevServer(t *testing.T) {
	address, namespace := devServer(t)
	bin := buildBinary(t)
	out, errOut, st := runBinary(t, bin, "bench", "--address", address, "--namespace", namespace, "--runs", "50", "--workers", "3", "--json")
	var r benchLine
	if st != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("bench: status %d, stdout %q, stderr %q", st, out, errOut)
	}
	if r.Mode != "temporal" || r.Runs != 50 || r.OK != 50 || r.Steps != 150 || r.StepP50 <= 0 || len(r.RSSKB) != 3 || r.RSSKB[0] <= 0 {
		t.Fatalf("bench: %+v", r)
	}
	t.Logf("bench on 3 workers: %s", strings.TrimSpace(out))

	out, errOut, st = runBinary(t, bin, "bench", "--in-process", "--runs", "50", "--json")
	if st != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Mode != "in process" || r.OK != 50 {
		t.Fatalf("bench --in-process: status %d, stdout %q, stderr %q", st, out, errOut)
	}
	t.Logf("bench in process: %s", strings.TrimSpace(out))
}
