// Package subagent is delegation: the `task` tool through which an agent
// hands a piece of work to a subagent, and the specs that say which
// subagents exist.
//
// # The boundary contract
//
// This is the one place the sub-agent boundary is written down; task.go
// enforces it.
//
// What the model chooses: only whom to send (subagent_type) and the brief
// (description). How a subagent runs — its mode, tools, model, prompt, step
// limit, timeout, reasoning setting (its spec's, else the parent's) — is fixed in its Spec when the agent is assembled. Any other
// argument the model adds ("mode": "fork", say) is dropped, never passed to
// the child, and named in a tool.progress event (ToolInfo.Ignored); the call
// still starts the subagent it names.
//
// Budgets: every child run (every task call) has its own step budget, its
// spec's MaxSteps or else the parent's (500 by default), runs its tool calls
// under the parent's parallelism bound, and stops at its spec's Timeout.
//
// What a child sees:
//   - Isolated (the default; "handoff" is its old name): its own system
//     prompt and exactly one user message, the description verbatim. None of
//     the parent's messages, not even the user's question. Its tools are the
//     file tools plus its spec's tools (the parent's custom tools when the
//     spec names none); never `task`, so it cannot delegate further.
//   - Fork: the parent's system prompt as sent (the spec's own prompt, if
//     any, opens the request's SystemTail, after the cached prefix), the
//     parent's messages as sent on the step that called
//     `task` (so without the in-flight assistant message holding the call),
//     then one user message: a short preamble and the description. Its tools
//     are the parent's, in the same order, `task` included, so the request
//     prefix matches the parent's byte for byte and prompt caches hit. Its
//     `task` refuses: it answers a fixed text as a normal result and runs
//     nothing, and the parent never hears of the attempt.
//   - Both see the parent's files as they were when the step began: the
//     child works on the copy-on-write layer of its own tool call. Todos,
//     structured responses and the parent's private state are not passed.
//   - Skills and memory (deepagents.Config.Skills, Memory): a fork has the
//     parent's skills listing (in the inherited prompt) and memory block; an
//     isolated child lists only the skills its spec names (Spec.Skills) and
//     has no memory block.
//
// What a child may change: files, in its own layer only. Its writes and
// deletes become visible to the parent when the parent's step ends, merged
// in tool-call order with those of its siblings; when two siblings wrote one
// path differently, the later call's version is kept, the earlier one is
// saved beside it, the later receipt says so and a file.conflict event
// records it. A failed, timed-out or limited child's changes are kept too.
//
// What comes back: exactly one tool message, the receipt — the text of the
// child's last assistant message that has text (or, with a response format,
// the validated structured response as compact JSON; or a fixed notice when
// there is neither). The receipt is text only: the child's reasoning parts
// stay in its own history, and a closing message of reasoning alone is no
// report. The parent's history grows by its own call and this receipt,
// nothing else: the child's intermediate messages and tool results stay in
// the child's transcript, which is kept in the parent's Result.Children
// under the task call's id. Todos and the structured response never enter
// the parent's state; its keys stay files and messages.
//
// Failure: a child that errors, panics, hits its step limit, times out or is
// cancelled yields a receipt marked as an error whose text gives the status
// (error, limit — a timeout is one —, cancelled), the reason and what it
// reported last. A child whose model refuses yields an error receipt saying
// it declined the task, with the model's reason. It never affects its siblings and never fails the parent's
// run; only the parent's own context ends them all. The child's Result (with
// Err matching agent.ErrFailed, ErrLimit, ErrCancelled or ErrRefused) is in the parent's
// Result.Children.
//
// Events: every event of a child reaches the parent's stream with the
// child's agent path ("parent / researcher#call_1") and TaskCall set to the
// parent's tool-call id; subagent.start and subagent.end (status, rounds,
// usage) are emitted on the parent's path. None of it enters the parent's
// messages.
//
// # Background subagents
//
// A task call with run_in_background true (or any call of a subagent whose
// Spec.Background is set, unless it passes false) starts the child and
// returns at once: its result says the subagent started in the background
// and gives the task id, which is the call's id. The child runs on through
// the parent's agent.Runtime (Fanout, Queue, Timeout: never a goroutine of
// its own) under the parent run's context, sees what a foreground child
// sees, and is recorded in its own thread namespace, as a foreground child
// is.
//
// What comes back: when it ends, its receipt — the same text, error
// receipts included, as the foreground tool result would have been — is
// appended to the parent's messages as a user message that opens
// "[Background task ID (subagent NAME) has ended: STATUS. Its report
// follows.]", before the parent's next model call, and saved in the thread
// like every message; a subagent.notification event reports it. Its
// Result joins the parent's Result.Children under the task id and its
// usage the parent's roll-up; while it runs, its events (subagent.start
// and subagent.end marked background, and every event of the child) reach
// the parent's stream as the loop runs: between steps, while the calls of
// a step run and while the run waits.
//
// When the model ends its turn while background children still run, the
// run does not end: a notice event (source "background") says how many it
// waits for, the run waits for the next to end (its context still ends
// it), appends its receipt and calls the model again, a follow-up step of
// the same run. One Run covers the turn and its follow-ups; each counts
// against the step limit. A call whose result ends the run (the structured
// response tool, a tool's Stop) ends it only once the background children
// have ended: the run waits for them (a notice says so), merges their
// files and appends their receipts after the answer, which stands; the
// model does not read them in that run. To drop them, the model cancels
// them (task_cancel) before it answers.
//
// Steering: once a run has started a background task, its steps offer
// task_status (all tasks, or one: running or ended, model calls and tokens
// so far, the last text it wrote or its report), task_wait (one task, or
// any running one, for at most timeout_seconds, 60 by default, 1800 at
// most; the report still arrives as the notification) and task_cancel
// (stops it; its receipt, status cancelled, arrives like any other). An
// agent that never starts one sees no change in its tools.
//
// Caps (BackgroundLimits; deepagents.Config.Background for all, a spec's
// or an agent file's for its own): each background run stops at 50 model
// calls (or its spec's tighter step limit), 200,000 tokens of its tree,
// the cost cap set (MaxCost; none by default; priced by
// deepagents.Config.Budget), and 30 minutes (or its spec's shorter
// timeout), ending with status limit; with Config.Budget its spending
// counts towards its parent's budgets too, live while it runs and from its
// receipt on, so a parent's budget stops both; at most 4 run at once per parent, and
// a fifth call is answered with an error result saying so.
//
// Files: the child works on a copy-on-write layer of the parent's files as
// they are when it starts (and, where it did not write, as they become).
// Its changes merge into the parent's when its receipt is appended, at the
// parent's step boundary; a path the parent or another background child
// changed since it started, and that it changed too, is a conflict: its
// version is kept, the other saved beside it, a file.conflict event is
// emitted and its receipt ends with a note saying so. A parent on a real
// directory sees the child's writes as they happen, as with a foreground
// child.
//
// Durability: a background child's start is saved with its task call's
// result, and from the next step on in the parent's loop value
// (agent.LoopState.Background) until its receipt is in the messages. A
// resumed parent starts each such child again through its tool, under the
// step that started it, in the background whatever its spec's default, so
// the child's namespace resumes it (no finished call repeated) or gives its
// saved result (one it had cancelled with task_cancel gets a cancelled
// receipt instead, and does not start again); conflicts with the parent's
// changes made before the crash are then not detected. A parent that ends
// otherwise than by the model's answer (an error, a limit, an approval it
// waits for, a cancellation) cancels its background children and waits a
// few seconds for them; they stay saved, so resuming the run starts them
// again, and a new turn drops them. A child that stops to wait for a
// person's approval ends there: its receipt says it did not finish
// (status interrupted).
//
// On a runtime that runs children elsewhere (agent.ChildRunner: the
// Temporal module), a background call is answered with an error result
// (TemporalText) and nothing starts.
package subagent
