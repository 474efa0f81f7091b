"""A server's tool annotations as jeeves approval modes (pure; no I/O).

MCP tool annotations are hints a server gives about its tools; jeeves reads them as the
tool's approval mode, so a run's `Approvals` policy gates, runs inline or refuses an MCP
tool exactly as it does a Python tool that declared that mode:

| annotations                                   | mode          |
| --------------------------------------------- | ------------- |
| `readOnlyHint: true`                          | `read_only`   |
| `destructiveHint: true` (or unsaid: default)  | `destructive` |
| `destructiveHint: false`, `openWorldHint` true or unsaid | `network` |
| `destructiveHint: false`, `openWorldHint: false` | `local_write` |
| no annotations at all                         | the server's `unannotated` mode (`destructive`) |

The spec's defaults are used for an unsaid hint (destructive: true, openWorld: true), so a
tool is only ever made *less* guarded by a hint the server stated. `idempotentHint` does
not change the mode; it is kept on the tool (`MCPTool.idempotent`). A server can lie:
`mode=` (the whole server) and `modes=` (per tool, by name or glob) override the hints.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from jeeves.approvals.policy import ApprovalMode

__all__ = ["annotation_mode", "resolve_mode"]


def annotation_mode(annotations: Mapping[str, Any] | None, *, unannotated: ApprovalMode) -> ApprovalMode:
    """The approval mode the hints in `annotations` (the spec's camelCase keys) say."""
    if not annotations or not any(k.endswith("Hint") for k in annotations):
        return unannotated
    if annotations.get("readOnlyHint") is True:
        return "read_only"
    if annotations.get("destructiveHint", True) is not False:
        return "destructive"
    if annotations.get("openWorldHint", True) is not False:
        return "network"
    return "local_write"


def resolve_mode(
    tool: str,
    annotations: Mapping[str, Any] | None,
    *,
    mode: ApprovalMode | None,
    modes: Mapping[str, ApprovalMode],
    unannotated: ApprovalMode,
) -> ApprovalMode:
    """A tool's mode: its own override (exact name, then the first matching glob), else the
    server's override, else what its annotations say."""
    if tool in modes:
        return modes[tool]
    for pattern, value in modes.items():
        if fnmatch.fnmatchcase(tool, pattern):
            return value
    if mode is not None:
        return mode
    return annotation_mode(annotations, unannotated=unannotated)
