// Drives `deepagents acp` as an editor would, with the official ACP
// TypeScript client (@agentclientprotocol/sdk, protocol v1 entry point).
// Started by the Go tests of cmd/deepagents (acp_test.go):
//
//   node drive.mjs BIN CWD STEPS_JSON [ARG...]
//
// spawns BIN with ARGs (e.g. acp --demo --db sqlite:...), initialises, runs
// the steps in order, and prints one JSON object with what it saw on
// stdout. A step is one of:
//   {"op":"new"}                              session/new in CWD
//   {"op":"load","session":"ID"}              session/load in CWD
//   {"op":"mode","id":"accept-edits"}         session/set_mode
//   {"op":"model","value":"demo-brief"}       session/set_config_option model
//   {"op":"prompt","text":"...","answer":"allow_once","cancelOnTool":"wait"}
// A prompt answers every permission request with `answer` (or cancels it
// when answer is "cancel"), and, with cancelOnTool, sends session/cancel as
// soon as a tool call of that title prefix is in progress.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, cwd, stepsJSON, ...args] = process.argv.slice(2);
const steps = JSON.parse(stepsJSON);

const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const out = { clientProtocolVersion: acp.PROTOCOL_VERSION, steps: [] };
let current = null; // the record of the prompt or load running
let onUpdate = null;

const app = acp
  .client({ name: "deepagents-acp-test" })
  .onNotification(acp.methods.client.session.update, (c) => {
    if (current) current.updates.push(c.params.update);
    if (onUpdate) onUpdate(c.params);
  })
  .onRequest(acp.methods.client.session.requestPermission, (c) => {
    const rec = current;
    rec.permissions.push({ toolCall: c.params.toolCall, options: c.params.options.map((o) => o.optionId) });
    if (rec.answer === "cancel") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: rec.answer } };
  });

const timer = setTimeout(() => {
  console.error("drive.mjs: timed out");
  child.kill("SIGKILL");
  process.exit(3);
}, 60_000);

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
      clientInfo: { name: "drive.mjs", version: "1" },
    });
    out.initialize = init;
    let sessionId = null;
    for (const step of steps) {
      const rec = { op: step.op, updates: [], permissions: [] };
      out.steps.push(rec);
      current = rec;
      try {
        switch (step.op) {
          case "new": {
            const r = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
            sessionId = r.sessionId;
            rec.response = r;
            break;
          }
          case "load": {
            sessionId = step.session;
            rec.response = await ctx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
            break;
          }
          case "mode":
            rec.response = await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: step.id });
            break;
          case "model":
            rec.response = await ctx.request(acp.methods.agent.session.setConfigOption, {
              sessionId, configId: "model", value: step.value,
            });
            break;
          case "prompt": {
            rec.answer = step.answer ?? "allow_once";
            let cancelled = false;
            onUpdate = (p) => {
              const u = p.update;
              if (!step.cancelOnTool || cancelled) return;
              if (u.sessionUpdate === "tool_call" && u.status === "in_progress" && (u.title ?? "").startsWith(step.cancelOnTool)) {
                cancelled = true;
                // Give the tool a moment to be running, as a person would.
                setTimeout(() => ctx.notify(acp.methods.agent.session.cancel, { sessionId }), 200);
              }
            };
            const r = await ctx.request(acp.methods.agent.session.prompt, {
              sessionId, prompt: [{ type: "text", text: step.text }],
            });
            onUpdate = null;
            rec.response = r;
            break;
          }
          default:
            throw new Error(`unknown step ${step.op}`);
        }
      } catch (e) {
        rec.error = { message: String(e?.message ?? e), data: e?.data ?? null, code: e?.code ?? null };
      }
      current = null;
    }
    out.sessionId = sessionId;
  });
} finally {
  clearTimeout(timer);
  child.stdin.end();
}
process.stdout.write(JSON.stringify(out) + "\n");
const code = await new Promise((resolve) => {
  if (child.exitCode !== null) resolve(child.exitCode);
  else child.on("exit", (c) => resolve(c));
});
process.exit(code === 0 ? 0 : 4);
