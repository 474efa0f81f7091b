"""(f) replay vs live: placeholder until jeeves.replay and bench/replay.py are on this checkout."""

from __future__ import annotations

from collections.abc import Mapping

import common


def main(versions: Mapping[str, str]) -> None:
    common.fail_part("f", "jeeves.replay is not on this checkout yet (branch replay)", versions)
