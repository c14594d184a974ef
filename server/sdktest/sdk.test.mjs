// Drives a deepagents server with the official LangGraph JS SDK. Started by
// the Go test TestSDK (server/sdk_test.go), which serves the scripted demo
// agent and passes its address in SERVER_URL and its token in SERVER_TOKEN.
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const url = process.env.SERVER_URL;
if (!url) {
  console.error("SERVER_URL is not set; run this through the Go test TestSDK");
  process.exit(2);
}
const client = new Client({
  apiUrl: url,
  defaultHeaders: { Authorization: `Bearer ${process.env.SERVER_TOKEN}` },
});

async function collect(iter) {
  const parts = [];
  for await (const part of iter) parts.push(part);
  return parts;
}

function step(name) {
  console.log(`ok - ${name}`);
}

// Assistants: one per agent, graph_id = the agent's name.
const assistants = await client.assistants.search({ graphId: "agent" });
assert.equal(assistants.length, 1);
const assistant = assistants[0];
assert.equal(assistant.metadata.created_by, "system");
const again = await client.assistants.get(assistant.assistant_id);
assert.equal(again.graph_id, "agent");
step("assistants");

// A thread, and a streamed run that delegates to two parallel subagents
// and stops at a call waiting for approval.
const thread = await client.threads.create({ metadata: { test: "sdk" } });
let created;
const parts = await collect(
  client.runs.stream(thread.thread_id, assistant.assistant_id, {
    input: { messages: [{ role: "user", content: "compare A and B" }] },
    streamMode: ["values", "updates", "messages-tuple", "custom"],
    streamSubgraphs: true,
    onRunCreated: (meta) => {
      created = meta;
    },
  }),
);
assert.ok(created?.run_id, "onRunCreated got the run id from Content-Location");
assert.equal(parts[0].event, "metadata");
assert.equal(parts[0].data.run_id, created.run_id);
const tasks = new Set(
  parts.filter((p) => p.event.startsWith("messages|task:")).map((p) => p.event.split("|")[1]),
);
assert.equal(tasks.size, 2, `two subagents streamed messages: ${[...tasks]}`);
const subagentValues = parts.filter((p) => p.event.startsWith("values|task:"));
assert.ok(subagentValues.length >= 2, "subagents' values are streamed");
const tuple = parts.find((p) => p.event === "messages");
assert.ok(Array.isArray(tuple.data) && tuple.data.length === 2, "messages-tuple events are [message, metadata]");
const last = parts.filter((p) => p.event === "values").at(-1);
const interrupt = last.data.__interrupt__;
assert.ok(interrupt?.length === 1, "the final values carry the interrupt");
const action = interrupt[0].value.action_requests[0];
assert.equal(action.name, "write_file");
assert.equal(interrupt[0].value.review_configs[0].action_name, "write_file");
step("stream with two subagents and an approval interrupt");

const waiting = await client.threads.get(thread.thread_id);
assert.equal(waiting.status, "interrupted");
assert.equal(Object.values(waiting.interrupts).flat().length, 1);
const run = await client.runs.get(thread.thread_id, created.run_id);
assert.equal(run.status, "interrupted");
step("thread and run report the interrupt");

// Resume with the approval, as LangChain's clients send it.
const resumed = await collect(
  client.runs.stream(thread.thread_id, assistant.assistant_id, {
    command: { resume: { decisions: [{ type: "approve" }] } },
    streamMode: "values",
  }),
);
const final = resumed.filter((p) => p.event === "values").at(-1).data;
assert.equal(final.__interrupt__, undefined);
assert.equal(final.messages.at(-1).type, "ai");
assert.match(final.messages.at(-1).content, /report is in \/report.md/);
step("resume");

const state = await client.threads.getState(thread.thread_id);
assert.match(state.values.files["/report.md"].content, /# Report/);
assert.equal(state.next.length, 0);
const history = await client.threads.getHistory(thread.thread_id, { limit: 4 });
assert.equal(history.length, 4);
assert.equal(history[0].checkpoint.checkpoint_id, state.checkpoint.checkpoint_id);
assert.equal(history[0].parent_checkpoint.checkpoint_id, history[1].checkpoint.checkpoint_id);
// The next page, before a checkpoint given as a config, as the SDK types it.
const older = await client.threads.getHistory(thread.thread_id, {
  limit: 2,
  before: { configurable: history[1].checkpoint },
});
assert.deepEqual(
  older.map((s) => s.checkpoint.checkpoint_id),
  history.slice(2, 4).map((s) => s.checkpoint.checkpoint_id),
);
const bySource = await client.threads.getHistory(thread.thread_id, {
  limit: 100,
  metadata: { source: history[0].metadata.source },
});
assert.ok(bySource.length > 0);
assert.ok(bySource.every((s) => s.metadata.source === history[0].metadata.source));
step("state and history");

// Rejoin the first run's stream after its third event.
const rejoined = await collect(
  client.runs.joinStream(thread.thread_id, created.run_id, { lastEventId: "3" }),
);
assert.equal(rejoined.length, parts.length - 3);
assert.equal(rejoined[0].id, "4");
assert.deepEqual(rejoined.at(-1).data, parts.at(-1).data);
step("rejoin by Last-Event-ID");

const found = await client.threads.search({ metadata: { test: "sdk" } });
assert.equal(found.length, 1);
step("thread search");

// Cancel a run whose model is slow.
const other = await client.threads.create();
const slow = await client.runs.create(other.thread_id, assistant.assistant_id, {
  input: { messages: [{ role: "user", content: "slow please" }] },
});
await assert.rejects(
  client.runs.create(other.thread_id, assistant.assistant_id, {
    input: { messages: [{ role: "user", content: "me too" }] },
    multitaskStrategy: "reject",
  }),
  /422/,
);
await client.runs.cancel(other.thread_id, slow.run_id, true);
const cancelled = await client.runs.get(other.thread_id, slow.run_id);
assert.equal(cancelled.status, "interrupted");
const list = await client.runs.list(other.thread_id);
assert.equal(list.length, 1);
step("reject a second run, cancel a run");

console.log("all SDK checks passed");
