"""Build pydantic models on the hot path without validating values already typed.

The events and usage snapshots a run makes by itself come from values whose types the
code guarantees (mypy --strict checks the call sites): a session id, an int step, a
`Usage` the books just summed. Validating them again is most of the cost of building
such a small model, and a streamed ActorCritic loop builds ~60 of them.

`trusted(cls)` returns a constructor for `cls`, generated once per class as the standard
library's dataclasses generate `__init__`: keyword arguments only, each stored as given.
The instance is the one validation would make from the same (already valid) values: the
same `__dict__` in field order, the same `model_fields_set` (the names given), defaults
and default factories filled in; a missing required field or an unknown one is a
`TypeError`. It refuses (`TypeError`) a class whose instances validation would change:
validators, `model_post_init`, private attributes, extra fields, aliases, a root model.

Values that come from a user (a task, a tool's arguments, a model's reply) still go
through the class itself; only the run's own bookkeeping takes this path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted"]

M = TypeVar("M", bound=BaseModel)


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


def _check(cls: type[BaseModel]) -> None:
    decorators = cls.__pydantic_decorators__
    changes = (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or cls.__pydantic_post_init__
        or cls.__private_attributes__
        or cls.__pydantic_root_model__
        or cls.model_config.get("extra") == "allow"
        or any(f.alias is not None or f.validation_alias is not None for f in cls.model_fields.values())
    )
    if changes:
        raise TypeError(
            f"{cls.__name__} validates or transforms its values (validators, post-init, private attributes, "
            f"extras or aliases); build it with {cls.__name__}(...), not trusted()."
        )


def trusted(cls: type[M]) -> Callable[..., M]:
    """A constructor for `cls` that stores the given values as they are (see the module doc)."""
    _check(cls)
    names: dict[str, Any] = {"_cls": cls, "_new": object.__new__, "_set": object.__setattr__, "_U": _UNSET}
    params, items, given = [], [], []
    for i, (name, field) in enumerate(cls.model_fields.items()):
        if field.is_required():
            params.append(f"{name}")
            items.append(f"{name!r}: {name}")
            given.append(repr(name))
            continue
        params.append(f"{name}=_U")
        if field.default_factory is not None:
            names[f"_f{i}"] = field.default_factory
            default = f"_f{i}()"
        else:
            names[f"_d{i}"] = field.default
            default = f"_d{i}"
        items.append(f"{name!r}: {default} if {name} is _U else {name}")
    optional = [name for name, field in cls.model_fields.items() if not field.is_required()]
    lines = [
        f"def trusted_{cls.__name__}(*, {', '.join(params)}):",
        "    m = _new(_cls)",
        f"    _set(m, '__dict__', {{{', '.join(items)}}})",
        f"    given = {{{', '.join(given)}}}" if given else "    given = set()",
        *(f"    if {name} is not _U: given.add({name!r})" for name in optional),
        "    _set(m, '__pydantic_fields_set__', given)",
        "    _set(m, '__pydantic_extra__', None)",
        "    _set(m, '__pydantic_private__', None)",
        "    return m",
    ]
    exec("\n".join(lines), names)  # generated from the class's own field names
    build: Callable[..., M] = names[f"trusted_{cls.__name__}"]
    build.__module__ = cls.__module__
    return build
