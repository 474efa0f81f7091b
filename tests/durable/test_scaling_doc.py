"""docs/scaling.md's command sequences run as written, offline, in a fresh folder: each bash
block marked `<!-- doc-test: NAME -->` is run line by line as a user types it (`export` sets
the environment, a line ending in `&` starts a worker in the background, every other line
must exit 0), on SQLite and on a throwaway PostgreSQL. A doc and its commands cannot drift."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, offline_env
from tests.postgres import Cluster

DOC = REPO / "docs" / "scaling.md"


def block(name: str) -> list[str]:
    """The command lines of the bash block marked `<!-- doc-test: name -->`."""
    found = re.search(rf"<!-- doc-test: {name} -->\n```bash\n(.*?)```", DOC.read_text(), re.S)
    assert found, f"docs/scaling.md has no block marked doc-test: {name}"
    return [line.split("  #")[0].strip() for line in found.group(1).splitlines() if line.strip()]


def run_block(lines: list[str], folder: Path, database: str | None = None) -> dict[str, str]:
    """Run `lines` in `folder`; returns each command's output by its first words."""
    shutil.copytree(REPO / "architectures", folder / "architectures")
    env = offline_env()
    outputs: dict[str, str] = {}
    background: list[subprocess.Popen[str]] = []
    try:
        for line in lines:
            if line.startswith("export "):
                key, _, value = line.removeprefix("export ").partition("=")
                env[key] = database if database is not None and key == "JEEVES_DATABASE" else value
                continue
            typed = line.removesuffix("&").replace("$JEEVES_DATABASE", env.get("JEEVES_DATABASE", ""))
            words = shlex.split(typed)
            assert words[0] == "jeeves", line
            command = [sys.executable, "-m", "jeeves", *words[1:]]
            if line.endswith("&"):
                background.append(_start_worker(command, folder, env))
                continue
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
            outputs[" ".join(words[:2])] = done.stdout
    finally:
        for process in background:
            process.terminate()
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
    return outputs


def _start_worker(command: list[str], folder: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if re.match(r"jeeves worker \S+ ready: codegen", line):
            return process
    raise AssertionError(f"the worker exited before it was ready:\n{''.join(seen)}")


def check(outputs: dict[str, str]) -> None:
    assert "def parse_duration" in outputs["jeeves submit"]  # the demo script's answer, waited for
    assert re.search(r"job-17\s+completed", outputs["jeeves runs"]), outputs["jeeves runs"]
    assert "parse_duration" in outputs["jeeves replay"]


def test_the_sqlite_sequence_runs_as_written(tmp_path: Path) -> None:
    check(run_block(block("sqlite"), tmp_path))


@pytest.mark.postgres
def test_the_postgresql_sequence_runs_as_written(tmp_path: Path, postgres_cluster: Cluster) -> None:
    check(run_block(block("postgresql"), tmp_path, database=postgres_cluster.database()))
