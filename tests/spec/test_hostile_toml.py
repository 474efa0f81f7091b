"""Hostile spec and critic files: deep nesting, bytes that are not UTF-8, thousands of unknown keys.

`jeeves rejudge --critic FILE.toml` and `jeeves run SPEC.toml` share the reader: each bad
file is one short error and exit 2, never a traceback, and takes well under a second to
report (the TOML parse aside, nothing in it grows faster than the file).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jeeves.cli.main import main
from jeeves.errors import UserError
from jeeves.spec.critic_version import load_critic_version
from jeeves.spec.load import load_spec

BAD = {
    "deep.toml": ("a = " + "[" * 3000 + "]" * 3000 + "\n").encode(),
    "deep_tables.toml": ("[" + ".".join(f"t{i}" for i in range(3000)) + "]\nx = 1\n").encode(),
    "latin1.toml": b'instructions = "caf\xe9"\n',
}
NEEDLES = {
    "deep.toml": "nest deeper than",
    "deep_tables.toml": "nest deeper than",
    "latin1.toml": "not UTF-8 (byte 0xe9 on line 1)",
}


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("command", ["rejudge", "run"])
def test_a_hostile_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    path = tmp_path / name
    path.write_bytes(BAD[name])
    argv = (
        ["rejudge", str(tmp_path / "none.jsonl"), "--critic", str(path)]
        if command == "rejudge"
        else ["run", str(path), "x"]
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert NEEDLES[name] in err and str(path) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_twenty_thousand_unknown_keys_are_reported_briefly_and_fast(tmp_path: Path) -> None:
    critic = tmp_path / "critic.toml"
    critic.write_text("".join(f"k{i} = 1\n" for i in range(20_000)))
    spec = tmp_path / "spec.toml"
    spec.write_text('type = "agent"\ninstructions = "x"\n' + "".join(f"k{i} = 1\n" for i in range(20_000)))
    for load, path in ((load_critic_version, critic), (load_spec, spec)):
        started = time.perf_counter()
        with pytest.raises(UserError) as caught:
            load(path)
        took = time.perf_counter() - started
        message = str(caught.value)
        assert took < 5, f"{load.__name__} took {took:.1f} s"  # 77 s before; ~0.5 s, mostly tomllib
        assert message.startswith(f"{path} has 20000 unknown keys (k0, k1, k2 and 19997 more); remove them")
        assert len(message.splitlines()) == 1
