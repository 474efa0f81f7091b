// The jeeves live viewer: follows one run over SSE (EventSource) and folds its events into a
// session tree. No build step, no dependencies. Model text is only ever set as textContent.
"use strict";

const $ = (id) => document.getElementById(id);
const TEXT_TAIL = 4000;

const view = {
  runId: null,
  source: null,
  lastSeq: 0,
  nodes: new Map(), // session id -> node
  roots: [],
  task: "",
  pending: false,
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
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
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
    model: ev.model, index: ev.index, status: "running", stopReason: "", text: "",
    usage: { input: 0, output: 0, cost: 0 }, round: null, verdict: null,
    rounds: new Map(), children: [], deltaStep: null, el: null,
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

function apply(ev) {
  if (ev.seq <= view.lastSeq) return; // a reconnect never shows an event twice
  view.lastSeq = ev.seq;
  if (ev.type === "session.started") {
    const node = newNode(ev);
    view.nodes.set(node.id, node);
    if (!ev.parent_id) view.task = ev.task;
    const parent = ev.parent_id && view.nodes.get(ev.parent_id);
    if (parent) parent.children.push(node.id); else view.roots.push(node.id);
    return;
  }
  const node = view.nodes.get(ev.session_id);
  if (!node) return;
  switch (ev.type) {
    case "model.delta":
      if (node.deltaStep !== ev.step) appendLine(node, "");
      node.deltaStep = ev.step;
      appendText(node, node.text ? ev.text : ev.text.replace(/^\s*\n/, ""));
      break;
    case "model.completed":
      node.usage.input += ev.usage.input_tokens;
      node.usage.output += ev.usage.output_tokens;
      node.usage.cost += ev.usage.cost_usd;
      node.model = node.model || ev.model;
      if (node.deltaStep !== ev.step && (ev.text || "").trim()) appendLine(node, ev.text.replace(/^\s*\n/, ""));
      break;
    case "tool.started":
      appendLine(node, `→ ${ev.name}(${ev.arguments})`);
      break;
    case "tool.completed":
      appendLine(node, `← ${ev.result}`);
      break;
    case "round.started":
      node.round = ev.round;
      break;
    case "critique":
      critique(node, ev);
      break;
    case "session.completed":
      node.status = "completed";
      node.stopReason = ev.stop_reason;
      break;
    case "session.failed":
      node.status = "failed";
      node.stopReason = `${ev.error_type}: ${ev.message}`;
      break;
    case "budget.exceeded":
      showMessage(`Budget exceeded: ${ev.limit} ${ev.spent} of ${ev.allowed}.`);
      break;
  }
}

// The verdict (one score, combined over every critic of the round) is shown on the loop's
// node and on the round's critic node alike; the critic's model reply stays its raw text.
function critique(node, ev) {
  const verdict = { score: ev.score, passed: ev.passed, summary: ev.summary, issues: ev.issues || [] };
  node.round = ev.round;
  node.verdict = verdict;
  node.rounds.set(ev.round, verdict);
  for (const id of node.children) {
    const child = view.nodes.get(id);
    if (child.role === "critic" && child.index === ev.round) child.verdict = verdict;
  }
}

function treeUsage(node) {
  const total = { ...node.usage };
  for (const id of node.children) {
    const u = treeUsage(view.nodes.get(id));
    total.input += u.input; total.output += u.output; total.cost += u.cost;
  }
  return total;
}

// ---- rendering (keyed elements, updated in place) -----------------------------------------
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
  const head = el("div", "head");
  head.append(el("span", "spinner"), el("span", "role"), el("span", "arch"), el("span", "model"),
    el("span", "status"), el("span", "stats"));
  card.append(head, el("div", "rounds"), el("div", "verdict"), el("div", "text-label", "raw reply"),
    el("pre", "text"), el("div", "detail"));
  li.append(card, el("ul", "children"));
  node.el = li;
  return li;
}

function setText(parent, selector, text) {
  const e = parent.querySelector(selector);
  if (e.textContent !== text) e.textContent = text;
}

function renderNode(node, container) {
  const li = nodeElement(node);
  if (li.parentNode !== container) container.append(li);
  li.className = `node ${node.status} role-${node.role}`;
  const card = li.firstChild;
  setText(card, ".role", node.index ? `${node.role} #${node.index}` : node.role);
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
    el("span", "cost", formatUsd(u.cost)));
  const rounds = card.querySelector(".rounds");
  rounds.replaceChildren(...[...node.rounds].map(([r, v]) =>
    el("span", `round ${v.passed ? "pass" : "fail"}`, `r${r} ${v.score.toFixed(2)} ${v.passed ? "✓" : "✗"}`)));
  renderVerdict(card.querySelector(".verdict"), node);
  card.querySelector(".text-label").hidden = node.role !== "critic" || !node.text;
  const pre = card.querySelector("pre.text");
  const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  setText(card, "pre.text", node.text);
  if (stick) pre.scrollTop = pre.scrollHeight;
  const detail = node.status === "running" || node.stopReason === "completed" ? "" : node.stopReason;
  setText(card, ".detail", detail);
  const children = li.lastChild;
  for (const id of node.children) renderNode(view.nodes.get(id), children);
}

// The summary and issues of the node's verdict: on the critic node of the round when there
// is one (an LLM critic), else on the loop's node (code critics run no session of their own).
function renderVerdict(box, node) {
  const v = node.verdict;
  const shown = v && (node.role === "critic" || !node.children.some((id) => {
    const child = view.nodes.get(id);
    return child.role === "critic" && child.verdict === v;
  }));
  const parts = [];
  if (shown && v.summary) parts.push(el("p", "summary", v.summary));
  if (shown && v.issues.length) {
    const list = el("ul", "issues");
    list.append(...v.issues.map((issue) => el("li", "", issue)));
    parts.push(list);
  }
  box.replaceChildren(...parts);
  box.hidden = parts.length === 0;
}

function render() {
  view.pending = false;
  const tree = $("tree");
  for (const id of view.roots) renderNode(view.nodes.get(id), tree);
  $("empty").hidden = view.roots.length > 0 || !!view.runId;
  $("run-task").textContent = view.task;
  const root = view.roots.length ? view.nodes.get(view.roots[0]) : null;
  if (root) {
    const u = treeUsage(root);
    $("run-usage").textContent = `${(u.input + u.output).toLocaleString()} tokens · ${formatUsd(u.cost)}`;
  }
}

function scheduleRender() {
  if (view.pending) return;
  view.pending = true;
  requestAnimationFrame(render);
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
  $("cancel-run").disabled = status !== "running";
}

function follow(runId) {
  if (view.source) view.source.close();
  Object.assign(view, { runId, lastSeq: 0, nodes: new Map(), roots: [], task: "" });
  $("tree").replaceChildren();
  showMessage("");
  $("run-summary").hidden = false;
  $("run-id").textContent = runId;
  $("run-usage").textContent = "";
  setRunStatus("running");
  history.replaceState(null, "", `#run=${encodeURIComponent(runId)}`);
  const t = token();
  const url = `/runs/${encodeURIComponent(runId)}/events` + (t ? `?access_token=${encodeURIComponent(t)}` : "");
  const source = new EventSource(url);
  view.source = source;
  source.onopen = () => setConnection("live", "live");
  source.onmessage = (message) => { apply(JSON.parse(message.data)); scheduleRender(); };
  source.addEventListener("end", (message) => {
    const end = JSON.parse(message.data);
    source.close();
    for (const node of view.nodes.values()) if (node.status === "running") node.status = end.status;
    setRunStatus(end.status);
    if (end.error) showMessage(`${end.error.type}: ${end.error.message}`);
    setConnection("idle", "ended");
    scheduleRender();
    loadRuns();
  });
  source.onerror = () => { if (source.readyState !== EventSource.CLOSED) setConnection("error", "reconnecting…"); };
  scheduleRender();
}

// ---- controls -----------------------------------------------------------------------------
async function loadArchitectures() {
  const { architectures } = await api("/architectures");
  $("architecture").replaceChildren(...architectures.map((name) => el("option", "", name)));
}

async function loadRuns() {
  const { runs } = await api("/runs");
  const select = $("runs");
  const keep = view.runId;
  select.replaceChildren(el("option", "", "—"), ...runs.map((r) => {
    const o = el("option", "", `${r.session_id} · ${r.architecture} · ${r.status}`);
    o.value = r.session_id;
    return o;
  }));
  select.firstChild.value = "";
  if (keep) select.value = keep;
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
    loadRuns();
  } catch (error) {
    showMessage(error.message);
  }
});

$("runs").addEventListener("change", () => { if ($("runs").value) follow($("runs").value); });
$("refresh-runs").addEventListener("click", () => loadRuns().catch((e) => showMessage(e.message)));
$("cancel-run").addEventListener("click", () =>
  api(`/runs/${encodeURIComponent(view.runId)}`, { method: "DELETE" }).catch((e) => showMessage(e.message)));
$("token").addEventListener("change", () => {
  sessionStorage.setItem("jeeves-token", $("token").value);
  boot();
});

async function boot() {
  try {
    await loadArchitectures();
    const run = new URLSearchParams(location.hash.slice(1)).get("run");
    if (run && !view.runId) follow(run);
    await loadRuns();
  } catch (error) {
    showMessage(error.message);
  }
}

boot();
