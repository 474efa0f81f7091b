// The jeeves run explorer: follows one run (live over SSE, or a recorded one from /journal)
// and folds its events into a session tree. Every event is kept, so the page can show the
// tree as it was at any seq (time travel). No build step, no dependencies. Model text is
// only ever set as textContent. The timeline, detail, rounds, rail, gates and costs are
// drawn by explorer.js.
"use strict";

const $ = (id) => document.getElementById(id);
const TEXT_TAIL = 4000;

const view = {
  runId: null,
  mode: "live", // "live": a run this server holds; "recorded": a run of the served journal
  source: null,
  events: [], // every event received, in seq order
  received: 0, // the highest seq received
  cursor: null, // null: the tree shows every event; k: only the first k (time travel)
  endStatus: null, // the run's status from the stream's `end` message
  nodes: new Map(), // session id -> node
  roots: [],
  task: "",
  pending: false,
  selected: null,
  collapsed: new Set(),
  watchdog: [],
  gates: new Map(), // gate id -> approval.requested event (pending ones)
  decided: new Map(), // gate id -> decision, for gates decided in this page or by events
  extent: null, // {t0, t1, s0, s1}: the span of the events folded so far
  axis: null, // null: chosen from the events (time live, event order for replays)
};

// ---- auth ---------------------------------------------------------------------------------
function token() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) sessionStorage.setItem("jeeves-token", fromHash);
  return $("token").value || sessionStorage.getItem("jeeves-token") || "";
}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401) {
    $("token-label").hidden = false;
    throw new Error("This server needs a token: type it in the Token field.");
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.error || `${response.status} ${response.statusText}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

function showMessage(text) {
  $("message").textContent = text || "";
  $("message").hidden = !text;
}

// ---- the tree model -----------------------------------------------------------------------
function newNode(ev) {
  return {
    id: ev.session_id, parent: ev.parent_id, role: ev.role, architecture: ev.architecture,
    model: ev.model, index: ev.index, rolePath: ev.role_path || [], task: ev.task || "",
    status: "running", stopReason: "", text: "", output: null,
    usage: { input: 0, output: 0, cost: 0, unpriced: 0 }, round: null, verdict: null,
    rounds: new Map(), critiques: new Map(), drafts: new Map(), children: [], deltaStep: null, el: null,
    start: { ts: ev.ts, seq: ev.seq }, end: null, last: { ts: ev.ts, seq: ev.seq },
    segs: [], openModel: null, calls: [], tools: [], toolsById: new Map(), fallback: false, retries: [],
    rev: 0,
  };
}

function appendText(node, text) {
  node.text = (node.text + text).slice(-TEXT_TAIL);
}

// A new line of text: on a line of its own, but never a blank first line.
function appendLine(node, line) {
  appendText(node, (node.text ? "\n" : "") + line);
}

// Dollars as the CLI prints them (jeeves.messages.format_usd): four decimals, and a sum
// below a cent keeps two significant digits ($0.000031), so a priced call never reads as free.
function formatUsd(amount) {
  let digits = 4;
  if (amount > 0 && amount < 0.01) digits = Math.min(10, Math.max(4, 1 - Math.floor(Math.log10(amount))));
  return `$${amount.toFixed(digits)}`;
}

// Calls litellm has no price for are unpriced, never $0: a usage from the wire says so with
// `unpriced_calls`, or (one call) with `cost_usd` null.
function unpricedOf(u) {
  if (u.unpriced_calls) return u.unpriced_calls;
  return u.cost_usd === null || u.cost_usd === undefined ? Math.max(u.model_calls || 0, 1) : 0;
}

// `$0.0123`, `$0.0123 + unpriced (1 call)`, or `unpriced (2 calls)` when nothing is priced.
function formatCost(cost, unpriced) {
  if (!unpriced) return formatUsd(cost);
  const calls = `unpriced (${unpriced} call${unpriced === 1 ? "" : "s"})`;
  return cost > 0 ? `${formatUsd(cost)} + ${calls}` : calls;
}

// The cost of a usage as events and run summaries carry it (`cost_usd`, `unpriced_calls`).
function usageCost(u) {
  return formatCost(u.cost_usd || 0, unpricedOf(u));
}

function resetModel() {
  Object.assign(view, {
    nodes: new Map(), roots: [], task: "", watchdog: [], gates: new Map(), extent: null,
  });
  view.decided = new Map([...view.decided].filter(([, d]) => d.local));
}

function touch(node) {
  node.rev += 1;
  const parent = node.parent && view.nodes.get(node.parent);
  if (parent) parent.rev += 1;
}

function apply(ev) {
  const e = view.extent;
  view.extent = e
    ? { t0: e.t0, s0: e.s0, t1: Math.max(e.t1, ev.ts), s1: Math.max(e.s1, ev.seq) }
    : { t0: ev.ts, s0: ev.seq, t1: ev.ts, s1: ev.seq };
  if (ev.type === "session.started") {
    const node = newNode(ev);
    view.nodes.set(node.id, node);
    if (!ev.parent_id) view.task = ev.task;
    const parent = ev.parent_id && view.nodes.get(ev.parent_id);
    if (parent) {
      parent.children.push(node.id);
      if (parent.round !== null && ev.index === parent.round && !parent.drafts.has(parent.round)) {
        parent.drafts.set(parent.round, node.id); // a loop's first child of a round is its draft
      }
      touch(parent);
    } else view.roots.push(node.id);
    return;
  }
  if (ev.type === "approval.requested") view.gates.set(ev.gate_id, ev);
  if (ev.type === "approval.decided") { // a decision this page made stays shown as its own, whichever comes first
    const mine = Boolean(view.decided.get(ev.gate_id)?.local);
    view.decided.set(ev.gate_id, { decision: ev.decision, by: mine ? "you" : ev.by, local: mine });
  }
  const node = view.nodes.get(ev.session_id);
  if (!node) return;
  touch(node);
  const last = node.last;
  node.last = { ts: ev.ts, seq: ev.seq };
  switch (ev.type) {
    case "model.delta":
      if (node.deltaStep !== ev.step) appendLine(node, "");
      node.deltaStep = ev.step;
      appendText(node, node.text ? ev.text : ev.text.replace(/^\s*\n/, ""));
      if (!node.openModel) node.openModel = { kind: "model", start: last, step: ev.step };
      break;
    case "model.completed": {
      node.usage.input += ev.usage.input_tokens;
      node.usage.output += ev.usage.output_tokens;
      node.usage.cost += ev.usage.cost_usd || 0;
      node.usage.unpriced += unpricedOf(ev.usage);
      node.model = node.model || ev.model;
      node.fallback = node.fallback || ev.fallback;
      if (node.deltaStep !== ev.step && (ev.text || "").trim()) appendLine(node, ev.text.replace(/^\s*\n/, ""));
      const seg = node.openModel || { kind: "model", start: last, step: ev.step };
      node.openModel = null;
      node.calls.push(ev);
      node.segs.push({ ...seg, end: { ts: ev.ts, seq: ev.seq }, call: node.calls.length - 1, ev });
      break;
    }
    case "model.retrying":
      node.retries.push(ev);
      break;
    case "tool.started": {
      appendLine(node, `→ ${ev.name}(${ev.arguments})`);
      const tool = { id: ev.tool_call_id, name: ev.name, arguments: ev.arguments, result: null, isError: false,
        start: { ts: ev.ts, seq: ev.seq }, end: null };
      node.tools.push(tool);
      node.toolsById.set(ev.tool_call_id, tool);
      break;
    }
    case "tool.completed": {
      appendLine(node, `← ${ev.result}`);
      const tool = node.toolsById.get(ev.tool_call_id);
      if (tool) {
        Object.assign(tool, { result: ev.result, isError: ev.is_error, end: { ts: ev.ts, seq: ev.seq } });
        node.segs.push({ kind: "tool", start: tool.start, end: tool.end, tool });
      }
      break;
    }
    case "round.started":
      node.round = ev.round;
      break;
    case "critique":
      critique(node, ev);
      break;
    case "watchdog.verdict":
      view.watchdog.push(ev);
      break;
    case "session.completed":
      node.status = "completed";
      node.stopReason = ev.stop_reason;
      node.output = ev.output;
      node.end = { ts: ev.ts, seq: ev.seq };
      break;
    case "session.failed":
      node.status = "failed";
      node.stopReason = `${ev.error_type}: ${ev.message}`;
      node.end = { ts: ev.ts, seq: ev.seq };
      break;
    case "budget.exceeded":
      showMessage(`Budget exceeded: ${ev.limit} ${ev.spent} of ${ev.allowed}.`);
      break;
  }
}

// The verdict (one score, combined over every critic of the round) is shown on the loop's
// node and on the round's critic node alike; the critic's model reply stays its raw text.
function critique(node, ev) {
  const verdict = {
    score: ev.score, passed: ev.passed, summary: ev.summary, issues: ev.issues || [],
    findings: ev.findings || [], threshold: ev.threshold ?? null, hardFail: ev.hard_fail, source: ev.source,
  };
  node.round = ev.round;
  node.verdict = verdict;
  node.rounds.set(ev.round, verdict);
  for (const id of node.children) {
    const child = view.nodes.get(id);
    if (child.role === "critic" && child.index === ev.round) { child.verdict = verdict; child.rev += 1; }
  }
}

function treeUsage(node) {
  const total = { ...node.usage };
  for (const id of node.children) {
    const u = treeUsage(view.nodes.get(id));
    total.input += u.input; total.output += u.output; total.cost += u.cost; total.unpriced += u.unpriced;
  }
  return total;
}

// The events the tree shows: all of them, or the first `cursor` (time travel).
function shown() {
  return view.cursor === null ? view.events : view.events.slice(0, view.cursor);
}

function refold() {
  resetModel();
  for (const ev of shown()) apply(ev);
  if (view.cursor === null && view.endStatus) {
    for (const node of view.nodes.values()) if (node.status === "running") node.status = view.endStatus;
  }
  $("tree").replaceChildren();
  scheduleRender();
}

function ingest(ev) {
  if (ev.seq <= view.received) return; // a reconnect never shows an event twice
  view.received = ev.seq;
  view.events.push(ev);
  if (view.cursor === null) apply(ev);
  scheduleRender();
}

// ---- filters ------------------------------------------------------------------------------
function filters() {
  return {
    text: $("search").value.trim().toLowerCase(),
    role: $("filter-role").value,
    status: $("filter-status").value,
  };
}

function matches(node, f) {
  if (f.role && node.role !== f.role) return false;
  if (f.status && node.status !== f.status) return false;
  if (!f.text) return true;
  const hay = [node.id, node.role, node.architecture, node.model, node.task, node.output, node.text,
    node.verdict && node.verdict.summary, ...(node.verdict ? node.verdict.issues : [])];
  return hay.some((h) => h && String(h).toLowerCase().includes(f.text));
}

// Which nodes are shown: those that match, and the ancestors of those that do (as context).
function visibility() {
  const f = filters();
  const active = !!(f.text || f.role || f.status);
  const out = new Map(); // id -> "match" | "context"
  const walk = (id) => {
    const node = view.nodes.get(id);
    let any = false;
    for (const c of node.children) any = walk(c) || any;
    const m = !active || matches(node, f);
    if (m) out.set(id, "match"); else if (any) out.set(id, "context");
    return m || any;
  };
  for (const id of view.roots) walk(id);
  return out;
}

// Sessions in tree order, with their depth, skipping collapsed subtrees and filtered nodes.
function visibleRows(vis) {
  const rows = [];
  const walk = (id, depth) => {
    if (!vis.has(id)) return;
    rows.push({ node: view.nodes.get(id), depth });
    if (view.collapsed.has(id)) return;
    for (const c of view.nodes.get(id).children) walk(c, depth + 1);
  };
  for (const id of view.roots) walk(id, 0);
  return rows;
}

// ---- rendering the tree (keyed elements, updated in place) --------------------------------
function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function nodeElement(node) {
  if (node.el) return node.el;
  const li = el("li", "node");
  li.dataset.sessionId = node.id;
  const card = el("div", "card");
  card.tabIndex = 0;
  const head = el("div", "head");
  const toggle = el("button", "toggle", "▾");
  toggle.type = "button";
  toggle.addEventListener("click", (event) => { event.stopPropagation(); toggleCollapsed(node.id); });
  head.append(toggle, el("span", "spinner"), el("span", "role"), el("span", "arch"), el("span", "model"),
    el("span", "status"), el("span", "stats"));
  card.append(head, el("div", "rounds"), el("div", "verdict"), el("div", "text-label", "raw reply"),
    el("pre", "text"), el("div", "detail"));
  card.addEventListener("click", () => select(node.id));
  card.addEventListener("keydown", (event) => {
    if (event.target !== card) return;
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); select(node.id); }
    if (event.key === "ArrowLeft" && !view.collapsed.has(node.id)) toggleCollapsed(node.id);
    if (event.key === "ArrowRight" && view.collapsed.has(node.id)) toggleCollapsed(node.id);
  });
  li.append(card, el("ul", "children"));
  node.el = li;
  return li;
}

function setText(parent, selector, text) {
  const e = parent.querySelector(selector);
  if (e.textContent !== text) e.textContent = text;
}

function label(node) {
  return node.index ? `${node.role} #${node.index}` : node.role;
}

function bestRound(node) {
  if (!node.rounds.size) return null;
  if (node.output !== null) {
    for (const [r, id] of node.drafts) {
      const draft = view.nodes.get(id);
      if (draft && draft.output === node.output && node.rounds.has(r)) return r;
    }
  }
  let best = null;
  for (const [r, v] of node.rounds) if (best === null || v.score > node.rounds.get(best).score) best = r;
  return best;
}

function renderNode(node, container, vis) {
  const li = nodeElement(node);
  if (li.parentNode !== container) container.append(li);
  const state = vis.get(node.id);
  li.hidden = !state;
  li.className = `node ${node.status} role-${node.role}${state === "context" ? " context" : ""}` +
    (view.selected === node.id ? " selected" : "");
  const card = li.firstChild;
  const collapsed = view.collapsed.has(node.id);
  const toggle = card.querySelector(".toggle");
  toggle.hidden = node.children.length === 0;
  toggle.textContent = collapsed ? "▸" : "▾";
  toggle.setAttribute("aria-expanded", String(!collapsed));
  toggle.setAttribute("aria-label", `${collapsed ? "Expand" : "Collapse"} ${label(node)}`);
  setText(card, ".role", label(node));
  setText(card, ".arch", node.architecture);
  setText(card, ".model", node.model || "");
  const status = card.querySelector(".status");
  status.className = `status ${node.status}`;
  status.textContent = node.status;
  const stats = card.querySelector(".stats");
  stats.replaceChildren();
  if (node.round !== null) stats.append(el("span", "round-no", `round ${node.round}`));
  const v = node.verdict;
  if (v) {
    stats.append(el("span", `score ${v.passed ? "pass" : "fail"}`,
      `verdict ${v.score.toFixed(2)} ${v.passed ? "✓" : "✗"}`));
  }
  const u = treeUsage(node);
  stats.append(el("span", "tokens", `${(u.input + u.output).toLocaleString()} tok`),
    el("span", "cost", formatCost(u.cost, u.unpriced)));
  const best = bestRound(node);
  const rounds = card.querySelector(".rounds");
  rounds.replaceChildren(...[...node.rounds].map(([r, v]) => {
    const chip = el("span", `round ${v.passed ? "pass" : "fail"}${r === best ? " best" : ""}`,
      `r${r} ${v.score.toFixed(2)} ${v.passed ? "✓" : "✗"}`);
    if (r === best) chip.title = "the best round: its draft is the output";
    return chip;
  }));
  renderVerdict(card.querySelector(".verdict"), node);
  card.querySelector(".text-label").hidden = node.role !== "critic" || !node.text;
  const pre = card.querySelector("pre.text");
  const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  setText(card, "pre.text", node.text);
  if (stick) pre.scrollTop = pre.scrollHeight;
  const detail = node.status === "running" || node.stopReason === "completed" ? "" : node.stopReason;
  setText(card, ".detail", detail);
  const children = li.lastChild;
  children.hidden = collapsed;
  for (const id of node.children) renderNode(view.nodes.get(id), children, vis);
}

// The summary and issues of the node's verdict: on the critic node of the round when there
// is one (an LLM critic), else on the loop's node (code critics run no session of their own).
function renderVerdict(box, node) {
  const v = node.verdict;
  const shownHere = v && (node.role === "critic" || !node.children.some((id) => {
    const child = view.nodes.get(id);
    return child.role === "critic" && child.verdict === v;
  }));
  const parts = [];
  if (shownHere && v.summary) parts.push(el("p", "summary", v.summary));
  if (shownHere && v.issues.length) {
    const list = el("ul", "issues");
    list.append(...v.issues.map((issue) => el("li", "", issue)));
    parts.push(list);
  }
  box.replaceChildren(...parts);
  box.hidden = parts.length === 0;
}

function renderRoles() {
  const select = $("filter-role");
  const roles = [...new Set([...view.nodes.values()].map((n) => n.role))].sort();
  const have = [...select.options].slice(1).map((o) => o.value);
  if (roles.join("\n") === have.join("\n")) return;
  const keep = select.value;
  select.replaceChildren(el("option", "", "all"), ...roles.map((r) => el("option", "", r)));
  select.firstChild.value = "";
  select.value = roles.includes(keep) ? keep : "";
}

function render() {
  view.pending = false;
  const vis = visibility();
  const tree = $("tree");
  for (const id of view.roots) renderNode(view.nodes.get(id), tree, vis);
  const any = view.roots.length > 0;
  $("empty").hidden = any || !!view.runId;
  $("overview").hidden = !any;
  $("toolbar").hidden = !any;
  $("run-task").textContent = view.task;
  const root = any ? view.nodes.get(view.roots[0]) : null;
  if (root) {
    const u = treeUsage(root);
    $("run-usage").textContent = `${(u.input + u.output).toLocaleString()} tokens · ${formatCost(u.cost, u.unpriced)}`;
  }
  renderRoles();
  renderScrubber();
  const rows = visibleRows(vis);
  renderTimeline(rows);
  renderRail();
  renderCosts();
  renderGates();
  renderDetail();
  dropStaleTip();
}

function scheduleRender() {
  if (view.pending) return;
  view.pending = true;
  requestAnimationFrame(render);
}

function select(id) {
  view.selected = id;
  scheduleRender();
}

function toggleCollapsed(id) {
  if (view.collapsed.has(id)) view.collapsed.delete(id); else view.collapsed.add(id);
  scheduleRender();
}

// ---- time travel --------------------------------------------------------------------------
function renderScrubber() {
  const total = view.events.length;
  $("scrubber").hidden = total === 0;
  const scrub = $("scrub");
  scrub.max = String(total);
  const at = view.cursor === null ? total : view.cursor;
  if (scrub.value !== String(at)) scrub.value = String(at);
  const seq = at ? view.events[at - 1].seq : 0;
  const newest = total ? view.events[total - 1].seq : 0;
  $("scrub-label").textContent = view.cursor === null
    ? `seq ${seq} · all ${total} events`
    : `seq ${seq} of ${newest} · event ${at} of ${total}`;
  $("scrub-live").disabled = view.cursor === null;
}

function scrubTo(k) {
  view.cursor = k >= view.events.length ? null : Math.max(0, k);
  refold();
}

// ---- following a run ----------------------------------------------------------------------
function setConnection(state, text) {
  const c = $("connection");
  c.className = `connection ${state}`;
  c.textContent = text;
}

function setRunStatus(status) {
  const s = $("run-status");
  s.className = `status ${status}`;
  s.textContent = status;
  $("cancel-run").disabled = status !== "running" || view.mode !== "live";
}

function openRun(runId, mode) {
  if (view.source) { view.source.close(); view.source = null; }
  resetModel();
  Object.assign(view, { runId, mode, events: [], received: 0, cursor: null, endStatus: null, selected: null,
    axis: null, decided: new Map() });
  requestCache.clear();
  $("axis").value = "time";
  $("tree").replaceChildren();
  showMessage("");
  $("run-summary").hidden = false;
  $("run-id").textContent = runId;
  $("run-mode").textContent = mode === "live" ? "live" : "recorded";
  $("run-usage").textContent = "";
}

function follow(runId) {
  openRun(runId, "live");
  setRunStatus("running");
  history.replaceState(null, "", `#run=${encodeURIComponent(runId)}`);
  const t = token();
  const url = `/runs/${encodeURIComponent(runId)}/events` + (t ? `?access_token=${encodeURIComponent(t)}` : "");
  const source = new EventSource(url);
  view.source = source;
  source.onopen = () => setConnection("live", "live");
  source.onmessage = (message) => ingest(JSON.parse(message.data));
  source.addEventListener("end", (message) => {
    const end = JSON.parse(message.data);
    source.close();
    view.endStatus = end.status;
    if (view.cursor === null) {
      for (const node of view.nodes.values()) if (node.status === "running") node.status = end.status;
    }
    setRunStatus(end.status);
    if (end.error) showMessage(`${end.error.type}: ${end.error.message}`);
    setConnection("idle", "ended");
    scheduleRender();
    loadRuns().catch((e) => showMessage(e.message));
  });
  source.onerror = () => { if (source.readyState !== EventSource.CLOSED) setConnection("error", "reconnecting…"); };
  scheduleRender();
}

async function openRecorded(runId) {
  openRun(runId, "recorded");
  setRunStatus("running");
  setConnection("idle", "loading…");
  history.replaceState(null, "", `#journal=${encodeURIComponent(runId)}`);
  try {
    const body = await api(`/journal/runs/${encodeURIComponent(runId)}/events`);
    if (view.runId !== runId) return;
    for (const ev of body.events) ingest(ev);
    const root = view.nodes.get(runId);
    view.endStatus = root && root.status !== "running" ? root.status : "failed";
    setRunStatus(root ? root.status : "failed");
    if (body.error) showMessage(`The replay stopped: ${body.error.type}: ${body.error.message}`);
    setConnection("idle", "recorded");
  } catch (error) {
    setConnection("error", "failed");
    showMessage(error.message);
  }
  scheduleRender();
}

// ---- controls -----------------------------------------------------------------------------
async function loadArchitectures() {
  const { architectures } = await api("/architectures");
  $("architecture").replaceChildren(...architectures.map((name) => el("option", "", name)));
  $("start-button").disabled = architectures.length === 0;
}

async function loadRuns() {
  const { runs } = await api("/runs");
  const select = $("runs");
  const keep = view.mode === "live" ? view.runId : null;
  select.replaceChildren(el("option", "", "—"), ...runs.map((r) => {
    const o = el("option", "", `${r.session_id} · ${r.architecture} · ${r.status}`);
    o.value = r.session_id;
    return o;
  }));
  select.firstChild.value = "";
  if (keep) select.value = keep;
}

const RECORDED_SHOWN = 500; // the latest runs the list holds: `jeeves runs JOURNAL` lists every one

async function loadRecorded() {
  const body = await api(`/journal?last=${RECORDED_SHOWN + 1}&fields=session_id,architecture,status,usage`);
  if (!body.journal) return; // this server browses no journal
  const more = body.runs.length > RECORDED_SHOWN;
  const runs = more ? body.runs.slice(-RECORDED_SHOWN) : body.runs;
  $("recorded-label").hidden = false;
  $("recorded-label").firstChild.textContent =
    `Recorded run (${body.journal}${more ? `, the latest ${RECORDED_SHOWN}` : ""}) `;
  const select = $("recorded");
  select.replaceChildren(el("option", "", "—"), ...runs.map((r) => {
    const o = el("option", "", `${r.session_id} · ${r.architecture} · ${r.status} · ${usageCost(r.usage)}`);
    o.value = r.session_id;
    return o;
  }));
  select.firstChild.value = "";
  if (view.mode === "recorded" && view.runId) select.value = view.runId;
}

$("start").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { architecture: $("architecture").value, task: $("task").value };
  const sid = $("session-id").value.trim();
  if (sid) body.session_id = sid;
  try {
    const { session_id } = await api("/runs", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    follow(session_id);
    loadRuns().catch((e) => showMessage(e.message));
  } catch (error) {
    showMessage(error.message);
  }
});

$("runs").addEventListener("change", () => { if ($("runs").value) follow($("runs").value); });
$("recorded").addEventListener("change", () => { if ($("recorded").value) openRecorded($("recorded").value); });
$("refresh-runs").addEventListener("click", () =>
  Promise.all([loadRuns(), loadRecorded()]).catch((e) => showMessage(e.message)));
$("cancel-run").addEventListener("click", () =>
  api(`/runs/${encodeURIComponent(view.runId)}`, { method: "DELETE" }).catch((e) => showMessage(e.message)));
$("token").addEventListener("change", () => {
  sessionStorage.setItem("jeeves-token", $("token").value);
  boot();
});
$("scrub").addEventListener("input", () => scrubTo(Number($("scrub").value)));
$("scrub-live").addEventListener("click", () => scrubTo(view.events.length));
$("axis").addEventListener("change", () => { view.axis = $("axis").value; scheduleRender(); });
for (const id of ["search", "filter-role", "filter-status"]) {
  $(id).addEventListener("input", scheduleRender);
  $(id).addEventListener("change", scheduleRender);
}
$("expand-all").addEventListener("click", () => { view.collapsed.clear(); scheduleRender(); });
$("collapse-all").addEventListener("click", () => {
  for (const node of view.nodes.values()) if (node.children.length && node.parent) view.collapsed.add(node.id);
  scheduleRender();
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && view.selected) { view.selected = null; scheduleRender(); }
});

async function boot() {
  try {
    await loadArchitectures();
    const hash = new URLSearchParams(location.hash.slice(1));
    const run = hash.get("run");
    const recorded = hash.get("journal");
    if (run && !view.runId) follow(run);
    await loadRuns();
    await loadRecorded();
    if (recorded && !view.runId) await openRecorded(recorded);
  } catch (error) {
    showMessage(error.message);
  }
}

boot();
