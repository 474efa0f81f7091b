"""`notifications/tasks`: a served task's status pushed to the clients that listen for it.

The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) lets a client that
declared it ask, on a `subscriptions/listen` request, for `notifications: {"taskIds":
[...]}`. The SDK's `ListenHandler` knows only the core kinds (list changes, resource
updates) and drops `taskIds` from its acknowledgement, so `TaskListen` serves the listen
request in its place:

- the acknowledgement names the task ids it will report on (the ones that name a served
  run; unknown ids are left out, as the specification allows) beside the core kinds it
  honours, which it delivers from the SDK's subscription bus as the SDK would;
- each honoured task's current `DetailedTask` (what `tasks/get` answers at that moment)
  is sent at once, then again whenever its status changes: on the changes this process
  makes (a run starts, reaches a gate, ends; `tasks/update`, `tasks/cancel`) at once,
  and on changes made elsewhere (a durable worker, `jeeves approve`) within
  `POLL_MS`, read from the journal;
- a notification is sent only when the task's state differs from the last one this
  stream sent (status, message, the outstanding input requests), and a task that reached
  a terminal status is not looked at again;
- a client that asks for task ids without declaring the extension gets the
  missing-capability error.

Delivery follows the SDK's listen contract: the stream lives until the client cancels the
listen request or disconnects, nothing is replayed, and a client that stops reading is
cut off at `max_buffered_events` (it listens again and gets each task's state afresh).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY, ListenHandler, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ServerEvent, event_matches, event_to_notification
from mcp.types import SubscriptionFilter, SubscriptionsListenRequestParams
from pydantic import BaseModel

if TYPE_CHECKING:
    from jeeves.mcp.serve.tasks import ServedTasks

__all__ = ["METHOD", "TASK_IDS", "TaskListen", "TaskNotification", "TaskWatchers"]

METHOD = "notifications/tasks"
TASK_IDS = "taskIds"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
INVALID_PARAMS = -32602


class TaskNotification(BaseModel):
    """One `notifications/tasks` frame: a `DetailedTask` plus the listen stream's `_meta`."""

    method: str = METHOD
    params: dict[str, Any]


class TaskWatchers:
    """Which open listen streams report on which task: `changed(sid)` wakes them."""

    def __init__(self) -> None:
        self._streams: dict[str, set[MemoryObjectSendStream[ServerEvent | str]]] = {}

    def add(self, sids: Sequence[str], stream: MemoryObjectSendStream[ServerEvent | str]) -> None:
        for sid in sids:
            self._streams.setdefault(sid, set()).add(stream)

    def remove(self, sids: Sequence[str], stream: MemoryObjectSendStream[ServerEvent | str]) -> None:
        for sid in sids:
            streams = self._streams.get(sid, set())
            streams.discard(stream)
            if not streams:
                self._streams.pop(sid, None)

    def changed(self, sid: str) -> None:
        """Task `sid` may have changed: each stream watching it looks again (never blocks; a
        stream whose buffer is full or closed misses the wake-up, and its poll catches up)."""
        for stream in list(self._streams.get(sid, ())):
            try:
                stream.send_nowait(sid)
            except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass


def _core(requested: SubscriptionFilter) -> SubscriptionFilter:
    """The core kinds of `requested` this server honours (all of them, as the SDK does)."""
    return SubscriptionFilter(
        tools_list_changed=True if requested.tools_list_changed else None,
        prompts_list_changed=True if requested.prompts_list_changed else None,
        resources_list_changed=True if requested.resources_list_changed else None,
        resource_subscriptions=list(requested.resource_subscriptions)
        if requested.resource_subscriptions
        else None,
    )


def _fingerprint(task: dict[str, Any]) -> str:
    """What makes two states of a task different to a client (not the timestamps)."""
    keys = ("status", "statusMessage", "inputRequests", "result", "error")
    return json.dumps({k: task.get(k) for k in keys}, sort_keys=True, default=str)


class TaskListen(ListenHandler):
    """`subscriptions/listen` with the tasks extension's `taskIds` (see the module docstring)."""

    def __init__(self, bus: SubscriptionBus, tasks: ServedTasks, *, max_buffered_events: int = 1024) -> None:
        super().__init__(bus, max_buffered_events=max_buffered_events)
        self.bus = bus
        self.tasks = tasks
        self.buffered = max_buffered_events

    async def __call__(self, ctx: Any, params: SubscriptionsListenRequestParams) -> Any:
        wanted = (params.notifications.model_extra or {}).get(TASK_IDS)
        if wanted is None:
            return await super().__call__(ctx, params)
        self.tasks.require(ctx)
        if not isinstance(wanted, list) or not all(isinstance(sid, str) for sid in wanted):
            raise MCPError(
                code=INVALID_PARAMS, message=f"{TASK_IDS} must be a list of task ids, not {wanted!r}"
            )
        honoured = [sid for sid in dict.fromkeys(wanted) if await self.tasks.known(sid)]
        return await _Stream(self, ctx, params.notifications, honoured).serve()


class _Stream:
    """One listen stream that reports on tasks (and on the core kinds it asked for)."""

    def __init__(self, handler: TaskListen, ctx: Any, requested: SubscriptionFilter, sids: list[str]) -> None:
        self.handler, self.ctx, self.sids = handler, ctx, sids
        self.core = _core(requested)
        self.meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        self.sent: dict[str, str] = {}
        self.open = list(sids)

    async def serve(self) -> Any:
        from mcp.types import SubscriptionsAcknowledgedNotification, SubscriptionsListenResult

        send, recv = anyio.create_memory_object_stream[ServerEvent | str](self.handler.buffered)
        uris = frozenset(self.core.resource_subscriptions or ())

        def deliver(event: ServerEvent) -> None:
            if event_matches(self.core, uris, event):
                try:
                    send.send_nowait(event)
                except (anyio.WouldBlock, anyio.ClosedResourceError):
                    send.close()  # a reader that stopped: end the stream (it re-listens)

        watchers = self.handler.tasks.watchers
        unsubscribe = self.handler.bus.subscribe(deliver)
        watchers.add(self.sids, send)
        ack = self.core.model_dump(by_alias=True, exclude_none=True) | {TASK_IDS: self.sids}
        try:
            await self.ctx.session.send_notification(
                SubscriptionsAcknowledgedNotification.model_validate(
                    {"params": {"notifications": ack, "_meta": self.meta}}
                ),
                related_request_id=self.ctx.request_id,
            )
            async with anyio.create_task_group() as group:
                group.start_soon(self._poll, send)
                for sid in self.sids:
                    await self._report(sid)
                async for item in recv:
                    await self._send(item)
                group.cancel_scope.cancel()
        finally:
            unsubscribe()
            watchers.remove(self.sids, send)
            send.close()
            recv.close()
        return SubscriptionsListenResult(_meta=self.meta)

    async def _poll(self, send: MemoryObjectSendStream[ServerEvent | str]) -> None:
        """Look at the open tasks every poll interval: changes made by other processes."""
        from jeeves.mcp.serve.tasks import POLL_MS

        while self.open:
            await anyio.sleep(POLL_MS / 1000)
            for sid in list(self.open):
                try:
                    send.send_nowait(sid)
                except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def _send(self, item: ServerEvent | str) -> None:
        if isinstance(item, str):
            await self._report(item)
        else:
            notification = event_to_notification(item, self.meta)
            await self.ctx.session.send_notification(notification, related_request_id=self.ctx.request_id)

    async def _report(self, sid: str) -> None:
        """Send task `sid`'s state when it differs from the last one sent."""
        if sid not in self.open:
            return
        task = await self.handler.tasks.view(sid)
        mark = _fingerprint(task)
        if self.sent.get(sid) == mark:
            return
        self.sent[sid] = mark
        if task["status"] in TERMINAL:
            self.open.remove(sid)
        frame = TaskNotification(params=task | {"_meta": self.meta})
        await self.ctx.session.send_notification(frame, related_request_id=self.ctx.request_id)
