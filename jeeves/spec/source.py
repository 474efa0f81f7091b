"""Spec runs in journals: the `spec` source kind, so `jeeves replay` can rebuild them.

A run started from a spec (`jeeves run SPEC`) stores, in its root session record,
`{"kind": "spec", "path": ..., "spec": {...}}`: the architecture's table as `dump` writes
it, with test files inline, so a replay rebuilds the same architecture even after the
file changed or moved. Routes and the demo script are left out: a strict replay calls no
model, and route params are configuration that may hold credentials. Credentials in the
`params` the table keeps (an agent's, a critic's, a pinned model's) are left out too
(`jeeves.redact`); they are not part of any fingerprint, so the replay is unchanged.
`path` only makes import paths beside the spec (a tools module) importable again.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jeeves.approvals import Approvals
from jeeves.architecture import Architecture
from jeeves.errors import UserError
from jeeves.redact import strip_credentials
from jeeves.replay.source import register_loader
from jeeves.spec.build import build
from jeeves.spec.dump import spec_dict
from jeeves.spec.load import TOP_LEVEL_TABLES, load_spec, parse_spec
from jeeves.spec.models import Spec

__all__ = ["load_spec_source", "spec_policy", "spec_source"]


def spec_source(spec: Spec) -> dict[str, Any]:
    """The source to record for a run of `spec` (`architecture_ref=` of `jeeves.run`)."""
    table = {k: _no_credentials(v) for k, v in spec_dict(spec).items() if k not in TOP_LEVEL_TABLES}
    return {"kind": "spec", "path": str(spec.path.resolve()) if spec.path else None, "spec": table}


def _no_credentials(value: Any) -> Any:
    """`value` with credentials stripped from every `params` table in it, at any depth."""
    if isinstance(value, Mapping):
        return {
            k: strip_credentials(v) if k == "params" and isinstance(v, Mapping) else _no_credentials(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_no_credentials(v) for v in value]
    return value


def load_spec_source(source: Mapping[str, Any]) -> Architecture:
    """The architecture a recorded `spec` source describes."""
    table = source.get("spec")
    if not isinstance(table, Mapping):
        raise UserError(
            f"The recorded spec source {dict(source)!r} holds no spec table; pass the architecture."
        )
    path = source.get("path")
    arch, _ = build(parse_spec(table, path=path if isinstance(path, str) else None))
    return arch


def spec_policy(source: Mapping[str, Any]) -> Approvals | None:
    """The `[approvals]` of the spec file a recorded `spec` source was started from, read
    again from disk (the source leaves the policy out: a resume never enforces the journal's
    copy); None for another source, or a file that is gone (then a resume asks for one)."""
    path = source.get("path")
    if source.get("kind") != "spec" or not isinstance(path, str) or not Path(path).is_file():
        return None
    return load_spec(path).approvals


register_loader("spec", load_spec_source)
