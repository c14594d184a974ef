package server

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// The API's wire types. Their field names follow the LangGraph Platform
// API, so that its SDK clients read them; /openapi.json is generated from
// them.

// Assistant is one configured agent as the API shows it.
type Assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
}

// Thread is a conversation: its metadata, status and current values.
type Thread struct {
	ThreadID       string                       `json:"thread_id"`
	CreatedAt      time.Time                    `json:"created_at"`
	UpdatedAt      time.Time                    `json:"updated_at"`
	StateUpdatedAt time.Time                    `json:"state_updated_at"`
	Metadata       map[string]any               `json:"metadata"`
	Status         string                       `json:"status" jsonschema:"idle, busy, interrupted or error"`
	Values         json.RawMessage              `json:"values"`
	Interrupts     map[string][]InterruptRecord `json:"interrupts"`
	Error          string                       `json:"error,omitempty"`
}

// InterruptRecord is an interrupt as the SDK reads it: Value is the
// human-in-the-loop request (action_requests and review_configs).
type InterruptRecord struct {
	ID        string   `json:"id"`
	Value     any      `json:"value"`
	Namespace []string `json:"namespace,omitempty"`
}

// Run is one execution of an assistant on a thread.
type Run struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
	Status            string         `json:"status" jsonschema:"pending, running, error, success, timeout or interrupted"`
	Metadata          map[string]any `json:"metadata"`
	MultitaskStrategy string         `json:"multitask_strategy"`
	CancelReason      string         `json:"cancel_reason,omitempty"`
	// Request is the run's create request, kept to start a queued run.
	Request *RunCreate `json:"-"`
	// Error is why the run failed, for GET /runs/{id}/join.
	Error string `json:"-"`
}

// CheckpointRef names one checkpoint of a thread.
type CheckpointRef struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
}

// ThreadState is a thread's values as of one checkpoint.
type ThreadState struct {
	Values           json.RawMessage   `json:"values"`
	Next             []string          `json:"next"`
	Checkpoint       CheckpointRef     `json:"checkpoint"`
	Metadata         map[string]any    `json:"metadata"`
	CreatedAt        *time.Time        `json:"created_at"`
	ParentCheckpoint *CheckpointRef    `json:"parent_checkpoint"`
	Tasks            []StateTask       `json:"tasks"`
	Interrupts       []InterruptRecord `json:"interrupts"`
}

// StateTask is a pending step of a thread, with the interrupts it waits on.
type StateTask struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Interrupts []InterruptRecord `json:"interrupts"`
}

// Info is GET /info.
type Info struct {
	Version string         `json:"version"`
	Flags   map[string]any `json:"flags"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Detail string `json:"detail"`
}

// AssistantSearch is POST /assistants/search.
type AssistantSearch struct {
	GraphID  string         `json:"graph_id,omitempty"`
	Name     string         `json:"name,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// Limit is how many assistants to return: at least 1, 10 when absent.
	Limit  *int `json:"limit,omitempty"`
	Offset int  `json:"offset,omitempty"`
}

// ThreadCreate is POST /threads.
type ThreadCreate struct {
	ThreadID string         `json:"thread_id,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	IfExists string         `json:"if_exists,omitempty" jsonschema:"raise (default) or do_nothing"`
}

// ThreadPatch is PATCH /threads/{id}.
type ThreadPatch struct {
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ThreadSearch is POST /threads/search.
type ThreadSearch struct {
	Metadata map[string]any `json:"metadata,omitempty"`
	Status   string         `json:"status,omitempty" jsonschema:"idle, busy, interrupted or error"`
	// Limit is how many threads to return: 1 to 1000 (more is taken as
	// 1000), 10 when absent.
	Limit     *int   `json:"limit,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	SortBy    string `json:"sort_by,omitempty" jsonschema:"created_at, updated_at or thread_id"`
	SortOrder string `json:"sort_order,omitempty" jsonschema:"asc or desc"`
}

// StateUpdate is POST /threads/{id}/state: new values for the thread.
type StateUpdate struct {
	Values json.RawMessage `json:"values"`
	AsNode string          `json:"as_node,omitempty"`
}

// HistoryRequest is POST /threads/{id}/history.
type HistoryRequest struct {
	// Limit is how many checkpoints to return: 1 to 1000 (more is taken
	// as 1000), 10 when absent.
	Limit *int `json:"limit,omitempty"`
	// Before keeps the checkpoints older than one: its id as a string,
	// {"checkpoint_id": ...} or a LangGraph config {"configurable":
	// {"checkpoint_id": ..., "checkpoint_ns": ...}}, as the SDKs send it.
	Before json.RawMessage `json:"before,omitempty"`
	// Metadata keeps the checkpoints whose metadata (as the history shows
	// it: source, step, ...) has every pair given.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Checkpoint's checkpoint_ns selects a subagent's history (a task
	// path such as "task:call_1"); the top level's by default.
	Checkpoint *CheckpointRef `json:"checkpoint,omitempty"`
}

// Command resumes an interrupted run: Resume carries the decisions.
// LangGraph's other command fields (goto, update) are not supported: a run
// naming them is refused rather than run without them.
type Command struct {
	Resume json.RawMessage `json:"resume,omitempty"`
	// unsupported are the other fields the request named (not null),
	// sorted.
	unsupported []string
}

// UnmarshalJSON reads resume and notes any other field, so that the
// request is refused instead of silently run without it.
func (c *Command) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = Command{Resume: m["resume"]}
	for k, v := range m {
		if k != "resume" && strings.TrimSpace(string(v)) != "null" {
			c.unsupported = append(c.unsupported, k)
		}
	}
	sort.Strings(c.unsupported)
	return nil
}

// RunCreate is the body of POST /threads/{id}/runs, /runs/stream and /runs/wait.
type RunCreate struct {
	AssistantID       string          `json:"assistant_id"`
	Input             json.RawMessage `json:"input,omitempty"`
	Command           *Command        `json:"command,omitempty"`
	Metadata          map[string]any  `json:"metadata,omitempty"`
	Config            map[string]any  `json:"config,omitempty"`
	StreamMode        json.RawMessage `json:"stream_mode,omitempty" jsonschema:"a mode or a list of: values, updates, messages-tuple, messages, custom, events"`
	StreamSubgraphs   bool            `json:"stream_subgraphs,omitempty"`
	StreamResumable   bool            `json:"stream_resumable,omitempty"`
	MultitaskStrategy string          `json:"multitask_strategy,omitempty" jsonschema:"reject, enqueue, interrupt or rollback"`
	OnDisconnect      string          `json:"on_disconnect,omitempty" jsonschema:"continue (default) or cancel"`
	IfNotExists       string          `json:"if_not_exists,omitempty" jsonschema:"reject (default) or create"`
}
