// The run explorer's views, drawn from the tree viewer.js folds: the timeline (a Gantt of
// the session tree), the watchdog rail, approval gates, spend per role path, and the
// selected session's detail (its requests, replies, tool calls and critic rounds with the
// diff between drafts). Plain DOM; model text is only ever set as textContent.
"use strict";

const requestCache = new Map(); // session id -> {calls, loading, count}

// ---- small helpers ------------------------------------------------------------------------
function mk(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function formatMs(ms) {
  if (!(ms >= 0)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

function tokens(n) {
  return `${n.toLocaleString()} tok`;
}

function parseMaybeJson(text) {
  if (typeof text !== "string") return { json: true, value: text };
  const t = text.trim();
  if (!t || !"{[".includes(t[0])) return { json: false, value: text };
  try { return { json: true, value: JSON.parse(t) }; } catch { return { json: false, value: text }; }
}

// A collapsible JSON view: objects and arrays are <details> (open to `openDepth`), values spans.
function jsonView(value, openDepth = 1, depth = 0) {
  if (value === null || typeof value !== "object") {
    const kind = value === null ? "null" : typeof value;
    return mk("span", `jv-${kind}`, kind === "string" ? JSON.stringify(value) : String(value));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const box = mk("details", "jv");
  box.open = depth < openDepth;
  const brackets = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  box.append(mk("summary", "jv-summary",
    `${brackets[0]}${entries.length ? `…${entries.length} ${Array.isArray(value) ? "items" : "keys"}` : ""}${brackets[1]}`));
  const list = mk("div", "jv-body");
  for (const [k, v] of entries) {
    const row = mk("div", "jv-row");
    row.append(mk("span", "jv-key", Array.isArray(value) ? `${k}` : `${k}:`), jsonView(v, openDepth, depth + 1));
    list.append(row);
  }
  box.append(list);
  return box;
}

function valueView(text) {
  const parsed = parseMaybeJson(text);
  return parsed.json ? jsonView(parsed.value, 1) : mk("pre", "plain", parsed.value);
}

// A line diff (longest common subsequence over the changed middle); [{op: " "|"-"|"+", line}].
function diffLines(before, after) {
  const a = before.split("\n"), b = after.split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length, endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const midA = a.slice(start, endA), midB = b.slice(start, endB);
  const out = a.slice(0, start).map((line) => ({ op: " ", line }));
  if (midA.length * midB.length > 250000) {
    out.push(...midA.map((line) => ({ op: "-", line })), ...midB.map((line) => ({ op: "+", line })));
  } else {
    const n = midA.length, m = midB.length;
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = midA[i] === midB[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) { out.push({ op: " ", line: midA[i] }); i++; j++; }
      else if (j < m && (i >= n || lcs[i][j + 1] >= lcs[i + 1][j])) { out.push({ op: "+", line: midB[j] }); j++; }
      else { out.push({ op: "-", line: midA[i] }); i++; }
    }
  }
  out.push(...a.slice(endA).map((line) => ({ op: " ", line })));
  return out;
}

function diffView(before, after) {
  const box = mk("div", "diff");
  const ops = diffLines(before, after);
  if (!ops.some((o) => o.op !== " ")) { box.append(mk("p", "dim", "No change.")); return box; }
  let run = [];
  const flush = () => {
    if (run.length > 6) {
      box.append(...run.slice(0, 2), mk("div", "d-gap", `… ${run.length - 4} unchanged lines`), ...run.slice(-2));
    } else box.append(...run);
    run = [];
  };
  for (const { op, line } of ops) {
    const row = mk("div", op === "+" ? "d-add" : op === "-" ? "d-del" : "d-same", `${op} ${line}`);
    if (op === " ") run.push(row); else { flush(); box.append(row); }
  }
  flush();
  return box;
}

// ---- the tooltip --------------------------------------------------------------------------
let tipAnchor = null;

function showTip(target, lines, event) {
  tipAnchor = target;
  const tip = $("tip");
  tip.replaceChildren(...lines.map((l, i) => mk("div", i ? "" : "tip-title", l)));
  tip.hidden = false;
  const r = target.getBoundingClientRect();
  const x = event && event.clientX ? event.clientX : r.left + r.width / 2;
  const width = tip.offsetWidth;
  tip.style.left = `${Math.max(4, Math.min(window.innerWidth - width - 4, x - width / 2)) + window.scrollX}px`;
  tip.style.top = `${r.bottom + 6 + window.scrollY}px`;
}

function hideTip() {
  tipAnchor = null;
  $("tip").hidden = true;
}

// After a redraw: a tip whose element was replaced is hidden (the pointer must enter again).
function dropStaleTip() {
  if (tipAnchor && !tipAnchor.isConnected) hideTip();
}

function withTip(element, lines) {
  element.setAttribute("aria-label", lines.join(" · "));
  element.addEventListener("mouseenter", (event) => showTip(element, lines, event));
  element.addEventListener("focus", () => showTip(element, lines));
  element.addEventListener("mouseleave", hideTip);
  element.addEventListener("blur", hideTip);
}

// ---- the timeline -------------------------------------------------------------------------
function axisKind() {
  if (view.axis) return view.axis;
  return view.events.length && view.events[0].replayed ? "seq" : "time";
}

function scale() {
  const e = view.extent;
  const kind = axisKind();
  const lo = kind === "time" ? e.t0 : e.s0, hi = kind === "time" ? e.t1 : e.s1;
  const span = hi - lo || 1;
  const x = (point) => Math.min(100, Math.max(0, (((kind === "time" ? point.ts : point.seq) - lo) / span) * 100));
  return { kind, x };
}

function spanText(from, to, kind) {
  if (kind === "seq") return `seq ${from.seq} → ${to.seq}`;
  return formatMs((to.ts - from.ts) * 1000);
}

function nodeTip(node, kind) {
  const end = node.end || node.last;
  const u = treeUsage(node);
  const lines = [`${node.rolePath.join(" › ") || node.role} (${node.architecture})`,
    `${node.status} · ${spanText(node.start, end, kind)}`,
    `${tokens(u.input + u.output)} · ${formatCost(u.cost, u.unpriced)}`];
  if (node.model) lines.push(node.model + (node.fallback ? " (a fallback answered)" : ""));
  return lines;
}

function segTip(seg, node, kind) {
  if (seg.kind === "tool") {
    return [`tool ${seg.tool.name}${seg.tool.isError ? " (error)" : ""}`, spanText(seg.start, seg.end, kind)];
  }
  const u = seg.ev.usage;
  return [`model call ${seg.call + 1} · ${seg.ev.model}${seg.ev.fallback ? " (fallback)" : ""}`,
    spanText(seg.start, seg.end, kind),
    `${tokens(u.input_tokens + u.output_tokens)} · ${usageCost(u)}`];
}

function renderTimeline(rows) {
  const box = $("timeline");
  if (!view.extent) { box.replaceChildren(); return; }
  const { kind, x } = scale();
  const focused = document.activeElement && document.activeElement.classList.contains("tl-bar")
    ? document.activeElement.closest(".tl-row").dataset.sessionId : null;
  box.classList.toggle("by-seq", kind === "seq");
  box.replaceChildren(...rows.map(({ node, depth }) => {
    const row = mk("div", `tl-row ${node.status}${view.selected === node.id ? " selected" : ""}`);
    row.setAttribute("role", "listitem");
    row.dataset.sessionId = node.id;
    const name = mk("div", "tl-label", label(node));
    name.style.paddingLeft = `${depth * 12}px`;
    const track = mk("div", "tl-track");
    const left = x(node.start), right = x(node.end || node.last);
    const bar = mk("button", `tl-bar ${node.status}`);
    bar.type = "button";
    bar.style.left = `${left}%`;
    bar.style.width = `${Math.max(0, right - left)}%`;
    withTip(bar, nodeTip(node, kind));
    bar.addEventListener("click", () => select(node.id));
    track.append(bar);
    for (const seg of node.segs) {
      const s = mk("span", `tl-seg ${seg.kind}${seg.kind === "tool" && seg.tool.isError ? " error" : ""}`);
      const sl = x(seg.start), sr = x(seg.end);
      s.style.left = `${sl}%`;
      s.style.width = `${Math.max(0, sr - sl)}%`;
      s.tabIndex = -1;
      withTip(s, segTip(seg, node, kind));
      s.addEventListener("click", () => select(node.id));
      track.append(s);
    }
    row.append(name, track);
    return row;
  }));
  if (!view.axis) $("axis").value = kind;
  if (focused) { // the rows are drawn anew: keep the keyboard where it was
    const again = [...box.querySelectorAll(".tl-row")].find((r) => r.dataset.sessionId === focused);
    if (again) again.querySelector(".tl-bar").focus({ preventScroll: true });
  }
}

// ---- the watchdog rail --------------------------------------------------------------------
const VERDICT_WORDS = { PROGRESSING: "progressing", STUCK: "stuck", ACHIEVED: "achieved", MISLED: "misled" };

function renderRail() {
  const rail = $("rail");
  rail.hidden = view.watchdog.length === 0;
  if (rail.hidden) { rail.replaceChildren(); return; }
  const { x } = scale();
  const track = mk("div", "rail-track");
  for (const ev of view.watchdog) {
    const word = VERDICT_WORDS[ev.verdict] || "unknown";
    const mark = mk("span", `wd-mark ${word}`);
    mark.tabIndex = 0;
    mark.dataset.verdict = ev.verdict;
    mark.style.left = `${x(ev)}%`;
    withTip(mark, [`watchdog firing ${ev.firing}: ${ev.verdict}`, ev.reason,
      `${ev.source === "signal" ? "loop signal" : "model review"} · ${ev.session_id.split("__").pop()}`]);
    mark.addEventListener("click", () => select(ev.session_id));
    track.append(mark);
  }
  const legend = mk("div", "rail-label", "watchdog");
  rail.replaceChildren(legend, track);
}

// ---- approval gates -----------------------------------------------------------------------
const DECIDED = { approve: "approved", deny: "denied", expire: "expired" };

async function decideGate(gate, decision) {
  try {
    const body = { decision, by: "viewer", note: null, arguments_hash: gate.arguments_hash };
    await api(`/runs/${encodeURIComponent(view.runId)}/gates/${encodeURIComponent(gate.gate_id)}`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    view.decided.set(gate.gate_id, { decision, by: "you", local: true });
  } catch (error) {
    showMessage(`Could not ${decision} ${gate.tool}: ${error.message}`);
  }
  scheduleRender();
}

// `2026-11-28T09:00:00Z (in 23 h 59 min)`: as `jeeves run`, `approve` and `resume` print an
// expiry (jeeves/gate_commands.py, when_expires): ISO 8601 in UTC, then the time left.
function whenExpires(expiresAt, now) {
  const stamp = new Date(expiresAt * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  const left = expiresAt - now;
  const span = (seconds) => {
    const minutes = Math.floor(seconds / 60);
    const [days, hours, mins] = [Math.floor(minutes / 1440), Math.floor((minutes % 1440) / 60), minutes % 60];
    if (days) return `${days} d ${hours} h`;
    if (hours) return `${hours} h ${mins} min`;
    return mins ? `${mins} min` : `${Math.floor(seconds)} s`;
  };
  return left >= 0 ? `${stamp} (in ${span(left)})` : `${stamp} (expired ${span(-left)} ago)`;
}

function renderGates() {
  const box = $("gates");
  const pending = [...view.gates.values()].filter((g) => !view.decided.has(g.gate_id));
  const decided = [...view.gates.values()].filter((g) => view.decided.has(g.gate_id) && view.decided.get(g.gate_id).local);
  box.hidden = pending.length === 0 && decided.length === 0;
  if (box.hidden) { box.replaceChildren(); return; }
  const items = [mk("h2", "", `Approval gates (${pending.length} pending)`)];
  for (const gate of [...pending, ...decided]) {
    const d = view.decided.get(gate.gate_id);
    const item = mk("div", `gate${d ? " decided" : ""}`);
    item.dataset.gateId = gate.gate_id;
    const head = mk("div", "gate-head");
    head.append(mk("strong", "", gate.tool), mk("span", "dim", ` ${gate.mode || ""} · ${gate.session_id}`));
    if (gate.expires_at) head.append(mk("span", "dim", ` · expires ${whenExpires(gate.expires_at, Date.now() / 1000)}`));
    item.append(head, jsonView(gate.arguments || {}, 2));
    if (d) item.append(mk("div", `gate-decision ${d.decision}`, `${DECIDED[d.decision] || d.decision} by ${d.by}`));
    else if (view.mode === "live" && view.cursor === null) {
      const actions = mk("div", "gate-actions");
      const approve = mk("button", "approve", "Approve");
      const deny = mk("button", "deny", "Deny");
      approve.type = deny.type = "button";
      approve.addEventListener("click", () => decideGate(gate, "approve"));
      deny.addEventListener("click", () => decideGate(gate, "deny"));
      actions.append(approve, deny);
      item.append(actions);
    } else item.append(mk("div", "dim", "Resume the run to decide this gate."));
    items.push(item);
  }
  box.replaceChildren(...items);
}

// ---- cost per role path -------------------------------------------------------------------
function roleKind(path) {
  const last = (path[path.length - 1] || "").toLowerCase();
  if (last.includes("watchdog")) return "watchdog";
  if (/critic|review|success|judge|verif/.test(last)) return "critic";
  return "actor";
}

function renderCosts() {
  const box = $("costs");
  const paths = new Map();
  for (const node of view.nodes.values()) {
    if (!node.calls.length) continue;
    const key = node.rolePath.join(".") || node.role;
    const p = paths.get(key) || { key, kind: roleKind(node.rolePath.length ? node.rolePath : [node.role]), cost: 0, unpriced: 0, tok: 0, calls: 0 };
    p.cost += node.usage.cost; p.unpriced += node.usage.unpriced; p.tok += node.usage.input + node.usage.output; p.calls += node.calls.length;
    paths.set(key, p);
  }
  const list = [...paths.values()];
  if (!list.length) { box.replaceChildren(mk("p", "dim", "No model calls yet.")); return; }
  const priced = list.some((p) => p.cost > 0);
  const measure = (p) => (priced ? p.cost : p.tok);
  list.sort((a, b) => measure(b) - measure(a));
  const total = list.reduce((s, p) => s + measure(p), 0) || 1;
  const kinds = ["actor", "critic", "watchdog"].map((k) => ({ k, v: list.filter((p) => p.kind === k).reduce((s, p) => s + measure(p), 0) }));
  const stack = mk("div", "cost-stack");
  const legend = mk("div", "cost-legend");
  for (const { k, v } of kinds) {
    if (!v) continue;
    const part = mk("span", `cost-part ${k}`);
    part.style.width = `${(v / total) * 100}%`;
    stack.append(part);
    legend.append(mk("span", `cost-key ${k}`, `${k} ${priced ? formatUsd(v) : tokens(v)} (${Math.round((v / total) * 100)}%)`));
  }
  const max = Math.max(...list.map(measure)) || 1;
  const rows = list.map((p) => {
    const row = mk("div", `cost-row ${p.kind}`);
    row.dataset.path = p.key;
    const bar = mk("span", "cost-bar");
    bar.style.width = `${(measure(p) / max) * 100}%`;
    const barBox = mk("span", "cost-bar-box");
    barBox.append(bar);
    row.append(mk("span", "cost-path", p.key), barBox,
      mk("span", "cost-value", `${formatCost(p.cost, p.unpriced)} · ${tokens(p.tok)} · ${p.calls} call${p.calls > 1 ? "s" : ""}`));
    return row;
  });
  const parts = [stack, legend, ...rows];
  if (!priced) parts.push(mk("p", "dim", "No prices known for these models: bars show tokens."));
  box.replaceChildren(...parts);
}

// ---- the selected session's detail --------------------------------------------------------
function requestsUrl(sessionId) {
  const base = view.mode === "live" ? "/runs" : "/journal/runs";
  return `${base}/${encodeURIComponent(view.runId)}/requests/${encodeURIComponent(sessionId)}`;
}

function loadRequests(node) {
  const have = requestCache.get(node.id);
  if (have && (have.loading || have.count >= node.calls.length)) return have;
  const entry = { calls: have ? have.calls : null, loading: true, count: node.calls.length, error: null };
  requestCache.set(node.id, entry);
  const runId = view.runId;
  api(requestsUrl(node.id))
    .then((body) => { if (view.runId === runId) entry.calls = body.calls; })
    .catch((error) => { entry.error = error.message; })
    .finally(() => { entry.loading = false; if (view.runId === runId) { renderedDetail = null; scheduleRender(); } });
  return entry;
}

// The request a call answered: by journal step when known, else the k-th call that ended well.
function requestFor(calls, ev, k) {
  if (!calls) return null;
  const byStep = calls.find((c) => c.step !== undefined && c.step === ev.step);
  if (byStep) return byStep;
  return calls.filter((c) => c.ok !== false)[k] || null;
}

// The server sends each call as what it adds to the previous one: how many of its messages
// it keeps, the ones it adds, and the tools / output schema / params when they changed. A
// call's whole request is rebuilt only when it is shown (a long session's calls would hold
// the conversation once per call).
function wholeRequest(calls, entry) {
  if (entry.missing) return null;
  const messages = [];
  let shared = {};
  for (const c of calls) {
    if (!c.missing) {
      messages.length = c.kept;
      for (const m of c.added) messages.push(m);
      if (c.shared) shared = c.shared;
    }
    if (c === entry) return { messages, ...shared };
  }
  return null;
}

function messageView(m) {
  const row = mk("div", `msg msg-${m.role}`);
  row.append(mk("span", "msg-role", m.role + (m.name ? ` (${m.name})` : "")));
  const body = mk("div", "msg-body");
  if (m.content) body.append(mk("pre", "msg-text", typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 1)));
  for (const tc of m.tool_calls || []) {
    const call = mk("div", "msg-call");
    call.append(mk("span", "tool-name", `→ ${tc.name}`), valueView(tc.arguments));
    body.append(call);
  }
  row.append(body);
  return row;
}

function requestView(req) {
  const box = mk("div", "request");
  if (!req) { box.append(mk("p", "dim", "The request was not kept (the run's request log was full).")); return box; }
  box.append(...(req.messages || []).map(messageView));
  if ((req.tools || []).length) {
    const offered = mk("div", "offered");
    offered.append(mk("span", "sub", "tools offered "), mk("span", "tool-name", req.tools.map((t) => t.name).join(", ")));
    box.append(offered);
  }
  if (req.output_schema) {
    const schema = mk("div", "sub", "output schema ");
    schema.append(jsonView(req.output_schema, 0));
    box.append(schema);
  }
  const raw = mk("div", "sub", "raw request ");
  raw.append(jsonView(req, 0));
  box.append(raw);
  return box;
}

function toolRows(node, tools) {
  const table = mk("div", "tool-rows");
  for (const tool of tools) {
    const row = mk("div", `tool-row${tool.isError ? " error" : ""}`);
    row.dataset.toolCallId = tool.id;
    const args = mk("div", "tool-args");
    args.append(mk("span", "sub", "arguments"), valueView(tool.arguments));
    const result = mk("div", "tool-result");
    result.append(mk("span", "sub", tool.isError ? "error" : "result"),
      tool.result === null ? mk("span", "dim", "running…") : valueView(tool.result));
    row.append(mk("span", "tool-name", tool.name), args, result);
    table.append(row);
  }
  return table;
}

function callsView(node) {
  const box = mk("section", "calls");
  box.append(mk("h3", "", `Model calls (${node.calls.length})`));
  const req = node.calls.length ? loadRequests(node) : null;
  node.calls.forEach((ev, k) => {
    const d = mk("details", "call");
    d.dataset.key = `call-${k}`;
    const u = ev.usage;
    d.append(mk("summary", "", `call ${k + 1} · ${ev.model}${ev.fallback ? " · fallback answered" : ""} · ` +
      `${tokens(u.input_tokens)} in, ${tokens(u.output_tokens)} out · ${usageCost(u)}`));
    const entry = requestFor(req && req.calls, ev, k);
    const asked = mk("div", "call-part");
    asked.append(mk("h4", "", "Request"));
    if (entry) {  // drawn when the call is opened (a long session has hundreds)
      const calls = req.calls;
      const draw = () => {
        if (!d.open || asked.dataset.drawn) return;
        asked.dataset.drawn = "1";
        asked.append(requestView(wholeRequest(calls, entry)));
      };
      d.addEventListener("toggle", draw);
    }
    else asked.append(mk("p", "dim", req && req.error ? req.error : req && req.loading ? "loading…" : "Not available."));
    const reply = mk("div", "call-part");
    reply.append(mk("h4", "", "Reply"), mk("pre", "reply", ev.text || "(no text)"));
    const calls = ev.tool_calls.map((tc) => node.toolsById.get(tc.id) ||
      { id: tc.id, name: tc.name, arguments: tc.arguments, result: null, isError: false });
    if (calls.length) reply.append(mk("h4", "", "Tool calls"), toolRows(node, calls));
    d.append(asked, reply);
    box.append(d);
  });
  return box;
}

function findingsFor(verdict) {
  const rows = [];
  const used = new Set();
  for (const issue of verdict.issues) {
    const f = verdict.findings.find((x) => x.message === issue);
    if (f) used.add(f);
    rows.push({ message: issue, severity: f ? f.severity : null, rule: f && f.rule_id, path: f && f.path, fix: f && f.fix });
  }
  for (const f of verdict.findings) {
    if (!used.has(f)) rows.push({ message: f.message, severity: f.severity, rule: f.rule_id, path: f.path, fix: f.fix });
  }
  return rows;
}

function verdictView(v) {
  const box = mk("div", "rv-verdict");
  const threshold = v.threshold === null ? "" : ` / threshold ${v.threshold.toFixed(2)}`;
  box.append(mk("div", `rv-score ${v.passed ? "pass" : "fail"}`,
    `score ${v.score.toFixed(2)}${threshold} ${v.passed ? "✓ approved" : "✗ not approved"}${v.hardFail ? " · hard fail" : ""}`));
  if (v.summary) box.append(mk("p", "rv-summary", v.summary));
  const rows = findingsFor(v);
  if (rows.length) {
    const list = mk("ul", "rv-issues");
    for (const r of rows) {
      const li = mk("li", `sev-${r.severity || "none"}`);
      li.append(mk("span", `sev ${r.severity || "none"}`, r.severity || "issue"), mk("span", "", ` ${r.message}`));
      const more = [r.rule && `rule ${r.rule}`, r.path && `at ${r.path}`, r.fix && `fix: ${r.fix}`].filter(Boolean);
      if (more.length) li.append(mk("div", "dim", more.join(" · ")));
      list.append(li);
    }
    box.append(list);
  }
  if (v.source) box.append(mk("div", "dim", `by ${v.source}`));
  return box;
}

function draftText(node, r) {
  const id = node.drafts.get(r);
  const draft = id && view.nodes.get(id);
  if (!draft) return null;
  return draft.output !== null ? draft.output : draft.text;
}

function roundsView(node) {
  const box = mk("section", "rounds-view");
  box.append(mk("h3", "", `Rounds (${node.rounds.size})`));
  const best = bestRound(node);
  let previous = null;
  for (const r of [...new Set([...node.drafts.keys(), ...node.rounds.keys()])].sort((a, b) => a - b)) {
    const v = node.rounds.get(r);
    const text = draftText(node, r);
    const round = mk("div", `rv-round${r === best ? " best" : ""}`);
    round.dataset.round = String(r);
    round.append(mk("h4", "", `Round ${r}${r === best ? " ★ best" : ""}`));
    const cols = mk("div", "rv-cols");
    const draft = mk("div", "rv-draft-col");
    draft.append(mk("div", "sub", "draft"), mk("pre", "rv-draft", text === null ? "(no draft)" : text));
    const verdict = mk("div", "rv-verdict-col");
    verdict.append(mk("div", "sub", "verdict"), v ? verdictView(v) : mk("p", "dim", "not judged yet"));
    cols.append(draft, verdict);
    round.append(cols);
    if (previous !== null && text !== null) {
      const d = mk("details", "rv-diff-box");
      d.dataset.key = `diff-${r}`;
      d.open = true;
      d.append(mk("summary", "", `What round ${r} changed (diff from round ${previous.r})`), diffView(previous.text, text));
      round.append(d);
    }
    if (text !== null) previous = { r, text };
    box.append(round);
  }
  return box;
}

let renderedDetail = null;

function renderDetail() {
  const box = $("detail");
  const node = view.selected && view.nodes.get(view.selected);
  if (!node) {
    box.hidden = true;
    box.replaceChildren();
    renderedDetail = null;
    return;
  }
  const key = `${node.id}:${node.rev}:${view.cursor}:${view.events.length}`;
  if (renderedDetail === key) return;
  renderedDetail = key;
  const open = new Set([...box.querySelectorAll("details[data-key]")].filter((d) => d.open).map((d) => d.dataset.key));
  const closed = new Set([...box.querySelectorAll("details[data-key]")].filter((d) => !d.open).map((d) => d.dataset.key));
  box.hidden = false;
  const head = mk("div", "detail-head");
  const close = mk("button", "close", "×");
  close.type = "button";
  close.setAttribute("aria-label", "Close the detail");
  close.addEventListener("click", () => { view.selected = null; scheduleRender(); });
  head.append(mk("h2", "", node.rolePath.join(" › ") || node.role), close);
  const u = treeUsage(node);
  const meta = mk("dl", "meta");
  const item = (k, v) => { if (v !== null && v !== undefined && v !== "") meta.append(mk("dt", "", k), mk("dd", "", v)); };
  item("session", node.id);
  item("architecture", node.architecture);
  item("status", node.status + (node.stopReason && node.stopReason !== node.status ? ` (${node.stopReason})` : ""));
  item("model", node.model ? node.model + (node.fallback ? " · a fallback answered" : "") : "");
  const replayed = view.events.length && view.events[0].replayed;
  item("duration", !node.end ? "running" : replayed
    ? `not recorded (replayed: seq ${node.start.seq} → ${node.end.seq})` : formatMs((node.end.ts - node.start.ts) * 1000));
  item("usage", node.calls.length
    ? `${tokens(node.usage.input)} in, ${tokens(node.usage.output)} out · ${formatCost(node.usage.cost, node.usage.unpriced)}`
    : "no model calls of its own");
  if (node.children.length) item("with children", `${tokens(u.input + u.output)} · ${formatCost(u.cost, u.unpriced)}`);
  if (node.retries.length) item("retries", node.retries.map((r) => `${r.model} → ${r.next_model}: ${r.error_type}`).join("; "));
  const parts = [head, meta];
  const section = (title, text) => {
    const s = mk("section", "");
    s.append(mk("h3", "", title), mk("pre", "block", text));
    return s;
  };
  if (node.task) parts.push(section("Task", node.task));
  if (node.rounds.size || node.drafts.size) parts.push(roundsView(node));
  else if (node.verdict) { const s = mk("section", ""); s.append(mk("h3", "", "Verdict"), verdictView(node.verdict)); parts.push(s); }
  if (node.calls.length) parts.push(callsView(node));
  const loose = node.tools.filter((t) => !node.calls.some((c) => c.tool_calls.some((tc) => tc.id === t.id)));
  if (loose.length) { const s = mk("section", ""); s.append(mk("h3", "", "Tool calls"), toolRows(node, loose)); parts.push(s); }
  if (node.output !== null) parts.push(section("Output", node.output));
  box.replaceChildren(...parts);
  for (const d of box.querySelectorAll("details[data-key]")) {
    if (open.has(d.dataset.key)) d.open = true;
    if (closed.has(d.dataset.key)) d.open = false;
  }
}
