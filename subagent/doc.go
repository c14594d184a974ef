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
package subagent
