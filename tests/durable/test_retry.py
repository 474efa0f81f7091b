"""The retry bound's configuration and which faults are waited out (no database needed)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import psycopg
import pytest

from jeeves.errors import JournalError, UserError
from jeeves.journal import retry as _retry


@pytest.fixture(autouse=True)
def default_bound() -> Iterator[None]:
    yield
    _retry.configure(None)


def test_the_bound_defaults_to_a_minute_and_comes_from_the_option_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(_retry.RETRY_ENV, raising=False)
    assert _retry.configure(None) == _retry.DEFAULT_DB_RETRY_S >= 60
    monkeypatch.setenv(_retry.RETRY_ENV, "7.5")
    assert _retry.configure(None) == 7.5 and _retry.db_retry_s() == 7.5
    assert _retry.configure(3) == 3.0
    monkeypatch.setenv(_retry.RETRY_ENV, "soon")
    with pytest.raises(UserError, match="JEEVES_DB_RETRY_S='soon'"):
        _retry.configure(None)
    with pytest.raises(UserError, match="db_retry_s=-1"):
        _retry.configure(-1)


def test_connection_faults_are_transient_and_refusals_are_not() -> None:
    assert _retry.is_transient(
        psycopg.OperationalError("terminating connection due to administrator command")
    )
    assert _retry.is_transient(psycopg.InterfaceError("the connection is closed"))
    assert _retry.is_transient(sqlite3.OperationalError("database is locked"))
    assert not _retry.is_transient(psycopg.errors.UndefinedTable("no such table"))
    assert not _retry.is_transient(sqlite3.OperationalError("no such table: steps"))
    assert not _retry.is_transient(ValueError("x"))


def test_a_fault_outlasting_the_bound_is_one_typed_line_and_each_failure_discards_the_connection() -> None:
    _retry.configure(0.3)
    discarded: list[int] = []
    _retry.mark_reached("postgresql://u:***@h/db")

    def fail() -> None:
        raise psycopg.OperationalError("server closed the connection\nunexpectedly")

    with pytest.raises(JournalError) as caught:
        _retry.retry(fail, where="postgresql://u:***@h/db", discard=lambda: discarded.append(1))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("postgresql://u:***@h/db: the database did not answer")
    assert _retry.is_unavailable(caught.value) and len(discarded) >= 3


def test_a_database_never_reached_is_not_waited_for() -> None:
    calls: list[int] = []

    def fail() -> None:
        calls.append(1)
        raise psycopg.OperationalError("connection refused")

    with pytest.raises(psycopg.OperationalError):
        _retry.retry(fail, where="postgresql://nobody@127.0.0.1:1/never")
    assert calls == [1]
