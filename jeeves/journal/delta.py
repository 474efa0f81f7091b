"""What a journaled step stores and fingerprints: a model request as what it adds to its session.

An Agent's request at turn k holds every message of turns 0..k-1 again. Stored and hashed
whole, a run of n turns costs O(n²); here a model step costs what it adds:

- **Stored**: the request's new messages relative to the session's previous recorded model
  request, with `"base": <that step's index>`; tools, output schema and params only when
  they differ from the base's. A request that does not extend the previous one (the first
  of a session, a rewritten history) is stored whole, exactly as schema v2 stored it.
  `whole_request` rebuilds the whole request from a step and the steps before it.
- **Fingerprinted** (schema v4): one SHA-256 over `request v4`, a newline, the messages' JSON
  as pydantic writes a `list[Message]` without its brackets (`{…},{…}`), a newline and the
  hex SHA-256 of the other fields' canonical JSON. The hash object over the messages is kept
  and copied to go on, so a step hashes (and serializes) only its new messages, one
  pydantic call for them all, yet the value is a function of the request's content alone:
  computed from its base's state plus its new messages or from scratch, a request hashes
  the same, so record and replay agree however their requests were built. Any change to
  any message, the tools, the output schema or the params changes the fingerprint, and a
  strict replay raises `ReplayDivergence`.

"Extends the previous request" is checked cheaply: the previous request's messages are the
same objects (or equal ones) at the front of this one's, and no `Message` was assigned to
since (`jeeves.messages.mutations`): a history edited in place is hashed and stored whole.

Older model records still replay and resume: `StepKey.matches` recomputes the fingerprint
their schema gave the whole request (`older_fingerprint`; O(n) a step, old journals only):
v2 hashed the whole request's canonical JSON; v3 chained each message's canonical JSON
(`h = sha256(h + "\n" + canonical(message))`), which cost a Python dump, a canonical
encoding and a hash per message. Their stored forms are v4's, so a v4 step extends a v2 or
v3 base. Tool, function and gate steps are hashed as in v3 (`plain_key`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from jeeves import messages as _messages
from jeeves.errors import JournalError
from jeeves.journal.records import DAMAGED, StepRecord, canonical, fingerprint
from jeeves.messages import ModelRequest, messages_serializer

__all__ = [
    "DELTA_VERSION",
    "KEY_VERSION",
    "RequestChain",
    "StepKey",
    "older_fingerprint",
    "plain_key",
    "recorded_request",
    "whole_request",
]

DELTA_VERSION = 3
"""The first journal schema version whose model steps are stored as deltas and chain-hashed."""
SETTINGS = ("tools", "output_schema", "params")
"""A request's fields other than its messages: stored only when they change."""
KEY_VERSION = 4
"""The schema version that introduced today's model-step fingerprint (`RequestChain`): its
head names it, and model records written before it are matched by `older_fingerprint`. A
later schema bump that keeps the fingerprint leaves this alone."""
_HEAD = f"request v{KEY_VERSION}\n".encode()
"""What a model request's fingerprint hashes first (`RequestChain`)."""


class StepKey:
    """A journaled step's request as the journal keeps it: its fingerprint and what is stored.

    `whole()` is the whole request (as schema v2 stored it), built only when asked (a
    divergence's diff, an older record's fingerprint); `commit()` tells the session's chain
    that the step is in the journal (recorded or served), so the next request can extend it.
    """

    __slots__ = ("_commit", "_whole", "fingerprint", "stored")

    def __init__(
        self, fp: str, stored: Any, whole: Callable[[], Any], commit: Callable[[], None] | None = None
    ) -> None:
        self.fingerprint = fp
        self.stored = stored
        """The request as the record stores it (a model step's new messages as `Message`s)."""
        self._whole = whole
        self._commit = commit

    def whole(self) -> Any:
        return self._whole()

    def commit(self) -> None:
        if self._commit is not None:
            self._commit()

    def matches(self, record: StepRecord) -> bool:
        """Whether `record` was asked with this request (a model step of an older schema:
        its fingerprint recomputed from the whole request, as that schema hashed it)."""
        if record.kind == "model" and record.v < KEY_VERSION:
            return record.fingerprint == older_fingerprint(record.v, self.whole())
        return record.fingerprint == self.fingerprint


def plain_key(request: Any) -> StepKey:
    """A step stored and hashed as it is (tool, function and gate steps: small requests)."""
    return StepKey(fingerprint(request), request, lambda: request)


class RequestChain:
    """One session's model requests so far: the last one in the journal, to extend.

    The fingerprint of a request is the SHA-256 of `request v4`, a newline, its messages'
    JSON as pydantic writes a list of them without the brackets (`{…},{…}`), a newline and
    the hex SHA-256 of its other fields' canonical JSON. The hash of the first part is kept
    (a hash object, copied to go on) so a request extending the last one hashes only what
    it adds, and gets the value hashing it whole gives."""

    __slots__ = ("_base", "_hasher", "_messages", "_mutations", "_settings", "_settings_fp")

    def __init__(self) -> None:
        self._base: int | None = None
        """The index of the session's last model step in the journal; None before the first."""
        self._messages: list[Any] = []
        self._hasher: Any = None
        """The hash of the last committed request's messages (see the class), or None."""
        self._mutations = -1
        self._settings: tuple[Any, Any, dict[str, Any]] | None = None
        self._settings_fp = b""

    def key(self, request: ModelRequest, index: int) -> StepKey:
        """Model step `index`'s key: its new messages on the last committed request, chained
        (serialized once, in one pydantic call, to be hashed)."""
        messages, base, prior = request.messages, self._base, self._messages
        if base is not None and self._extends(messages):
            hasher, added, sep = self._hasher.copy(), messages[len(prior) :], b"," if prior else b""
        else:
            base, hasher, added, sep = None, hashlib.sha256(_HEAD), messages, b""
            prior, added = [], list(messages)  # what this request holds now: a copy
        if added:
            hasher.update(sep + messages_serializer().to_json(added)[1:-1])
        stored: dict[str, Any] = (
            {"base": base, "messages": added} if base is not None else {"messages": added}
        )
        settings = (request.tools, request.output_schema, request.params)
        if base is not None and settings == self._settings:
            settings_fp, kept_settings = self._settings_fp, self._settings
        else:
            kept_settings = (list(settings[0]), settings[1], dict(settings[2]))
            payload = request.settings_payload()
            settings_fp = b"\n" + fingerprint(payload).encode()
            stored.update(payload)
        whole = hasher.copy()
        whole.update(settings_fp)
        held, mutations = len(prior), _messages.mutations

        def commit() -> None:
            # the session's messages so far: `prior` is only ever appended to, so its first
            # `held` are the ones this request extended, whatever committed meanwhile
            kept = prior if len(prior) == held else prior[:held]
            kept.extend(added)
            self._base, self._messages, self._hasher, self._mutations = index, kept, hasher, mutations
            self._settings, self._settings_fp = kept_settings, settings_fp

        return StepKey(whole.hexdigest(), stored, request.fingerprint_payload, commit)

    def _extends(self, messages: list[Any]) -> bool:
        prior = self._messages
        return (
            self._mutations == _messages.mutations
            and len(messages) >= len(prior)
            and messages[: len(prior)] == prior
        )


# -- older schemas: a model step's fingerprint from its whole request ---------------------------
def older_fingerprint(version: int, whole: Any) -> str:
    """The fingerprint schema `version` (2 or 3) gave the request `whole` (its fingerprint
    payload): v2 hashed the whole request's canonical JSON; v3 chained the messages' canonical
    JSON, then hashed the chain with the other fields' hash. O(n): old journals only."""
    if version < DELTA_VERSION:
        return fingerprint(whole)
    chain = ""
    for message in whole["messages"]:
        chain = hashlib.sha256(f"{chain}\n{canonical(message)}".encode()).hexdigest()
    settings = fingerprint({k: whole[k] for k in SETTINGS})
    return hashlib.sha256(f"request v3\n{chain}\n{settings}".encode()).hexdigest()


# -- reading: whole requests back from deltas ---------------------------------------------------
def whole_request(stored: Any, earlier: Mapping[int, Any], where: str = "the journal") -> Any:
    """A model step's whole request from its stored form and the whole requests of the steps
    before it (`earlier`: index -> whole request). A stored form without `base` is whole."""
    if not (isinstance(stored, dict) and "base" in stored):
        return stored
    base = earlier.get(stored["base"]) if isinstance(stored["base"], int) else None
    if not isinstance(base, dict):
        raise JournalError(
            f"{where}: the request extends step {stored['base']!r}, which holds no model request. {DAMAGED}"
        )
    added = stored.get("messages")
    if not isinstance(added, list) or not isinstance(base.get("messages"), list):
        raise JournalError(f"{where}: the request's messages are not a list. {DAMAGED}")
    settings = {k: stored[k] if k in stored else base.get(k) for k in SETTINGS}
    return {"messages": [*base["messages"], *added], **settings}


async def recorded_request(
    get_step: Callable[[int], Awaitable[StepRecord | None]], record: StepRecord
) -> Any:
    """The whole request of `record` (a model step), read back through the steps it extends
    (`get_step(index)` reads one of its session); its stored form when that fails (damage)."""
    chain = [record]
    while isinstance(chain[-1].request, dict) and isinstance(base := chain[-1].request.get("base"), int):
        earlier = await get_step(base) if base < chain[-1].index else None
        if earlier is None or earlier.kind != "model":
            return record.request
        chain.append(earlier)
    whole: dict[int, Any] = {}  # the step the next one extends, whole: one at a time
    try:
        for step in reversed(chain):
            whole = {step.index: whole_request(step.request, whole)}
    except JournalError:
        return record.request
    return whole[record.index]
