package server

import (
	"context"
	"maps"
	"strings"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/hitl"
	"github.com/deepagents-go/deepagents/llm"
)

// translator turns a run's agent events into the stream modes the client
// asked for. It keeps every agent's messages so far, so that "values"
// events carry the whole list, as LangGraph clients expect.
type translator struct {
	s      *Server
	lr     *liveRun
	root   string                 // the top-level agent's path
	msgs   map[string][]LCMessage // by agent path
	extra  map[string]any         // the root's values other than messages
	ns     map[string]string      // agent path -> "task:c1|task:c2"
	rounds map[string]int
	// quiet is set while an adopted run's events that another server
	// sent already are read again: they rebuild the state, and send none.
	quiet bool
}

func (s *Server) newTranslator(ctx context.Context, lr *liveRun) (*translator, error) {
	t := &translator{s: s, lr: lr, root: lr.asst.Spec.Agent.Name(), msgs: map[string][]LCMessage{},
		extra: map[string]any{}, ns: map[string]string{}, rounds: map[string]int{}}
	rs, err := s.loadState(ctx, lr.rec.ThreadID)
	if err != nil {
		return nil, err
	}
	if rs != nil {
		v := values(rs)
		t.msgs[t.root] = v["messages"].([]LCMessage)
		delete(v, "messages")
		t.extra = v
	}
	// A new turn starts with its input; a resumed one where it stopped.
	for _, m := range lr.input {
		t.add(t.root, m)
	}
	if len(lr.input) > 0 {
		t.values(t.root)
	}
	return t, nil
}

// nested says whether ev comes from a subagent.
func (t *translator) nested(ev agent.Event) bool { return ev.Agent.String() != t.root }

// suffix is the namespace of a subagent's events: "|task:<call_id>" per
// level, or "" at the top level.
func (t *translator) suffix(path string) string {
	if path == t.root {
		return ""
	}
	if s, ok := t.ns[path]; ok {
		return s
	}
	s := "|" + taskPath(path)
	t.ns[path] = s
	return s
}

// send emits one event of mode for the agent at path, if the client asked
// for mode and, for a subagent, for subgraphs.
func (t *translator) send(mode, path string, data any) {
	if t.quiet || !t.lr.modes[mode] {
		return
	}
	if path != t.root && !t.lr.subgraphs {
		return
	}
	name := mode
	if mode == "messages-tuple" {
		name = "messages"
	}
	t.s.emit(t.lr, name+t.suffix(path), data)
}

func (t *translator) idPrefix(path string) string {
	if path == t.root {
		return ""
	}
	return strings.TrimPrefix(t.suffix(path), "|")
}

func (t *translator) add(path string, m llm.Message) LCMessage {
	lc := toLC(m, messageID(t.idPrefix(path), len(t.msgs[path])))
	t.msgs[path] = append(t.msgs[path], lc)
	return lc
}

func (t *translator) values(path string) {
	if !t.lr.modes["values"] {
		return
	}
	v := map[string]any{"messages": t.msgs[path]}
	if path == t.root {
		maps.Copy(v, t.extra)
		v["messages"] = t.msgs[path]
	}
	t.send("values", path, v)
}

func (t *translator) meta(path, node string) map[string]any {
	return map[string]any{"run_id": t.lr.rec.RunID, "thread_id": t.lr.rec.ThreadID, "langgraph_node": node,
		"langgraph_step": t.rounds[path], "langgraph_checkpoint_ns": strings.TrimPrefix(t.suffix(path), "|"), "agent": path}
}

func (t *translator) handle(ev agent.Event) {
	path := ev.Agent.String()
	switch ev.Type {
	case agent.ModelRequest:
		if ev.Request != nil {
			t.rounds[path] = ev.Request.Round
		}
		if path == t.root && t.rounds[path] > 0 {
			t.refresh()
		}
	case agent.ModelDelta:
		if ev.Delta != nil && ev.Delta.Type == llm.EventTextDelta && ev.Delta.Text != "" {
			id := messageID(t.idPrefix(path), len(t.msgs[path]))
			t.send("messages-tuple", path, []any{map[string]any{"type": "AIMessageChunk", "id": id, "content": ev.Delta.Text,
				"tool_call_chunks": []any{}}, t.meta(path, "model")})
		}
	case agent.ModelResponse:
		if ev.Response == nil || ev.Response.Message == nil {
			return
		}
		lc := t.add(path, *ev.Response.Message)
		t.send("messages-tuple", path, []any{lc, t.meta(path, "model")})
		t.send("updates", path, map[string]any{"model": map[string]any{"messages": []LCMessage{lc}}})
		t.values(path)
	case agent.ToolEnd:
		if ev.Tool == nil {
			return
		}
		m := llm.Message{Role: llm.RoleTool, Content: ev.Tool.Result, ToolCallID: ev.Tool.CallID, Name: ev.Tool.Name, IsError: ev.Tool.IsError}
		lc := t.add(path, m)
		if m.IsError && t.lr.rejects(path, m.ToolCallID) {
			// Answered by this run's decision (a call rejected again
			// without asking is marked from the checkpoint, see refresh).
			lc.AdditionalKwargs = &MessageKwargs{Rejected: true}
			t.msgs[path][len(t.msgs[path])-1] = lc
		}
		t.send("messages-tuple", path, []any{lc, t.meta(path, "tools")})
		t.send("updates", path, map[string]any{"tools": map[string]any{"messages": []LCMessage{lc}}})
		t.values(path)
	case agent.SubagentStart:
		if ev.Subagent != nil {
			child := ev.Subagent.Path.String()
			if _, ok := t.msgs[child]; !ok {
				t.add(child, llm.User(ev.Subagent.Task))
				t.values(child)
			}
		}
	}
	if t.lr.modes["custom"] {
		t.send("custom", path, ev)
	}
}

// refresh reloads the root's values from its latest checkpoint (files,
// todos and the other middleware values change with tool calls), and its
// messages too: parallel calls' results arrive in the order the calls end
// but are kept in the order they were made, and ids follow positions.
func (t *translator) refresh() {
	rs, err := t.s.loadState(context.Background(), t.lr.rec.ThreadID)
	if err != nil || rs == nil {
		return
	}
	v := values(rs)
	if msgs, ok := v["messages"].([]LCMessage); ok && len(msgs) == len(t.msgs[t.root]) {
		t.msgs[t.root] = msgs
	}
	delete(v, "messages")
	t.extra = v
}

// final sends the run's last values, read from its checkpoint, with the
// calls waiting for a decision under "__interrupt__".
func (t *translator) final(res *agent.Result) {
	rs, err := t.s.loadState(context.Background(), t.lr.rec.ThreadID)
	if err != nil || rs == nil {
		return
	}
	v := values(rs)
	if res != nil && res.Status == agent.StatusInterrupted {
		in := interruptsOf(rs)
		if len(in) == 0 && len(res.Interrupts) > 0 {
			in = []InterruptRecord{{ID: rs.StepID, Value: hitl.RequestFor(res.Interrupts)}}
		}
		if len(in) > 0 {
			v["__interrupt__"] = in
			t.send("updates", t.root, map[string]any{"__interrupt__": in})
		}
	}
	t.send("values", t.root, v)
}
