"""`python -m tests.server.gated_serve JOURNAL`: what `jeeves serve --journal JOURNAL` runs, over
the gated test catalog (tests/server/gated.py), on a free port of 127.0.0.1.

The restart tests start it, stop it (SIGTERM or SIGKILL) while a run waits at a gate, and
start it again on the same journal. Calls are counted in `$JEEVES_TEST_COUNTS`.
"""

from __future__ import annotations

import sys

from jeeves.cli.serve import serve_demo
from tests.server.gated import POLICY, refund_entry, team_entry

if __name__ == "__main__":
    sys.exit(
        serve_demo(
            port=0,
            architectures={"refund": refund_entry, "team": team_entry},
            journal=sys.argv[1],
            approvals=POLICY,
            shutdown_s=1,
        )
    )
