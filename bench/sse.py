"""(g) SSE events per second from `jeeves serve`: placeholder until the server is on this checkout."""

from __future__ import annotations

from collections.abc import Mapping

import common


def main(versions: Mapping[str, str]) -> None:
    common.fail_part("g", "`jeeves serve` is not on this checkout yet (branch server)", versions)
