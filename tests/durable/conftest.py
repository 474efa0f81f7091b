"""Real pieces for the durable tests: worker processes on a real PostgreSQL (tests/postgres.py)
and a counting model server on 127.0.0.1 that can hold a call open while a worker is killed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import REPO, subprocess_env
from tests.postgres import own_postgres  # noqa: F401  (the fault tests' server of their own)

pytest.importorskip("dbos", reason="the durable tests need DBOS: pip install -e '.[dev,dbos]'")

TARGET = "tests.durable.archs:actor_critic"


class CountingServer:
    """Answers the test architectures' model calls and counts them by (session, request key).

    `hold(predicate)`: the first call matching is held open until `release()`; `held` is set
    when it arrives, and `held_call` says what it was (with the pid of the worker making it).
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.held = threading.Event()
        self.released = threading.Event()
        self.held_call: dict[str, Any] | None = None
        self._predicate: Callable[[dict[str, Any]], bool] | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.calls.append(call)
                    hold = server._predicate is not None and server._predicate(call)
                    if hold:
                        server._predicate, server.held_call = None, call
                if hold:
                    server.held.set()
                    server.released.wait(120)
                body = json.dumps({"text": reply(call)}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the worker that asked was killed
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def hold(self, predicate: Callable[[dict[str, Any]], bool]) -> None:
        self._predicate = predicate

    def release(self) -> None:
        self.released.set()

    def counts(self) -> Counter[tuple[str, str]]:
        with self.lock:
            return Counter((c["session_id"], c["key"]) for c in self.calls)


def reply(call: dict[str, Any]) -> str:
    """Actor: a draft per round; critic: rejects rounds 0 and 1, approves round 2."""
    found = re.search(r"__critic_(\d+)$", call["session_id"])
    if call["critic"] and found:
        approve = int(found.group(1)) >= 2
        return json.dumps(
            {
                "score": 0.95 if approve else 0.3,
                "issues": [] if approve else ["more"],
                "summary": "ok" if approve else "no",
            }
        )
    actor = re.search(r"__actor_(\d+)$", call["session_id"])
    return f"draft {actor.group(1) if actor else call['session_id']}"


@pytest.fixture
def counter() -> Iterator[CountingServer]:
    server = CountingServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release()
        server.httpd.shutdown()
        server.httpd.server_close()


class WorkerProcess:
    """`python -m jeeves worker` in a subprocess; ready once it prints its ready line."""

    def __init__(self, database: str, counter_url: str, *args: str, target: str = TARGET) -> None:
        env = {**subprocess_env(), "COUNTER_URL": counter_url}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jeeves", "worker", target, "--database", database, *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            found = re.match(r"jeeves worker (\S+) ready", line)
            if found:
                self.worker_id = found.group(1)
                break
        else:
            raise AssertionError(f"the worker exited before it was ready:\n{''.join(self.output)}")
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def text(self) -> str:
        return "".join(self.output)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self._drain.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


@pytest.fixture
def workers(postgres_url: str, counter: CountingServer) -> Iterator[Callable[..., WorkerProcess]]:
    """Starts worker processes on a fresh database (stopped at the end)."""
    started: list[WorkerProcess] = []

    def start(*args: str, target: str = TARGET) -> WorkerProcess:
        worker = WorkerProcess(postgres_url, counter.url, *args, target=target)
        started.append(worker)
        return worker

    try:
        yield start
    finally:
        for worker in started:
            worker.stop()


@contextmanager
def environ(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
