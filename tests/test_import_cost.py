"""What `import jeeves` loads: the kernel, and nothing that waits for first use.

Each module listed here is made lazy on purpose (docs/design.md, "Import cost"); the test
runs `import jeeves` in a fresh interpreter and fails naming any that came back, so the
import cost (issue 14, bench (d)) cannot regress by a stray top-level import.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import subprocess_env

LAZY = (
    # optional dependencies and the server
    "litellm",
    "opentelemetry.sdk",
    "starlette",
    "uvicorn",
    "httpx",
    "ag_ui",
    "dbos",
    "psycopg",
    "sqlite3",
    "trio",
    "asyncio",
    # jeeves' own modules that only some runs need
    "jeeves._run.replay",
    "jeeves.journal.open",
    "jeeves._run.source",
    "jeeves.journal.sqlite",
    "jeeves.journal.jsonl",
    "jeeves.models.testing",
    "jeeves.models.litellm",
    "jeeves.approvals.decide",
    "jeeves.architectures",
    "jeeves.critics",
    "jeeves.telemetry.otel",
    "jeeves.telemetry.setup",
    "jeeves.server",
    "jeeves.spec",
    "jeeves.durable",
    # stdlib modules pulled in by pydantic's plugin scan (a schema built at import) or used rarely
    "importlib.metadata",
    "email",
    "zipfile",
    "difflib",
    "socket",  # the lease owner's host name, looked up on first lease
)

CODE = """
import json, sys
import jeeves
from jeeves._base.validate import ConfigModel
built = [c.__name__ for c in (jeeves.Budget, jeeves.Route, ConfigModel) if c.__pydantic_complete__]
print(json.dumps({"modules": sorted(sys.modules), "built": built}))
"""


def _fresh_import() -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, env=subprocess_env(), check=True
    )
    result: dict[str, list[str]] = json.loads(done.stdout)
    return result


def test_import_jeeves_loads_none_of_the_lazy_modules_and_builds_no_validator() -> None:
    seen = _fresh_import()
    loaded = set(seen["modules"])
    assert [m for m in LAZY if m in loaded] == []
    assert "jeeves._run.runner" in loaded and "pydantic" in loaded  # the check itself reads the right process
    assert seen["built"] == []  # validators are built at first use, not at import


def test_the_lazy_names_still_resolve_and_a_late_import_does_not_shadow_jeeves_replay() -> None:
    code = (
        "import jeeves, jeeves._run.replay, jeeves.journal.sqlite\n"  # what a first run with a journal loads
        "from jeeves import FunctionModel, ScriptedModel\n"
        "from jeeves import register_loader\nfrom jeeves.journal import open_journal\n"
        "print(ScriptedModel.__module__, FunctionModel.__module__, open_journal.__module__,\n"
        "      register_loader.__module__, jeeves.replay.__module__, callable(jeeves.replay))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), check=True
    )
    assert done.stdout.split() == [
        "jeeves",  # a front-door name shows the front door as its module
        "jeeves.models.testing",  # a dataclass keeps its own (its annotations resolve there)
        "jeeves.journal.open",
        "jeeves",  # register_loader: a front-door name
        "jeeves",  # `jeeves.replay` is still the function, not the subpackage
        "True",
    ]
