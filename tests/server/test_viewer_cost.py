"""The viewer's cost text matches the CLI's: a call without a known price is unpriced, never $0.

The page's own functions (viewer.js, which the explorer shares) run under node, so this
holds without a browser.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from jeeves.messages import Usage, format_cost
from tests.conftest import REPO

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs node")


def _functions(*names: str) -> str:
    source = (REPO / "jeeves" / "server" / "static" / "viewer.js").read_text()
    found = [re.search(rf"^function {name}\(.*?^}}$", source, re.S | re.M) for name in names]
    assert all(found), names
    return "\n".join(m.group(0) for m in found if m)


def test_the_viewer_says_unpriced_as_the_cli_does() -> None:
    usages = [
        Usage(input_tokens=5, model_calls=2, cost_usd=0.0104),
        Usage(input_tokens=5, model_calls=1, cost_usd=None),  # one call litellm cannot price
        Usage(model_calls=3, cost_usd=0.0123, unpriced_calls=1),
        Usage(model_calls=2, cost_usd=None, unpriced_calls=2),
        Usage(model_calls=1, cost_usd=0.000031),
    ]
    script = (
        _functions("formatUsd", "unpricedOf", "formatCost", "usageCost")
        + f"\nconsole.log(JSON.stringify({json.dumps([u.model_dump(mode='json') for u in usages])}.map(usageCost)));"
    )
    assert NODE is not None
    done = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown == [format_cost(u) for u in usages]
    assert shown[1:4] == ["unpriced (1 call)", "$0.0123 + unpriced (1 call)", "unpriced (2 calls)"]
