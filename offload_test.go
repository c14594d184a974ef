package deepagents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents"
	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/offload"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs/osfs"
)

// bigReport is about 100k o200k tokens over 7,000 lines.
func bigReport() string {
	var b strings.Builder
	for i := 1; i <= 7000; i++ {
		fmt.Fprintf(&b, "row %05d: the quick brown fox jumps over the lazy dog, %d times over\n", i, i*7)
	}
	return b.String()
}

func fetchTool(t *testing.T, answer string) tool.Tool {
	t.Helper()
	ft, err := tool.Func("fetch", "Fetches a report.", func(context.Context, *tool.Env, struct {
		Query string `json:"query"`
	}) (string, error) {
		return answer, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ft
}

func call(id, name, args string) scripted.StepCall {
	return scripted.StepCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

func eventsOf(evs []agent.Event, typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// A custom tool's 100k-token result: the next request, the run's messages and
// the tool.end event carry the notice; the saved file holds it all; a later
// read_file with offset/limit on it returns the original lines.
func TestLargeToolResultOffloadedEndToEnd(t *testing.T) {
	big := bigReport()
	if n := tokens.Count(tokens.O200k, big); n < 90_000 {
		t.Fatalf("report is only %d tokens", n)
	}
	const path = "/large_tool_results/call_big"
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("call_big", "fetch", `{"query":"all"}`)}},
		{ToolCalls: []scripted.StepCall{call("call_read", "read_file", `{"file_path":"`+path+`","offset":4000,"limit":2}`)}},
		{Content: "done"},
	}}}, scripted.Options{NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: m, Tools: []tool.Tool{fetchTool(t, big)}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("fetch the report")), func(e agent.Event) { evs = append(evs, e) })
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}

	notice := res.State.Messages[2].Content
	if res.State.Messages[2].ToolCallID != "call_big" || !strings.Contains(notice, "too large") || !strings.Contains(notice, path) {
		t.Fatalf("the fetch result in the run's messages is not the notice:\n%.500s", notice)
	}
	if len(notice) > 3000 || strings.Contains(notice, "row 03000") {
		t.Errorf("the notice is %d bytes or shows the middle of the result", len(notice))
	}
	for _, want := range []string{"     1\trow 00001:", "  7000\trow 07000:", "6990 lines left out"} {
		if !strings.Contains(notice, want) {
			t.Errorf("the notice lacks %q", want)
		}
	}
	recs := m.Records()
	if got := recs[1].Request.Messages[2].Content; got != notice {
		t.Errorf("the second request does not carry the notice:\n%.300s", got)
	}
	ends := eventsOf(evs, agent.ToolEnd)
	if len(ends) < 1 || ends[0].Tool.CallID != "call_big" || ends[0].Tool.Result != notice {
		t.Errorf("tool.end of call_big does not carry the notice: %+v", ends)
	}
	writes := eventsOf(evs, agent.FileWrite)
	if len(writes) != 1 || writes[0].File.Path != path || writes[0].File.CallID != "call_big" || writes[0].File.Bytes != len(big) {
		t.Errorf("file.write events = %+v, want one for %s by call_big", writes, path)
	}
	if got := res.State.Files[path].Content; got != big {
		t.Errorf("the saved file holds %d bytes, want all %d", len(got), len(big))
	}
	read := res.State.Messages[4]
	want := "  4001\trow 04001: the quick brown fox jumps over the lazy dog, 28007 times over\n" +
		"  4002\trow 04002: the quick brown fox jumps over the lazy dog, 28014 times over"
	if read.ToolCallID != "call_read" || read.IsError || !strings.HasPrefix(read.Content, want) {
		t.Errorf("read_file of the saved result returned:\n%.400s", read.Content)
	}
}

// A subagent's large tool result is offloaded inside the child (isolated or
// fork): the child's next request has the notice, the file reaches the
// parent's files, and the parent still gets only the child's final report.
func TestSubagentLargeToolResultOffloaded(t *testing.T) {
	for _, mode := range []subagent.Mode{subagent.Isolated, subagent.Fork} {
		t.Run(string(mode), func(t *testing.T) {
			big := strings.Repeat("finding: something notable was seen here\n", 300)
			m := scripted.New(scripted.Script{
				"parent": {Steps: []scripted.Step{
					{ToolCalls: []scripted.StepCall{call("t1", "task", `{"description":"research it","subagent_type":"researcher"}`)}},
					{Content: "ok"},
				}},
				"researcher": {Steps: []scripted.Step{
					{ToolCalls: []scripted.StepCall{call("c1", "fetch", `{"query":"it"}`)}},
					{Content: "Report: the details are in the saved file."},
				}},
			}, scripted.Options{NoUsage: true})
			a, err := deepagents.New(deepagents.Config{
				Model: m, Tools: []tool.Tool{fetchTool(t, big)},
				Subagents: []subagent.Spec{{Name: "researcher", Description: "Researches.", Mode: mode}},
				Offload:   &offload.Config{ToolResultTokens: 500},
			})
			if err != nil {
				t.Fatal(err)
			}
			var evs []agent.Event
			res, err := agent.Drain(a.Run(t.Context(), agent.Prompt("go")), func(e agent.Event) { evs = append(evs, e) })
			if err != nil || res.Status != agent.StatusOK {
				t.Fatalf("run: %v %+v", err, res)
			}
			childPath := "parent / researcher#t1"
			path := offload.ResultPath(childPath, "c1")
			var childReq *llm.Request
			for _, r := range m.Records() {
				if r.Who == "researcher" && r.Round == 1 {
					childReq = r.Request
				}
			}
			if childReq == nil {
				t.Fatal("the child made no second call")
			}
			last := childReq.Messages[len(childReq.Messages)-1]
			if last.ToolCallID != "c1" || !strings.Contains(last.Content, "too large") || !strings.Contains(last.Content, path) {
				t.Errorf("the child's second request does not carry the notice:\n%.400s", last.Content)
			}
			if got := res.State.Files[path].Content; got != big {
				t.Errorf("the parent's files hold %d bytes at %s, want the whole result", len(got), path)
			}
			receipt := res.State.Messages[2]
			if receipt.ToolCallID != "t1" || receipt.Content != "Report: the details are in the saved file." {
				t.Errorf("the parent's task result is not the child's final report: %q", receipt.Content)
			}
			for _, msg := range res.State.Messages {
				if strings.Contains(msg.Content, "finding: something") || strings.Contains(msg.Content, "too large") {
					t.Errorf("the child's tool result reached the parent: %.200s", msg.Content)
				}
			}
			var childWrite, parentWrite bool
			for _, e := range eventsOf(evs, agent.FileWrite) {
				if e.File.Path == path {
					childWrite = childWrite || e.Agent.String() == childPath && e.File.CallID == "c1"
					parentWrite = parentWrite || e.Agent.String() == "parent" && e.File.CallID == "t1"
				}
			}
			if !childWrite || !parentWrite {
				t.Errorf("file.write of %s: in the child %v, merged into the parent %v", path, childWrite, parentWrite)
			}
		})
	}
}

// A huge user message: every request carries the preview and the path, the
// run's state keeps the full text, the file is written once, and read_file
// on it returns the original lines.
func TestHugeUserMessageOffloadedEndToEnd(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&b, "paragraph %d of the pasted log: nothing unusual happened at this point\n", i)
	}
	huge := b.String()
	path := offload.MessagePath(huge)
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("r", "read_file", `{"file_path":"`+path+`","offset":10,"limit":1}`)}},
		{Content: "read it"},
	}}}, scripted.Options{NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: m, Offload: &offload.Config{UserMessageTokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt(huge)), func(e agent.Event) { evs = append(evs, e) })
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	recs := m.Records()
	if len(recs) != 2 {
		t.Fatalf("%d model calls", len(recs))
	}
	first := recs[0].Request.Messages[0].Content
	if !strings.Contains(first, "too long") || !strings.Contains(first, path) || len(first) > 2000 {
		t.Errorf("the first request does not carry the preview:\n%.500s", first)
	}
	if recs[1].Request.Messages[0].Content != first {
		t.Error("the second request's preview differs from the first")
	}
	if res.State.Messages[0].Content != huge {
		t.Error("the run's state lost the full message")
	}
	if res.State.Files[path].Content != huge {
		t.Error("the saved file does not hold the message")
	}
	n := 0
	for _, e := range eventsOf(evs, agent.FileWrite) {
		if e.File.Path == path {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d file.write events for %s, want 1", n, path)
	}
	want := "    11\tparagraph 11 of the pasted log: nothing unusual happened at this point"
	if got := res.State.Messages[2].Content; !strings.HasPrefix(got, want) {
		t.Errorf("read_file returned %q", got)
	}
}

// Offloading is on by default, and a zero Config turns it off.
func TestOffloadDefaultsAndOff(t *testing.T) {
	big := bigReport()
	for _, c := range []struct {
		name    string
		cfg     *offload.Config
		offload bool
	}{{"default", nil, true}, {"off", &offload.Config{}, false}} {
		t.Run(c.name, func(t *testing.T) {
			m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
				{ToolCalls: []scripted.StepCall{call("c", "fetch", `{"query":"q"}`)}}, {Content: "ok"},
			}}}, scripted.Options{NoUsage: true})
			a, err := deepagents.New(deepagents.Config{Model: m, Tools: []tool.Tool{fetchTool(t, big)}, Offload: c.cfg})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Invoke(t.Context(), agent.Prompt("go"))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.State.Messages[2].Content != big; got != c.offload {
				t.Errorf("offloaded = %v, want %v", got, c.offload)
			}
		})
	}
}

func TestOffloadConfigErrors(t *testing.T) {
	_, err := deepagents.New(deepagents.Config{Model: scripted.New(nil, scripted.Options{}),
		Offload: &offload.Config{PerTool: map[string]int{"grep": 5}}})
	if err == nil || !strings.Contains(err.Error(), "grep caps its own output") {
		t.Errorf("err = %v", err)
	}
}

// On a real directory the offloaded texts are files on disk, and the tool
// result's write is reported with its call id like any tool write.
func TestOffloadOnDisk(t *testing.T) {
	dir := t.TempDir()
	fsys, err := osfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("a line of the report\n", 400)
	huge := strings.Repeat("a line of the pasted text\n", 400)
	m := scripted.New(scripted.Script{"parent": {Steps: []scripted.Step{
		{ToolCalls: []scripted.StepCall{call("c1", "fetch", `{"query":"q"}`)}}, {Content: "ok"},
	}}}, scripted.Options{NoUsage: true})
	a, err := deepagents.New(deepagents.Config{Model: m, Backend: fsys, Tools: []tool.Tool{fetchTool(t, big)},
		Offload: &offload.Config{ToolResultTokens: 500, UserMessageTokens: 500}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []agent.Event
	res, err := agent.Drain(a.Run(t.Context(), agent.Prompt(huge)), func(e agent.Event) { evs = append(evs, e) })
	if err != nil || res.Status != agent.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	for path, want := range map[string]string{"/large_tool_results/c1": big, offload.MessagePath(huge): huge} {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		if err != nil || string(got) != want {
			t.Errorf("%s on disk: %d bytes, %v", path, len(got), err)
		}
	}
	var byCall bool
	for _, e := range eventsOf(evs, agent.FileWrite) {
		byCall = byCall || e.File.Path == "/large_tool_results/c1" && e.File.CallID == "c1"
	}
	if !byCall {
		t.Error("no file.write event for the offloaded result with its call id")
	}
	if !strings.Contains(m.Records()[0].Request.Messages[0].Content, offload.MessagePath(huge)) {
		t.Error("the request does not point at the saved message")
	}
}
