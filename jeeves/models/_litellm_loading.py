"""Importing litellm without stalling the event loop, once per process.

`import litellm`, and the lazy imports its first call makes (the OpenAI SDK's resources,
the tokenizer), take seconds. Made on the event loop, they would freeze every other run
and stream for that long, so `load_litellm` makes them in a worker thread, and a lock
shared by every thread makes concurrent first calls (and `preload`) share one import.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import threading
from typing import Any

import anyio

__all__ = ["OFFLINE_SWITCHES", "litellm_module", "load_litellm", "no_mcp_hook", "preload", "warm"]

OFFLINE_SWITCHES = (
    "LITELLM_LOCAL_MODEL_COST_MAP",  # the price map, downloaded at import
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",  # Anthropic's beta headers, at the first Anthropic call
    "LITELLM_LOCAL_BLOG_POSTS",  # the rest are read by litellm's proxy only; set for completeness
    "LITELLM_LOCAL_POLICY_TEMPLATES",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS",
)
"""litellm's switches that make it read its bundled copy of a file instead of fetching it.

Each is set to `True` before the import unless the user set it: a call must reach only the
provider. (`tests/models/test_litellm_offline.py` reads the installed litellm's source for
any switch missing here.)
"""


_loaded: list[Any] = []
"""litellm once imported (empty until then); `_import_lock` makes the import happen once."""
_import_lock = threading.Lock()


def litellm_module() -> Any:
    """litellm, imported once, offline-safe, with its "Give Feedback" banner off (we report errors).

    Offline-safe: every switch in `OFFLINE_SWITCHES` the user left unset is set, and
    litellm's Hugging Face tokenizer download is off unless the user turned it on, so
    nothing but the provider is fetched.

    This blocks for the import the first time: on the event loop, call `load_litellm()`
    first. The lock makes threads that ask at once (concurrent first calls, `preload`)
    share one import; later calls only read `_loaded`.
    """
    if not _loaded:
        with _import_lock:
            if not _loaded:
                for name in OFFLINE_SWITCHES:
                    os.environ.setdefault(name, "True")
                import litellm

                litellm.suppress_debug_info = True
                if litellm.disable_hf_tokenizer_download is None:  # counting tokens: tiktoken, bundled
                    litellm.disable_hf_tokenizer_download = True
                warm(litellm)
                _loaded.append(litellm)
    return _loaded[0]


def warm(litellm: Any) -> None:
    """Load now what litellm and the OpenAI SDK otherwise load during the first call.

    `import litellm` defers much of itself: the first call imports hundreds more modules
    (the OpenAI SDK's resources, the tokenizer, the service logger), seconds on a busy
    machine, on whichever thread makes it, so on the event loop. Doing it here keeps it in
    the importing thread. Best effort, offline: a step that fails only means the first call
    loads that part itself.
    """
    no_mcp_hook()  # finding the module imports its parents
    hello = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    steps = (
        lambda: list(litellm.completion(**hello, mock_response="hi", stream=True)),  # tokenizer, logging
        lambda: importlib.import_module("openai").AsyncOpenAI(api_key="unused").chat.completions,
        lambda: importlib.import_module("litellm._service_logger"),
    )
    for step in steps:
        try:
            step()
        except Exception:  # an optional speed-up: the real call reports real errors
            continue


async def load_litellm() -> Any:
    """litellm, without blocking the event loop: the first time, imported in a worker thread.

    Works on asyncio and trio. A caller cancelled while it waits leaves at once; the import
    goes on in its thread and serves the next call.
    """
    if _loaded:
        return _loaded[0]
    return await anyio.to_thread.run_sync(litellm_module, abandon_on_cancel=True)


def preload() -> threading.Thread:
    """Start importing litellm in a background (daemon) thread and return at once.

    For a process that will make live calls (`jeeves serve` with live routes): the first
    call then finds litellm loaded, or waits only for the rest of the one import.
    """
    thread = threading.Thread(target=litellm_module, name="jeeves-litellm-preload", daemon=True)
    thread.start()
    return thread


@functools.cache
def no_mcp_hook() -> dict[str, bool]:
    """Turn off litellm's MCP gateway hook, where this litellm has one.

    The hook runs on every call with tools and imports the optional `mcp` package, so
    without it every tool call fails. jeeves sends only function tools, which the hook
    leaves alone anyway; litellm versions that have the hook accept `_skip_mcp_handler`.
    `litellm_module` looks it up right after the import, in the importing thread.
    """
    found = importlib.util.find_spec("litellm.responses.mcp.chat_completions_handler") is not None
    return {"_skip_mcp_handler": True} if found else {}
