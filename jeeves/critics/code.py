"""The code critic: run the candidate's Python against a pytest file, score the result.

This is isolation, not a security sandbox. The candidate runs as your user, in a fresh
temporary directory, in its own process group, with a minimal environment (no API keys
from yours), a timeout, and, where the OS enforces it (Linux), an address-space cap.
When the review ends (done, timed out or cancelled) every process the candidate started
is ended, including those it put in sessions of their own and double-forked daemons
(`jeeves.critics.reaper`: a subreaper supervisor on Linux, the process group elsewhere). It can still read your files, use the network, and, if
it is written to cheat, patch pytest or rewrite the report. Run code you do not trust
inside a container or a VM.

What counts (see `CodeCritic`): score = passed / collected tests. A hard fail (never
approved) is a syntax error, an import or collection error, a timeout, a run that ends
without a report, or, with `all_must_pass=True` (the default), any failing test.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import Process

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_int, check_number
from jeeves._run.context import Caller
from jeeves.critics import reaper
from jeeves.critics.base import Review
from jeeves.critics.junit import STARTED, PytestReport, read_report
from jeeves.critics.reaper import MARKER, kill_marked
from jeeves.critics.verdict import Verdict, computed_verdict
from jeeves.errors import CriticError, UserError

if TYPE_CHECKING:
    from jeeves._run.context import Context

__all__ = ["CodeCritic", "extract_code"]

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = {"python", "py", "python3"}
_SUPERVISOR_GRACE_S = 15.0
"""How long a timed-out or cancelled review waits for its supervisor's sweep (bounded at 10 s)."""
_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")
# Runs in the child: cap the address space where the OS allows, then hand over to pytest.
_BOOT = """\
import sys
limit = int(sys.argv[1])
if limit:
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass
import pytest
sys.stderr.write("%s\\n" % MARKER)
sys.stderr.flush()
raise SystemExit(pytest.main(sys.argv[2:]))
""".replace("MARKER", repr(STARTED))


def extract_code(text: str) -> str:
    """The Python in an answer: the largest ```python block (the last one on ties).

    Largest, because answers often end with a short usage example after the solution.
    Without a python-tagged block, the largest untagged block; without any fence, the
    whole text. Blocks tagged with another language (```bash) are never taken.
    """
    blocks = [(tag.lower(), textwrap.dedent(body)) for tag, body in _FENCE.findall(text)]
    for wanted in (_PYTHON_TAGS, {""}):
        bodies = [body for tag, body in blocks if tag in wanted]
        if bodies:
            return max(reversed(bodies), key=len)
    return text if not blocks else ""


class CodeCritic:
    """Runs the candidate's code against your pytest tests in a subprocess.

    ```python
    CodeCritic(Path("tests/test_slugify.py").read_text(), module="slugify")
    ```

    The candidate's code (see `extract_code`) is written to `{module}.py` beside the test
    file, so the tests import it (`from solution import add`). Issues name each failing
    test with its assertion message. The run is one journaled step: a replay returns the
    recorded verdict without running pytest.

    Args:
        tests: The pytest file's source.
        module: The module name the tests import the candidate as.
        test_file: The file name the tests are written to.
        timeout_s: Wall-clock seconds before every process of the run is killed (a hard fail).
        memory_mb: Address-space cap in MiB where the OS enforces RLIMIT_AS; None for none.
        all_must_pass: A failing test is a hard fail (the score still counts passes, so a
            better candidate ranks higher). False: only the score decides.
        name: The source tag of its verdicts.
        python: The interpreter to run pytest with (it must have pytest); this one by default.
        plugins: Extra `-p` plugins; plugin autoloading is off so runs are reproducible.
        env: Extra environment variables for the test process.
        evidence: Who wrote the tests: "task_tests" (the task or you) or "model_tests" (a
            model, for its own answer: weaker evidence, marked so on every verdict).
    """

    kind = "code_critic"

    def __init__(
        self,
        tests: str,
        *,
        module: str = "solution",
        test_file: str = "test_solution.py",
        timeout_s: float = 60.0,
        memory_mb: int | None = 1024,
        all_must_pass: bool = True,
        name: str = "tests",
        python: str | None = None,
        plugins: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        evidence: Literal["task_tests", "model_tests"] = "task_tests",
    ) -> None:
        if not isinstance(tests, str) or "def test" not in tests:
            # A one-line string is likely a path passed by mistake: show it. Text is not
            # shown: it may be a file's contents, and errors travel further than files.
            shown = (
                repr(tests)
                if not isinstance(tests, str) or "\n" not in tests
                else f"{len(tests)} characters of text"
            )
            raise UserError(
                f"CodeCritic needs the pytest file's source with at least one `def test...`, got {shown:.120}. "
                f"Pass Path('tests/test_x.py').read_text(), not the path."
            )
        if not module.isidentifier():
            raise UserError(f"module={module!r} is not an importable module name; use e.g. 'solution'.")
        if not test_file.endswith(".py") or Path(test_file).name != test_file or test_file == f"{module}.py":
            raise UserError(
                f"test_file={test_file!r} must be a bare file name ending in .py, other than the module's."
            )
        check_number(timeout_s, name="CodeCritic timeout_s", minimum=0, above=True)
        if memory_mb is not None:
            check_int(
                memory_mb, name="CodeCritic memory_mb (None, or 64 or more for Python and pytest)", minimum=64
            )
        self.tests = tests
        self.module = module
        self.test_file = test_file
        self.timeout_s = float(timeout_s)
        self.memory_mb = memory_mb
        self.all_must_pass = all_must_pass
        self.name = validate_name(name, what="critic")
        self.python = python or sys.executable
        self.plugins = tuple(plugins)
        self.env = dict(env or {})
        if evidence not in ("task_tests", "model_tests"):
            raise UserError(f"CodeCritic evidence={evidence!r} must be 'task_tests' or 'model_tests'.")
        self.evidence: Literal["task_tests", "model_tests"] = evidence

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller]:
        """None: it calls no model (see `jeeves._run.context.model_callers`)."""
        return []

    async def review(self, ctx: Context, review: Review) -> Verdict:
        code = extract_code(review.output)
        request = {
            "code": code,
            "tests": self.tests,
            "module": self.module,
            "test_file": self.test_file,
            "all_must_pass": self.all_must_pass,
            "plugins": list(self.plugins),
        }

        async def live() -> Verdict:
            return await self.check(code)

        verdict, _ = await ctx.step("function", self.name, request, live, Verdict)
        return verdict.model_copy(update={"evidence": self.evidence})

    async def check(self, code: str) -> Verdict:
        """Run the tests against `code` now (no journal): the verdict `review` records."""
        if not code.strip():
            issue = "the answer has no Python code; put the whole program in one ```python block"
            return computed_verdict(self.name, 0.0, [issue], "There is no code to test.", hard_fail=True)
        try:
            compile(code, f"{self.module}.py", "exec")
        except SyntaxError as exc:
            where = f"line {exc.lineno}: " if exc.lineno else ""
            line = f" in {exc.text.strip()!r}" if exc.text and exc.text.strip() else ""
            issue = f"syntax error in {self.module}.py {where}{exc.msg}{line}"
            return computed_verdict(self.name, 0.0, [issue], "The code does not compile.", hard_fail=True)
        workdir = Path(tempfile.mkdtemp(prefix="jeeves-code-"))
        try:
            _write_files(
                workdir, {f"{self.module}.py": code, self.test_file: self.tests, "pytest.ini": "[pytest]\n"}
            )
            returncode, timed_out = await self._run_pytest(workdir)
            if timed_out:
                issue = f"timed out after {self.timeout_s:g}s: the tests did not finish (an infinite loop or a blocking call?)"
                return computed_verdict(self.name, 0.0, [issue], "The test run timed out.", hard_fail=True)
            return self._judge(read_report(workdir, returncode))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _judge(self, report: PytestReport) -> Verdict:
        if report.infrastructure_error:
            raise CriticError(f"pytest could not run with {self.python!r}: {report.infrastructure_error}")
        if report.broken:
            return computed_verdict(
                self.name, 0.0, report.broken, "The tests could not run against this code.", hard_fail=True
            )
        if report.total == 0:
            raise UserError(
                f"The tests in {self.test_file!r} collected no tests; check the file CodeCritic was given."
            )
        passed = report.total - len(report.failures)
        summary = f"{passed}/{report.total} tests passed."
        hard = bool(report.failures) and self.all_must_pass
        return computed_verdict(self.name, passed / report.total, report.failures, summary, hard_fail=hard)

    def _environment(self) -> dict[str, str]:
        env = {key: os.environ[key] for key in _ENV_KEEP if key in os.environ}
        env.update(
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONHASHSEED="0",
            PYTHONIOENCODING="utf-8",
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        )
        env.update(self.env)
        return env

    async def _run_pytest(self, workdir: Path) -> tuple[int | None, bool]:
        """Run pytest in `workdir`; (its exit code, whether it timed out). Cancellation kills it."""
        limit = (self.memory_mb or 0) << 20
        plugins = [arg for p in self.plugins for arg in ("-p", p)]
        command = [
            *(self.python, "-c", _supervisor_source()),  # reaper.main: it runs the rest
            *(self.python, "-c", _BOOT, str(limit)),
            *("-q", "--no-header", "--tb=short", "-p", "no:cacheprovider", "-o", "junit_family=xunit1"),
            *(f"--junitxml={workdir / 'report.xml'}", *plugins, self.test_file),
        ]
        out, err = _open_logs(workdir)
        try:
            try:
                process = await anyio.open_process(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    cwd=workdir,
                    env={**self._environment(), MARKER: workdir.name},
                    start_new_session=True,
                )
            except OSError as exc:
                raise CriticError(f"pytest could not run: starting {self.python!r} failed: {exc}") from exc
            try:
                with anyio.move_on_after(self.timeout_s) as scope:
                    await process.wait()
            finally:
                await _reap(process, workdir.name)
        finally:
            out.close()
            err.close()
        return process.returncode, scope.cancelled_caught


async def _reap(process: Process, review: str) -> None:
    """End every process of the review, shielded (see `jeeves.critics.reaper` for the layers).

    On a timeout or a cancellation the supervisor is still running: SIGTERM asks it to kill
    everything below it. Then the process group is killed (all there is without /proc),
    and any process still carrying the review's marker (its supervisor was killed).
    """
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.terminate()
            with anyio.move_on_after(_SUPERVISOR_GRACE_S):
                await process.wait()
        if hasattr(os, "killpg"):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        elif process.returncode is None:  # pragma: no cover - Windows
            process.kill()
        await process.wait()
        await process.aclose()
        await anyio.to_thread.run_sync(kill_marked, review)


@functools.cache
def _supervisor_source() -> str:
    return Path(reaper.__file__).read_text(encoding="utf-8")


def _write_files(workdir: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        (workdir / name).write_text(text, encoding="utf-8")


def _open_logs(workdir: Path) -> tuple[IO[Any], IO[Any]]:
    return open(workdir / "stdout.txt", "wb"), open(workdir / "stderr.txt", "wb")
