"""jeeves events → AG-UI 1.0 events (the `ag-ui-protocol` package's types; its encoder writes them).

A run is one AG-UI run; every session below the root is one AG-UI subagent run:

- the root's work carries no `subagent_run_id`; a child's carries its session id;
- `SUBAGENT_STARTED.parent_subagent_run_id` is the parent session id, left out when the
  parent is the root (the root is the run itself, not a subagent);
- `parent_tool_call_id` is the delegate tool call that spawned the child, learned from
  `delegation.started` (so a Supervisor emits it before it runs the worker);
- model text becomes TEXT_MESSAGE_START/CONTENT/END, tool calls TOOL_CALL_START/ARGS/END
  and TOOL_CALL_RESULT, and every other jeeves fact (critiques, rounds, delegations,
  budget, retries, watchdog verdicts, steering) a CUSTOM event named `jeeves.<event type>`
  (`jeeves.critique`, `jeeves.watchdog.verdict`), its JSON as value.

Ids are derived, never drawn: message `{session}/step-{n}` (`.{attempt}` after a retry),
tool call `{session}/{call id}` (scripted and some provider ids repeat across sessions,
and AG-UI ids are run-wide), tool result message `{session}/{call id}/result`. Session ids
never contain `/`, so these cannot collide. The full table is in docs/streaming.md.

The mapper is a fold over one run's events in seq order; `finish` closes whatever is still
open (a cancelled run's subagents, a failed call's half-streamed message) and emits the
terminal RUN_FINISHED or RUN_ERROR, so a client always sees a well-formed run.

Gates (AG-UI interrupts): `approval.requested` goes out as a CUSTOM event (and opens its
tool call if the model's turn has not); `interrupt(gates)` ends the AG-UI run while the
jeeves run waits: open messages are closed, every open subagent ends with SUBAGENT_FINISHED
outcome `suspended` (naming the interrupts it raised itself), and RUN_FINISHED carries
outcome `interrupt` with one `Interrupt` per gate: id = the gate id, the tool call's AG-UI
id, the JSON Schema of an answer, `expires_at` in ISO 8601. The run that resumes it is a
new AG-UI run over the same jeeves run: `follow(events)` folds what the client already
has without emitting it, and `reopen()` starts the still-open sessions again (a suspended
subagent continues under its own id in the next run).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from jeeves.approvals.decide import PendingGate
from jeeves.events import (
    ApprovalDecided,
    ApprovalRequested,
    DelegationStarted,
    Event,
    ModelCompleted,
    ModelDelta,
    ModelRetrying,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    ToolCompleted,
    ToolStarted,
)
from jeeves.journal.records import error_type_name
from jeeves.messages import Usage
from jeeves.server.gates import response_schema
from jeeves.server.runs import RunRecord

__all__ = ["CUSTOM_PREFIX", "AguiMapper", "custom_name"]

CUSTOM_PREFIX = "jeeves."
"""Every CUSTOM event jeeves sends is named `jeeves.<event type>`: AG-UI CUSTOM names are one
flat space shared with the client's other agents and middleware (docs/design.md)."""


def custom_name(event: Event) -> str:
    """The AG-UI CUSTOM name of a jeeves event: `jeeves.critique`, `jeeves.watchdog.verdict`."""
    return CUSTOM_PREFIX + event.type


class AguiMapper:
    """Folds one run's jeeves events into AG-UI events."""

    def __init__(self, data: RunAgentInput, root_session_id: str) -> None:
        self._input = data
        self._root = root_session_id
        self._open_sessions: dict[str, None] = {}
        """Child sessions started and not yet finished, in start order."""
        self._messages: dict[tuple[str, int], str] = {}
        """Open text messages by (session, step)."""
        self._attempts: dict[str, int] = {}
        self._step_messages: dict[tuple[str, int], str] = {}
        """The message each (session, step) produced, for tool calls' parent_message_id."""
        self._call_messages: dict[str, str] = {}
        self._tool_calls: set[str] = set()
        self._tool_results: set[str] = set()
        self._delegations: dict[str, str] = {}
        """Child session id → the AG-UI id of the delegate call that spawned it."""
        self._usage: dict[str, Usage] = {}
        self._roles: dict[str, str] = {}
        self._started: dict[str, SessionStarted] = {}

    # -- run brackets --------------------------------------------------------------------
    def start(self) -> RunStartedEvent:
        """RUN_STARTED, echoing the input."""
        return RunStartedEvent(
            thread_id=self._input.thread_id,
            run_id=self._input.run_id,
            protocol_version=PROTOCOL_VERSION,
            input=self._input,
        )

    def finish(self, record: RunRecord) -> list[BaseEvent]:
        """Close what is open, then RUN_FINISHED (completed or cancelled) or RUN_ERROR."""
        out: list[BaseEvent] = [self._end_message(sid, mid) for (sid, _), mid in self._messages.items()]
        self._messages.clear()
        reason = "cancelled" if record.status == "cancelled" else "failed"
        for sid in reversed(self._open_sessions):
            out.append(
                SubagentErrorEvent(
                    subagent_run_id=sid,
                    message=f"Session {sid!r} ended unfinished: the run {reason}.",
                    code=reason,
                )
            )
        self._open_sessions.clear()
        ids = {"thread_id": self._input.thread_id, "run_id": self._input.run_id}
        if record.status == "completed" and record.result is not None:
            result = record.result
            out.append(
                RunFinishedEvent(
                    **ids,
                    result=result.text,
                    usage=[
                        TokenUsage(
                            model=model,
                            input_tokens=u.input_tokens,
                            output_tokens=u.output_tokens,
                            total_tokens=u.total_tokens,
                        )
                        for model, u in self._usage.items()
                    ],
                    metadata={
                        "jeeves": {"stop_reason": result.stop_reason, "usage": result.usage.model_dump()}
                    },
                )
            )
        elif record.status == "cancelled":
            out.append(RunFinishedEvent(**ids, outcome=RunFinishedCancelledOutcome()))
        elif record.status in ("expired", "rejected"):
            out.append(RunErrorEvent(message=_gate_end(record), code=record.status, timestamp=None))
        else:
            error = record.error
            out.append(
                RunErrorEvent(
                    message=str(error) if error else "The run failed.",
                    code=error_type_name(error) if error else None,
                )
            )
        return out

    # -- interrupts ----------------------------------------------------------------------
    def interrupt(self, gates: list[ApprovalRequested]) -> list[BaseEvent]:
        """End the AG-UI run at `gates` (at least one): close messages, suspend every open
        subagent, RUN_FINISHED with outcome `interrupt`."""
        out: list[BaseEvent] = [self._end_message(sid, mid) for (sid, _), mid in self._messages.items()]
        self._messages.clear()
        for sid in reversed(self._open_sessions):
            own = [g.gate_id for g in gates if g.session_id == sid]
            out.append(
                SubagentFinishedEvent(
                    subagent_run_id=sid,
                    outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=own or None),
                )
            )
        self._open_sessions.clear()
        interrupts = [self._interrupt(gate) for gate in gates]
        out.append(
            RunFinishedEvent(
                thread_id=self._input.thread_id,
                run_id=self._input.run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
            )
        )
        return out

    def _interrupt(self, event: ApprovalRequested) -> Interrupt:
        gate = PendingGate.model_validate(event.model_dump(exclude={"type", "seq", "ts", "replayed"}))
        expires = None
        if gate.expires_at is not None:
            expires = datetime.fromtimestamp(gate.expires_at, UTC).isoformat().replace("+00:00", "Z")
        return Interrupt(
            id=gate.gate_id,
            reason="tool_approval",
            message=f"Approve {gate.mode} tool call {gate.tool}({_preview(gate.arguments)})?",
            tool_call_id=self._call_id(gate.session_id, gate.tool_call_id) if gate.tool_call_id else None,
            response_schema=response_schema(gate),
            expires_at=expires,
            subagent_run_id=self._attribution(gate.session_id),
            metadata={"jeeves": gate.model_dump(mode="json")},
        )

    def follow(self, events: list[Event]) -> None:
        """Fold events the client already has (the run this one resumes), emitting nothing."""
        for event in events:
            self.map(event)
        self._messages.clear()  # the interrupted run closed them
        self._attempts.clear()

    def reopen(self) -> list[BaseEvent]:
        """SUBAGENT_STARTED again for each session still open (the resumed run continues them)."""
        return [self._subagent_started(self._started[sid]) for sid in list(self._open_sessions)]

    def skip(self, event: Event) -> None:
        """Fold `event` without emitting it (a step a resumed run replays: the client has it)."""
        self.map(event)

    # -- events --------------------------------------------------------------------------
    def map(self, event: Event) -> list[BaseEvent]:
        """The AG-UI events for one jeeves event (several, or none)."""
        sid = event.session_id
        if isinstance(event, SessionStarted):
            self._roles[sid] = event.role
            self._started[sid] = event
            if sid != self._root:
                return [self._subagent_started(event)]
        if isinstance(event, SessionCompleted | SessionFailed) and sid != self._root:
            return self._subagent_ended(event)
        if isinstance(event, ModelDelta):
            return self._delta(event)
        if isinstance(event, ModelCompleted):
            return self._model_completed(event)
        if isinstance(event, ToolStarted):
            return self._open_call(sid, event.tool_call_id, event.name, event.arguments, None)
        if isinstance(event, ToolCompleted):
            return self._result(sid, event.tool_call_id, event.name, event.result, event.is_error)
        out: list[BaseEvent] = []
        if isinstance(event, ModelRetrying):
            out += self._close_messages(sid)
            self._attempts[sid] = self._attempts.get(sid, 0) + 1
        elif isinstance(event, DelegationStarted):
            self._delegations[event.child_session_id] = self._call_id(sid, event.tool_call_id)
        elif isinstance(event, ApprovalRequested) and event.tool_call_id:
            args = json.dumps(event.arguments)
            out += self._open_call(sid, event.tool_call_id, event.tool, args, None)
        out.append(self._custom(event))
        return out

    def _attribution(self, session_id: str) -> str | None:
        return None if session_id == self._root else session_id

    def _custom(self, event: Event) -> CustomEvent:
        return CustomEvent(
            name=custom_name(event),
            value=event.model_dump(mode="json"),
            subagent_run_id=self._attribution(event.session_id),
            timestamp=int(event.ts * 1000),
        )

    def _subagent_started(self, event: SessionStarted) -> SubagentStartedEvent:
        sid = event.session_id
        self._open_sessions[sid] = None
        parent = event.parent_id if event.parent_id != self._root else None
        call = self._delegations.get(sid)
        model = f" on {event.model}" if event.model else ""
        return SubagentStartedEvent(
            subagent_run_id=sid,
            name=event.role,
            description=f"{event.architecture}{model}",
            parent_subagent_run_id=parent,
            parent_tool_call_id=call,
            parent_message_id=self._call_messages.get(call) if call else None,
            timestamp=int(event.ts * 1000),
            metadata={"jeeves": event.model_dump(mode="json", include=_SESSION_FIELDS)},
        )

    def _subagent_ended(self, event: SessionCompleted | SessionFailed) -> list[BaseEvent]:
        sid = event.session_id
        out = self._close_messages(sid)
        self._open_sessions.pop(sid, None)
        ts = int(event.ts * 1000)
        if isinstance(event, SessionFailed):
            out.append(
                SubagentErrorEvent(
                    subagent_run_id=sid, message=event.message, code=event.error_type, timestamp=ts
                )
            )
            return out
        meta = {"jeeves": {"stop_reason": event.stop_reason, "usage": event.usage.model_dump()}}
        out.append(
            SubagentFinishedEvent(subagent_run_id=sid, result=event.output, timestamp=ts, metadata=meta)
        )
        return out

    # -- text ----------------------------------------------------------------------------
    def _message_id(self, session_id: str, step: int) -> str:
        attempt = self._attempts.get(session_id, 0)
        return f"{session_id}/step-{step}" + (f".{attempt}" if attempt else "")

    def _start_message(self, event: ModelDelta | ModelCompleted) -> list[BaseEvent]:
        key = (event.session_id, event.step)
        if key in self._messages:
            return []
        mid = self._messages[key] = self._step_messages[key] = self._message_id(*key)
        return [
            TextMessageStartEvent(
                message_id=mid,
                role="assistant",
                name=self._roles.get(event.session_id),
                subagent_run_id=self._attribution(event.session_id),
                timestamp=int(event.ts * 1000),
            )
        ]

    def _end_message(self, session_id: str, message_id: str) -> TextMessageEndEvent:
        return TextMessageEndEvent(message_id=message_id, subagent_run_id=self._attribution(session_id))

    def _close_messages(self, session_id: str) -> list[BaseEvent]:
        keys = [k for k in self._messages if k[0] == session_id]
        return [self._end_message(session_id, self._messages.pop(k)) for k in keys]

    def _delta(self, event: ModelDelta) -> list[BaseEvent]:
        out = self._start_message(event)
        mid = self._messages[(event.session_id, event.step)]
        out.append(
            TextMessageContentEvent(
                message_id=mid,
                delta=event.text,
                subagent_run_id=self._attribution(event.session_id),
                timestamp=int(event.ts * 1000),
            )
        )
        return out

    def _model_completed(self, event: ModelCompleted) -> list[BaseEvent]:
        sid, key = event.session_id, (event.session_id, event.step)
        self._usage[event.model] = self._usage.get(event.model, Usage()) + event.usage
        out: list[BaseEvent] = []
        if key not in self._messages and event.text:  # not streamed: the whole text at once
            out += self._start_message(event)
            out.append(
                TextMessageContentEvent(
                    message_id=self._messages[key], delta=event.text, subagent_run_id=self._attribution(sid)
                )
            )
        if key in self._messages:
            out.append(self._end_message(sid, self._messages.pop(key)))
        self._attempts.pop(sid, None)
        parent = self._step_messages.get(key)
        for call in event.tool_calls:
            out += self._open_call(sid, call.id, call.name, call.arguments, parent)
        return out

    # -- tools ---------------------------------------------------------------------------
    def _call_id(self, session_id: str, tool_call_id: str) -> str:
        return f"{session_id}/{tool_call_id}"

    def _open_call(
        self, session_id: str, tool_call_id: str, name: str, arguments: str, parent: str | None
    ) -> list[BaseEvent]:
        cid = self._call_id(session_id, tool_call_id)
        if cid in self._tool_calls:
            return []
        self._tool_calls.add(cid)
        if parent is not None:
            self._call_messages[cid] = parent
        who = self._attribution(session_id)
        return [
            ToolCallStartEvent(
                tool_call_id=cid, tool_call_name=name, parent_message_id=parent, subagent_run_id=who
            ),
            ToolCallArgsEvent(tool_call_id=cid, delta=arguments, subagent_run_id=who),
            ToolCallEndEvent(tool_call_id=cid, subagent_run_id=who),
        ]

    def _result(
        self, session_id: str, tool_call_id: str, name: str, content: str, is_error: bool
    ) -> list[BaseEvent]:
        cid = self._call_id(session_id, tool_call_id)
        if cid in self._tool_results:
            return []
        out = self._open_call(session_id, tool_call_id, name, "", None)
        self._tool_results.add(cid)
        out.append(
            ToolCallResultEvent(
                message_id=f"{cid}/result",
                tool_call_id=cid,
                content=content,
                role="tool",
                subagent_run_id=self._attribution(session_id),
                metadata={"jeeves": {"is_error": True}} if is_error else None,
            )
        )
        return out


def _preview(arguments: dict[str, object], limit: int = 120) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _gate_end(record: RunRecord) -> str:
    """Why a run ended at a gate: expired, or a denial that ends the run."""
    decided = [e for e in record.events_after(0) if isinstance(e, ApprovalDecided)]
    last = decided[-1] if decided else None
    if record.status == "expired":
        return "The run expired: a gate or the session ran out of time before a decision."
    who = f" by {last.by!r}" if last is not None and last.by else ""
    note = f" ({last.note})" if last is not None and last.note else ""
    return f"The run was rejected: a gate was denied{who}{note}, and its policy ends the run on a denial."


_SESSION_FIELDS = {"session_id", "parent_id", "role", "role_path", "architecture", "model", "index", "task"}
