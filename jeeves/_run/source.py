"""How a recorded run names its architecture, so `jeeves replay` can rebuild it.

A replay re-runs the architecture's code against the journal, so it needs the same
architecture object. The root session record keeps a *source*: a small JSON object with a
`kind`. jeeves ships one kind, `import` (`{"kind": "import", "ref": "pkg.module:attr"}`,
an Architecture object or a zero-argument factory defined in that module); other kinds
(a declarative spec dumped into the record, say) are added with `register_loader` by the
module that understands them, so this module never imports from above its layer.

Rebuilding imports code named by the journal. Only replay journals you trust, or pass
the architecture yourself (`jeeves.replay(arch, ...)`, `jeeves replay --spec`).
"""

from __future__ import annotations

import importlib
import inspect
import re
import traceback
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from jeeves._run.context import Architecture
from jeeves.errors import UserError

__all__ = ["import_object", "load_architecture", "register_loader", "resolve_ref", "source_of"]

SourceLoader = Callable[[Mapping[str, Any]], Architecture]
"""Builds the architecture a source describes; raises UserError when it cannot."""

_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_LOOP_RUNNING = re.compile(r"already running|running event loop|inside a run\(\)", re.IGNORECASE)
"""What anyio.run, asyncio.run and trio.run say when called inside a running loop."""
_LOADERS: dict[str, SourceLoader] = {}


def register_loader(kind: str, loader: SourceLoader) -> None:
    """Teach `load_architecture` a new kind of source (`"spec"`, say)."""
    _LOADERS[kind] = loader


def _is_architecture(value: object) -> bool:
    return not isinstance(value, type) and callable(getattr(value, "run", None)) and hasattr(value, "name")


def _lookup(ref: str) -> tuple[Any, str]:
    if not isinstance(ref, str) or not _REF.fullmatch(ref):
        raise UserError(
            f"Architecture reference {ref!r} is not an import path; write 'package.module:attribute', "
            f"e.g. 'myapp.agents:build_reviewer'."
        )
    module_name, _, attr = ref.partition(":")
    if module_name == "__main__":
        raise UserError(
            f"Architecture reference {ref!r} points into __main__, which another process cannot import; "
            f"move the architecture into a module and reference that."
        )
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"Cannot import {module_name!r} for {ref!r} ({exc}); check the module path.") from exc
    except RuntimeError as exc:
        if not _LOOP_RUNNING.search(str(exc)):
            raise _failed_import(module_name, ref, exc) from exc
        _drop_frames(exc)
        raise UserError(
            f"Importing {module_name!r} (for {ref!r}) starts an event loop ({exc}), but jeeves is already "
            f"running one; put the module's anyio.run()/asyncio.run() call under "
            f'`if __name__ == "__main__":` so that importing it only defines things.'
        ) from None
    except Exception as exc:  # the module's own code failed: a syntax error, a name, a raise
        raise _failed_import(module_name, ref, exc) from exc
    for part in attr.split("."):
        if not hasattr(value, part):
            raise UserError(f"{module_name!r} has no attribute {attr!r} (from {ref!r}); check the name.")
        value = getattr(value, part)
    return value, module_name


def _failed_import(module_name: str, ref: str, exc: Exception) -> UserError:
    """The one line for a module whose own code failed as it was imported: what it raised,
    and where in the module's files (the deepest frame outside jeeves and importlib)."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}, line {exc.lineno}"
        what = f"SyntaxError: {exc.msg}"
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename]
        where = f"{frames[-1].filename}, line {frames[-1].lineno}" if frames else module_name
        what = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
    return UserError(
        f"Importing {module_name!r} (for {ref!r}) failed at {where}: {what}. Fix the module (python -c "
        f"'import {module_name}' shows the whole traceback)."
    )


def _drop_frames(exc: BaseException) -> None:
    """Free what the failed import's frames hold, now: an `asyncio.run(main())` that never
    ran leaves a coroutine there, which would warn "never awaited" at exit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        traceback.clear_frames(exc.__traceback__)


def import_object(ref: str) -> Any:
    """The object `package.module:attr.path` names (specs name tools and critics this way too)."""
    value, _ = _lookup(ref)
    return value


def resolve_ref(ref: str) -> Architecture:
    """The architecture `module:attr` names: the object itself, or what its factory returns.

    A factory (a function or class) must be defined in the module the path names, so a
    journal cannot make a replay call arbitrary functions of other modules.
    """
    value, module_name = _lookup(ref)
    if not _is_architecture(value):
        if not (inspect.isfunction(value) or inspect.isclass(value)) or value.__module__ != module_name:
            raise UserError(
                f"{ref!r} is {value!r}: not an architecture, nor a factory function or class defined in "
                f"{module_name!r}. Point it at an Architecture or a zero-argument function returning one."
            )
        value = value()
    if not _is_architecture(value):
        raise UserError(f"{ref!r} gave {value!r}, which is not an architecture (no `name` and `run`).")
    return value  # type: ignore[no-any-return]


def _load_import(source: Mapping[str, Any]) -> Architecture:
    return resolve_ref(str(source.get("ref")))


register_loader("import", _load_import)


def source_of(ref: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The source to store for `architecture_ref=`: checked now, so a typo fails at record time."""
    if ref is None:
        return None
    if isinstance(ref, str):
        _lookup(ref)  # the module imports and has the attribute; factories are not called
        return {"kind": "import", "ref": ref}
    kind = ref.get("kind") if isinstance(ref, Mapping) else None
    if not isinstance(kind, str) or kind not in _LOADERS:
        raise UserError(
            f"architecture_ref {ref!r} is not a source jeeves can rebuild; pass 'module:attr' or a mapping "
            f"with a registered 'kind' ({sorted(_LOADERS)!r})."
        )
    return dict(ref)


def load_architecture(source: Mapping[str, Any] | None, *, session_id: str) -> Architecture:
    """Rebuild the architecture of recorded run `session_id` from its stored source."""
    if source is None:
        raise UserError(
            f"The journal does not say how to rebuild the architecture of run {session_id!r}; pass it "
            f"(jeeves.replay(arch, ...), or `jeeves replay --spec module:attr`), or record with "
            f"jeeves.run(..., architecture_ref='module:attr')."
        )
    loader = _LOADERS.get(str(source.get("kind")))
    if loader is None:
        given = "pass the architecture (jeeves.replay(arch, ...), or `jeeves replay JOURNAL ID --spec SPEC.toml|module:attr`)"
        if source.get("kind") == "served":  # the server's catalog is not in this process
            raise UserError(
                f"Run {session_id!r} was started by `jeeves serve` (its entry {source.get('name')!r}), whose catalog "
                f"this process does not hold; {given}, or browse it in `jeeves serve SPEC.toml --journal JOURNAL`."
            )
        raise UserError(
            f"Run {session_id!r} was recorded from a {source.get('kind')!r} source, which this process cannot "
            f"rebuild (known: {sorted(_LOADERS)!r}); import the module that registers it, or {given}."
        )
    return loader(source)
