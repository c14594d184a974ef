package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/server"
)

// This file is how a worker tells the server in front of the fleet what a
// served run does (see serve.go): its activities publish the run's agent
// events into the server store's event log, never into the workflow's
// history. The model activity publishes the request and its streamed
// chunks, tagged with the activity's attempt; the record activity publishes
// the model's response and each finished call as it saves them.

// Events is where a worker publishes the agent events of the runs a server
// started on it (Registry.Events). Publish appends evs, in order, to the
// log of thread; several workers may publish to one thread at once.
type Events interface {
	Publish(ctx context.Context, thread string, evs []Event) error
}

// Event is one agent event of a served run as a worker publishes it: what
// the server's stream modes are made of, and no more.
type Event struct {
	Type  agent.EventType `json:"type"`
	Agent agent.Path      `json:"agent"`
	// Workflow is the id of the workflow that ran it, Attempt the model
	// activity's attempt (from 1) for a request and its chunks: a reader
	// tells a retried attempt's chunks from those of the attempt before.
	Workflow string `json:"workflow"`
	Attempt  int    `json:"attempt,omitempty"`
	Round    int    `json:"round,omitempty"`
	// Text is a chunk of the model's text (model.delta).
	Text string `json:"text,omitempty"`
	// Message is the model's response (model.response) or a call's tool
	// message (tool.end).
	Message *llm.Message `json:"message,omitempty"`
	// Task and CallID are a subagent's brief and the call that started it
	// (subagent.start).
	Task   string `json:"task,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Interrupt is a call that waits for a decision (interrupt).
	Interrupt *agent.Interrupt `json:"interrupt,omitempty"`
}

// appender is a server store that numbers a log's events itself, so that
// writers in several processes can share the log (server.SQLStore,
// server.MemoryStore).
type appender interface {
	AppendNext(ctx context.Context, runID string, evs []server.StoredEvent) error
}

// StoreEvents publishes into the event log of the server store st (the
// same database the servers in front of the fleet use), under the key
// ThreadLog names.
func StoreEvents(st server.Store) (Events, error) {
	a, ok := st.(appender)
	if !ok {
		return nil, fmt.Errorf("the server store %T cannot take events from several writers (it has no AppendNext): use server.OpenSQLStore", st)
	}
	return storeEvents{a, st}, nil
}

type storeEvents struct {
	a  appender
	st server.Store
}

func (s storeEvents) Publish(ctx context.Context, thread string, evs []Event) error {
	out := make([]server.StoredEvent, len(evs))
	for i, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		out[i] = server.StoredEvent{Event: string(e.Type), Data: b}
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	return s.a.AppendNext(ctx, ThreadLog(thread), out)
}

// publishTimeout bounds one publication of events.
const publishTimeout = 30 * time.Second

// ThreadLog is the key, in a server store's event log, of the agent events
// workers publish for a thread's served runs: server.ThreadLog, which the
// server's stores delete with the thread.
func ThreadLog(thread string) string { return server.ThreadLog(thread) }

// servePrefix starts the id of every workflow a server started.
const servePrefix = "deepagents-serve/"

// WorkflowID is the id of the workflow that runs run runID of thread for a
// server: a server that restarts, or another one, finds it from the run.
func WorkflowID(thread, runID string) string { return servePrefix + thread + "/" + runID }

// childMark separates a served run's workflow id from the rest of the id
// of a child workflow of its (a subagent's).
const childMark = "~"

// isServed reports whether workflowID is that of a workflow a server
// started, or of a child of one.
func isServed(workflowID string) bool { _, ok := servedThread(workflowID); return ok }

// servedChildID is the id of the child workflow that runs the subagent at
// path for the served workflow parent (itself a run's, or a child's).
func servedChildID(parent string, path agent.Path) string {
	last := path.Last()
	return parent + childMark + strings.NewReplacer("/", "-", childMark, "-").Replace(last.Name+"#"+last.CallID)
}

// servedRun is the workflow id of the served run workflowID belongs to:
// its own, or its parent run's when it is a child's.
func servedRun(workflowID string) string {
	// A thread's id may hold the mark; the run's id (after the last
	// slash) and the children's parts (which hold no slash) do not.
	i := strings.LastIndexByte(workflowID, '/') + 1
	if j := strings.Index(workflowID[i:], childMark); j >= 0 {
		return workflowID[:i+j]
	}
	return workflowID
}

// servedThread is the thread of a workflow a server started (or of a
// child of one), from its id; ok is false for any other workflow.
func servedThread(workflowID string) (thread string, ok bool) {
	rest, ok := strings.CutPrefix(servedRun(workflowID), servePrefix)
	i := strings.LastIndexByte(rest, '/')
	if !ok || i <= 0 {
		return "", false
	}
	return rest[:i], true
}

// publisher publishes the events of one activity of a served run; nil for
// any other activity, or on a worker without Registry.Events.
type publisher struct {
	ev       Events
	ctx      context.Context
	thread   string
	workflow string
	attempt  int
}

func (g *Registry) publisher(ctx context.Context) *publisher {
	if g.Events == nil || !activity.IsActivity(ctx) {
		return nil
	}
	info := activity.GetInfo(ctx)
	thread, ok := servedThread(info.WorkflowExecution.ID)
	if !ok {
		return nil
	}
	return &publisher{ev: g.Events, ctx: ctx, thread: thread, workflow: servedRun(info.WorkflowExecution.ID), attempt: int(info.Attempt)}
}

// publish sends evs; a failure is logged, not the activity's: the run goes
// on, and its stream misses them.
func (p *publisher) publish(evs ...Event) {
	if p == nil || len(evs) == 0 {
		return
	}
	for i := range evs {
		evs[i].Workflow = p.workflow
	}
	if err := p.ev.Publish(context.WithoutCancel(p.ctx), p.thread, evs); err != nil {
		activity.GetLogger(p.ctx).Warn("publishing a served run's events failed; its stream misses them", "thread", p.thread, "events", len(evs), "error", err)
	}
}

// chunkEvery is how long a model activity gathers chunks before it
// publishes them.
const chunkEvery = 50 * time.Millisecond

// generate calls m for the model activity: on a served run, as a stream
// whose chunks it publishes as they come (with the request before them);
// otherwise with Generate.
func (g *Registry) generate(ctx context.Context, m llm.Model, req *llm.Request, ci CallInfo) (*llm.Response, error) {
	p := g.publisher(ctx)
	if p == nil {
		return m.Generate(ctx, req)
	}
	path, err := agent.ParsePath(ci.Path)
	if err != nil {
		return m.Generate(ctx, req)
	}
	if path.IsNested() && ci.Round == 0 {
		p.publish(Event{Type: agent.SubagentStart, Agent: path, Task: ci.Task, CallID: path.Last().CallID})
	}
	p.publish(Event{Type: agent.ModelRequest, Agent: path, Attempt: p.attempt, Round: ci.Round})
	var pending []Event
	last := time.Now()
	resp, err := llm.Collect(func(yield func(llm.StreamEvent, error) bool) {
		for ev, err := range m.Stream(ctx, req) {
			if err == nil && ev.Type == llm.EventTextDelta && ev.Text != "" {
				pending = append(pending, Event{Type: agent.ModelDelta, Agent: path, Attempt: p.attempt, Round: ci.Round, Text: ev.Text})
				if time.Since(last) >= chunkEvery {
					p.publish(pending...)
					pending, last = nil, time.Now()
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	})
	p.publish(pending...)
	return resp, err
}

// publishRecord publishes what a saved step record shows of a served run:
// the model's response of a step (or the last one, at the run's end), a
// finished (or rejected) call's tool message, a call that now waits for a
// decision.
func (g *Registry) publishRecord(ctx context.Context, rec *agent.StepRecord) {
	p := g.publisher(ctx)
	if p == nil {
		return
	}
	switch {
	case (rec.Kind == agent.RecordStep || rec.Kind == agent.RecordEnd) && len(rec.Appended) > 0 && rec.Appended[len(rec.Appended)-1].Role == llm.RoleAssistant:
		m := rec.Appended[len(rec.Appended)-1]
		p.publish(Event{Type: agent.ModelResponse, Agent: rec.Path, Round: rec.Step, Message: &m})
	case rec.Kind == agent.RecordCall && rec.Call != nil && (rec.Call.Outcome != nil || rec.Call.Rejected):
		m := rec.Call.Message
		p.publish(Event{Type: agent.ToolEnd, Agent: rec.Path, Message: &m, CallID: rec.Call.ID})
	case rec.Kind == agent.RecordCall && rec.Call != nil && rec.Call.Waiting != nil:
		in := *rec.Call.Waiting
		p.publish(Event{Type: agent.InterruptEvent, Agent: rec.Path, CallID: rec.Call.ID, Interrupt: &in})
	}
}

// agentEvent is the agent event a published one stands for.
func (e Event) agentEvent() agent.Event {
	ev := agent.Event{Type: e.Type, Agent: e.Agent}
	if e.Agent.IsNested() {
		ev.TaskCall = e.Agent.Last().CallID
	}
	switch e.Type {
	case agent.ModelRequest:
		ev.Request = &agent.RequestInfo{Round: e.Round}
	case agent.ModelDelta:
		ev.Delta = &llm.StreamEvent{Type: llm.EventTextDelta, Text: e.Text}
	case agent.ModelResponse:
		ev.Response = &agent.ResponseInfo{Round: e.Round, Message: e.Message}
		if e.Message != nil {
			ev.Response.Text = e.Message.Content
		}
	case agent.ToolEnd:
		if e.Message != nil {
			ev.Tool = &agent.ToolInfo{CallID: e.Message.ToolCallID, Name: e.Message.Name, Result: e.Message.Content, IsError: e.Message.IsError}
		}
	case agent.InterruptEvent:
		ev.Interrupt = e.Interrupt
	case agent.SubagentStart:
		ev.Subagent = &agent.SubagentInfo{Name: e.Agent.Last().Name, CallID: e.CallID, Path: e.Agent, Task: e.Task}
	}
	return ev
}

// decodeEvents reads published events back; one that does not decode is
// skipped.
func decodeEvents(evs []server.StoredEvent) iter.Seq2[int64, Event] {
	return func(yield func(int64, Event) bool) {
		for _, se := range evs {
			var e Event
			if json.Unmarshal(se.Data, &e) != nil {
				continue
			}
			if !yield(se.Seq, e) {
				return
			}
		}
	}
}
