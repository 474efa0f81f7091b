"""A throwaway PostgreSQL cluster: `initdb` into a temp dir, a server on 127.0.0.1 and a free
port, fresh databases on demand, stopped (and its folder removed) by `stop()`.

Used by the tests (tests/postgres.py wraps it in fixtures) and by bench/durable.py, so it
imports neither pytest nor jeeves: the standard library and psycopg only.

The binaries come from Debian's `postgresql` package (`.ci/apt` installs it): found on PATH
or in /usr/lib/postgresql/*/bin. PostgreSQL refuses to run as root, so under root (CI) the
cluster runs as the `postgres` user the package creates (or `nobody`) through `setpriv`, in a
directory that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["INSTALL", "Cluster", "find_binaries"]

INSTALL = "install Debian's `postgresql` package (`sudo apt-get install postgresql`, as .ci/apt does)"
_counter = itertools.count()


def find_binaries() -> Path | None:
    """The folder holding initdb and postgres: PATH first, then Debian's versioned folders."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("postgres", path=str(Path(initdb).resolve().parent)):
        return Path(initdb).resolve().parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "postgres").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """One running server; `database()` makes a fresh, empty database and returns its URL."""

    def __init__(self, bin_dir: Path, *, max_connections: int = 200) -> None:
        self.bin_dir = bin_dir
        self.max_connections = max_connections
        self.root = Path(tempfile.mkdtemp(prefix="jeeves-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.running = False
        self.prefix: list[str] = []
        if os.geteuid() == 0:  # postgres refuses root: run it as an unprivileged user
            user = _unprivileged_user()
            self.prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self.log = self.root / "server.log"

    def start(self) -> None:
        initdb = [
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "jeeves",
            "--auth=trust",
            "-E",
            "UTF8",
        ]
        done = subprocess.run(
            [*self.prefix, *initdb, "--no-sync"], capture_output=True, text=True, timeout=120, cwd=self.root
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        self.start_server()

    def start_server(self) -> None:
        """Start the server with `pg_ctl start` on the cluster's data, port and settings (again,
        after `stop_server`); ready on return."""
        options = " ".join([
            "-h 127.0.0.1",
            f"-p {self.port}",
            f"-k {self.root}",  # the unix socket in our own folder, not /var/run/postgresql
            "-c fsync=off",  # a throwaway cluster: durability across power cuts is not under test
            f"-c max_connections={self.max_connections}",
        ])  # fmt: skip
        self._pg_ctl("start", "-l", str(self.log), "-o", options)  # -l appends: a restart keeps the log
        self.running = True
        self._wait_ready(deadline=time.monotonic() + 60)

    def _pg_ctl(self, *args: str) -> None:
        command = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-w", "-t", "60", *args]
        done = subprocess.run(
            [*self.prefix, *command], capture_output=True, text=True, timeout=120, cwd=self.root
        )
        if done.returncode != 0:
            tail = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl {args[0]} failed ({done.returncode}): {done.stderr.strip()} {tail}")

    def _wait_ready(self, deadline: float) -> None:
        import psycopg

        while True:
            try:
                with psycopg.connect(self.url("postgres"), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"postgres did not accept connections: {self.log.read_text()[-2000:]}"
                    ) from exc
                time.sleep(0.05)  # polling a readiness condition with a bounded deadline

    def url(self, database: str) -> str:
        return f"postgresql://jeeves@127.0.0.1:{self.port}/{database}"

    def database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = name or f"t{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.url(name)

    def stop_server(self, *, immediate: bool = False) -> None:
        """Stop the server with `pg_ctl stop`, keeping its data: a fast shutdown (clients are told
        and disconnected), or with `immediate` a crash-like stop (recovery at the next start)."""
        if self.running:
            self._pg_ctl("stop", "-m", "immediate" if immediate else "fast")
            self.running = False

    def restart(self, down_s: float = 0.0) -> None:
        """Stop the server (`pg_ctl stop`), keep it down `down_s` seconds, start it again
        (`pg_ctl start`; ready on return)."""
        self.stop_server()
        time.sleep(down_s)  # the outage under test lasts this long
        self.start_server()

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):  # a server that is already gone: only clean up
            self.stop_server(immediate=True)
        shutil.rmtree(self.root, ignore_errors=True)


def _unprivileged_user() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError(
        "running as root and there is neither a `postgres` nor a `nobody` user to run postgres as"
    )
