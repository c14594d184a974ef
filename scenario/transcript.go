package scenario

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/agent"
	"github.com/deepagents-go/deepagents/checkpoint"
	compaction "github.com/deepagents-go/deepagents/compact"
	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/llm/scripted"
	"github.com/deepagents-go/deepagents/subagent"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/vfs"
)

// Transcript is what `deepagents replay` prints (docs/REPLAY.md).
type Transcript struct {
	Scenario              string                    `json:"scenario"`
	Description           string                    `json:"description,omitempty"`
	Status                agent.Status              `json:"status,omitempty"`
	ThreadID              string                    `json:"thread_id"`
	Checkpoints           int                       `json:"checkpoints"`
	Interrupts            []Interrupt               `json:"interrupts"`
	UnusedDecisions       []Decision                `json:"unused_decisions,omitempty"`
	Crashes               int                       `json:"crashes,omitempty"`
	Rounds                []Round                   `json:"rounds"`
	TaskTool              *TaskTool                 `json:"task_tool"`
	ToolSchemaChars       map[string]map[string]int `json:"tool_schema_chars,omitempty"`
	ParentMessages        []Message                 `json:"parent_messages"`
	SubagentConversations map[string]Conversation   `json:"subagent_conversations,omitempty"`
	Subagents             []SubagentRun             `json:"subagents,omitempty"`
	FinalStateKeys        []string                  `json:"final_state_keys"`
	Files                 map[string]string         `json:"files"`
	Usage                 llm.Usage                 `json:"usage"`
	UsageByAgent          map[string]llm.Usage      `json:"usage_by_agent,omitempty"`
	Events                []agent.Event             `json:"events"`
	Timing                Timing                    `json:"timing"`
	Error                 *string                   `json:"error"`
	Checks                []Check                   `json:"checks,omitempty"`
}

// Round is one model call as the model received it.
type Round struct {
	Seq            int      `json:"seq"`
	Who            string   `json:"who"`
	Instance       string   `json:"instance"`
	Case           *int     `json:"case,omitempty"`
	Round          int      `json:"round"`
	MessageCount   int      `json:"message_count"`
	Roles          []string `json:"roles"`
	SystemChars    int      `json:"system_chars"`
	Tools          []string `json:"tools"`
	ToolsJSONChars int      `json:"tools_json_chars"`
	ToolsTokens    int      `json:"tools_tokens"`
	TStartMS       float64  `json:"t_start_ms"`
	TEndMS         float64  `json:"t_end_ms"`
	// Reasoning is the reasoning setting the request carried, if any.
	Reasoning *llm.ReasoningConfig `json:"reasoning,omitempty"`
	// InputTokens is the request's estimated size, the number compaction
	// compares with its trigger; Compacted says whether the request began
	// with a summary of earlier messages. Both are shown only when the
	// scenario sets a context window or compaction.
	InputTokens int   `json:"input_tokens,omitempty"`
	Compacted   *bool `json:"compacted,omitempty"`
}

// TaskTool describes the task tool as the parent saw it.
type TaskTool struct {
	Description      string          `json:"description"`
	DescriptionChars int             `json:"description_chars"`
	Tokens           int             `json:"tokens"`
	Parameters       json.RawMessage `json:"parameters,omitempty"`
}

// Message is a message of the parent's final history.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls"`
	Name       string     `json:"name"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Status     string     `json:"status"`
	// Parts lists the content of a message that carries more than text
	// (reasoning, images), in order; absent for plain text.
	Parts []Part `json:"parts,omitempty"`
}

// Part is one content part of a transcript message. An image is shown by
// its type and size, not its bytes.
type Part struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Bytes     int    `json:"bytes,omitempty"`
	URL       string `json:"url,omitempty"`
	// Provider and Signature identify a reasoning part's opaque data.
	Provider  string `json:"provider,omitempty"`
	Signature string `json:"signature,omitempty"`
	Encrypted bool   `json:"encrypted,omitempty"`
}

// ToolCall is a tool call in a transcript message.
type ToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id"`
}

// Conversation is what a subagent instance saw on its last model call, plus
// its reply.
type Conversation struct {
	System   *string   `json:"system"`
	Messages []Message `json:"messages"`
}

// SubagentRun summarises one subagent instance.
type SubagentRun struct {
	CallID string       `json:"call_id"`
	Name   string       `json:"name"`
	Status agent.Status `json:"status"`
	Rounds int          `json:"rounds"`
	Error  string       `json:"error,omitempty"`
	Usage  llm.Usage    `json:"usage"`
}

// Timing summarises the run's model calls.
type Timing struct {
	ModelCalls              int     `json:"model_calls"`
	DelayMSPerCall          float64 `json:"delay_ms_per_call"`
	SerialModelMS           float64 `json:"serial_model_ms"`
	WallMS                  float64 `json:"wall_ms"`
	MaxConcurrentModelCalls int     `json:"max_concurrent_model_calls"`
}

// Check is the outcome of one expectation. An expect key this version does
// not know, or a known key whose value has a shape it does not understand,
// is listed with NotChecked set and Note saying why; it never fails.
type Check struct {
	Name       string `json:"name"`
	Pass       bool   `json:"pass"`
	Got        any    `json:"got,omitempty"`
	NotChecked bool   `json:"not_checked,omitempty"`
	Note       string `json:"note,omitempty"`
}

// Run replays the scenario on its scripted model and returns the transcript.
// Assembly and run failures are reported in Transcript.Error, not as an
// error; the error is for a context that ended before the run could start.
func (s *Scenario) Run(ctx context.Context) (*Transcript, error) {
	model := s.Model()
	start := time.Now()
	model.SetEpoch(start)
	t := &Transcript{Scenario: s.Name, Description: s.Description, Rounds: []Round{}, Events: []agent.Event{},
		ParentMessages: []Message{}, Files: map[string]string{}, FinalStateKeys: []string{}, ThreadID: s.ThreadID(),
		Interrupts: []Interrupt{}}
	rm := newReplayModel(model)
	a, err := s.Build(rm)
	if err != nil {
		msg := err.Error()
		t.Error = &msg
		t.Status = agent.StatusError
		t.Checks = s.check(t, model)
		return t, nil
	}
	files := make(map[string]vfs.File, len(s.Files)+len(s.BinaryFiles))
	for p, c := range s.Files {
		files[p] = vfs.File{Content: c, CreatedAt: start, ModifiedAt: start}
	}
	for p, c := range s.BinaryFiles {
		data, _ := decodeBase64(c) // checked by Parse
		files[p] = vfs.File{Content: string(data), CreatedAt: start, ModifiedAt: start}
	}
	d := &driver{s: s, a: a, model: rm, t: t, saver: newCountingSaver(checkpoint.NewMemory(0)), thread: t.ThreadID,
		crashes: slices.Compact(slices.Sorted(slices.Values(s.CrashAfterEvents)))}
	res, runErr := d.run(ctx, files)
	t.Timing.WallMS = msf(time.Since(start))
	t.Checkpoints = int(d.saver.puts.Load())
	if res == nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := fmt.Sprint(runErr)
		t.Error = &msg
		t.Status = agent.StatusError
		s.fillRounds(t, model, a)
		t.Checks = s.check(t, model)
		return t, nil
	}
	t.Status = res.Status
	var de *agent.DecisionError
	if res.Status != agent.StatusOK && (res.Status != agent.StatusInterrupted || errors.As(res.Err(), &de)) {
		msg := res.Error
		if msg == "" {
			msg = string(res.Status)
		}
		t.Error = &msg
	}
	for _, m := range res.State.Messages {
		t.ParentMessages = append(t.ParentMessages, toMessage(m))
	}
	t.FinalStateKeys = res.State.Keys()
	for p, f := range res.State.Files {
		t.Files[p] = fileText(f.Content)
	}
	t.Usage, t.UsageByAgent = res.Usage, res.UsageByAgent
	for _, id := range slices.Sorted(maps.Keys(res.Children)) {
		c := res.Children[id]
		name := c.Agent.Last().Name
		t.Subagents = append(t.Subagents, SubagentRun{CallID: id, Name: name, Status: c.Status, Rounds: c.Rounds, Error: c.Error, Usage: c.Usage})
	}
	s.fillRounds(t, model, a)
	t.Checks = s.check(t, model)
	return t, nil
}

func (s *Scenario) fillRounds(t *Transcript, model *scripted.Model, a *agent.Agent) {
	recs := model.Records()
	t.ToolSchemaChars = map[string]map[string]int{}
	t.SubagentConversations = map[string]Conversation{}
	for _, r := range recs {
		round := Round{Seq: r.Seq, Who: r.Who, Instance: r.Instance, Round: r.Round,
			MessageCount: len(r.Request.Messages), Roles: []string{}, SystemChars: tokens.Chars(r.Request.System),
			Tools: []string{}, TStartMS: msf(r.Start), TEndMS: msf(r.End), Reasoning: r.Request.Settings.Reasoning}
		if r.Case >= 0 {
			c := r.Case
			round.Case = &c
		}
		for _, m := range r.Request.Messages {
			round.Roles = append(round.Roles, string(m.Role))
		}
		if s.contextManaged() {
			round.InputTokens = tokens.Estimate(r.Request).Total
			c := len(r.Request.Messages) > 0 && compaction.IsSummary(r.Request.Messages[0])
			round.Compacted = &c
		}
		perTool := map[string]int{}
		for _, spec := range r.Request.Tools {
			tc := tokens.Tool(spec)
			round.Tools = append(round.Tools, spec.Name)
			round.ToolsJSONChars += tc.JSONChars
			round.ToolsTokens += tc.O200k
			perTool[spec.Name] = tc.JSONChars
		}
		if _, ok := t.ToolSchemaChars[r.Who]; !ok {
			t.ToolSchemaChars[r.Who] = perTool
		}
		t.Rounds = append(t.Rounds, round)
		if r.Who != agent.DefaultName && r.Err == "" {
			key := r.Who
			if r.Case >= 0 {
				key += "#" + strconv.Itoa(r.Case)
			}
			conv := Conversation{Messages: []Message{}}
			if r.Request.System != "" {
				sys := r.Request.System
				conv.System = &sys
			}
			for _, m := range r.Request.Messages {
				conv.Messages = append(conv.Messages, toMessage(m))
			}
			conv.Messages = append(conv.Messages, toMessage(r.Reply))
			if prev, ok := t.SubagentConversations[key]; !ok || len(prev.Messages) <= len(conv.Messages) {
				t.SubagentConversations[key] = conv
			}
		}
	}
	t.Timing.ModelCalls = len(recs)
	t.Timing.DelayMSPerCall = s.DelayMS
	t.Timing.SerialModelMS = s.DelayMS * float64(len(recs))
	t.Timing.MaxConcurrentModelCalls = model.MaxConcurrent()
	for _, spec := range a.ToolSpecs() {
		if spec.Name == subagent.TaskToolName {
			tc := tokens.Tool(spec)
			t.TaskTool = &TaskTool{Description: spec.Description, DescriptionChars: tc.DescChars, Tokens: tc.O200k, Parameters: spec.Parameters}
		}
	}
}

func toMessage(m llm.Message) Message {
	out := Message{Role: string(m.Role), Content: m.Content, ToolCalls: []ToolCall{}, Name: m.Name, ToolCallID: m.ToolCallID}
	if m.IsError {
		out.Status = "error"
	}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{Name: c.Name, Args: c.Args, ID: c.ID})
	}
	for _, p := range m.Parts {
		tp := Part{Type: string(p.Type), Text: p.Text}
		if p.Image != nil {
			tp.MediaType, tp.Bytes, tp.URL = p.Image.MediaType, len(p.Image.Data), p.Image.URL
		}
		if p.Reasoning != nil {
			tp.Provider, tp.Signature, tp.Encrypted = p.Reasoning.Provider, p.Reasoning.Signature, p.Reasoning.Encrypted != ""
		}
		out.Parts = append(out.Parts, tp)
	}
	return out
}

// fileText shows a file's content: as it is when it is text, else as
// "binary, N bytes, base64: ..." so the transcript stays valid UTF-8.
func fileText(content string) string {
	if utf8.ValidString(content) && !strings.ContainsRune(content, 0) {
		return content
	}
	return fmt.Sprintf("binary, %d bytes, base64: %s", len(content), base64.StdEncoding.EncodeToString([]byte(content)))
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// eventRank orders the events of one step whose relative order depends on
// timing: concurrent calls start, report and end in any order.
var eventRank = map[agent.EventType]int{
	agent.RunStart: 0, agent.ModelRequest: 1, agent.ModelDelta: 2, agent.ModelResponse: 3,
	agent.ToolStart: 4, agent.SubagentStart: 5, agent.ToolProgress: 6, agent.SubagentEnd: 7, agent.ToolEnd: 8,
	agent.FileWrite: 9, agent.FileDelete: 9, agent.FileConflict: 10, agent.RunEnd: 11,
	agent.Warning: 0,
}

// rankOf is an event's place within its step. A compaction before a model
// call comes after the step before it (its events are emitted before the
// next model.request); one forced by an overflow error happens inside the
// model call.
func rankOf(e agent.Event) int {
	if info, ok := compaction.InfoOf(e); ok {
		if info.Trigger == "overflow" {
			return eventRank[agent.ModelDelta]
		}
		return eventRank[agent.FileConflict]
	}
	return eventRank[e.Type]
}

func eventCall(e agent.Event) string {
	switch {
	case e.Tool != nil:
		return e.Tool.CallID
	case e.Subagent != nil:
		return e.Subagent.CallID
	}
	return ""
}

// canonicalEvents groups events by agent path and, within each step of each
// agent, orders them by kind and tool call, keeping the original order
// otherwise. The result does not depend on how concurrent calls interleaved.
func canonicalEvents(evs []agent.Event) []agent.Event {
	type keyed struct {
		e       agent.Event
		step, i int
	}
	steps := map[string]int{}
	ks := make([]keyed, len(evs))
	for i, e := range evs {
		if e.Type == agent.ModelRequest {
			steps[e.Agent.String()]++
		}
		ks[i] = keyed{e, steps[e.Agent.String()], i}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.e.Agent.String(), b.e.Agent.String()), cmp.Compare(a.step, b.step),
			cmp.Compare(rankOf(a.e), rankOf(b.e)), cmp.Compare(eventCall(a.e), eventCall(b.e)), cmp.Compare(a.i, b.i))
	})
	out := make([]agent.Event, len(ks))
	for i, k := range ks {
		out[i] = k.e
	}
	return out
}

// Normalize zeroes everything that varies between runs of the same scenario
// — times, durations, the start order of concurrent calls — so transcripts
// can be diffed. Rounds are put in a canonical order (by instance, then
// round) and events in the order of canonicalEvents.
func (t *Transcript) Normalize() {
	t.Timing.WallMS = 0
	if t.Timing.DelayMSPerCall == 0 {
		// Without a model delay, how many calls overlap is down to scheduling.
		t.Timing.MaxConcurrentModelCalls = 0
	}
	slices.SortStableFunc(t.Rounds, func(a, b Round) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Who, b.Who), cmp.Compare(a.Round, b.Round))
	})
	for i := range t.Rounds {
		t.Rounds[i].Seq, t.Rounds[i].TStartMS, t.Rounds[i].TEndMS = 0, 0, 0
	}
	t.Events = canonicalEvents(t.Events)
	normalizeHistory(t.Files)
	// Parallel subagents can stop for approval in either order.
	slices.SortStableFunc(t.Interrupts, func(a, b Interrupt) int {
		return cmp.Or(cmp.Compare(a.Stop, b.Stop), cmp.Compare(a.Path, b.Path), cmp.Compare(a.CallID, b.CallID))
	})
	for i := range t.Events {
		e := &t.Events[i]
		e.Time = time.Time{}
		if e.Response != nil {
			r := *e.Response
			r.DurationMS = 0
			e.Response = &r
		}
		if e.Tool != nil {
			tl := *e.Tool
			tl.DurationMS = 0
			e.Tool = &tl
		}
		if e.Request != nil && e.Request.Context != nil {
			// The context ledger is left out: the transcript format predates
			// it, and its calibration depends on the model instance a crash
			// test restarts with.
			q := *e.Request
			q.Context = nil
			e.Request = &q
		}
	}
}

// Failed reports whether any evaluated check failed; entries that were not
// checked do not count.
func (t *Transcript) Failed() bool {
	for _, c := range t.Checks {
		if !c.Pass && !c.NotChecked {
			return true
		}
	}
	return false
}
