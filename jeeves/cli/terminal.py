"""The live terminal view of a run: a rich tree of sessions, or one JSON event per line.

`SessionTree` folds events into nodes (one per session, built from `session.started`
alone, so nothing parses ids): role, architecture, model, status, the latest round and
critic score, tokens and USD, the tail of the streamed text, and its approval gates: a
pending gate is a line under its session (`⏸ gate ID: tool(args) [mode]`), a decided one
says who decided what (`✓ approved by alice`, `✗ denied by bob`, `⌛ expired`). `follow` draws it with
`rich.live.Live` while the run goes, with a spinner on every active node, and leaves the
final tree on screen, ending with a newline. On a non-terminal output (a pipe, a file) only
the final tree is printed, and its lines are not wrapped (unless COLUMNS sets a width),
so each node stays one line for grep and diff.

Everything the tree says, it says in words; colour only repeats it, so the tree reads the
same with NO_COLOR or through a pipe: a score is `score 0.20 ✗ failed`, a failed round's
critic lists its top issues under it (`issue: …`), the watchdog's verdicts are counted
(`watchdog: STUCK ×1, PROGRESSING ×1`), and a plan the critic refused says so with its kind
and step (`✗ … · plan refused: missing_evidence at step 1 (lookup)`, its reasons under it).

Redrawing is driven by a ticker task in the same thread as the consumer (no refresh
thread), so a frame never sees a half-applied event.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterable, Mapping
from dataclasses import dataclass, field
from typing import IO

import anyio
from rich.console import Console, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text
from rich.tree import Tree

from jeeves.events import (
    ApprovalDecided,
    ApprovalRequested,
    Critique,
    Event,
    ModelCompleted,
    ModelDelta,
    PlanVerified,
    RoundStarted,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    SteeringInjected,
    ToolStarted,
    WatchdogVerdictEvent,
    event_to_json,
)
from jeeves.messages import Usage, format_cost

__all__ = ["GateLine", "SessionNode", "SessionTree", "follow", "output_lines", "plural", "spend_lines"]

AWAITING = "awaiting approval"
"""The status of a session left open by a run suspended at gates."""
_TAIL = 70
_ISSUES = 3
"""A failed round's issues shown under its critic; the rest are counted."""
_ISSUE_WIDTH = 120
_UNWRAPPED = 1_000_000
"""The width of a non-terminal output: rich wraps at 80 columns there otherwise."""


@dataclass
class GateLine:
    """One approval gate of a session, as the tree shows it."""

    gate_id: str
    tool: str
    mode: str
    arguments: str
    """A one-line preview of the arguments."""
    decision: str | None = None
    """approve, deny or expire once decided; None while pending."""
    by: str = ""
    note: str | None = None

    def render(self) -> Text:
        line = Text()
        head = f"gate {self.gate_id}: {self.tool}({self.arguments}) [{self.mode}]"
        if self.decision is None:
            line.append("⏸ ", style="bold yellow")
            line.append(head, style="yellow")
            line.append(" · awaiting approval", style="bold yellow")
            return line
        mark, word, style = _DECISIONS.get(self.decision, ("?", self.decision, "yellow"))
        line.append(f"{mark} ", style=style)
        line.append(head, style="dim")
        who = f" by {self.by}" if self.by and self.decision != "expire" else ""
        line.append(f" · {word}{who}", style=style)
        if self.note:
            line.append(f" ({_tail(self.note)})", style="dim")
        return line


_DECISIONS = {
    "approve": ("✓", "approved", "green"),
    "deny": ("✗", "denied", "red"),
    "expire": ("⌛", "expired", "yellow"),
}


@dataclass
class SessionNode:
    """What the view knows about one session."""

    session_id: str
    parent_id: str | None
    role: str
    architecture: str
    model: str | None
    index: int = 0
    status: str = "running"
    """running, completed, failed; cancelled when the run ended with the session open;
    awaiting approval when it ended suspended at gates."""
    round: int | None = None
    score: float | None = None
    passed: bool | None = None
    usage: Usage = field(default_factory=Usage)
    """This session's own model calls."""
    text: str = ""
    """The tail of the text it streamed (one line)."""
    stop_reason: str = ""
    children: list[str] = field(default_factory=list)
    hard_fail: bool = False
    issues: list[str] = field(default_factory=list)
    """A failed verdict's issues (shown under the node, the first few of them)."""
    watchdog: list[str] = field(default_factory=list)
    """The watchdog's verdicts on this session's agent, in order (Goal sessions)."""
    refusal: str = ""
    """`plan refused: KIND at step N (ID)` when the plan critic refused this attempt's plan."""
    reasons: list[str] = field(default_factory=list)
    """The plan critic's reasons for the refusal."""
    gates: dict[str, GateLine] = field(default_factory=dict)
    """This session's approval gates by gate id, in the order they were reached."""


class SessionTree:
    """A run's sessions as a tree, updated one event at a time (`apply`); rich-renderable."""

    def __init__(self) -> None:
        self.nodes: dict[str, SessionNode] = {}
        self.roots: list[str] = []

    def apply(self, event: Event) -> None:
        """Fold one event in. Events of sessions never started are ignored."""
        if isinstance(event, SessionStarted):
            self._start(event)
            return
        node = self.nodes.get(event.session_id)
        if node is None:
            return
        if isinstance(event, ModelDelta):
            node.text = _tail(node.text + event.text)
        elif isinstance(event, ModelCompleted):
            node.usage = node.usage + event.usage
            node.model = node.model or event.model
            if event.text:
                node.text = _tail(event.text)
        elif isinstance(event, ToolStarted):
            node.text = _tail(f"→ {event.name}({event.arguments})")
        elif isinstance(event, RoundStarted):
            node.round = event.round
        elif isinstance(event, Critique):
            self._critique(node, event)
        elif isinstance(event, WatchdogVerdictEvent):
            node.watchdog.append(event.verdict)
            node.text = _tail(f"watchdog {event.verdict} ({event.source}): {event.reason}")
        elif isinstance(event, PlanVerified):
            _plan_verified(node, event)
        elif isinstance(event, SteeringInjected):
            node.text = _tail(f"↳ steering ({event.cause}): {event.message}")
        elif isinstance(event, ApprovalRequested | ApprovalDecided):
            _gate(node, event)
        elif isinstance(event, SessionCompleted):
            node.status, node.stop_reason = "completed", event.stop_reason
        elif isinstance(event, SessionFailed):
            node.status, node.stop_reason = "failed", event.error_type

    def _start(self, event: SessionStarted) -> None:
        node = SessionNode(
            event.session_id, event.parent_id, event.role, event.architecture, event.model, event.index
        )
        self.nodes[event.session_id] = node
        parent = self.nodes.get(event.parent_id) if event.parent_id else None
        if parent is None:
            self.roots.append(event.session_id)
        else:
            parent.children.append(event.session_id)

    def _critique(self, node: SessionNode, event: Critique) -> None:
        node.round, node.score, node.passed = event.round, event.score, event.passed
        issues = [] if event.passed else event.issues
        for child_id in node.children:
            child = self.nodes[child_id]
            if child.role in ("critic", "feedback") and child.index == event.round:  # feedback: SelfRefine
                child.score, child.passed, child.hard_fail = event.score, event.passed, event.hard_fail
                child.issues, issues = issues, []
        node.hard_fail, node.issues = event.hard_fail, issues  # no critic session: shown on the loop

    def mark_unfinished(self, status: str = "cancelled") -> None:
        """Mark sessions still running (the run ended without them finishing)."""
        for node in self.nodes.values():
            if node.status == "running":
                node.status = status

    def tree_usage(self, session_id: str) -> Usage:
        """A session's usage with everything below it."""
        node = self.nodes[session_id]
        total = node.usage
        for child in node.children:
            total = total + self.tree_usage(child)
        return total

    # -- rendering -----------------------------------------------------------------------
    def __rich__(self) -> RenderableType:
        top = Tree(Text("jeeves", style="bold"), guide_style="dim")
        for root in self.roots:
            self._render(top, root)
        return top

    def pending_gates(self) -> list[GateLine]:
        """Every gate shown as waiting for a decision, in session order."""
        return [g for node in self.nodes.values() for g in node.gates.values() if g.decision is None]

    def _render(self, parent: Tree, session_id: str) -> None:
        node = self.nodes[session_id]
        branch = parent.add(self._label(node))
        for gate in node.gates.values():
            branch.add(gate.render())
        for line in _detail_lines(node):
            branch.add(line)
        for child in node.children:
            self._render(branch, child)

    def _label(self, node: SessionNode) -> RenderableType:
        line = Text()
        line.append(node.role, style="bold cyan")
        line.append(f" {node.architecture}", style="magenta")
        if node.model:
            line.append(f" · {node.model}", style="dim")
        if node.round is not None:
            line.append(f" · round {node.round}")
        if node.score is not None:
            verdict = " ✓ passed" if node.passed else " ✗ hard fail" if node.hard_fail else " ✗ failed"
            line.append(f" · score {node.score:.2f}{verdict}", style="green" if node.passed else "yellow")
        if node.watchdog:
            line.append(" · watchdog: ")
            for i, (verdict, count) in enumerate(_counted(node.watchdog)):
                line.append(", " if i else "")
                line.append(f"{verdict} ×{count}", style=_WATCH_STYLES.get(verdict, ""))
        usage = self.tree_usage(node.session_id)
        if usage.total_tokens or usage.unpriced_calls:
            line.append(f" · {usage.total_tokens:,} tok · {format_cost(usage)}", style="dim")
        if node.status == "running":
            if node.text:
                line.append(f"\n{node.text}", style="italic dim")
            return Spinner("dots", text=line, style="cyan")
        style = {"completed": "green", "failed": "red"}.get(node.status, "yellow")
        if node.refusal:
            style = "red"
        line.append(f" · {node.refusal or node.stop_reason or node.status}", style=style)
        mark = "✗ " if node.refusal else {"completed": "✓ ", AWAITING: "⏸ "}.get(node.status, "✗ ")
        return Text.assemble((mark, style), line)


_WATCH_STYLES = {
    "PROGRESSING": "green",
    "STUCK": "yellow",
    "ACHIEVED": "bright_green",
    "MISLED": "dark_orange",
}
"""Each watchdog verdict's colour: the viewer's critic rail, in the terminal (the words say it too)."""


def _counted(verdicts: list[str]) -> list[tuple[str, int]]:
    """Each verdict with how often it was given, in the order of first appearance."""
    counts: dict[str, int] = {}
    for verdict in verdicts:
        counts[verdict] = counts.get(verdict, 0) + 1
    return list(counts.items())


def _detail_lines(node: SessionNode) -> list[Text]:
    """The lines under a node that say why: a failed verdict's top issues, a refused plan's reasons."""
    lines = [Text(f"reason: {_clip(r)}", style="red") for r in node.reasons[:_ISSUES]]
    lines += [Text(f"issue: {_clip(i)}", style="yellow") for i in node.issues[:_ISSUES]]
    more = len(node.issues) - _ISSUES
    if more > 0:
        lines.append(Text(f"… and {plural(more, 'more issue')}", style="dim"))
    return lines


def _plan_verified(node: SessionNode, event: PlanVerified) -> None:
    if event.ok:
        node.refusal, node.reasons = "", []
        return
    at = ""
    if event.offending_step is not None or event.offending_step_id:
        number = f"{event.offending_step} " if event.offending_step is not None else ""  # the seed's index
        named = f"({event.offending_step_id})" if event.offending_step_id else ""
        at = f" at step {number}{named}".rstrip()
    node.refusal = f"plan refused: {event.kind or 'refused'}{at}"
    node.reasons = list(event.reasons)


def plural(count: int, noun: str) -> str:
    """`1 call`, `2 calls`, `0 calls`: a count with its noun (the last word takes the `s`)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def output_lines(text: str) -> list[str]:
    """A run's output as `jeeves run` prints it after the tree, set off by a blank line each
    side; an empty output is said once (`no output`), never printed as blank lines."""
    body = text.strip("\n").rstrip()
    return ["", body if body.strip() else "no output", ""]


def spend_lines(total: Usage, by_path: Mapping[str, Usage]) -> list[str]:
    """`N model calls · tokens · $` and a line per role path, as `jeeves run` and `jeeves replay` end.

    A sum with calls litellm has no price for says so (`$0.0123 + unpriced (1 call)`): it is
    never shown as if those calls cost nothing.
    """
    lines = [
        f"{plural(total.model_calls, 'model call')} · {plural(total.total_tokens, 'token')} · "
        f"{format_cost(total)}"
    ]
    for path, spent in sorted(by_path.items()):
        lines.append(
            f"  {path}: {plural(spent.model_calls, 'call')}, {plural(spent.total_tokens, 'token')}, "
            f"{format_cost(spent)}"
        )
    return lines


def _gate(node: SessionNode, event: ApprovalRequested | ApprovalDecided) -> None:
    if isinstance(event, ApprovalRequested):
        args = _tail(", ".join(f"{k}={v!r}" for k, v in event.arguments.items()))
        node.gates[event.gate_id] = GateLine(event.gate_id, event.tool, event.mode, args)
        return
    gate = node.gates.get(event.gate_id)
    if gate is not None:
        gate.decision, gate.by, gate.note = event.decision, event.by, event.note


def _clip(text: str) -> str:
    """One line, its beginning kept (an issue reads from its start)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _ISSUE_WIDTH else flat[: _ISSUE_WIDTH - 1] + "…"


def _tail(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _TAIL else "…" + flat[-(_TAIL - 1) :]


async def follow(
    events: AsyncIterable[Event],
    *,
    as_json: bool = False,
    file: IO[str] | None = None,
    console: Console | None = None,
    refresh_per_second: float = 10.0,
) -> SessionTree:
    """Show a run's events as they come: a live tree, or (`as_json`) one JSON event per line.

    Returns the final tree. An error the event stream raises (the run failed) propagates
    after the tree is drawn with the sessions it left open marked failed.
    """
    tree = SessionTree()
    if as_json:
        out = file or sys.stdout
        async for event in events:
            tree.apply(event)
            out.write(event_to_json(event) + "\n")
            out.flush()
        return tree
    console = console or _console(file)
    error: Exception | None = None
    try:
        with Live(tree, console=console, auto_refresh=False, vertical_overflow="ellipsis") as live:

            async def tick() -> None:
                while True:
                    live.refresh()
                    await anyio.sleep(1 / refresh_per_second)

            async with anyio.create_task_group() as group:
                group.start_soon(tick)
                try:
                    async for event in events:
                        tree.apply(event)
                except Exception as exc:
                    error = exc
                group.cancel_scope.cancel()
            if error is not None:
                tree.mark_unfinished("failed")
            elif tree.pending_gates():  # the run suspended at them
                tree.mark_unfinished(AWAITING)
            live.vertical_overflow = "visible"
            live.refresh()
    finally:
        if not console.is_terminal:  # on a terminal, Live ends the tree's last line itself
            console.line()
    if error is not None:
        raise error
    return tree


class _Console(Console):
    """A rich console that lets a closed output (`jeeves demo | head -1`) raise BrokenPipeError
    to the caller, which ends the command as Unix tools do; rich itself would exit with 1."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def _console(file: IO[str] | None) -> Console:
    """A console for `file`: a terminal's own width, else COLUMNS if set, else unwrapped."""
    console = _Console(file=file)
    if not console.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
        console.width = _UNWRAPPED
    return console
