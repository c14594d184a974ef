// Package daotel turns a deepagents run into OpenTelemetry spans that
// follow the GenAI semantic conventions: one "invoke_agent NAME" span per
// agent and subagent run, one "chat MODEL" span per model call and one
// "execute_tool TOOL" span per tool call. A subagent's run is nested under
// the "execute_tool task" span of the call that started it.
//
// The package lives beside the core on purpose: the agent loop knows nothing
// about OpenTelemetry. A Recorder reads a run's events (Recorder.Observe
// wraps its stream) and builds the agent, tool and subagent spans from
// their times, so the spans show what the run did even when events reach
// the consumer later than they happened. The chat span of a model call is
// made by Middleware's stream wrapper, which sees the request go out, the
// first chunk come and the stream end, timed by the run's clock
// (agent.StepInfo.Now): it shows what the model sent, whatever wrappers
// outside it make of the stream.
//
// Message content (the model's input and output, tool arguments and
// results) is recorded only when the user opts in with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true or
// Config.CaptureContent, and every such attribute is cut to
// Config.MaxAttributeBytes (16 KiB by default).
//
// Setup builds a tracer provider from the standard OTEL_* environment
// variables, for the deepagents CLI and for servers embedding the library.
package daotel
