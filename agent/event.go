package agent

import (
	"encoding/json"
	"time"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tokens"
	"github.com/deepagents-go/deepagents/vfs"
)

// EventType names what an Event reports.
type EventType string

// Event types. Every run emits RunStart first and RunEnd last; subagent runs
// emit the same types, tagged with their own agent path.
const (
	RunStart      EventType = "run.start"
	RunEnd        EventType = "run.end"
	ModelRequest  EventType = "model.request"
	ModelDelta    EventType = "model.delta" // only when streaming
	ModelResponse EventType = "model.response"
	ModelRetry    EventType = "model.retry" // a failed model call attempt is retried after a wait
	ToolStart     EventType = "tool.start"
	ToolProgress  EventType = "tool.progress" // a running tool reports; also notices such as ignored arguments
	ToolEnd       EventType = "tool.end"
	FileWrite     EventType = "file.write"
	FileDelete    EventType = "file.delete"
	FileConflict  EventType = "file.conflict"
	SubagentStart EventType = "subagent.start"
	SubagentEnd   EventType = "subagent.end"
	// SubagentNotify: a background subagent's receipt was appended to its
	// parent's messages, as a notification the parent's model reads at its
	// next call (SubagentInfo.Notification is the message's text).
	SubagentNotify EventType = "subagent.notification"
	// Notice is something a middleware wants the user to know that is not a
	// failure of the run, e.g. a large text that could not be saved to a file.
	Notice EventType = "notice"
	// Warning reports something the run does differently from what its
	// configuration asked, e.g. a setting the model does not take and that is
	// dropped from every request. Emitted right after run.start.
	Warning EventType = "warning"
	// InterruptEvent: a tool call waits for a person's decision (the run
	// ends with StatusInterrupted once the step's other calls are done).
	InterruptEvent EventType = "interrupt"
)

// Event is one thing that happened in a run. Exactly one of the payload
// fields matching Type is set. Events are JSON-serialisable as they are; the
// fields marked `json:"-"` are in-process conveniences.
type Event struct {
	Type EventType `json:"type"`
	// Agent is the path of the agent the event belongs to, e.g. "parent" or
	// "parent / general-purpose#call_1".
	Agent Path `json:"agent"`
	// TaskCall is, for events of a subagent, the parent's tool-call id that
	// started it.
	TaskCall string    `json:"task_call,omitempty"`
	Time     time.Time `json:"time"`

	Run      *RunInfo         `json:"run,omitempty"`
	Request  *RequestInfo     `json:"request,omitempty"`
	Delta    *llm.StreamEvent `json:"delta,omitempty"`
	Response *ResponseInfo    `json:"response,omitempty"`
	Retry    *RetryInfo       `json:"retry,omitempty"`
	Tool     *ToolInfo        `json:"tool,omitempty"`
	File     *FileInfo        `json:"file,omitempty"`
	Conflict *vfs.Conflict    `json:"conflict,omitempty"`
	Subagent *SubagentInfo    `json:"subagent,omitempty"`
	Notice   *NoticeInfo      `json:"notice,omitempty"`
	Warning  *WarningInfo     `json:"warning,omitempty"`
	// Interrupt is the call waiting for a decision (interrupt events).
	Interrupt *Interrupt `json:"interrupt,omitempty"`
	// Payload is the payload of an event a middleware defines, of a type
	// of its own (compaction's, say).
	Payload *Payload `json:"-"`
}

// Payload is what an event of a middleware's own type carries. In the
// event's JSON it is written as Value encodes, under Key, beside the fields
// every event has, as the payloads of the loop's own events are. An event
// read back from JSON has the payload's JSON as Value (a
// json.RawMessage): the middleware that defines the event decodes it.
type Payload struct {
	Key   string
	Value any
}

// MarshalJSON writes the event's fields, and its Payload under its key.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	b, err := json.Marshal(plain(e))
	if err != nil || e.Payload == nil || e.Payload.Key == "" {
		return b, err
	}
	key, err := json.Marshal(e.Payload.Key)
	if err != nil {
		return nil, err
	}
	v, err := json.Marshal(e.Payload.Value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(key)+len(v)+2)
	out = append(out, b[:len(b)-1]...)
	out = append(out, ',')
	out = append(out, key...)
	out = append(out, ':')
	out = append(out, v...)
	return append(out, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes. The payload of an event of
// a type the loop does not define is the one field it does not know.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.Payload = nil
	if e.Type.own() {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	var key string
	for k := range fields {
		if !eventFields[k] && (key == "" || k < key) {
			key = k
		}
	}
	if key != "" {
		e.Payload = &Payload{Key: key, Value: fields[key]}
	}
	return nil
}

// eventFields are the JSON names of Event's own fields.
var eventFields = map[string]bool{"type": true, "agent": true, "task_call": true, "time": true, "run": true,
	"request": true, "delta": true, "response": true, "retry": true, "tool": true, "file": true, "conflict": true,
	"subagent": true, "notice": true, "warning": true, "interrupt": true}

// own reports whether the loop defines events of type t.
func (t EventType) own() bool {
	switch t {
	case RunStart, RunEnd, ModelRequest, ModelDelta, ModelResponse, ModelRetry, ToolStart, ToolProgress, ToolEnd,
		FileWrite, FileDelete, FileConflict, SubagentStart, SubagentEnd, SubagentNotify, Notice, Warning, InterruptEvent:
		return true
	}
	return false
}

// RunInfo is the payload of run.start and run.end.
type RunInfo struct {
	Status Status `json:"status,omitempty"` // run.end only
	// Error is the text of the run's error (run.end, every status but ok);
	// the event is paired with the error itself, a *RunError.
	Error  string    `json:"error,omitempty"`
	Rounds int       `json:"rounds"`
	Usage  llm.Usage `json:"usage"` // this run and its subagents
	// Result is the finished run (run.end only).
	Result *Result `json:"-"`
}

// RequestInfo describes one model request as sent.
type RequestInfo struct {
	Round        int      `json:"round"`
	MessageCount int      `json:"message_count"` // not counting the system prompt
	SystemChars  int      `json:"system_chars"`
	Tools        []string `json:"tools"`
	ToolTokens   int      `json:"tool_tokens"` // o200k tokens of the tool definitions
	// Context is the request's context report: its estimated tokens by
	// source and the window left.
	Context *tokens.Report `json:"context,omitempty"`
}

// ResponseInfo describes one model response.
type ResponseInfo struct {
	Round      int            `json:"round"`
	Usage      llm.Usage      `json:"usage"`
	StopReason llm.StopReason `json:"stop_reason,omitempty"`
	Text       string         `json:"text,omitempty"`
	ToolCalls  []string       `json:"tool_calls,omitempty"` // names, in order
	// Refusal is the model's explanation when it declined to answer
	// (StopReason refusal).
	Refusal    string       `json:"refusal,omitempty"`
	DurationMS float64      `json:"duration_ms"`
	Message    *llm.Message `json:"-"`
}

// RetryInfo describes a model call attempt that failed and will be retried.
type RetryInfo struct {
	Round   int     `json:"round"`
	Attempt int     `json:"attempt"` // 1 for the first retry
	WaitMS  float64 `json:"wait_ms"`
	// Kind is the failure's llm.ErrorKind ("rate_limit", "server", ...),
	// empty when the provider gave none.
	Kind  llm.ErrorKind `json:"kind,omitempty"`
	Error string        `json:"error"`
}

// ToolInfo describes a tool call (tool.start, tool.progress, tool.end).
type ToolInfo struct {
	CallID string          `json:"call_id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args,omitempty"` // tool.start
	Text   string          `json:"text,omitempty"` // tool.progress
	// Ignored (tool.progress) names arguments the call carried that the tool
	// does not take and dropped instead of failing the call: the task tool
	// does so, and never passes them on to the subagent.
	Ignored    []string `json:"ignored,omitempty"`
	Result     string   `json:"result,omitempty"`   // tool.end: what the model reads
	IsError    bool     `json:"is_error,omitempty"` // tool.end
	Panic      string   `json:"panic,omitempty"`    // tool.end: stack of a recovered panic
	DurationMS float64  `json:"duration_ms,omitempty"`
}

// MarshalJSON writes Args as JSON when they are valid, else as a string
// with "args_invalid": true, so a call whose arguments were cut off still
// gets its tool.start event.
func (t ToolInfo) MarshalJSON() ([]byte, error) {
	type plain ToolInfo
	w := struct {
		plain
		Args        json.RawMessage `json:"args,omitempty"`
		ArgsInvalid bool            `json:"args_invalid,omitempty"`
	}{plain: plain(t)}
	if len(t.Args) > 0 {
		w.Args, w.ArgsInvalid = llm.EncodeArgs(t.Args)
	}
	return llm.MarshalPlain(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *ToolInfo) UnmarshalJSON(b []byte) error {
	type plain ToolInfo
	var w struct {
		plain
		Args        json.RawMessage `json:"args,omitempty"`
		ArgsInvalid bool            `json:"args_invalid,omitempty"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	args, err := llm.DecodeArgs(w.Args, w.ArgsInvalid)
	if err != nil {
		return err
	}
	*t = ToolInfo(w.plain)
	t.Args = args
	return nil
}

// FileInfo describes a file change that reached this agent's state.
type FileInfo struct {
	Path   string `json:"path"`
	Bytes  int    `json:"bytes,omitempty"`
	CallID string `json:"call_id,omitempty"` // the tool call that made it
}

// SubagentInfo is the payload of subagent.start and subagent.end.
type SubagentInfo struct {
	Name   string    `json:"name"`
	Mode   string    `json:"mode"`
	CallID string    `json:"call_id"`
	Path   Path      `json:"path"`
	Task   string    `json:"task,omitempty"`   // start: the brief
	Status Status    `json:"status,omitempty"` // end
	Error  string    `json:"error,omitempty"`
	Rounds int       `json:"rounds,omitempty"`
	Usage  llm.Usage `json:"usage,omitzero"`
	// Background: the run goes on after its task call returned (start,
	// end and notification of a background subagent).
	Background bool `json:"background,omitempty"`
	// Notification is the text appended to the parent's messages when a
	// background subagent's receipt reaches it (subagent.notification).
	Notification string `json:"notification,omitempty"`
	// Run is the child's finished run, transcript included (end only), for
	// observers of the stream; the parent loop gets it from the task tool
	// itself (Nested), not from this event.
	Run *Result `json:"-"`
}

// NoticeInfo is the payload of a notice event.
type NoticeInfo struct {
	Source string `json:"source"` // who reports it, e.g. a middleware's name
	// Count is how many things the notice is about, when it counts them
	// (e.g. the tool calls given a result because they had none).
	Count int    `json:"count,omitempty"`
	Text  string `json:"text"`
}

// WarningInfo is the payload of a warning event.
type WarningInfo struct {
	Source string `json:"source"` // who reports it, e.g. "settings"
	// Dropped names the settings that are not sent (settings warnings).
	Dropped []string `json:"dropped,omitempty"`
	// Tools names the tools an interrupt_on warning is about.
	Tools []string `json:"tools,omitempty"`
	Text  string   `json:"text"`
}
