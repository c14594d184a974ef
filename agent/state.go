package agent

import (
	"encoding/json"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/vfs"
)

// RunState is a run as a value: everything the loop needs to continue it,
// JSON-serialisable and versioned. A run that is recorded into a thread
// (WithThread) can be continued from the RunState of its last record, in
// this process or another, as if it had never stopped; runner.LoadRunState
// reads one back from its store.
type RunState struct {
	V int `json:"v"`
	// Thread and Path say whose state this is; StepID and Step which step
	// record it was read as of.
	Thread string `json:"thread_id,omitempty"`
	Path   Path   `json:"path"`
	StepID string `json:"checkpoint,omitempty"`
	Step   int    `json:"step"`
	// Status is how the run stopped; empty while it is still running (or
	// was cut off by a crash).
	Status Status `json:"status,omitempty"`

	Messages []llm.Message `json:"messages"`
	// Files are the run's files: all of them for a run that keeps its files
	// in its state, else those it wrote on top of the files it was given,
	// with Deleted naming those it removed. Nil for a run on a real
	// directory, whose files are on disk.
	Files   map[string]vfs.File `json:"files,omitempty"`
	Deleted []string            `json:"deleted,omitempty"`
	// Values are middleware values by name (StepInfo.SetValue).
	Values map[string]json.RawMessage `json:"values,omitempty"`

	Loop LoopState `json:"loop"`
	// Finished are the subagent runs this run started that have ended, by
	// call id, without their message histories (each is under its own
	// namespace).
	Finished map[string]*Result `json:"finished,omitempty"`
	// InProgress is the step whose tool calls have not all been answered:
	// the model call that asked for them is never repeated.
	InProgress *StepState `json:"in_progress,omitempty"`
	// Children are the states of subagent runs started by calls of the step
	// in progress, by call id (filled by runner.LoadRunState with deep set).
	Children map[string]*RunState `json:"children,omitempty"`

	// LegacyChildren: Finished came from the single value older databases
	// kept all finished children in (a new turn removes it).
	LegacyChildren bool `json:"-"`
}

// LoopState holds the loop's own counters and memory.
type LoopState struct {
	Status  Status `json:"status,omitempty"`
	Error   string `json:"error,omitempty"`
	Refusal string `json:"refusal,omitempty"`
	// Rounds counts the model calls of the thread's runs at this path;
	// TurnStart is where the current run (turn) began.
	Rounds    int `json:"rounds"`
	TurnStart int `json:"turn_start,omitempty"`
	// Request is the text of the last user message of the current turn's
	// input, cut to 16 KiB: what the person (or, for a subagent, its
	// task) asked for in this turn, kept apart from later user-role
	// messages such as a background task's report or a compaction's
	// summary.
	Request string    `json:"request,omitempty"`
	Usage   llm.Usage `json:"usage"`
	// Tree is the usage of the run's finished subagents by agent path, as
	// databases written before kept it; it is now rebuilt from
	// RunState.Finished and no longer saved.
	Tree map[string]llm.Usage `json:"tree,omitempty"`
	// Changed lists the paths the run changed; saved when the run stops,
	// not with each step (see runner.ChangedByFinishedSteps for a run cut off).
	Changed       []string        `json:"changed,omitempty"`
	Output        json.RawMessage `json:"output,omitempty"`
	RespFailures  int             `json:"resp_failures,omitempty"`
	RespRepaired  bool            `json:"resp_repaired,omitempty"`
	LastRespError string          `json:"last_resp_error,omitempty"`
	// Rejected remembers calls a person rejected (tool and arguments) with
	// the reason, so the same call is not put to them again.
	Rejected map[string]string `json:"rejected,omitempty"`
	// Deleted names files removed from the files the run was given.
	Deleted []string `json:"deleted,omitempty"`
	// ParentStep names, for a subagent run, the parent's step that started
	// it (namespace@step id).
	ParentStep string `json:"parent_step,omitempty"`
	// Input is the id of the step record that holds the run's input.
	Input string `json:"input,omitempty"`
	// StepInProgress is the id of the step in progress, under which the
	// results of its finished calls are saved.
	StepInProgress string `json:"step_checkpoint,omitempty"`
	// Interrupts are the calls waiting for a decision, this run's and its
	// subagents'.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Background are the background subagent runs whose receipts have not
	// reached the run's messages yet: started again when the run resumes.
	Background []BackgroundTask `json:"background,omitempty"`
}

// StepState is a step whose calls are not all answered yet.
type StepState struct {
	ID    string         `json:"checkpoint"`
	Calls []llm.ToolCall `json:"calls"`
	// Done are the calls that finished, by call id.
	Done map[string]CallOutcome `json:"done,omitempty"`
	// Waiting are this run's own calls waiting for a decision, by call id.
	Waiting map[string]Interrupt `json:"waiting,omitempty"`
	// Decided are the decisions already taken, by call id.
	Decided map[string]Decision `json:"decided,omitempty"`
}

// CallOutcome is a finished call as saved: what the model reads, the call's
// own file changes (merged when the step completes) and the subagent run it
// started, if any (without its messages, which are under its own namespace).
type CallOutcome struct {
	Content    string          `json:"content"`
	IsError    bool            `json:"is_error,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
	Stop       bool            `json:"stop,omitempty"`
	Parts      []llm.Part      `json:"parts,omitempty"`
	// State are the state values the call set (tool.Result.State).
	State      map[string]json.RawMessage `json:"state,omitempty"`
	DurationMS float64                    `json:"duration_ms,omitempty"`
	Child      *Result                    `json:"child,omitempty"`
	// Background is the background subagent run the call started, saved
	// with the call so that a crash before the step's next record does
	// not lose it.
	Background *BackgroundTask `json:"background,omitempty"`
	Files      vfs.Delta       `json:"-"`
}
