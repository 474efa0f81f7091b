from __future__ import annotations

from tests.examples import run_example


def test_the_eval_example_selects_with_public_examples_and_replays_the_identical_report() -> None:
    done = run_example("eval_offline.py")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].startswith("single     1/2   50.0%   9.5%-90.5%    @1=0.50  50%       1.00    86")
    assert lines[3].startswith("best_of_3  2/2   100.0%  34.2%-100.0%  @1=1.00  100%      1.00    67")
    assert lines[4] == "selection accuracy (best_of_3): 2/2 runs with a right candidate returned one"
    assert "examples  3  2/0/0/1      1.00       1.00    0.00  1.00" in done.stdout
    assert done.stdout.endswith("identical report: True\n")
