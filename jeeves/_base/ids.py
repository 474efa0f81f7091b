"""Session ids and role names.

Ids below the root are a pure function of the parent id, the child's role and an index:
`child_id("job-1", "critic", 2) == "job-1__critic_2"`. Nothing below the root reads a
clock, `random` or `uuid` to name anything, so the same program given the same root id
names every session the same way in every process, which is what replay keys on.
Because role names may not contain `__`, the id of a session also spells its path
from the root, and a session's subtree is every id that starts with `f"{id}__"`. A root id
may not end with `_` either: the children of `job_` (`job___critic_0`) would start with
`job__`, inside the subtree of a run `job`.
"""

from __future__ import annotations

import re
import secrets

from jeeves.errors import UserError

__all__ = ["child_id", "new_root_id", "validate_name", "validate_root_id"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_ROOT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def validate_name(name: object, *, what: str = "role") -> str:
    """Return `name` if it is a valid role or worker name, else raise UserError."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or "__" in name:
        raise UserError(
            f"Invalid {what} name {name!r}: use lowercase letters, digits and single underscores, "
            f"starting with a letter (pattern [a-z][a-z0-9_]*, no '__'), e.g. 'critic' or 'code_reviewer'."
        )
    return name


def validate_root_id(session_id: object) -> str:
    """Return `session_id` if it can be a root session id, else raise UserError."""
    if (
        not isinstance(session_id, str)
        or not _ROOT.fullmatch(session_id)
        or "__" in session_id
        or session_id.endswith("_")
    ):
        raise UserError(
            f"Invalid session_id {session_id!r}: use letters, digits and . _ : - (no '__', "
            f"which separates a child's role from its parent, and no '_' at the end, which "
            f"would make its children's ids start like those of the run without it), e.g. 'job-1'."
        )
    return session_id


def child_id(parent: str, role: str, index: int) -> str:
    """The id of the `index`-th child with `role` under `parent`: `f"{parent}__{role}_{index}"`."""
    if index < 0:
        raise UserError(f"Invalid child index {index!r} for role {role!r}: indices start at 0.")
    return f"{parent}__{role}_{index}"


def new_root_id() -> str:
    """A fresh root id, for runs whose caller did not pass `session_id=`."""
    return f"run-{secrets.token_hex(6)}"
