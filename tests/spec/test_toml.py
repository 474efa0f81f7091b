"""The TOML writer: whatever it writes, tomllib reads back as the same table."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from jeeves.spec import to_toml

TRICKY = [
    "",
    "plain",
    'say "hi"',
    "back\\slash \\d+",
    "tab\tand\x7fdel\x00nul\x1b",
    "line one\nline two",
    "\nstarts with a newline",
    'ends with a quote"',
    "ends with an apostrophe'",
    "code = \"\"\"docstring\"\"\"\nand '''more'''",
    'quotes at the end ""\n"',
    "windows\r\nline\r\nends",
    "unicode: café ✓ 漢字 \U0001f600",
    "''' and \\ together\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_strings_survive_as_values_keys_and_inline(text: str) -> None:
    table = {"value": text, "list": [text, "x"], "inline": [{"k": text}], "section": {"deep": text}}
    if text and "\x00" not in text:
        table["keys"] = {text: 1}
    written = to_toml(table)
    assert tomllib.loads(written) == table


def test_numbers_booleans_arrays_tables_and_arrays_of_tables() -> None:
    table: dict[str, Any] = {
        "type": "supervisor",
        "int": -3,
        "float": 0.1,
        "big": 1e20,
        "small": 1e-7,
        "inf": float("inf"),
        "flags": [True, False],
        "empty_list": [],
        "empty_table": {},
        "nested": {"a": {"b": {"c": 1}}, "d": 2},
        "critic": [{"type": "code", "env": {"X": "1"}, "plugins": ["a"]}, {"type": "llm", "params": {}}],
        "models": {"coder.critic": {"model": "m", "params": {"t": 0}}, "default": "n"},
        "long": ["x" * 60, "y" * 60],
    }
    assert tomllib.loads(to_toml(table)) == table


def test_multi_line_strings_stay_readable() -> None:
    written = to_toml({"instructions": "You write Python.\nReply with code.", "regex": 'r"[^a-z]+"\nx'})
    assert "instructions = '''\nYou write Python.\nReply with code.'''" in written
    assert "regex = '''\nr\"[^a-z]+\"\nx'''" in written


def test_none_has_no_toml_form() -> None:
    with pytest.raises(TypeError, match="TOML has no null"):
        to_toml({"model": None})
