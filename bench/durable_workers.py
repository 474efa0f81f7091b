"""`jeeves worker` processes for the bench, and runs queued for them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from durable_db import process_cpu_s

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TARGET = "durable_model:actor_critic"
SETUP_TARGET = "durable_model:setup"


def worker_env(repo: Path = REPO) -> dict[str, str]:
    """The environment of a worker running the jeeves of `repo` (a checkout: this one, or the
    baseline commit bench/durable.py --baseline extracted)."""
    env = dict(os.environ)
    bench = repo / "bench"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo), str(bench), env.get("PYTHONPATH", "")) if p)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.pop("PYTHONSTARTUP", None)
    return env


class WorkerProcess:
    """`python -m jeeves worker TARGET` in a subprocess, ready once it prints its ready line."""

    def __init__(self, database: str, target: str, args: list[str], repo: Path = REPO) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jeeves", "worker", target, "--database", database, *args],
            cwd=repo,
            env=worker_env(repo),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []
        self.worker_id = ""
        self.cpu_ready: float | None = None
        """CPU seconds used by the time every worker was ready (its start-up)."""
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            found = re.match(r"jeeves worker (\S+) ready", line)
            if found:
                self.worker_id = found.group(1)
                self.ready.set()
        self.ready.set()  # exited: wait_ready says so

    def wait_ready(self, timeout_s: float = 180) -> None:
        if not self.ready.wait(timeout_s) or not self.worker_id:
            self.stop()
            raise RuntimeError(f"the worker did not start:\n{''.join(self.output)[-3000:]}")

    def cpu_s(self) -> float | None:
        """CPU seconds (user + system, all threads) the process has used, while it is alive."""
        return process_cpu_s(self.process.pid, children=False)

    def peak_rss_mb(self) -> float | None:
        """The process's high-water resident set (VmHWM), while it is alive."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        found = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(found.group(1)) / 1024 if found else None

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait(timeout=60)
        self._reader.join(timeout=10)


@contextmanager
def workers(
    database: str, n: int, args: list[str], target: str = TARGET, repo: Path = REPO
) -> Iterator[list[WorkerProcess]]:
    """`n` workers (of the jeeves in `repo`) started together; all ready on entry, all
    stopped on exit."""
    started = [WorkerProcess(database, target, args, repo) for _ in range(n)]
    try:
        for worker in started:
            worker.wait_ready()
        for worker in started:
            worker.cpu_ready = worker.cpu_s()
        yield started
    finally:
        for worker in started:
            worker.stop()


def create_dbos_tables(database: str) -> None:
    """DBOS creates its tables when a worker launches (a client cannot): launch one on
    another queue and stop it, so the benchmark's runs wait queued before any worker runs."""
    with workers(database, 1, ["--poll", "1"], target=SETUP_TARGET):
        pass


def enqueue(database: str, count: int, prefix: str) -> tuple[list[str], float]:
    """Queue `count` runs through one DBOS client (as `jeeves.durable.submit` does, without
    a client per run); returns their ids and the seconds taken."""
    from jeeves.durable import engine
    from jeeves.durable.targets import queue_name

    client = engine.dbos().DBOSClient(system_database_url=database, serializer=engine.serializer())
    ids = [f"{prefix}-{i}" for i in range(count)]
    started = time.perf_counter()
    try:
        for session_id in ids:
            options = {
                "queue_name": queue_name(TARGET),
                "workflow_name": engine.WORKFLOW_NAME,
                "workflow_id": session_id,
                "app_version": engine.APP_VERSION,
            }
            client.enqueue(options, TARGET, "Write add(a, b)")
    finally:
        client.destroy()
    return ids, time.perf_counter() - started
