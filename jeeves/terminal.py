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
    RoundStarted,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    SteeringInjected,
    ToolStarted,
    WatchdogVerdictEvent,
    event_to_json,
)
from jeeves.messages import Usage, format_usd

__all__ = ["GateLine", "SessionNode", "SessionTree", "follow", "spend_lines"]

AWAITING = "awaiting approval"
"""The status of a session left open by a run suspended at gates."""
_TAIL = 70
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
    watchdog: list[str] = field(default_factory=list)
    """The watchdog's verdicts on this session's agent, in order (Goal sessions)."""
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
        for child_id in node.children:
            child = self.nodes[child_id]
            if child.role in ("critic", "feedback") and child.index == event.round:  # feedback: SelfRefine
                child.score, child.passed = event.score, event.passed

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
        branch = parent.add(self._label(self.nodes[session_id]))
        for gate in self.nodes[session_id].gates.values():
            branch.add(gate.render())
        for child in self.nodes[session_id].children:
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
            mark = " ✓" if node.passed else " ✗"
            line.append(f" · score {node.score:.2f}{mark}", style="green" if node.passed else "yellow")
        if node.watchdog:
            line.append(" · watchdog ")
            for verdict in node.watchdog:
                mark, colour = _WATCH_MARKS[verdict]
                line.append(mark, style=colour)
        usage = self.tree_usage(node.session_id)
        if usage.total_tokens:
            line.append(f" · {usage.total_tokens:,} tok · {format_usd(usage.cost_usd)}", style="dim")
        if node.status == "running":
            if node.text:
                line.append(f"\n{node.text}", style="italic dim")
            return Spinner("dots", text=line, style="cyan")
        style = {"completed": "green", "failed": "red"}.get(node.status, "yellow")
        line.append(f" · {node.stop_reason or node.status}", style=style)
        mark = {"completed": "✓ ", AWAITING: "⏸ "}.get(node.status, "✗ ")
        return Text.assemble((mark, style), line)


_WATCH_MARKS = {
    "PROGRESSING": ("●", "green"),
    "STUCK": ("●", "yellow"),
    "ACHIEVED": ("●", "bright_green"),
    "MISLED": ("●", "dark_orange"),
}
"""One coloured mark per watchdog firing: the viewer's critic rail, in the terminal."""


def spend_lines(total: Usage, by_path: Mapping[str, Usage]) -> list[str]:
    """`N model calls · tokens · $` and a line per role path, as `jeeves run` and `jeeves replay` end."""
    lines = [
        f"{total.model_calls} model calls · {total.total_tokens:,} tokens · {format_usd(total.cost_usd)}"
    ]
    for path, spent in sorted(by_path.items()):
        lines.append(
            f"  {path}: {spent.model_calls} calls, {spent.total_tokens:,} tokens, {format_usd(spent.cost_usd)}"
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
