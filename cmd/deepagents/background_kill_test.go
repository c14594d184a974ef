//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	ot "github.com/deepagents-go/deepagents/providers/openai/openaitest"
)

// killServer plays a parent that starts two background subagents and
// answers once both reports are in; each child writes its file and then,
// while block is set, waits in its second model call.
type killServer struct {
	mu      sync.Mutex
	calls   map[string]int // "one#0": the child's model calls by round
	block   bool
	arrived map[string]bool
	both    chan struct{}
	release chan struct{}
}

func (k *killServer) reply(r *ot.Request) ot.Reply {
	if r.HasTool("task") {
		notes := 0
		for _, m := range r.Messages {
			if m.Role == "user" && strings.HasPrefix(m.Text(), "[Background task ") {
				notes++
			}
		}
		switch {
		case notes == 2:
			return ot.Text("Both reported.")
		case r.Round() == 0:
			return ot.Tools(
				ot.Call{ID: "call_one", Name: "task", Args: `{"description":"job one: write /one.md","subagent_type":"general-purpose","run_in_background":true}`},
				ot.Call{ID: "call_two", Name: "task", Args: `{"description":"job two: write /two.md","subagent_type":"general-purpose","run_in_background":true}`})
		}
		return ot.Text("Waiting for the reports.")
	}
	who := "one"
	if strings.Contains(r.FirstUser(), "job two") {
		who = "two"
	}
	round := r.Round()
	k.mu.Lock()
	k.calls[who+"#"+string(rune('0'+round))]++
	block := k.block && round == 1
	if block {
		k.arrived[who] = true
		if len(k.arrived) == 2 {
			close(k.both)
		}
	}
	k.mu.Unlock()
	if round == 0 {
		return ot.Tools(ot.Call{ID: "call_w", Name: "write_file", Args: `{"file_path":"/` + who + `.md","content":"` + who + `\n"}`})
	}
	if block {
		<-k.release
	}
	return ot.Text("Report " + who + ".")
}

// kill -9 the CLI while two background subagents run (each in a model
// call, after a finished tool call), then resume the thread: both finish,
// their reports reach the agent, and none of their finished model calls
// is made again.
func TestKilledRunResumesItsBackgroundSubagents(t *testing.T) {
	k := &killServer{calls: map[string]int{}, block: true, arrived: map[string]bool{}, both: make(chan struct{}), release: make(chan struct{})}
	srv := ot.NewServer(t, k.reply)
	runEnv(t, srv)
	released := false
	defer func() {
		if !released {
			close(k.release)
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBenchChildProcess$", "--",
		"run", "-p", "do both jobs", "--model", "openai:gpt-test", "--output", "stream-json")
	cmd.Env = append(os.Environ(), "DEEPAGENTS_BENCH_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	threads := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				if id, ok := ev["thread_id"].(string); ok {
					select {
					case threads <- id:
					default:
					}
				}
			}
		}
	}()
	var thread string
	select {
	case thread = <-threads:
	case <-ctx.Done():
		t.Fatalf("no thread id: %s", errb.String())
	}
	select {
	case <-k.both:
	case <-ctx.Done():
		t.Fatalf("the children never both reached their second model call: %s", errb.String())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	k.mu.Lock()
	k.block = false
	k.mu.Unlock()
	close(k.release)
	released = true

	code, res, errs := cliChild(t, "resume", "--thread", thread, "--model", "openai:gpt-test", "--output", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	sum := decode(t, res)
	if sum.Result != "Both reported." || sum.Status != "ok" || strings.Join(sum.FilesChanged, " ") != "/one.md /two.md" {
		t.Errorf("summary %+v", sum)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, who := range []string{"one", "two"} {
		if n := k.calls[who+"#0"]; n != 1 {
			t.Errorf("child %s's first model call, finished before the kill, was made %d times", who, n)
		}
		if n := k.calls[who+"#1"]; n != 2 {
			t.Errorf("child %s's second model call, cut by the kill, was made %d times (want it again once)", who, n)
		}
	}
}
