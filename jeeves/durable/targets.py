"""What a worker can run: targets named by a spec file or a `module:attr` reference.

A target is what `jeeves submit` names and `jeeves worker` serves. Both sides resolve the
same string the same way, so a submitted run lands on a queue only the workers that serve
its target listen to (`queue_name`): a spec file is named by its stem
(`architectures/codegen.toml` -> `codegen`), a reference by itself
(`myapp.agents:coder`). A target is built afresh for every run (an offline script is
consumed by the run it serves) and records how to rebuild it, so `jeeves replay` works
from the database without the worker.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jeeves._run.context import Architecture
from jeeves._run.source import resolve_ref, source_of
from jeeves.approvals.decide import Approvals
from jeeves.errors import UserError
from jeeves.models.router import Router

__all__ = ["QUEUE_PREFIX", "Target", "load_targets", "queue_name", "queue_of", "target_name"]

QUEUE_PREFIX = "jeeves:"


def target_name(target: str) -> str:
    """The name a target is served and submitted under: a spec's file stem, or the reference."""
    if not isinstance(target, str) or not target.strip():
        raise UserError(f"target={target!r} is empty; give a spec file (codegen.toml) or 'module:attr'.")
    if target.endswith(".toml"):
        return Path(target).stem
    if ":" not in target:
        raise UserError(
            f"target={target!r} is neither a spec file (*.toml) nor a 'module:attr' reference; "
            f"give e.g. architectures/codegen.toml or myapp.agents:coder."
        )
    return target


def queue_name(target: str) -> str:
    """The DBOS queue runs of `target` wait on."""
    return queue_of(target_name(target))


def queue_of(name: str) -> str:
    """The DBOS queue of the target named `name` (a `target_name`, as a worker keys it)."""
    return QUEUE_PREFIX + name


@dataclass(frozen=True)
class Target:
    """One servable target: its name, a per-run builder, the source a replay rebuilds it
    from, and its approval policy (a spec's `[approvals]`; None gates nothing)."""

    name: str
    build: Callable[[], tuple[Architecture, Router | None]]
    source: Mapping[str, Any] | str
    approvals: Approvals | None = None


def _spec_target(path: str, offline: bool) -> Target:
    from jeeves.spec.build import build
    from jeeves.spec.load import load_spec
    from jeeves.spec.source import spec_source

    spec = load_spec(path)
    build(spec, offline=offline)  # a spec that cannot build stops the worker before it starts
    return Target(
        target_name(path), functools.partial(build, spec, offline=offline), spec_source(spec), spec.approvals
    )


def _ref_target(ref: str) -> Target:
    source_of(ref)  # the module imports and has the attribute

    def fresh() -> tuple[Architecture, Router | None]:
        return resolve_ref(ref), None

    fresh()  # and builds: a bad reference stops the worker before it starts
    return Target(ref, fresh, ref)


def load_targets(
    targets: Sequence[str], *, offline: bool = False, approvals: Approvals | None = None
) -> dict[str, Target]:
    """Every target loaded and built once now, by name (two with one name are refused).
    `approvals` is the policy of targets that bring none (references, specs without
    `[approvals]`)."""
    if isinstance(targets, str) or not targets:
        raise UserError(f"targets={targets!r}: give a list of spec files or 'module:attr' references.")
    loaded: dict[str, Target] = {}
    for target in targets:
        item = _spec_target(target, offline) if target.endswith(".toml") else _ref_target(target_name(target))
        if item.name in loaded:
            raise UserError(f"Two targets are named {item.name!r} ({target!r} and another); rename one.")
        if item.approvals is None and approvals is not None:
            item = dataclasses.replace(item, approvals=approvals)
        loaded[item.name] = item
    return loaded
