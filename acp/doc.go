// Package acp serves a deep agent to editors over the Agent Client Protocol
// (ACP, protocol version 1), the JSON-RPC protocol that Zed, JetBrains IDEs
// and other editors speak to coding agents over a process's stdin and
// stdout. It is the agent side only, built on the protocol types and the
// JSON-RPC connection of github.com/coder/acp-go-sdk.
//
// A session is a thread of the checkpoint database: session/new starts one,
// session/load reads one back (its messages replayed to the editor as
// session updates), and every prompt is a turn of it, saved as it goes, so
// a session outlives the process. Each turn streams the model's text and
// reasoning, the tool calls with their status, kind, locations and (for
// file edits) a diff, and the plan of write_todos. A call that waits for
// approval is put to the editor with session/request_permission; the
// answer is the person's decision. session/cancel stops the turn (the tool
// in flight sees its context cancelled) and leaves the thread resumable.
// The session modes are the approval modes of package approve, and the
// model is a session configuration option.
//
// What runs is up to the caller: Config.Open builds the agent of a session
// for the directory the editor gives (its working directory).
package acp
