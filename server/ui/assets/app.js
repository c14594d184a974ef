// The web UI of `deepagents serve`: one page that talks to the server's
// LangGraph-compatible API with fetch. Runs are streamed as server-sent
// events (read from the fetch body, so the bearer token can be sent) with
// the modes values, updates, messages-tuple and custom, subagents included;
// the custom events carry the agent's own events, which feed the subagent
// cards, the context ledger and the usage table. Plain JavaScript, no build.
'use strict';

const MODES = ['values', 'updates', 'messages-tuple', 'custom'];
const $ = (id) => document.getElementById(id);

const S = {
  token: localStorage.getItem('deepagents.token') || '',
  assistant: '',
  rootPath: 'agent',
  thread: null, // the open thread's id
  threads: [],
  runId: null, // the run being streamed
  abort: null, // its AbortController
  msgs: [], // the root agent's messages (LangChain dicts), from "values"
  streaming: new Map(), // message id -> text streamed so far (root agent)
  agents: new Map(), // namespace ("task:c1", "task:c1|task:c2") -> subagent card state
  actions: [], // waiting calls: {name, args, description, id, path, allowed}
  rootTools: new Map(), // call id -> the main agent's tool.end event (before its result joins the messages)
  rejected: new Set(), // call ids a person rejected (tool messages marked additional_kwargs.rejected)
  decisions: new Map(), // call id -> decision chosen so far
  ledger: new Map(), // "path#round" -> {agent, round, ctx, usage, ms}
  turns: [], // per turn (a user message and all it caused): {calls, input_tokens, output_tokens, cached_input_tokens}
  rootUsage: { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 },
  rootRounds: 0,
  files: {},
  todos: [],
  cost: null, // the thread's "cost" value: what the last run's model calls cost, and the thread's
  history: [],
  openFile: null,
  viewing: null, // {label, values} of a checkpoint shown instead of the latest
  notice: '', // a line under the chat, e.g. that the run was stopped
  epoch: 0, // bumped when another thread is opened: stale streams stop rendering
  modes: false, // the server serves approval modes (GET /info)
  defaultMode: 'manual', // the mode of a thread no one chose one for
};

// ---------- HTTP ----------

async function api(method, path, body, opts = {}) {
  const headers = { Accept: opts.raw ? 'text/event-stream' : 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (S.token) headers.Authorization = 'Bearer ' + S.token;
  Object.assign(headers, opts.headers || {});
  const res = await fetch(path, {
    method, headers, signal: opts.signal,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401) {
    showToken(true);
    throw new Error('The server wants a bearer token: enter it at the top right.');
  }
  if (!res.ok) {
    let text = await res.text();
    try { const j = JSON.parse(text); text = j.detail || j.message || j.error || text; } catch (_) { /* plain text */ }
    throw new Error(`${method} ${path}: ${res.status} ${text}`);
  }
  if (opts.raw) return res;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

// readSSE reads server-sent events from a fetch response, calling
// onEvent(name, data, id) for each; data is parsed JSON (or the raw text).
async function readSSE(res, onEvent) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const flush = (block) => {
    let name = 'message', id = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      let value = c < 0 ? '' : line.slice(c + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') name = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (data.length === 0) return;
    let parsed = data.join('\n');
    try { parsed = JSON.parse(parsed); } catch (_) { /* keep the text */ }
    onEvent(name, parsed, id);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    buf = buf.replace(/\r\n?/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      flush(buf.slice(0, i));
      buf = buf.slice(i + 2);
    }
  }
  if (buf.trim()) flush(buf);
}

// ---------- small helpers ----------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'html') e.innerHTML = v;
    else if (k === 'style') Object.assign(e.style, v); // CSSOM, which the page's CSP allows
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b) => (typeof b === 'string' ? b : b.text || '')).join('');
  return content == null ? '' : JSON.stringify(content);
}

// pretty is a value as shown to a person: JSON indented, and the characters
// that change how text looks without showing (direction overrides,
// zero-width marks, C1 controls) spelled as escapes, so that what a person
// approves reads as what runs.
function pretty(v) {
  let s;
  if (typeof v === 'string') s = v;
  else try { s = JSON.stringify(v, null, 2); } catch (_) { s = String(v); }
  return s.replace(/[\p{Cf}\u0080-\u009f]/gu, (c) => '\\u' + c.codePointAt(0).toString(16).padStart(4, '0'));
}

function num(n) { return (n || 0).toLocaleString('en-US'); }

function showError(msg) {
  const e = $('error');
  e.textContent = msg || '';
  e.hidden = !msg;
}

function showToken(show) {
  $('token-form').hidden = !show;
  $('token-show').hidden = show;
  if (show) $('token').focus();
}

// md renders a small, safe subset of Markdown (fences, headings, lists,
// emphasis, inline code, http links). Text is escaped first; an unclosed
// fence (still streaming) renders as code so far.
function md(src) {
  const inline = (s) => esc(s)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[\s(])\*([^*\s][^*]*)\*(?=[\s).,;:!?]|$)/g, '$1<em>$2</em>')
    .replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
  const out = [];
  const lines = String(src).split('\n');
  let para = [], list = null;
  const endPara = () => { if (para.length) { out.push('<p>' + para.map(inline).join('<br>') + '</p>'); para = []; } };
  const endList = () => { if (list) { out.push(`<${list.tag}>` + list.items.map((x) => '<li>' + inline(x) + '</li>').join('') + `</${list.tag}>`); list = null; } };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      endPara(); endList();
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      out.push('<pre><code>' + esc(code.join('\n')) + '</code></pre>');
      continue;
    }
    let m;
    if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
      endPara(); endList();
      const n = Math.min(m[1].length + 2, 6);
      out.push(`<h${n}>${inline(m[2])}</h${n}>`);
    } else if ((m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line))) {
      endPara();
      const tag = /\d/.test(m[1]) ? 'ol' : 'ul';
      if (list && list.tag !== tag) endList();
      if (!list) list = { tag, items: [] };
      list.items.push(m[2]);
    } else if (line.trim() === '') {
      endPara(); endList();
    } else {
      endList();
      para.push(line);
    }
  }
  endPara(); endList();
  return out.join('');
}

// ---------- rendering (batched per animation frame) ----------

let pending = false;
function render() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    renderChat();
    renderLanes();
    renderTodos();
    renderFiles();
    renderLedger();
    renderUsage();
    renderCost();
    $('stop').disabled = !S.abort;
    $('send').disabled = !!S.abort;
  });
}

function toolResults() {
  const res = new Map();
  for (const m of S.msgs) if (m.type === 'tool') res.set(m.tool_call_id, m);
  return res;
}

function agentForCall(callID) {
  for (const a of S.agents.values()) if (a.callId === callID && a.parentNs === '') return a;
  return null;
}

function renderChat() {
  const chat = $('chat');
  const atBottom = chat.scrollHeight - chat.scrollTop - chat.clientHeight < 40;
  const results = toolResults();
  const waiting = new Set(S.actions.map((a) => a.id));
  const nodes = [];
  // Each turn's model calls and tokens, subagents included, under its last
  // message; shown when the page saw every turn's events.
  const humans = S.msgs.filter((m) => m.type === 'human').length;
  let turn = -1;
  const turnLine = () => {
    const u = humans === S.turns.length ? S.turns[turn] : null;
    if (u && u.calls) {
      nodes.push(el('div', { class: 'turn-usage muted', 'data-turn': turn },
        `${u.calls} model call(s) · ${num(u.input_tokens)} in · ${num(u.output_tokens)} out` + (u.cached_input_tokens ? ` · ${num(u.cached_input_tokens)} cached` : '')));
    }
  };
  for (const m of S.msgs) {
    if (m.type === 'human') {
      if (turn >= 0) turnLine();
      turn++;
      nodes.push(el('div', { class: 'msg human' }, el('div', { class: 'bubble' }, textOf(m.content))));
    } else if (m.type === 'ai') {
      const parts = [];
      const text = textOf(m.content);
      if (text) parts.push(el('div', { class: 'bubble md', html: md(text) }));
      for (const tc of m.tool_calls || []) parts.push(toolBox(tc, results.get(tc.id), waiting.has(tc.id)));
      nodes.push(el('div', { class: 'msg ai', 'data-id': m.id }, parts));
    }
  }
  if (turn >= 0 && !S.streaming.size) turnLine();
  const known = new Set(S.msgs.map((m) => m.id));
  for (const [id, text] of S.streaming) {
    if (known.has(id) && textOf(S.msgs.find((m) => m.id === id).content)) continue;
    nodes.push(el('div', { class: 'msg ai streaming', 'data-id': id }, el('div', { class: 'bubble md', html: md(text) })));
  }
  // A subagent's call is decided in its card; the chat takes the main
  // agent's calls and those of subagents without a card (a run streamed
  // without the custom mode, e.g. by another client).
  const inCard = (a) => isSubagentPath(a.path) && [...S.agents.values()].some((c) => c.path === a.path);
  const rootActions = S.actions.filter((a) => !inCard(a));
  if (rootActions.length) nodes.push(approvalCard(rootActions, 'The agent asks for approval'));
  const subActions = S.actions.filter(inCard);
  if (S.notice) nodes.push(el('div', { class: 'note' }, S.notice));
  if (subActions.length) {
    nodes.push(el('div', { class: 'note' }, `${subActions.length} call(s) of subagents wait for approval in their cards.`));
  }
  chat.replaceChildren(...nodes);
  if (atBottom) chat.scrollTop = chat.scrollHeight;
}

// isSubagentPath says whether an agent path names a subagent: its
// segments are joined by " / ", the first being the main agent.
function isSubagentPath(p) { return typeof p === 'string' && p.includes(' / '); }

// STATUS_TEXT is what a tool call's badge says, by status, where the word
// alone would mislead.
const STATUS_TEXT = { rejected: 'rejected by a person', pending: 'not run yet' };
const STATUS_TITLE = {
  rejected: 'A person reviewing the run rejected this call: it did not run, and the model was told why.',
  pending: 'This call needs no approval; it runs, or its result is added, once the calls waiting for approval are decided.',
  waiting: 'This call waits for your decision.',
};

// isRejected says whether a tool message answers a call a person rejected.
function isRejected(m) { return !!(m && m.additional_kwargs && m.additional_kwargs.rejected); }

// waitsInside says whether a call of the main agent waits on a decision
// inside it: a call of the subagent it started (or of theirs) waits.
function waitsInside(callID) {
  return S.actions.some((a) => isSubagentPath(a.path) && a.path.split(' / ')[1].endsWith('#' + callID));
}

function toolBox(tc, result, waiting) {
  // The status of the call itself: only a call that needs a decision (its
  // own, or one inside the subagent it started) is waiting; another call of
  // the same step has run (its tool.end came) or is not run yet.
  const ended = S.rootTools.get(tc.id);
  let status;
  let text = result ? textOf(result.content) : ended ? ended.result : undefined;
  if (result) status = isRejected(result) || S.rejected.has(tc.id) ? 'rejected' : result.status === 'error' ? 'error' : 'ok';
  else if (ended) status = S.rejected.has(tc.id) ? 'rejected' : ended.is_error ? 'error' : 'ok';
  else if (waiting || waitsInside(tc.id)) status = 'waiting';
  else if (S.abort) status = 'running';
  else if (S.actions.length) status = 'pending';
  else status = 'stopped';
  const sub = tc.name === 'task' ? agentForCall(tc.id) : null;
  const d = el('details', { class: 'tool', 'data-status': status, 'data-call': tc.id, open: toolOpen.has(tc.id) },
    el('summary', {},
      el('span', { class: 'badge ' + status, title: STATUS_TITLE[status] }, STATUS_TEXT[status] || status),
      el('code', {}, tc.name),
      sub ? el('span', { class: 'muted' }, ' → subagent ' + sub.name + ' (card beside)') : null),
    el('div', { class: 'label' }, 'arguments'),
    el('pre', {}, pretty(tc.args)),
    text !== undefined ? el('div', { class: 'label' }, status === 'rejected' ? 'what the model was told' : 'result') : null,
    text !== undefined ? el('pre', {}, text) : null);
  // Re-rendering keeps a box the person opened open.
  d.addEventListener('toggle', () => { if (d.open) toolOpen.add(tc.id); else toolOpen.delete(tc.id); });
  return d;
}
const toolOpen = new Set();

// ---------- subagent cards ----------

function card(ns) {
  let a = S.agents.get(ns);
  if (!a) {
    const bar = ns.lastIndexOf('|');
    a = {
      ns, parentNs: bar < 0 ? '' : ns.slice(0, bar), callId: ns.slice(ns.lastIndexOf(':') + 1),
      // items are the transcript in order: {text} for what the model
      // wrote, {tool} for a tool call and its result.
      name: 'subagent', path: '', task: '', status: 'running', items: [], live: '',
      usage: null, rounds: 0, start: null, end: null,
    };
    S.agents.set(ns, a);
  }
  return a;
}

// cardsFromCalls adds a card for each task call of the main agent that
// has none: runs streamed by another client without the custom mode left
// no events to build it from. Its transcript loads from the checkpoints.
function cardsFromCalls() {
  const results = toolResults();
  for (const m of S.msgs) {
    for (const tc of (m.type === 'ai' && m.tool_calls) || []) {
      if (tc.name !== 'task') continue;
      const known = S.agents.get('task:' + tc.id);
      if (known && !known.fromCall) continue; // built from its events
      const a = card('task:' + tc.id);
      const args = tc.args || {};
      const r = results.get(tc.id);
      a.name = args.subagent_type || 'subagent';
      a.task = args.description || '';
      // Without a result the parent has not got its answer yet (a call of
      // the same step may be waiting for approval).
      a.status = r ? (r.status === 'error' ? 'error' : 'ok') : 'pending';
      const note = r && r.status !== 'error' && textOf(r.content).includes(' in the background as task ' + tc.id + '.') ? backgroundNote(tc.id) : undefined;
      if (note !== undefined) {
        // A background subagent: running until its report's message is in
        // the conversation, then as that message says.
        a.background = true;
        a.status = note ? note.status : 'running';
        if (note && a.items.length === 0) a.items.push({ text: note.text });
      } else if (r && a.items.length === 0) a.items.push({ text: textOf(r.content) });
      a.fromCall = true;
      // Its path, for its waiting calls: "<main> / <name>#<call id>".
      const waiting = S.actions.find((x) => isSubagentPath(x.path) && x.path.split(' / ').length === 2 && x.path.endsWith('#' + tc.id));
      if (waiting) { a.path = waiting.path; a.status = 'waiting'; }
    }
  }
}

// backgroundNote finds the message that brought background task id's
// report to the main agent: its status and the report; null while there
// is none.
function backgroundNote(id) {
  const head = '[Background task ' + id + ' (subagent ';
  for (const m of S.msgs) {
    const text = m.type === 'human' ? textOf(m.content) : '';
    if (!text.startsWith(head)) continue;
    const st = /has ended: ([a-z ]+)\. Its report follows\.\]/.exec(text);
    const status = !st ? 'ok' : st[1].startsWith('cancelled') ? 'cancelled' : st[1];
    const at = text.indexOf(']\n\n');
    return { status, text: at >= 0 ? text.slice(at + 3) : text };
  }
  return null;
}

// loadTranscript reads a subagent's messages from the thread's
// checkpoints (its task path as checkpoint_ns) into its card.
async function loadTranscript(a) {
  try {
    const st = await api('GET', `/threads/${S.thread}/state?checkpoint_ns=${encodeURIComponent(a.ns)}`);
    a.transcript = ((st && st.values) || {}).messages || [];
  } catch (e) { a.transcript = null; a.transcriptError = e.message; }
  render();
}

function childNs(parentNs, callID) { return (parentNs ? parentNs + '|' : '') + 'task:' + callID; }

function renderLanes() {
  const lanes = $('lanes');
  const top = [...S.agents.values()].filter((a) => a.parentNs === '');
  if (top.length === 0) {
    lanes.replaceChildren(el('p', { class: 'muted' }, 'Subagents appear here as they start.'));
    return;
  }
  lanes.replaceChildren(el('div', { class: 'lane', 'data-parent': S.rootPath },
    el('div', { class: 'lane-h' }, 'called by ', el('code', {}, S.rootPath)),
    top.map(renderCard)));
}

function renderCard(a) {
  const kids = [...S.agents.values()].filter((c) => c.parentNs === a.ns);
  const actions = S.actions.filter((x) => x.path && x.path === a.path);
  const open = cardOpen.has(a.ns) ? cardOpen.get(a.ns) : true;
  const body = [];
  if (a.task) body.push(el('div', { class: 'task' }, el('span', { class: 'label' }, 'task '), a.task));
  for (const it of a.items) {
    if (it.text !== undefined) { body.push(el('div', { class: 'md', html: md(it.text) })); continue; }
    const t = it.tool;
    const st = S.rejected.has(t.id) ? 'rejected' : t.status;
    body.push(el('details', { class: 'tool', 'data-status': st, 'data-call': t.id },
      el('summary', {}, el('span', { class: 'badge ' + st, title: STATUS_TITLE[st] }, STATUS_TEXT[st] || st), el('code', {}, t.name)),
      el('pre', {}, pretty(t.args)),
      t.result !== undefined ? el('pre', {}, t.result) : null));
  }
  if (a.live) body.push(el('div', { class: 'md live', html: md(a.live) }));
  if (a.transcript) {
    body.push(el('div', { class: 'transcript' }, el('div', { class: 'label' }, 'transcript (from the checkpoints)'),
      a.transcript.map((m) => el('div', { class: 'tmsg ' + m.type },
        el('span', { class: 'label' }, m.type === 'tool' ? 'tool ' + (m.name || '') : m.type), ' ',
        m.type === 'ai' ? el('div', { class: 'md', html: md(textOf(m.content)) }) : el('pre', {}, textOf(m.content)),
        (m.tool_calls || []).map((tc) => el('div', {}, el('code', {}, tc.name), ' ', el('code', { class: 'muted' }, JSON.stringify(tc.args))))))));
  } else if (a.status !== 'running' && S.thread) {
    body.push(el('button', { type: 'button', class: 'link transcript-load', onclick: () => loadTranscript(a) },
      a.transcriptError ? 'transcript: ' + a.transcriptError + ' (retry)' : 'show the full transcript'));
  }
  if (actions.length) body.push(approvalCard(actions, 'This subagent asks for approval'));
  if (kids.length) {
    body.push(el('div', { class: 'lane nested', 'data-parent': a.path },
      el('div', { class: 'lane-h' }, 'called by ', el('code', {}, a.name)), kids.map(renderCard)));
  }
  const u = a.usage;
  // A background subagent's card says so while it runs, then done or
  // cancelled.
  const label = actions.length ? 'waiting' : a.background ? (BACKGROUND_TEXT[a.status] || a.status) : a.status;
  const d = el('details', { class: 'card', 'data-ns': a.ns, 'data-status': actions.length ? 'waiting' : a.status,
    'data-background': a.background ? 'true' : 'false', open },
    el('summary', {},
      el('span', { class: 'badge ' + (actions.length ? 'waiting' : a.status) }, label),
      el('strong', {}, a.name), ' ', el('code', { class: 'muted' }, a.callId),
      el('span', { class: 'grow' }),
      u ? el('span', { class: 'muted usage' }, `${num(u.input_tokens)} in · ${num(u.output_tokens)} out · ${a.rounds} round(s)`) : null),
    body);
  d.addEventListener('toggle', () => cardOpen.set(a.ns, d.open));
  return d;
}
const cardOpen = new Map();
const BACKGROUND_TEXT = { running: 'running in background', ok: 'done', cancelled: 'cancelled' };

// ---------- approvals ----------

// approvalCard shows waiting calls with approve / edit / reject. Its
// elements are kept per call id so that re-rendering keeps what the person
// is typing. When every call of the interrupt has a decision, the run is
// resumed with all of them.
const approvalNodes = new Map();
function approvalCard(actions, title) {
  return el('div', { class: 'approval' }, el('div', { class: 'approval-h' }, title), actions.map(approvalItem));
}

function approvalItem(a) {
  let node = approvalNodes.get(a.id);
  if (node) return node;
  const allowed = a.allowed && a.allowed.length ? a.allowed : ['approve', 'edit', 'reject'];
  const args = a.args && typeof a.args === 'object' ? a.args : {};
  const simple = Object.values(args).every((v) => v === null || ['string', 'number', 'boolean'].includes(typeof v));
  const fields = new Map();
  let editor;
  if (simple) {
    editor = el('div', { class: 'form' }, Object.entries(args).map(([k, v]) => {
      const input = typeof v === 'string' && (v.length > 60 || v.includes('\n'))
        ? el('textarea', { rows: 5, name: k }) : el('input', { name: k });
      input.value = v === null ? '' : String(v);
      fields.set(k, { input, kind: typeof v });
      return el('label', {}, el('span', {}, k), input);
    }));
  } else {
    const ta = el('textarea', { rows: 8, name: 'args' });
    ta.value = JSON.stringify(args, null, 2);
    editor = el('div', { class: 'form' }, ta);
    fields.set('', { input: ta, kind: 'json' });
  }
  editor.hidden = true;
  const reason = el('input', { placeholder: 'why (sent to the model)', class: 'reason' });
  reason.hidden = true;
  // A respond answers in the tool's place: the text is the call's result.
  const answer = el('input', { placeholder: "answer (the call's result, sent to the model)", class: 'answer' });
  answer.hidden = true;
  const msg = el('span', { class: 'muted' });
  const readArgs = () => {
    if (fields.has('')) return JSON.parse(fields.get('').input.value);
    const out = {};
    for (const [k, f] of fields) {
      const v = f.input.value;
      out[k] = f.kind === 'number' ? Number(v) : f.kind === 'boolean' ? v === 'true' : v;
    }
    return out;
  };
  let editShown = () => {};
  const decide = (d) => {
    S.decisions.set(a.id, Object.assign({ call_id: a.id, path: a.path }, d));
    node.dataset.decided = d.type;
    msg.textContent = 'decision: ' + d.type;
    maybeResume();
  };
  const buttons = [];
  if (allowed.includes('approve')) buttons.push(el('button', { type: 'button', class: 'approve', onclick: () => decide({ type: 'approve' }) }, 'approve'));
  if (allowed.includes('edit')) {
    const save = el('button', { type: 'button', class: 'edit-save', hidden: true, onclick: () => {
      try { decide({ type: 'edit', args: readArgs() }); } catch (e) { msg.textContent = 'arguments are not valid JSON: ' + e.message; }
    } }, 'approve edited');
    buttons.push(el('button', { type: 'button', class: 'edit', onclick: () => { editor.hidden = false; save.hidden = false; editShown(); } }, 'edit'), save);
  }
  if (allowed.includes('reject')) {
    buttons.push(el('button', { type: 'button', class: 'reject', onclick: () => {
      if (reason.hidden) { reason.hidden = false; reason.focus(); return; }
      decide({ type: 'reject', message: reason.value || 'Rejected by the user.' });
    } }, 'reject'));
  }
  if (allowed.includes('respond')) {
    buttons.push(el('button', { type: 'button', class: 'respond', onclick: () => {
      if (answer.hidden) { answer.hidden = false; answer.focus(); return; }
      if (!answer.value.trim()) { msg.textContent = 'a respond needs an answer'; answer.focus(); return; }
      decide({ type: 'respond', message: answer.value });
    } }, 'respond'));
  }
  const shown = el('pre', { class: 'args' }, pretty(a.args));
  node = el('div', { class: 'action', 'data-call': a.id },
    el('div', {}, el('code', {}, a.name), isSubagentPath(a.path) ? el('span', { class: 'muted' }, ' in ' + a.path) : null),
    ownDescription(a) ? el('div', { class: 'muted description' }, a.description) : null,
    shown, editor, reason, answer, el('div', { class: 'row' }, buttons, msg));
  // While the arguments are edited, the form shows them (once).
  editShown = () => { shown.hidden = true; };
  approvalNodes.set(a.id, node);
  return node;
}

// ownDescription says whether a waiting call's description says more than
// the call itself: the agent's default one repeats the tool and its
// arguments, which the card shows already.
function ownDescription(a) {
  const d = String(a.description || '').trim();
  if (!d) return false;
  let compact = '';
  try { compact = JSON.stringify(a.args); } catch (_) { /* not JSON */ }
  return !(compact && d.includes(compact)) && !d.startsWith(`The agent wants to call ${a.name} with `);
}

function setInterrupts(list) {
  const actions = [];
  for (const rec of list || []) {
    const v = rec.value || {};
    const reqs = v.action_requests || [];
    const cfgs = v.review_configs || [];
    reqs.forEach((r, i) => actions.push({ name: r.name, args: r.args, description: r.description, id: r.id,
      path: r.path, allowed: (cfgs[i] || {}).allowed_decisions }));
  }
  S.actions = actions;
  render();
}

async function maybeResume() {
  if (S.actions.length === 0 || S.abort) return;
  if (!S.actions.every((a) => S.decisions.has(a.id))) return;
  const decisions = S.actions.map((a) => S.decisions.get(a.id));
  S.actions = [];
  S.decisions.clear();
  approvalNodes.clear();
  await run({ command: { resume: { decisions } } });
}

// ---------- stream events ----------

function onEvent(name, data) {
  const bar = name.indexOf('|');
  const mode = bar < 0 ? name : name.slice(0, bar);
  const ns = bar < 0 ? '' : name.slice(bar + 1);
  switch (mode) {
    case 'metadata':
      if (data && data.run_id) {
        S.runId = data.run_id;
        if (S.abort) refreshThreads(); // a live run: the thread is busy now
      }
      break;
    case 'values':
      noteRejected(data && data.messages);
      if (ns === '') applyValues(data);
      break;
    case 'updates':
      if (ns === '' && data && data.__interrupt__) setInterrupts(data.__interrupt__);
      break;
    case 'messages':
      if (Array.isArray(data) && data[0] && data[0].type === 'tool') noteRejected([data[0]]);
      if (ns === '' && Array.isArray(data)) onMessage(data[0]);
      break;
    case 'custom':
      onCustom(ns, data);
      break;
    case 'error':
      showError('The run failed: ' + (data && (data.message || data.error) ? data.message || data.error : pretty(data)));
      break;
  }
  render();
}

function onMessage(chunk) {
  if (!chunk || !chunk.id) return;
  if (chunk.type === 'AIMessageChunk') {
    S.streaming.set(chunk.id, (S.streaming.get(chunk.id) || '') + textOf(chunk.content));
  } else if (chunk.type === 'ai') {
    S.streaming.delete(chunk.id);
    const i = S.msgs.findIndex((m) => m.id === chunk.id);
    if (i >= 0) S.msgs[i] = chunk; else S.msgs.push(chunk);
  }
}

// noteRejected remembers the calls whose results say a person rejected
// them (the main agent's or a subagent's), for their boxes and cards.
function noteRejected(msgs) {
  for (const m of Array.isArray(msgs) ? msgs : []) if (m && m.type === 'tool' && isRejected(m)) S.rejected.add(m.tool_call_id);
}

function applyValues(v) {
  if (!v || typeof v !== 'object') return;
  if (Array.isArray(v.messages)) {
    noteRejected(v.messages);
    S.msgs = v.messages;
    for (const m of S.msgs) if (m.type === 'ai' && textOf(m.content)) S.streaming.delete(m.id);
  }
  if (v.files && typeof v.files === 'object') S.files = v.files;
  if (Array.isArray(v.todos)) S.todos = v.todos;
  if (v.cost && typeof v.cost === 'object') S.cost = v.cost;
  if ('__interrupt__' in v) setInterrupts(v.__interrupt__);
}

function addUsage(into, u) {
  if (!u) return;
  into.input_tokens += u.input_tokens || 0;
  into.output_tokens += u.output_tokens || 0;
  into.cached_input_tokens += u.cached_input_tokens || 0;
}

// onCustom handles the agent's own events, as the server forwards them on
// the custom stream of the agent they belong to (ns "" for the top level).
function onCustom(ns, ev) {
  if (!ev || !ev.type) return;
  const key = ev.agent + '#' + ((ev.request || ev.response || {}).round ?? 0);
  switch (ev.type) {
    case 'run.start':
      if (ns === '' && ev.agent) S.rootPath = ev.agent;
      break;
    case 'model.request': {
      if (ns === '' && ev.request.round === 0) S.turns.push({ calls: 0, input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 });
      const e = S.ledger.get(key) || { agent: ev.agent, round: ev.request.round };
      e.ctx = ev.request.context || null;
      e.tools = (ev.request.tools || []).length;
      S.ledger.set(key, e);
      break;
    }
    case 'model.response': {
      const e = S.ledger.get(key) || { agent: ev.agent, round: ev.response.round };
      e.usage = ev.response.usage;
      e.ms = ev.response.duration_ms;
      const turn = S.turns[S.turns.length - 1];
      if (turn) { turn.calls++; addUsage(turn, ev.response.usage); }
      S.ledger.set(key, e);
      if (ns !== '') {
        const a = card(ns);
        const text = ev.response.text || a.live;
        if (text) a.items.push({ text });
        a.live = '';
      }
      break;
    }
    case 'subagent.start': {
      const s = ev.subagent;
      const a = card(childNs(ns, s.call_id));
      Object.assign(a, { name: s.name, path: s.path, task: s.task || a.task, status: 'running', start: ev.time, background: !!s.background || a.background });
      break;
    }
    case 'subagent.end': {
      const s = ev.subagent;
      const a = card(childNs(ns, s.call_id));
      Object.assign(a, { name: s.name, path: s.path, status: s.status || 'ok', usage: s.usage || a.usage,
        rounds: s.rounds || a.rounds, end: ev.time, error: s.error });
      if (a.live) { a.items.push({ text: a.live }); a.live = ''; }
      break;
    }
    case 'tool.end':
      if (ns === '' && ev.tool) S.rootTools.set(ev.tool.call_id, { is_error: !!ev.tool.is_error, result: ev.tool.result || '' });
      break;
    case 'run.end':
      if (ns === '') {
        S.rootUsage = Object.assign({ input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 }, ev.run.usage || {});
        S.rootRounds = ev.run.rounds || 0;
      } else {
        const a = card(ns);
        a.usage = ev.run.usage || a.usage;
        a.rounds = ev.run.rounds || a.rounds;
        if (ev.run.status) a.status = ev.run.status;
      }
      break;
  }
  if (ns === '') return;
  const a = card(ns);
  if (!a.path && ev.agent) a.path = ev.agent;
  switch (ev.type) {
    case 'model.delta':
      if (ev.delta && ev.delta.type === 'text_delta') a.live += ev.delta.text || '';
      break;
    case 'tool.start':
      a.items.push({ tool: { id: ev.tool.call_id, name: ev.tool.name, args: ev.tool.args, status: 'running' } });
      break;
    case 'tool.end': {
      let it = a.items.find((x) => x.tool && x.tool.id === ev.tool.call_id);
      if (!it) a.items.push(it = { tool: { id: ev.tool.call_id, name: ev.tool.name } });
      const t = it.tool;
      t.status = ev.tool.is_error ? 'error' : 'ok';
      t.result = ev.tool.result || '';
      break;
    }
    case 'interrupt':
      a.status = 'interrupted';
      break;
  }
}

// ---------- side panels ----------

// shown is what the todos and files panels show: the thread's latest
// values, or those of the checkpoint chosen in the history tab.
function shown() {
  if (!S.viewing) return { todos: S.todos, files: S.files };
  const v = S.viewing.values || {};
  return { todos: Array.isArray(v.todos) ? v.todos : [], files: v.files || {} };
}

function renderTodos() {
  const ul = $('todos');
  const todos = shown().todos;
  $('viewing').hidden = !S.viewing;
  if (S.viewing) $('viewing-id').textContent = S.viewing.label;
  if (!todos.length) { ul.replaceChildren(el('li', { class: 'muted' }, 'No todos yet.')); return; }
  ul.replaceChildren(...todos.map((t) => el('li', { class: 'todo ' + (t.status || 'pending') },
    el('span', { class: 'badge ' + (t.status || 'pending') }, (t.status || 'pending').replace('_', ' ')),
    ' ', t.status === 'in_progress' && t.activeForm ? t.activeForm : t.content)));
}

function fileText(f) {
  if (f == null) return null;
  if (typeof f === 'string') return f;
  if (Array.isArray(f.content)) return f.content.join('\n');
  return f.content == null ? '' : String(f.content);
}

function renderFiles() {
  const files = shown().files;
  const names = Object.keys(files).sort();
  $('files').replaceChildren(...(names.length ? names.map((n) => el('li', {},
    el('a', { href: '#', class: n === S.openFile ? 'on' : '', onclick: (e) => { e.preventDefault(); openFile(n); } }, n),
    el('span', { class: 'muted' }, ' ' + (fileText(files[n]) || '').length + ' chars')))
    : [el('li', { class: 'muted' }, 'No files yet.')]));
  if (S.openFile && $('file-editor').hidden) {
    const t = fileText(files[S.openFile]);
    $('file-content').textContent = t == null ? '(deleted)' : t;
  }
}

async function openFile(name) {
  S.openFile = name;
  $('file-view').hidden = false;
  $('file-name').textContent = name;
  $('file-editor').hidden = true;
  $('file-content').hidden = false;
  $('diff').textContent = '';
  render();
  await loadHistory();
}

async function loadHistory() {
  if (!S.thread) return;
  try {
    S.history = await api('POST', `/threads/${S.thread}/history`, { limit: 100 }) || [];
  } catch (e) { showError(e.message); return; }
  const label = (h) => `step ${h.metadata && h.metadata.step != null ? h.metadata.step : '?'} · ${(h.checkpoint.checkpoint_id || '').slice(0, 8)} · ${h.created_at ? new Date(h.created_at).toLocaleTimeString() : ''}`;
  const opts = () => S.history.map((h, i) => el('option', { value: i }, label(h)));
  $('diff-from').replaceChildren(...opts());
  $('diff-to').replaceChildren(...opts());
  if (S.history.length > 1) $('diff-from').value = String(S.history.length - 1);
  $('diff-to').value = '0';
  $('history').replaceChildren(...S.history.map((h, i) => {
    const v = h.values || {};
    return el('li', { 'data-checkpoint': h.checkpoint.checkpoint_id },
      el('div', { class: 'row' }, el('code', {}, label(h)), el('span', { class: 'grow' }),
        el('button', { type: 'button', class: 'view', onclick: () => {
          S.viewing = i === 0 ? null : { label: label(h), values: v };
          render();
        } }, i === 0 ? 'latest' : 'view')),
      el('div', { class: 'muted' }, `${(v.messages || []).length} messages · ${Object.keys(v.files || {}).length} files · ${(v.todos || []).length} todos`
        + ((h.interrupts || []).length ? ' · waiting for approval' : '')));
  }));
}

// diffLines is a line diff by longest common subsequence (inputs are capped
// so that the table stays small).
function diffLines(a, b) {
  const x = a.split('\n').slice(0, 2000), y = b.split('\n').slice(0, 2000);
  const n = x.length, m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([' ', x[i]]); i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) out.push(['-', x[i++]]); else out.push(['+', y[j++]]);
  }
  while (i < n) out.push(['-', x[i++]]);
  while (j < m) out.push(['+', y[j++]]);
  return out;
}

function showDiff() {
  const from = S.history[Number($('diff-from').value)], to = S.history[Number($('diff-to').value)];
  if (!from || !to || !S.openFile) return;
  const a = fileText(((from.values || {}).files || {})[S.openFile]);
  const b = fileText(((to.values || {}).files || {})[S.openFile]);
  const lines = diffLines(a || '', b || '');
  const head = a == null && b == null ? 'the file is in neither checkpoint' : a == null ? 'created' : b == null ? 'deleted' : lines.every((l) => l[0] === ' ') ? 'no change' : '';
  $('diff').replaceChildren(el('div', { class: 'muted' }, head),
    ...lines.map(([k, t]) => el('div', { class: k === '+' ? 'add' : k === '-' ? 'del' : 'same' }, k + ' ' + t)));
}

// LEDGER_PARTS are the sources of a request's estimated tokens, in the
// order of the bars.
const LEDGER_PARTS = [['system', 'system prompt'], ['tools', 'tool definitions'], ['messages', 'messages'],
  ['tool_results', 'tool results'], ['memory', 'memory'], ['skills', 'skills']];

function renderLedger() {
  const rows = [...S.ledger.values()];
  if (!rows.length) { $('ledger').replaceChildren(el('p', { class: 'muted' }, 'No model calls yet.')); return; }
  const legend = el('div', { class: 'legend' }, LEDGER_PARTS.map(([k, label], i) => el('span', {}, el('i', { class: 'p' + i }), label)));
  $('ledger').replaceChildren(legend, ...rows.map((r) => {
    const c = r.ctx || {};
    const total = LEDGER_PARTS.reduce((n, [k]) => n + (c[k] || 0), 0) || 1;
    const bar = el('div', { class: 'bar' }, LEDGER_PARTS.map(([k, label], i) => (c[k] ? el('i', {
      class: 'p' + i, style: { width: `${(100 * c[k] / total).toFixed(2)}%` }, title: `${label}: ${num(c[k])} tokens`,
    }) : null)));
    const u = r.usage;
    return el('div', { class: 'lrow', 'data-agent': r.agent },
      el('div', { class: 'row' }, el('strong', { title: r.agent }, shortAgent(r.agent)), el('span', { class: 'muted' }, 'call ' + (r.round + 1)),
        el('span', { class: 'grow' }),
        el('span', { class: 'muted' }, `est. ${num(c.calibrated)}` + (c.window ? ` of ${num(c.window)} (${num(c.free)} free)` : ''))),
      bar,
      el('div', { class: 'muted small' }, LEDGER_PARTS.filter(([k]) => c[k]).map(([k, label]) => `${label} ${num(c[k])}`).join(' · ')
        + (u ? ` — reported: ${num(u.input_tokens)} in, ${num(u.output_tokens)} out` + (u.cached_input_tokens ? `, ${num(u.cached_input_tokens)} cached` : '') : ' — waiting for the answer')));
  }));
}

function shortAgent(p) {
  const parts = String(p).split(' / ');
  return parts.length === 1 ? p : parts[parts.length - 1];
}

// renderUsage lists tokens by agent. The main agent's row counts its own
// model calls (from the ledger); the total is the sum of the rows. (A run's
// usage as the agent reports it at its end includes its subagents' and,
// after a resume, the interrupted run's, so it cannot be added up across
// runs; the last one is kept on the total row for comparison.)
function renderUsage() {
  const own = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
  let ownCalls = 0;
  for (const r of S.ledger.values()) {
    if (r.agent === S.rootPath && r.usage) { addUsage(own, r.usage); ownCalls++; }
  }
  const rows = [[S.rootPath, 'main agent', ownCalls, own, '']];
  for (const a of S.agents.values()) rows.push([a.path || a.ns, a.name, a.rounds, a.usage || {}, a.status]);
  const sum = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
  for (const r of rows) addUsage(sum, r[3]);
  const total = sum;
  $('usage').replaceChildren(el('table', { class: 'ledger' },
    el('thead', {}, el('tr', {}, ['agent', 'status', 'calls', 'in', 'out', 'cached'].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map(([p, name, rounds, u, st]) => el('tr', { 'data-agent': p },
      el('td', { title: p }, name === 'main agent' ? name : shortAgent(p)), el('td', {}, st), el('td', {}, rounds),
      el('td', {}, num(u.input_tokens)), el('td', {}, num(u.output_tokens)), el('td', {}, num(u.cached_input_tokens)))),
    el('tr', { class: 'total', 'data-last-run-in': S.rootUsage.input_tokens, 'data-last-run-out': S.rootUsage.output_tokens },
      el('td', {}, 'total'), el('td'), el('td'),
      el('td', {}, num(total.input_tokens)), el('td', {}, num(total.output_tokens)), el('td', {}, num(total.cached_input_tokens))))));
}

// usd writes dollars as the CLI does: $12.35, $0.0123, $0.000045.
function usd(v) {
  if (!v) return '$0.00';
  const a = Math.abs(v);
  return '$' + v.toFixed(a >= 1 ? 2 : a >= 0.001 ? 4 : 6);
}

// costText is one cost for people: unknown when no call was priced (null),
// a lower bound when some call had no price or no usage.
function costText(v, lowerBound) {
  if (v === null || v === undefined) return 'unknown (no price for the model)';
  return usd(v) + (lowerBound ? ' or more (some calls have no price)' : '');
}

// renderCost shows the cost line under the thread's title: what the last
// run's model calls cost, subagents included, and the whole thread's.
function renderCost() {
  const line = $('cost');
  const c = S.cost;
  line.hidden = !c;
  if (!c) { line.textContent = ''; return; }
  const calls = c.calls || 0;
  let text = 'cost: ' + costText(c.cost_usd, c.cost_lower_bound) + ' for the last run (' + calls + (calls === 1 ? ' model call)' : ' model calls)');
  if (c.thread_cost_usd !== c.cost_usd || !!c.thread_cost_lower_bound !== !!c.cost_lower_bound) {
    text += ' · ' + costText(c.thread_cost_usd, c.thread_cost_lower_bound) + ' for the thread';
  }
  line.textContent = text;
  line.dataset.costUsd = c.cost_usd === null || c.cost_usd === undefined ? '' : String(c.cost_usd);
}

// ---------- threads ----------

function threadTitle(t) {
  if (t.metadata && t.metadata.title) return t.metadata.title;
  const first = ((t.values || {}).messages || []).find((m) => m.type === 'human');
  return first ? textOf(first.content).slice(0, 60) : 'thread ' + t.thread_id.slice(0, 8);
}

// setTitle heads the chat with the open thread's title (its id as a
// tooltip); th is null while the thread is still loading.
function setTitle(th, id) {
  const h = $('thread-title');
  h.textContent = th ? threadTitle(th) : 'loading…';
  h.title = 'thread ' + id;
  h.dataset.thread = id;
}

async function refreshThreads() {
  try {
    const body = { limit: 100, sort_by: 'updated_at', sort_order: 'desc' };
    const st = $('status-filter').value;
    if (st) body.status = st;
    S.threads = await api('POST', '/threads/search', body) || [];
  } catch (e) { $('conn').textContent = e.message; return; }
  const item = (t) => el('li', { class: t.thread_id === S.thread ? 'on' : '', 'data-thread': t.thread_id, 'data-status': t.status },
    el('a', { href: '#' + t.thread_id, onclick: (e) => { e.preventDefault(); openThread(t.thread_id); } },
      el('span', { class: 'badge ' + t.status }, t.status), ' ', threadTitle(t)));
  const attention = S.threads.filter((t) => t.status === 'interrupted' || t.status === 'error');
  $('attention-h').hidden = attention.length === 0;
  $('attention').replaceChildren(...attention.map(item));
  $('threads').replaceChildren(...S.threads.map(item));
}

function resetThread() {
  S.epoch++;
  Object.assign(S, { runId: null, viewing: null, notice: '', msgs: [], actions: [], files: {}, todos: [], cost: null, history: [], openFile: null, rootRounds: 0 });
  S.rootUsage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
  S.turns = [];
  S.streaming.clear(); S.agents.clear(); S.decisions.clear(); S.ledger.clear(); approvalNodes.clear(); cardOpen.clear(); toolOpen.clear();
  S.rootTools.clear(); S.rejected.clear();
  $('file-view').hidden = true;
  showError('');
}

// openThread shows a thread: the runs' stored events are replayed (so
// subagent cards, the ledger and usage come back as they were), then the
// thread's current state is applied; a run still going is followed live.
async function openThread(id) {
  if (S.abort) { S.abort.abort(); S.abort = null; }
  resetThread();
  S.thread = id;
  const epoch = S.epoch;
  location.hash = id;
  setTitle(null, id);
  render();
  try {
    const th = await api('GET', `/threads/${id}`);
    if (epoch === S.epoch) { setTitle(th, id); showMode(th, true); $('approval-mode').dataset.was = $('approval-mode').value; }
    const runs = (await api('GET', `/threads/${id}/runs?limit=100`) || []).slice().reverse();
    for (const r of runs) {
      if (epoch !== S.epoch) return;
      const liveRun = r.status === 'pending' || r.status === 'running';
      if (liveRun) { await follow(r.run_id); continue; }
      const res = await api('GET', `/threads/${id}/runs/${r.run_id}/stream`, undefined, { raw: true, headers: { 'Last-Event-ID': '0' } });
      await readSSE(res, (n, d) => { if (epoch === S.epoch) onEvent(n, d); });
    }
    if (epoch !== S.epoch) return;
    const fresh = await api('GET', `/threads/${id}`);
    applyValues(fresh.values || th.values);
    setInterrupts(Object.values(fresh.interrupts || {}).flat());
    cardsFromCalls();
    if (fresh.status === 'error' && fresh.error) showError('The last run failed: ' + fresh.error);
  } catch (e) { showError(e.message); }
  render();
  refreshThreads();
}

// follow joins a run that is still going and streams it to its end.
async function follow(runID) {
  const ctl = new AbortController();
  S.abort = ctl; S.runId = runID;
  const epoch = S.epoch;
  render();
  try {
    const res = await api('GET', `/threads/${S.thread}/runs/${runID}/stream`, undefined, { raw: true, signal: ctl.signal, headers: { 'Last-Event-ID': '0' } });
    await readSSE(res, (n, d) => { if (epoch === S.epoch) onEvent(n, d); });
  } catch (e) { if (e.name !== 'AbortError') showError(e.message); } finally {
    if (S.abort === ctl) S.abort = null;
    render();
  }
}

async function ensureThread(title) {
  if (S.thread) return S.thread;
  const th = await api('POST', '/threads', { metadata: { title: title.slice(0, 60) } });
  resetThread();
  S.thread = th.thread_id;
  location.hash = th.thread_id;
  setTitle(th, th.thread_id);
  return S.thread;
}

// run starts a run on the open thread and streams it; body carries the
// input or the command. A stream cut off while its run goes on (network
// trouble, a proxy's timeout) is rejoined after the last event received,
// as the server keeps every run's events.
async function run(body) {
  const ctl = new AbortController();
  S.abort = ctl;
  S.runId = null;
  const epoch = S.epoch;
  showError('');
  S.notice = '';
  render();
  let lastId = 0;
  const handle = (n, d, id) => {
    if (id != null && /^\d+$/.test(id)) lastId = Number(id);
    if (epoch === S.epoch) onEvent(n, d);
  };
  try {
    const res = await api('POST', `/threads/${S.thread}/runs/stream`, Object.assign({
      assistant_id: S.assistant, stream_mode: MODES, stream_subgraphs: true, stream_resumable: true,
      on_disconnect: 'continue',
    }, modeConfig(), body), { raw: true, signal: ctl.signal });
    await readSSE(res, handle);
  } catch (e) {
    if (e.name !== 'AbortError' && !S.runId) showError(e.message);
  }
  for (let tries = 0; tries < 5 && S.runId && !ctl.signal.aborted && epoch === S.epoch; tries++) {
    let r;
    try { r = await api('GET', `/threads/${S.thread}/runs/${S.runId}`); } catch (e) { break; }
    if (!r || (r.status !== 'pending' && r.status !== 'running')) break;
    try {
      const res = await api('GET', `/threads/${S.thread}/runs/${S.runId}/stream`, undefined,
        { raw: true, signal: ctl.signal, headers: { 'Last-Event-ID': String(lastId) } });
      await readSSE(res, handle);
    } catch (e) {
      if (e.name === 'AbortError') break;
      if (tries === 4) showError('The stream was cut off and could not be rejoined: ' + e.message);
    }
  }
  if (S.abort === ctl) S.abort = null;
  if (epoch !== S.epoch) return;
  // The stream's last values are the run's; the thread's state says what
  // is waiting (a stopped run leaves no values event).
  try {
    const th = await api('GET', `/threads/${S.thread}`);
    setTitle(th, S.thread);
    // The mode in force after the run (auto may have fallen back to manual).
    showMode(th);
    $('approval-mode').dataset.was = $('approval-mode').value;
    applyValues(th.values);
    setInterrupts(Object.values(th.interrupts || {}).flat());
    if (th.status === 'error' && th.error) showError('The run failed: ' + th.error);
    cardsFromCalls();
  } catch (e) { showError(e.message); }
  render();
  refreshThreads();
  // Decisions made while the stream was still closing resume now.
  maybeResume();
}

// ---------- approval modes ----------

// modeConfig is the part of a run's request that names the approval mode
// chosen in the header (nothing when the server serves no modes).
function modeConfig() {
  return S.modes ? { config: { configurable: { approval_mode: $('approval-mode').value } } } : {};
}

// showMode sets the header's selector to a thread's mode (its metadata's,
// else, when orDefault, the server's default) and says yolo loudly.
function showMode(th, orDefault) {
  if (!S.modes) return;
  const m = (th && th.metadata && th.metadata.approval_mode) || (orDefault ? S.defaultMode : '');
  if (!m) return;
  $('approval-mode').value = m;
  $('mode-warn').hidden = m !== 'yolo';
}

// switchMode asks the server to switch the open thread to the chosen mode
// (a run going on included, from its next gated call); a mode the server
// refuses puts the selector back.
async function switchMode(ev) {
  const sel = ev.target;
  const was = sel.dataset.was || S.defaultMode;
  $('mode-warn').hidden = sel.value !== 'yolo';
  if (!S.thread) { sel.dataset.was = sel.value; return; }
  try {
    await api('PATCH', `/threads/${S.thread}`, { metadata: { approval_mode: sel.value } });
    sel.dataset.was = sel.value;
    showError('');
  } catch (e) {
    sel.value = was;
    $('mode-warn').hidden = was !== 'yolo';
    showError(e.message);
  }
}

// loadModes reads from the assistant's config whether the server serves
// approval modes and a new thread's mode (configurable.approval_mode).
function loadModes(list) {
  const a = (list || []).find((x) => x.assistant_id === S.assistant) || {};
  const conf = (a.config && a.config.configurable) || {};
  S.modes = typeof conf.approval_mode === 'string' && conf.approval_mode !== '';
  if (S.modes) S.defaultMode = conf.approval_mode;
  $('mode-label').hidden = !S.modes;
  if (S.modes) { $('approval-mode').value = S.defaultMode; $('approval-mode').dataset.was = S.defaultMode; }
  $('mode-warn').hidden = !S.modes || S.defaultMode !== 'yolo';
}

async function send(ev) {
  ev.preventDefault();
  const text = $('input').value.trim();
  if (!text || S.abort) return;
  if (S.actions.length) { showError('Decide on the waiting calls first (approve, edit or reject).'); return; }
  try { await ensureThread(text); } catch (e) { showError(e.message); return; }
  $('input').value = '';
  S.msgs = S.msgs.concat([{ type: 'human', content: text, id: 'pending-' + Date.now() }]);
  await run({ input: { messages: [{ type: 'human', content: text }] } });
}

async function stop() {
  const ctl = S.abort;
  if (!ctl) return;
  $('stop').disabled = true;
  S.notice = 'Stopped: the run was cancelled.';
  try {
    if (S.runId) await api('POST', `/threads/${S.thread}/runs/${S.runId}/cancel`, {});
  } catch (e) { showError(e.message); }
  ctl.abort();
}

// ---------- start ----------

async function loadAssistants() {
  const list = await api('POST', '/assistants/search', { limit: 100 }) || [];
  $('assistant').replaceChildren(...list.map((a) => el('option', { value: a.assistant_id }, a.name || a.graph_id)));
  if (list.length) S.assistant = list[0].assistant_id;
  loadModes(list);
}

async function start() {
  $('composer').addEventListener('submit', send);
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('composer').requestSubmit(); }
  });
  $('stop').addEventListener('click', stop);
  $('new-thread').addEventListener('click', () => {
    if (S.abort) { S.abort.abort(); S.abort = null; }
    resetThread(); S.thread = null; history.replaceState(null, '', location.pathname);
    $('thread-title').textContent = 'new thread'; render(); refreshThreads(); $('input').focus();
  });
  $('status-filter').addEventListener('change', refreshThreads);
  $('assistant').addEventListener('change', (e) => { S.assistant = e.target.value; });
  $('approval-mode').addEventListener('change', switchMode);
  $('token-show').addEventListener('click', () => showToken(true));
  $('token').value = S.token;
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    S.token = $('token').value.trim();
    localStorage.setItem('deepagents.token', S.token);
    showToken(false);
    boot();
  });
  for (const b of document.querySelectorAll('#tabs button')) {
    b.addEventListener('click', () => {
      for (const x of document.querySelectorAll('#tabs button')) x.classList.toggle('on', x === b);
      for (const t of document.querySelectorAll('.tab')) t.hidden = t.id !== 'tab-' + b.dataset.tab;
      if (b.dataset.tab === 'history') loadHistory();
    });
  }
  $('diff-go').addEventListener('click', showDiff);
  $('viewing-back').addEventListener('click', () => { S.viewing = null; render(); });
  $('file-edit').addEventListener('click', () => {
    if (S.viewing) { $('file-msg').textContent = 'Go back to the latest checkpoint to edit.'; return; }
    $('file-text').value = fileText(S.files[S.openFile]) || '';
    $('file-editor').hidden = false; $('file-content').hidden = true; $('file-msg').textContent = '';
  });
  $('file-cancel').addEventListener('click', () => { $('file-editor').hidden = true; $('file-content').hidden = false; });
  $('file-save').addEventListener('click', async () => {
    const files = {};
    files[S.openFile] = Object.assign({}, S.files[S.openFile] || {}, { content: $('file-text').value });
    try {
      await api('POST', `/threads/${S.thread}/state`, { values: { files } });
      const th = await api('GET', `/threads/${S.thread}`);
      applyValues(th.values);
      $('file-editor').hidden = true; $('file-content').hidden = false;
      $('file-msg').textContent = '';
      render();
      await loadHistory();
    } catch (e) { $('file-msg').textContent = e.message; }
  });
  await boot();
  setInterval(() => { if (!document.hidden) refreshThreads(); }, 5000);
}

async function boot() {
  try {
    await loadAssistants();
    $('conn').textContent = '';
  } catch (e) { $('conn').textContent = e.message; return; }
  await refreshThreads();
  const id = location.hash.slice(1);
  if (id && /^[0-9a-f-]{8,64}$/i.test(id)) await openThread(id);
  render();
}

start();
