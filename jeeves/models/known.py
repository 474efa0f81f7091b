"""Is a model string one litellm can route? Answered before any call, without importing litellm.

`import litellm` takes seconds, and litellm only says it cannot route a name (`gtp-4o`, no
provider prefix) when the first call is made, in a paragraph about Huggingface. So a route's
model string is checked when the route is built, against a snapshot of what litellm routes
(`known_models.json`, written by `scripts/refresh-known-models` from the litellm the project
is tested with):

- `provider/anything` is accepted when `provider` is one of litellm's provider prefixes
  (`openai/gpt-99` too: whether that provider has the model is the provider's answer, which
  comes back as a clear error on the first call);
- a name without a prefix is accepted when litellm maps it to a provider by itself (`gpt-4o`
  → openai, `claude-sonnet-4-5` → anthropic), as are OpenAI's fine-tuned `ft:gpt-…` names;
- anything else is refused with the nearest known name as a suggestion (`gtp-4o` →
  `openai/gpt-4o`, `antropic/claude-…` → `anthropic/claude-…`).

When litellm is already imported in the process (a newer release may know more), a name the
snapshot refuses is asked of litellm itself before it is refused.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["KnownModels", "known_models", "model_problem"]

_DATA = Path(__file__).with_name("known_models.json")
_EXAMPLE = "openai/gpt-4o-mini"


@dataclass(frozen=True)
class KnownModels:
    """The snapshot: litellm's provider prefixes and the names it routes without one."""

    litellm: str
    """The litellm release it was taken from."""
    providers: frozenset[str]
    models: dict[str, str]
    """Names litellm routes without a prefix, each with the provider it routes them to."""
    prefixed: frozenset[str]
    """Other names with a `/` litellm routes although their first part is not a provider."""


@functools.cache
def known_models() -> KnownModels:
    """The shipped snapshot, read once per process."""
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    return KnownModels(
        litellm=str(data["litellm"]),
        providers=frozenset(data["providers"]),
        models=dict(data["models"]),
        prefixed=frozenset(data["prefixed"]),
    )


def model_problem(model: str) -> str | None:
    """Why litellm cannot route `model`, with a suggestion; None when it can."""
    known = known_models()
    name = model.strip()
    if _routable(name, known) or _litellm_routes(name):
        return None
    import difflib  # only a refusal needs it: not paid by `import jeeves`

    head, slash, rest = name.partition("/")
    if slash:
        close = difflib.get_close_matches(head.lower(), sorted(known.providers), n=1)
        hint = (
            f"did you mean {close[0] + '/' + rest!r}?"
            if close
            else f"write it as PROVIDER/MODEL, e.g. {_EXAMPLE!r}."
        )
        return f"{head!r} in model {name!r} is not a provider litellm knows: {hint}"
    close = difflib.get_close_matches(name.lower(), sorted(known.models), n=1, cutoff=0.7)
    hint = (
        f"did you mean {known.models[close[0]] + '/' + close[0]!r}?"
        if close
        else f"write it as PROVIDER/MODEL, e.g. {_EXAMPLE!r}."
    )
    return f"litellm cannot route model {name!r} (no provider prefix, and not a model name it knows): {hint}"


def _routable(name: str, known: KnownModels) -> bool:
    head, slash, rest = name.partition("/")
    if slash:
        return (head in known.providers and bool(rest)) or name in known.prefixed
    return name in known.models or name.startswith(("ft:gpt-", "gpt-image"))


def _litellm_routes(name: str) -> bool:
    """Ask litellm, only if it is already imported (never import it here: seconds)."""
    litellm: Any = sys.modules.get("litellm")
    get_provider = getattr(litellm, "get_llm_provider", None)
    if get_provider is None:
        return False
    try:
        get_provider(model=name)
    except Exception:  # litellm's own "LLM Provider NOT provided": it cannot route it either
        return False
    return True
