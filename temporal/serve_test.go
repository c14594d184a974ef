package temporal_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/approve"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/checkpoint/postgres"
	"github.com/deepagents-go/deepagents/checkpoint/sqlite"
	"github.com/deepagents-go/deepagents/internal/demoagent"
	"github.com/deepagents-go/deepagents/internal/pgtest"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/server"
	"github.com/deepagents-go/deepagents/temporal"
)

// fleetStores opens the checkpoint store and the server store a fleet
// shares: PostgreSQL when DEEPAGENTS_TEST_POSTGRES names a server, else
// one SQLite file.
func fleetStores(t *testing.T) (checkpoint.Saver, server.Store) {
	t.Helper()
	var saver checkpoint.Saver
	kind, dsn := "sqlite", filepath.Join(t.TempDir(), "fleet.db")
	if os.Getenv(pgtest.EnvDSN) != "" {
		var schema string
		dsn, schema = pgtest.Schema(t)
		s, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		saver, kind = s, "postgres"
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + "search_path=" + schema
	} else {
		s, err := sqlite.Open(dsn, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		saver = s
	}
	t.Cleanup(func() { _ = saver.Close() })
	st, err := server.OpenSQLStore(t.Context(), kind, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return saver, st
}

// demoAgent is the server's demo agent (two parallel research subagents, a
// write that waits for approval, an answer), its model made by reg when
// reg is not nil.
func demoAgent(t *testing.T, reg *temporal.Registry) *agent.Agent {
	return demoAgentNamed(t, reg, "researcher", 0)
}

// demoAgentNamed is the demo agent named name, each model call taking
// stepMS milliseconds.
func demoAgentNamed(t *testing.T, reg *temporal.Registry, name string, stepMS float64) *agent.Agent {
	t.Helper()
	m := demoagent.Model(stepMS)
	if reg != nil {
		m = reg.Model("demo-"+name, m)
	}
	a, err := deepagents.New(deepagents.Config{Name: name, Model: m, Stream: true,
		InterruptOn: map[string]approve.Policy{"write_file": {}}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// replica is one server of a test fleet, or the in-process server the
// fleet is compared with.
type replica struct {
	t   *testing.T
	url string
	srv *server.Server
}

func newReplica(t *testing.T, cfg server.Config) *replica {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return &replica{t: t, url: hs.URL, srv: s}
}

var fleetClient = &http.Client{Timeout: 2 * time.Minute}

// do sends a request and returns its status and body.
func (r *replica) do(method, path string, body any, hdr ...string) (int, []byte) {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := fleetClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (r *replica) json(method, path string, body any, status int, out any) {
	r.t.Helper()
	code, b := r.do(method, path, body)
	if code != status {
		r.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			r.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

type sse struct {
	ID    int64
	Event string
	Data  string
}

func (r *replica) stream(method, path string, body any, hdr ...string) []sse {
	r.t.Helper()
	code, b := r.do(method, path, body, hdr...)
	if code != 200 {
		r.t.Fatalf("%s %s: status %d: %s", method, path, code, b)
	}
	var out []sse
	var cur sse
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		}
	}
	return out
}

// kinds are the names of a stream's events, a run of "messages" chunks
// counted as one (a model streams its text in as many chunks as it likes).
func kinds(evs []sse) []string {
	var out []string
	for _, e := range evs {
		if e.Event == "messages" && len(out) > 0 && out[len(out)-1] == "messages" {
			continue
		}
		out = append(out, e.Event)
	}
	return out
}

// finalState is what GET /threads/T/state says of a thread: its messages'
// types and texts, its files' names, and the calls it waits on.
func (r *replica) finalState(thread string) string {
	r.t.Helper()
	var st struct {
		Values struct {
			Messages []struct {
				Type    string `json:"type"`
				Content any    `json:"content"`
			} `json:"messages"`
			Files map[string]any `json:"files"`
		} `json:"values"`
		Next       []string          `json:"next"`
		Interrupts []json.RawMessage `json:"interrupts"`
	}
	r.json("GET", "/threads/"+thread+"/state", nil, 200, &st)
	var b strings.Builder
	for _, m := range st.Values.Messages {
		fmt.Fprintf(&b, "%s: %v\n", m.Type, m.Content)
	}
	for name := range st.Values.Files {
		fmt.Fprintf(&b, "file %s\n", name)
	}
	fmt.Fprintf(&b, "next %v, %d interrupts\n", st.Next, len(st.Interrupts))
	return b.String()
}

var streamModes = []string{"values", "updates", "messages-tuple"}

// Two servers in front of a fleet (two workers, in this process) share one
// database and one namespace: a run created on the first is streamed from
// the second, rejoined there, gives the same events and state as the same
// run in process, is approved through the second, and a run cancelled
// through the second cancels its workflow.
func TestServerFrontsAFleetOnADevServer(t *testing.T) {
	c := devClient(t)
	saver, st := fleetStores(t)
	reg := temporal.NewRegistry()
	reg.Store = saver
	events, err := temporal.StoreEvents(st)
	if err != nil {
		t.Fatal(err)
	}
	reg.Events = events
	if err := reg.Agent("researcher", demoAgent(t, reg)); err != nil {
		t.Fatal(err)
	}
	for range 2 { // two workers of the fleet
		w := worker.New(c, "deepagents-serve-test", worker.Options{})
		reg.Register(w)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}

	fleet := func() *replica {
		x, err := temporal.NewExecutor(temporal.ExecutorOptions{Client: c, TaskQueue: "deepagents-serve-test", Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return newReplica(t, server.Config{Agents: []server.AgentSpec{{Name: "researcher", Agent: demoAgent(t, reg)}},
			Saver: saver, Store: st, Executor: x})
	}
	r1, r2 := fleet(), fleet()
	local := newReplica(t, server.Config{Agents: []server.AgentSpec{{Name: "researcher", Agent: demoAgent(t, nil)}},
		Saver: checkpoint.NewMemory(0)})

	// The first turn: the run stops for the write's approval.
	input := map[string]any{"messages": []map[string]string{{"role": "user", "content": "compare A and B"}}}
	var run server.Run
	r1.json("POST", "/threads/T/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"stream_mode": streamModes, "input": input}, 200, &run)
	got := r2.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil)
	want := local.stream("POST", "/threads/T/runs/stream", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"stream_mode": streamModes, "input": input})
	if !reflect.DeepEqual(kinds(got), kinds(want)) {
		t.Fatalf("the fleet's run streamed\n%v\nthe same run in process\n%v", kinds(got), kinds(want))
	}
	if f, l := r2.finalState("T"), local.finalState("T"); f != l {
		t.Fatalf("the fleet's thread is\n%s\nin process\n%s", f, l)
	}
	if tail := r2.stream("GET", "/threads/T/runs/"+run.RunID+"/stream", nil, "Last-Event-ID", "3"); !reflect.DeepEqual(tail, got[3:]) {
		t.Fatalf("a rejoin after event 3 got %d events, want the %d after it", len(tail), len(got)-3)
	}
	var rec server.Run
	r2.json("GET", "/threads/T/runs/"+run.RunID, nil, 200, &rec)
	if rec.Status != "interrupted" {
		t.Fatalf("the run is %s, want interrupted (the write waits)", rec.Status)
	}

	// The approval, through the second server: the workflow that waits
	// takes the decision and finishes the run.
	resume := map[string]any{"assistant_id": "researcher", "stream_mode": streamModes,
		"command": map[string]any{"resume": map[string]any{"decisions": []map[string]string{{"type": "approve"}}}}}
	got = r2.stream("POST", "/threads/T/runs/stream", resume)
	want = local.stream("POST", "/threads/T/runs/stream", resume)
	if !reflect.DeepEqual(kinds(got), kinds(want)) {
		t.Fatalf("the fleet's resume streamed\n%v\nin process\n%v", kinds(got), kinds(want))
	}
	if f, l := r1.finalState("T"), local.finalState("T"); f != l {
		t.Fatalf("after the approval the fleet's thread is\n%s\nin process\n%s", f, l)
	}
	d, err := c.DescribeWorkflowExecution(t.Context(), temporal.WorkflowID("T", run.RunID), "")
	if err != nil {
		t.Fatal(err)
	}
	if s := d.WorkflowExecutionInfo.GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("the first run's workflow is %v after the approval, want completed", s)
	}

	// A slow run (a minute per model call), cancelled through the second.
	r1.json("POST", "/threads/S/runs", map[string]any{"assistant_id": "researcher", "if_not_exists": "create",
		"input": map[string]any{"messages": []map[string]string{{"role": "user", "content": "slow"}}}}, 200, &run)
	deadline := time.Now().Add(time.Minute)
	for r2.json("GET", "/threads/S/runs/"+run.RunID, nil, 200, &rec); rec.Status != "running"; r2.json("GET", "/threads/S/runs/"+run.RunID, nil, 200, &rec) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow run is %s after a minute", rec.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, b := r2.do("DELETE", "/threads/S", nil); code != 409 {
		t.Fatalf("deleting a thread whose run goes on on another server: status %d, want 409: %s", code, b)
	}
	start := time.Now()
	r2.json("POST", "/threads/S/runs/"+run.RunID+"/cancel?wait=1", nil, 202, nil)
	r1.json("GET", "/threads/S/runs/"+run.RunID, nil, 200, &rec)
	if rec.Status != "interrupted" || time.Since(start) > 30*time.Second {
		t.Fatalf("the run is %s %v after a cancel through the other server, want interrupted at once", rec.Status, time.Since(start))
	}
	d, err = c.DescribeWorkflowExecution(t.Context(), temporal.WorkflowID("S", run.RunID), "")
	if err != nil {
		t.Fatal(err)
	}
	if s := d.WorkflowExecutionInfo.GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		t.Fatalf("the cancelled run's workflow is %v, want cancelled", s)
	}

	// A thread whose run waits for decisions, deleted through the second:
	// the workflow that waits goes with it.
	r1.json("POST", "/threads/D/runs/wait", map[string]any{"assistant_id": "researcher", "if_not_exists": "create", "input": input}, 200, nil)
	var runs []server.Run
	r1.json("GET", "/threads/D/runs", nil, 200, &runs)
	if len(runs) != 1 || runs[0].Status != "interrupted" {
		t.Fatalf("thread D's runs are %+v, want one interrupted", runs)
	}
	r2.json("DELETE", "/threads/D", nil, 204, nil)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err = c.DescribeWorkflowExecution(t.Context(), temporal.WorkflowID("D", runs[0].RunID), "")
		if err != nil {
			t.Fatal(err)
		}
		s := d.WorkflowExecutionInfo.GetStatus()
		if s == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			break
		}
		if s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || time.Now().After(deadline) {
			t.Fatalf("the deleted thread's waiting workflow is %v, want cancelled", s)
		}
	}
}

// A run whose server stops goes on in the fleet, and another server adopts
// it: a stream of it there goes on to the run's end, its events numbered
// on from those the first stored, and the thread ends as in process.
func TestAServerAdoptsARunWhoseServerStoppedOnADevServer(t *testing.T) {
	c := devClient(t)
	saver, st := fleetStores(t)
	reg := temporal.NewRegistry()
	reg.Store = saver
	events, err := temporal.StoreEvents(st)
	if err != nil {
		t.Fatal(err)
	}
	reg.Events = events
	if err := reg.Agent("patient", demoAgentNamed(t, reg, "patient", 700)); err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, "deepagents-adopt-test", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fleet := func() *replica {
		x, err := temporal.NewExecutor(temporal.ExecutorOptions{Client: c, TaskQueue: "deepagents-adopt-test", Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return newReplica(t, server.Config{Agents: []server.AgentSpec{{Name: "patient", Agent: demoAgentNamed(t, reg, "patient", 700)}},
			Saver: saver, Store: st, Executor: x})
	}
	r1, r2 := fleet(), fleet()
	local := newReplica(t, server.Config{Agents: []server.AgentSpec{{Name: "patient", Agent: demoAgentNamed(t, nil, "patient", 0)}},
		Saver: checkpoint.NewMemory(0)})

	input := map[string]any{"messages": []map[string]string{{"role": "user", "content": "compare A and B"}}}
	modes := append(slices.Clone(streamModes), "custom")
	var run server.Run
	r1.json("POST", "/threads/P/runs", map[string]any{"assistant_id": "patient", "if_not_exists": "create",
		"stream_mode": modes, "input": input}, 200, &run)
	time.Sleep(1500 * time.Millisecond) // the parent's first call and the subagents' start
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := r1.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The workers publish on while no server follows the run.
	time.Sleep(1500 * time.Millisecond)
	var rec server.Run
	r2.json("GET", "/threads/P/runs/"+run.RunID, nil, 200, &rec)
	if rec.Status != "running" {
		t.Fatalf("the run is %s once its server stopped, want running (its workflow goes on)", rec.Status)
	}
	before, err := st.Events(t.Context(), run.RunID, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := r2.stream("GET", "/threads/P/runs/"+run.RunID+"/stream", nil)
	for i, e := range got {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d of the adopted run's stream has id %d", i, e.ID)
		}
	}
	if len(got) <= len(before) || got[len(got)-1].Event != "values" {
		t.Fatalf("the adopted run's stream has %d events (%d before its server stopped), the last %q; want more, ending with the final values",
			len(got), len(before), got[len(got)-1].Event)
	}
	r2.json("GET", "/threads/P/runs/"+run.RunID, nil, 200, &rec)
	if rec.Status != "interrupted" {
		t.Fatalf("the adopted run ended %s, want interrupted (the write waits)", rec.Status)
	}
	want := local.stream("POST", "/threads/P/runs/stream", map[string]any{"assistant_id": "patient", "if_not_exists": "create",
		"stream_mode": modes, "input": input})
	if f, l := r2.finalState("P"), local.finalState("P"); f != l {
		t.Fatalf("the adopted run's thread is\n%s\nin process\n%s", f, l)
	}
	// Nothing published while no server followed the run is missing.
	if g, w := kinds(without(got, "custom")), kinds(without(want, "custom")); !reflect.DeepEqual(g, w) {
		t.Fatalf("the adopted run streamed\n%v\nthe same run in process\n%v", g, w)
	}
	chunks, texts := chunkTexts(t, got)
	_, wantTexts := chunkTexts(t, want)
	if !reflect.DeepEqual(texts, wantTexts) {
		t.Fatalf("the adopted run's messages are %q, in process %q", texts, wantTexts)
	}
	for id, text := range texts {
		if chunks[id] != text {
			t.Fatalf("the chunks of message %s in the adopted run's stream make %q, its text is %q", id, chunks[id], text)
		}
	}
	if g, w := customTypes(t, got), customTypes(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("the adopted run's custom events are %v, in process %v", g, w)
	}
}

// without is evs but those named name.
func without(evs []sse, name string) []sse {
	return slices.DeleteFunc(slices.Clone(evs), func(e sse) bool { return e.Event == name })
}

// chunkTexts reads a stream's "messages" events: the text its chunks make
// for each AI message, by id, and each complete AI message's text.
func chunkTexts(t *testing.T, evs []sse) (chunks, texts map[string]string) {
	t.Helper()
	chunks, texts = map[string]string{}, map[string]string{}
	for _, e := range evs {
		if e.Event != "messages" {
			continue
		}
		var tuple []json.RawMessage
		var m struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Content any    `json:"content"`
		}
		if err := json.Unmarshal([]byte(e.Data), &tuple); err != nil || len(tuple) == 0 || json.Unmarshal(tuple[0], &m) != nil {
			t.Fatalf("a messages event %s does not decode", e.Data)
		}
		text, _ := m.Content.(string)
		switch m.Type {
		case "AIMessageChunk":
			chunks[m.ID] += text
		case "ai":
			if text != "" {
				texts[m.ID] = text
			}
		}
	}
	return chunks, texts
}

// customTypes are the types of the top-level agent's model requests,
// responses and tool ends in a stream's "custom" events, sorted (tool
// calls end in any order): what the fleet's workers publish of them.
func customTypes(t *testing.T, evs []sse) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.Event != "custom" {
			continue
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(e.Data), &ev); err != nil {
			t.Fatalf("a custom event %s does not decode: %v", e.Data, err)
		}
		switch ev.Type {
		case agent.ModelRequest, agent.ModelResponse, agent.ToolEnd:
			out = append(out, string(ev.Type))
		}
	}
	slices.Sort(out)
	return out
}

// A served run takes the input an in-process server takes (several
// messages, text in content blocks): the executor stores it and starts the
// workflow with a reference to it, which the workflow reads back; the
// thread ends as the same run's in process, and the workflow's start
// request holds no message.
func TestServedRunTakesAnyInputOnADevServer(t *testing.T) {
	c := devClient(t)
	saver, st := fleetStores(t)
	reg := temporal.NewRegistry()
	reg.Store = saver
	events, err := temporal.StoreEvents(st)
	if err != nil {
		t.Fatal(err)
	}
	reg.Events = events
	if err := reg.Agent("researcher", demoAgent(t, reg)); err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, "deepagents-input-test", worker.Options{})
	reg.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	x, err := temporal.NewExecutor(temporal.ExecutorOptions{Client: c, TaskQueue: "deepagents-input-test", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	fleet := newReplica(t, server.Config{Agents: []server.AgentSpec{{Name: "researcher", Agent: demoAgent(t, reg)}},
		Saver: saver, Store: st, Executor: x})
	local := newReplica(t, server.Config{Agents: []server.AgentSpec{{Name: "researcher", Agent: demoAgent(t, nil)}},
		Saver: checkpoint.NewMemory(0)})

	input := map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "a question from before"},
		map[string]any{"role": "assistant", "content": "an answer from before"},
		map[string]any{"role": "user", "content": []map[string]string{{"type": "text", "text": "compare A "}, {"type": "text", "text": "and B"}}},
	}}
	body := map[string]any{"assistant_id": "researcher", "if_not_exists": "create", "stream_mode": streamModes, "input": input}
	var run server.Run
	fleet.json("POST", "/threads/I/runs", body, 200, &run)
	got := fleet.stream("GET", "/threads/I/runs/"+run.RunID+"/stream", nil)
	want := local.stream("POST", "/threads/I/runs/stream", body)
	if !reflect.DeepEqual(kinds(got), kinds(want)) {
		t.Fatalf("the fleet's run streamed\n%v\nthe same run in process\n%v", kinds(got), kinds(want))
	}
	f, l := fleet.finalState("I"), local.finalState("I")
	if f != l {
		t.Fatalf("the fleet's thread is\n%s\nin process\n%s", f, l)
	}
	if !strings.Contains(f, "human: a question from before\nai: an answer from before\nhuman: compare A and B\n") {
		t.Fatalf("the thread does not start with the input:\n%s", f)
	}
	iter := c.GetWorkflowHistory(t.Context(), temporal.WorkflowID("I", run.RunID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	first, err := iter.Next()
	if err != nil {
		t.Fatal(err)
	}
	var in temporal.RunInput
	if err := temporal.DataConverter().FromPayloads(first.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		t.Fatal(err)
	}
	if in.Input != "" || in.InputRef != run.RunID {
		t.Fatalf("the workflow started with %+v; want a reference to the run's stored input, and no message", in)
	}
	// The stored input goes with its thread.
	if stored, err := st.Events(t.Context(), server.RunInputLog(run.RunID), 0); err != nil || len(stored) != 3 {
		t.Fatalf("the run's stored input is %d messages (%v), want 3", len(stored), err)
	}
	fleet.json("DELETE", "/threads/I", nil, 204, nil)
	if stored, err := st.Events(t.Context(), server.RunInputLog(run.RunID), 0); err != nil || len(stored) != 0 {
		t.Fatalf("after its thread is deleted, the run's stored input is %d messages (%v), want none", len(stored), err)
	}
}

// Only one plain user message of text goes in the workflow's start
// request, where a worker that predates InputRef reads it; any other
// input goes through the store.
func TestOneTextInput(t *testing.T) {
	if text, ok := temporal.OneText([]llm.Message{{Role: llm.RoleUser, Content: "hi"}}); !ok || text != "hi" {
		t.Errorf("one user message of text: %q %v", text, ok)
	}
	for name, in := range map[string][]llm.Message{
		"none":      nil,
		"empty":     {{Role: llm.RoleUser}},
		"assistant": {{Role: llm.RoleAssistant, Content: "hi"}},
		"two":       {{Role: llm.RoleUser, Content: "a"}, {Role: llm.RoleUser, Content: "b"}},
		"parts":     {{Role: llm.RoleUser, Content: "a", Parts: []llm.Part{{Type: "text", Text: "a"}}}},
		"named":     {{Role: llm.RoleUser, Content: "a", Name: "bob"}},
	} {
		if text, ok := temporal.OneText(in); ok {
			t.Errorf("%s: went in the start request as %q", name, text)
		}
	}
}
