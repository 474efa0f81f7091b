"""Loading specs: a bad spec is a UserError naming the file, the key path and the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jeeves.errors import UserError
from jeeves.spec import Spec, build, load_spec, parse_spec
from jeeves.spec.models import ActorCriticSpec, AgentSpec, CodeCriticSpec, SupervisorSpec


def problems(data: dict[str, Any], path: str = "team.toml") -> list[str]:
    with pytest.raises(UserError) as caught:
        parse_spec(data, path=path)
    message = str(caught.value)
    assert message.startswith(f"{path} has ")
    assert message.endswith("See docs/specs.md for every key and its default.")
    return [line.removeprefix("  - ") for line in message.splitlines()[1:-1]]


def team(coder: dict[str, Any]) -> dict[str, Any]:
    return {"type": "supervisor", "workers": {"coder": coder}}


def coder(**extra: Any) -> dict[str, Any]:
    return {"type": "actor_critic", "actor": {"instructions": "Write."}, "critic": {"type": "llm"}, **extra}


def test_a_nested_bad_value_is_named_by_its_dotted_key_path() -> None:
    assert problems(team(coder(max_rounds=-1))) == [
        "workers.coder.max_rounds: should be greater than or equal to 0, got -1"
    ]


def test_types_are_strict_and_the_given_value_is_shown() -> None:
    assert problems(team(coder(max_rounds="3"))) == [
        "workers.coder.max_rounds: should be a valid integer, got '3'"
    ]


def test_a_critic_in_an_array_is_named_by_its_index() -> None:
    data = team(
        coder(
            critic=[{"type": "llm"}, {"type": "code", "tests_source": "def test_x(): pass", "timeout_s": 0}]
        )
    )
    assert problems(data) == ["workers.coder.critic[1].timeout_s: should be greater than 0, got 0"]


def test_one_critic_table_is_named_without_an_index() -> None:
    data = coder(critic={"type": "llm", "repair": "yes"})
    assert problems(data) == ["critic.repair: should be a valid boolean, got 'yes'"]


def test_an_unknown_key_suggests_the_closest_one() -> None:
    assert problems(team(coder(max_round=2))) == [
        "workers.coder.max_round: unknown key; did you mean 'max_rounds'?"
    ]
    data = team(coder(actor={"instrutions": "x"}))
    assert problems(data) == [
        "workers.coder.actor.instructions: required, but missing",
        "workers.coder.actor.instrutions: unknown key; did you mean 'instructions'?",
    ]


def test_a_top_level_typo_can_mean_a_table() -> None:
    assert problems({**coder(), "model": {"actor": "x/y"}}) == ["model: unknown key; did you mean 'models'?"]


def test_an_unknown_type_lists_the_known_ones() -> None:
    assert problems(team({"type": "actorcritic"})) == [
        "workers.coder.type: unknown type 'actorcritic'; use one of 'agent', 'actor_critic', 'self_refine', "
        "'supervisor', 'plan_execute', 'goal', 'custom'"
    ]
    assert problems(coder(critic={"name": "x"})) == [
        "critic.type: missing; use one of 'llm', 'code', 'citations', 'function'"
    ]


def test_bad_names_and_route_keys() -> None:
    found = problems({**team(coder()), "workers": {"Coder": coder()}, "models": {"coder-critic": "openai/y"}})
    assert found[0].startswith("workers.Coder: 'Coder' is not a valid name")
    assert found[1].startswith("models.coder-critic: 'coder-critic' is not a route key")


def test_a_route_must_be_a_model_string_or_a_table() -> None:
    assert problems({**coder(), "models": {"critic": 4}}) == [
        "models.critic: should be a model string (e.g. 'openai/gpt-4o') or a route table, got 4"
    ]


def test_a_table_where_a_value_belongs_and_back() -> None:
    assert problems({"type": "self_refine", "agent": "Write."}) == ["agent: should be a table, got 'Write.'"]


def test_every_problem_is_listed_once() -> None:
    found = problems(
        {**coder(threshold=2, on_critic_error="ignore"), "demo": {"script": {"actor": [{"txt": "a"}]}}}
    )
    assert found == [
        "threshold: should be less than or equal to 1, got 2",
        "on_critic_error: should be 'keep_draft' or 'raise', got 'ignore'",
        "demo.script.actor[0].txt: unknown key; did you mean 'text'?",
    ]


def test_toml_syntax_errors_name_the_file_line_and_column(tmp_path: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text('type = "agent"\ninstructions = "unterminated\n')
    with pytest.raises(UserError, match=r"bad\.toml: not valid TOML: .*\(at line 2, column \d+\)"):
        load_spec(spec)


def test_a_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"Cannot read spec file .*nope\.toml'"):
        load_spec(tmp_path / "nope.toml")


def test_code_critic_tests_are_read_beside_the_spec(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text("def test_ok():\n    assert True\n")
    (tmp_path / "code.toml").write_text(
        'type = "actor_critic"\n[actor]\ninstructions = "Write."\n[critic]\ntype = "code"\ntests = "checks.py"\n'
    )
    spec = load_spec(tmp_path / "code.toml")
    assert spec.path == tmp_path / "code.toml"  # as given; relative paths resolve beside it
    arch = spec.architecture
    assert isinstance(arch, ActorCriticSpec)
    critic = arch.critic[0]
    assert isinstance(critic, CodeCriticSpec)
    assert critic.tests == "checks.py"
    assert critic.tests_source == "def test_ok():\n    assert True\n"


def test_a_missing_test_file_is_named_by_its_key(tmp_path: Path) -> None:
    data = coder(critic=[{"type": "code", "tests": "missing.py"}, {"type": "code"}])
    found = problems(data, path=str(tmp_path / "x.toml"))
    assert found[0].startswith(f"critic[0].tests: cannot read '{tmp_path / 'missing.py'}'")
    assert found[1] == "critic[1]: give `tests` (a pytest file path) or `tests_source` (its text)"


@pytest.mark.parametrize("where", ["../outside/secret.py", "{abs}", "link/secret.py"])
def test_a_test_file_outside_the_spec_folder_is_refused_without_showing_it(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "outside").mkdir()
    secret = tmp_path / "outside" / "secret.py"
    secret.write_text("TOKEN = 'hunter2'\ndef test_x():\n    assert True\n")
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path / "outside")
    relative = where.format(abs=secret)
    found = problems(coder(critic={"type": "code", "tests": relative}), path=str(folder / "x.toml"))
    assert found == [
        f"critic.tests: {relative!r} is outside the spec's folder {str(folder)!r}; move the file beside "
        f"the spec, or set `allow_outside = true` in this critic's table to read it anyway"
    ]


def test_allow_outside_reads_a_test_file_outside_the_folder(tmp_path: Path) -> None:
    (tmp_path / "shared.py").write_text("def test_x():\n    assert True\n")
    (tmp_path / "specs").mkdir()
    spec = parse_spec(
        coder(critic={"type": "code", "tests": "../shared.py", "allow_outside": True}),
        path=tmp_path / "specs" / "x.toml",
    )
    assert isinstance(spec.architecture, ActorCriticSpec)
    critic = spec.architecture.critic[0]
    assert isinstance(critic, CodeCriticSpec)
    assert critic.tests_source == "def test_x():\n    assert True\n"


def test_a_file_that_is_not_a_pytest_file_is_named_not_shown(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("password = hunter2\n")
    (tmp_path / "data.bin").write_bytes(b"\xff\xfe\x00secret")
    found = problems(
        coder(
            critic=[
                {"type": "code", "tests": "notes.txt"},
                {"type": "code", "tests": "data.bin", "name": "more"},
            ]
        ),
        path=str(tmp_path / "x.toml"),
    )
    assert found == [
        f"critic[0].tests: {str(tmp_path / 'notes.txt')!r} holds no pytest test (no `def test...`); "
        f"point `tests` at a pytest file",
        f"critic[1].tests: {str(tmp_path / 'data.bin')!r} is not UTF-8 text; point `tests` at a pytest file",
    ]
    assert not any("hunter2" in line or "secret" in line for line in found)


def test_bad_keys_and_keys_no_session_uses_are_reported_together() -> None:
    data = {
        **coder(max_round=2, critic={"type": "llm", "repair": "yes"}),
        "role": "codegen",
        "models": {"critc": "openai/gpt-4o", "actor": {"model": "openai/x", "retries": -1}},
        "demo": {"script": {"actr": ["x"]}},
    }
    assert [line.split(":")[0] for line in problems(data)] == [
        "critic.repair",
        "max_round",
        "models.actor.retries",
        "models.critc",
        "demo.script.actr",
    ]


def test_a_bad_test_file_does_not_hide_the_later_problems(tmp_path: Path) -> None:
    data = {**coder(critic={"type": "code", "tests": "missing.py"}), "models": {"critc": "openai/x"}}
    assert [line.split(":")[0] for line in problems(data, path=str(tmp_path / "x.toml"))] == [
        "critic.tests",
        "models.critc",
    ]


def test_later_problems_wait_when_the_rest_cannot_stand_alone() -> None:
    data = {**coder(role="Codegen"), "models": {"critc": "openai/x"}}  # a bad role: keys would be misjudged
    assert [line.split(":")[0] for line in problems(data)] == ["role"]
    missing = {"type": "actor_critic", "critic": {"type": "llm"}, "models": {"critc": "openai/x"}}
    assert [line.split(":")[0] for line in problems(missing)] == ["actor"]


def test_type_defaults_to_agent_and_a_route_string_is_a_route() -> None:
    spec = parse_spec({"instructions": "Hi.", "models": {"default": "openai/gpt-4o-mini"}})
    assert isinstance(spec.architecture, AgentSpec)
    assert spec.models["default"].model == "openai/gpt-4o-mini"
    assert spec.models["default"].retries == 2


def test_nesting_goes_to_any_depth() -> None:
    inner = team(coder())
    spec = parse_spec(team({"type": "supervisor", "workers": {"inner": inner}}))
    outer = spec.architecture
    assert isinstance(outer, SupervisorSpec)
    middle = outer.workers["coder"]
    assert isinstance(middle, SupervisorSpec)
    assert isinstance(middle.workers["inner"], SupervisorSpec)
    assert problems(team({"type": "supervisor", "workers": {"inner": team(coder(threshold=-0.5))}})) == [
        "workers.coder.workers.inner.workers.coder.threshold: should be greater than or equal to 0, got -0.5"
    ]


def test_spec_models_forbid_extra_keys_everywhere() -> None:
    for model in (Spec, AgentSpec, ActorCriticSpec, SupervisorSpec, CodeCriticSpec):
        assert model.model_config.get("extra") == "forbid"


def loop_with(stop: Any, **extra: Any) -> dict[str, Any]:
    return {**coder(**extra), "stop": stop}


def test_a_stop_table_has_one_known_key_and_the_error_lists_them() -> None:
    found = problems(loop_with({"any": [{"max_round": 3}, {"max_rounds": 3, "wall_clock_s": 60}, 5]}))
    assert found[0].startswith("stop.any[0]: unknown stop condition 'max_round'; did you mean 'max_rounds'?")
    assert "the conditions are: any, all, max_rounds, score_at_least" in found[0]
    assert found[1] == (
        "stop.any[1]: a stop condition table has exactly one key, got max_rounds, wall_clock_s; "
        "combine several with {any = [...]} (either) or {all = [...]} (both)"
    )
    assert found[2].startswith("stop.any[2]: a stop condition is a table with one key, e.g. {max_rounds = 3}")


def test_stop_values_are_checked_like_every_key() -> None:
    found = problems(
        loop_with({"all": [{"max_rounds": "3"}, {"score_at_least": 2}, {"watchdog": ["LOST"]}, {"any": []}]})
    )
    assert found[0].startswith("stop.all[0].max_rounds: should be a valid integer, got '3'")
    assert found[1].startswith("stop.all[1].score_at_least: should be less than or equal to 1")
    assert found[2].startswith(
        "stop.all[2].watchdog[0]: should be 'PROGRESSING', 'STUCK', 'ACHIEVED' or 'MISLED'"
    )
    assert found[3].startswith("stop.all[3].any: List should have at least 1 item")


def test_a_stop_that_cannot_end_the_loop_or_doubles_the_keywords_is_named() -> None:
    with pytest.raises(UserError) as caught:
        build(parse_spec(team(loop_with({"score_at_least": 0.9}))))
    assert "workers.coder.stop" not in str(caught.value)  # the loop refuses it, keyed by its table
    assert "workers.coder: stop=ScoreAtLeast(score=0.9) may never fire" in str(caught.value)
    with pytest.raises(UserError, match=r"workers\.coder: Pass either stop=MaxRounds\(n=2\) or max_rounds"):
        build(parse_spec(team(loop_with({"max_rounds": 2}, max_rounds=5))))


def test_a_goal_table_needs_a_goal_an_agent_and_a_success_critic() -> None:
    found = problems({"type": "goal", "agent": {"instructions": "x", "typo": 1}, "watchdog": {"every": -1}})
    assert "goal: required, but missing" in found
    assert "success: required, but missing" in found
    assert any(p.startswith("agent.typo: unknown key") for p in found)
    assert any(p.startswith("watchdog.every: should be greater than or equal to 0") for p in found)


def test_a_watchdog_repeat_limit_of_one_is_named_by_its_key() -> None:
    spec = parse_spec(
        {
            "type": "goal",
            "goal": "g",
            "agent": {"instructions": "x"},
            "success": {"type": "function", "function": "tests.spec.helpers:box_is_fixed"},
            "watchdog": {"repeat_limit": 1},
        }
    )
    with pytest.raises(
        UserError, match=r"watchdog: Watchdog\(repeat_limit=\) must be None or an int >= 2, got 1"
    ):
        build(spec)
