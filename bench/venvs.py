"""Each peer framework gets its own venv under bench/.venvs/NAME, built from a pinned requirements file.

A venv is reused while the requirements file is unchanged (a hash stamp inside the venv);
otherwise it is rebuilt. Standard library only.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
VENVS = BENCH / ".venvs"


class InstallFailed(RuntimeError):
    """pip (or venv) failed; the message ends with the tail of its output."""


def _stamp(requirements: Path) -> str:
    return hashlib.sha256(requirements.read_bytes()).hexdigest()


def venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def ensure_venv(name: str, requirements: Path, *, timeout_s: float = 420) -> Path:
    """The python of venv `name` with `requirements` installed; builds it when missing or stale."""
    home = VENVS / name
    stamp_file = home / ".bench-stamp"
    python = venv_python(name)
    if python.exists() and stamp_file.exists() and stamp_file.read_text() == _stamp(requirements):
        return python
    if home.exists():
        shutil.rmtree(home)
    home.parent.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"{name}.install.log"
    steps = [
        [sys.executable, "-m", "venv", str(home)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", str(requirements)],
    ]
    with log.open("w") as out:
        for step in steps:
            try:
                done = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise InstallFailed(f"{' '.join(step[-3:])} timed out after {timeout_s:.0f} s") from None
            if done.returncode != 0:
                lines = [ln for ln in log.read_text().splitlines() if not ln.startswith("WARNING: Location")]
                raise InstallFailed(
                    f"`{' '.join(step[-4:])}` exited {done.returncode}:\n" + "\n".join(lines[-12:])
                )
    stamp_file.write_text(_stamp(requirements))
    return python
