package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/tool"
)

// burst is a tool that reports n lines of progress, one per interval (as
// fast as it can when 0): each becomes a tool.progress event, streamed in
// "custom" mode.
type burst struct {
	n        int
	interval time.Duration
}

func (b burst) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: "burst", Description: "reports progress", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (b burst) Run(ctx context.Context, env *tool.Env, _ json.RawMessage) (tool.Result, error) {
	var tick <-chan time.Time
	if b.interval > 0 {
		t := time.NewTicker(b.interval)
		defer t.Stop()
		tick = t.C
	}
	for i := range b.n {
		if tick != nil {
			select {
			case <-tick:
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
		}
		env.Report(fmt.Sprint("line ", i))
	}
	return tool.Result{Content: "done"}, nil
}

// burstAgent makes about n events per run: one tool call that reports n-10
// lines, then an answer.
func burstAgent(tb testing.TB, n int, interval time.Duration) *agent.Agent {
	model := scripted.New(nil, scripted.Options{NoUsage: true, Func: func(ci llm.CallInfo, req *llm.Request) (scripted.Step, error) {
		if ci.Round == 0 {
			return scripted.Step{ToolCalls: []scripted.StepCall{{ID: "b1", Name: "burst", Args: json.RawMessage(`{}`)}}}, nil
		}
		return scripted.Step{Content: "ok"}, nil
	}})
	a, err := agent.New(agent.Config{Name: "burst", Model: model, Tools: []tool.Tool{burst{n: n - 10, interval: interval}}})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// BenchmarkStreams runs 200 concurrent streamed runs of about 1,000
// events each on loopback and reports the 50th and 99th percentiles of the
// delay between an event's creation (its "time") and its arrival at the
// client, then checks that no goroutine is left behind. Each run emits an
// event every 10 ms, the pace of a model streaming tokens (-bench.interval
// changes it; 0 emits as fast as possible, which measures the backlog).
func BenchmarkStreams(b *testing.B) {
	const streams, events = 200, 1000
	before := runtime.NumGoroutine()
	a := burstAgent(b, events, *benchInterval)
	cfg := Config{Agents: []AgentSpec{{Name: "burst", Agent: a}}, Saver: checkpoint.NewMemory(0)}
	if *benchStore == "sqlite" {
		st, err := OpenSQLStore(context.Background(), "sqlite", filepath.Join(b.TempDir(), "events.db"))
		if err != nil {
			b.Fatal(err)
		}
		cfg.Store = st
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	h := newBenchServer(b, srv)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}, Timeout: 10 * time.Minute}
	var all []time.Duration
	var got int
	cpu0, io0 := cpuTime(), writtenBytes()
	b.ResetTimer()
	for range b.N {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() {
				lat, n, err := benchStream(client, h, fmt.Sprintf("t-%d-%d", i, time.Now().UnixNano()))
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				all = append(all, lat...)
				got += n
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	slices.Sort(all)
	if len(all) > 0 {
		p := func(q float64) float64 { return float64(all[int(q*float64(len(all)-1))].Microseconds()) / 1000 }
		b.ReportMetric(p(0.50), "p50-ms")
		b.ReportMetric(p(0.99), "p99-ms")
		b.ReportMetric(float64(got)/float64(b.N)/float64(streams), "events/stream")
	}
	if got > 0 {
		// CPU and disk per event vary far less than latency on a shared
		// machine: they compare two versions of the server more reliably.
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(got), "cpu-µs/event")
		if io0 >= 0 {
			b.ReportMetric(float64(writtenBytes()-io0)/float64(got), "disk-B/event")
		}
	}
	client.CloseIdleConnections()
	_ = s.Close()
	_ = srv.Close()
	if cfg.Store != nil {
		_ = cfg.Store.Close()
	}
	// Goroutines end asynchronously after their connections close: wait
	// for the count to come back, up to a deadline.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	leaked := max(runtime.NumGoroutine()-before, 0)
	b.ReportMetric(float64(leaked), "leaked-goroutines")
	if leaked > 0 {
		buf := make([]byte, 1<<20)
		b.Fatalf("%d goroutines leaked:\n%s", leaked, buf[:runtime.Stack(buf, true)])
	}
}

var benchStore = flag.String("bench.store", "memory", "BenchmarkStreams: where run events are kept, memory or sqlite")

var benchInterval = flag.Duration("bench.interval", 10*time.Millisecond, "BenchmarkStreams: time between two events of a run")

func newBenchServer(b *testing.B, srv *http.Server) string {
	ln, err := listenLoopback()
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String()
}

// benchStream creates a thread, streams one run in custom mode and returns
// each custom event's delay from creation to arrival (an error when one has
// no time to measure from) and how many events came.
func benchStream(c *http.Client, base, thread string) ([]time.Duration, int, error) {
	body := `{"assistant_id":"burst","if_not_exists":"create","stream_mode":"custom","input":{"messages":[{"role":"user","content":"go"}]}}`
	resp, err := c.Post(base+"/threads/"+thread+"/runs/stream", "application/json", strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var lat []time.Duration
	n := 0
	event := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
			event = string(v)
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		n++
		t, ok := eventTime(data)
		if !ok {
			if event == "custom" {
				// A delay left out would flatter the percentiles.
				return nil, n, fmt.Errorf("a custom event without a time: %.200s", data)
			}
			continue
		}
		lat = append(lat, time.Since(t))
	}
	return lat, n, sc.Err()
}

// eventTime reads the "time" of an agent event's JSON without decoding the
// rest: the benchmark's 200 clients share the server's two cores, and a
// full decode per event was 7% of all the CPU. The first "time" key is the
// event's own: the fields before it (type, agent, task_call) are strings,
// and a quote inside a string is escaped.
func eventTime(data []byte) (time.Time, bool) {
	const key = `"time":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return time.Time{}, false
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t, err == nil && !t.IsZero()
}

func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// cpuTime is the user and system CPU time the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writtenBytes is what the process has written to storage so far, from
// /proc/self/io (Linux); -1 where that is not available.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// FuzzEventTime: for any agent event (whatever its strings hold), the time
// the benchmark's clients read is the one a full decode gives.
func FuzzEventTime(f *testing.F) {
	f.Add("tool.progress", "burst", "", int64(1796300000123456789), "line 1")
	f.Add("model.delta", `a "time":"2020-01-01T00:00:00Z" b`, `"time":"`, int64(0), `{"time":"x"}`)
	f.Fuzz(func(t *testing.T, typ, agentPath, task string, nanos int64, progress string) {
		ev := agent.Event{Type: agent.EventType(typ), Agent: agent.Path{{Name: agentPath}}, TaskCall: task, Time: time.Unix(0, nanos).UTC(),
			Tool: &agent.ToolInfo{Name: "burst", Text: progress}}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Skip()
		}
		var back struct {
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal(b, &back); err != nil {
			t.Skip() // a time JSON cannot carry (year outside 0-9999)
		}
		got, ok := eventTime(b)
		if !ok || !got.Equal(back.Time) {
			t.Fatalf("eventTime(%s) = %v, %v; want %v", b, got, ok, back.Time)
		}
	})
}
