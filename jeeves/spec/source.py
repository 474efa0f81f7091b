"""Spec runs in journals: the `spec` source kind, so `jeeves replay` can rebuild them.

A run started from a spec (`jeeves run SPEC`) stores, in its root session record,
`{"kind": "spec", "path": ..., "spec": {...}}`: the architecture's table as `dump` writes
it, with test files inline, so a replay rebuilds the same architecture even after the
file changed or moved. Routes and the demo script are left out: a strict replay calls no
model, and route params are configuration that may hold credentials; only the model
strings of `--model ROLE=MODEL` flags are kept (`"models"`), for `jeeves resume`. Credentials in the
`params` the table keeps (an agent's, a critic's, a pinned model's) are left out too
(`jeeves._base.redact`); they are not part of any fingerprint, so the replay is unchanged.
`path` only makes import paths beside the spec (a tools module) importable again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jeeves._base.redact import strip_credentials
from jeeves._run.context import Architecture
from jeeves._run.source import register_loader
from jeeves.errors import UserError
from jeeves.spec.build import build
from jeeves.spec.dump import spec_dict
from jeeves.spec.load import TOP_LEVEL_TABLES, parse_spec
from jeeves.spec.models import Spec

__all__ = ["load_spec_source", "spec_source"]


def spec_source(
    spec: Spec, models: Mapping[str, str] | None = None, *, offline: bool = False
) -> dict[str, Any]:
    """The source to record for a run of `spec` (`architecture_ref=` of `jeeves.run`).

    `models` are the routes given over the spec's `[models]` (`--model ROLE=MODEL`), kept
    as `"models"` so `jeeves resume` without `--spec` routes the run as it was routed;
    `offline` (a run of the `[demo]` script) is kept so the commands printed to go on with
    the run say `--offline`."""
    table = {k: _no_credentials(v) for k, v in spec_dict(spec).items() if k not in TOP_LEVEL_TABLES}
    source = {"kind": "spec", "path": str(spec.path.resolve()) if spec.path else None, "spec": table}
    return source | ({"models": dict(models)} if models else {}) | ({"offline": True} if offline else {})


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


register_loader("spec", load_spec_source)
