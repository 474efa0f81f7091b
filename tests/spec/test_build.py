"""Building specs into ordinary architectures and routers."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

import jeeves
from jeeves import ActorCritic, Agent, CitationCritic, CodeCritic, LLMCritic, SelfRefine, Supervisor, Tool
from jeeves.critics import CombinedCritic, FunctionCritic
from jeeves.errors import UserError
from jeeves.spec import build, parse_spec
from tests.spec import helpers

pytestmark = pytest.mark.anyio

TESTS = "def test_ok():\n    assert True\n"


def built(data: dict[str, Any], **kwargs: Any) -> Any:
    return build(parse_spec(data), **kwargs)


def test_an_agent_with_tools_output_type_and_a_pinned_model() -> None:
    arch, router = built(
        {
            "instructions": "Count.",
            "role": "counter",
            "tools": ["tests.spec.helpers:word_count", "tests.spec.helpers:shout"],
            "output_type": "tests.spec.helpers:Summary",
            "max_turns": 4,
            "model": {"model": "openai/gpt-4o", "fallbacks": ["openai/gpt-4o-mini"], "retries": 1},
            "params": {"temperature": 0.2},
        }
    )
    assert type(arch) is Agent
    assert arch.role == "counter" and arch.max_turns == 4 and arch.params == {"temperature": 0.2}
    assert arch.tools[0] is helpers.word_count
    assert isinstance(arch.tools[1], Tool) and arch.tools[1].function is helpers.shout
    assert arch.output_type is helpers.Summary
    assert arch.route == jeeves.Route(model="openai/gpt-4o", fallbacks=("openai/gpt-4o-mini",), retries=1)
    assert router.routes == {}


def test_an_actor_critic_with_every_critic_kind_and_routes() -> None:
    arch, router = built(
        {
            "type": "actor_critic",
            "role": "codegen",
            "max_rounds": 2,
            "no_improvement": 1,
            "weights": {"tests": 2.0, "llm": 1.0, "citations": 1.0, "no_todo": 1.0},
            "actor": {"instructions": "Write."},
            "critic": [
                {"type": "code", "tests_source": TESTS, "module": "slug", "memory_mb": 0},
                {"type": "llm", "model": "openai/gpt-4o"},
                {"type": "citations", "evidence_ids": ["a", "b"]},
                {"type": "function", "function": "tests.spec.helpers:no_todo"},
            ],
            "models": {
                "actor": "anthropic/claude-sonnet-4-5",
                "default": {"model": "openai/gpt-4o", "retries": 0},
            },
        }
    )
    assert type(arch) is ActorCritic
    assert arch.role == "codegen"
    assert (arch.settings.max_rounds, arch.settings.no_improvement) == (2, 1)
    combined = arch.critic
    assert isinstance(combined, CombinedCritic)
    code, llm, citations, function = combined.critics
    assert isinstance(code, CodeCritic) and code.module == "slug" and code.memory_mb is None
    assert isinstance(llm, LLMCritic) and llm.route is not None and llm.route.model == "openai/gpt-4o"
    assert isinstance(citations, CitationCritic) and citations.evidence_ids == {"a", "b"}
    assert isinstance(function, FunctionCritic) and function.function is helpers.no_todo
    assert combined.weights == {"tests": 2.0, "llm": 1.0, "citations": 1.0, "no_todo": 1.0}
    assert router.resolve(("codegen", "actor")).model == "anthropic/claude-sonnet-4-5"
    assert router.resolve(("codegen", "critic")).retries == 0


def test_one_critic_is_not_wrapped_and_zero_means_none() -> None:
    arch, _ = built({"type": "actor_critic", "actor": {"instructions": "Write."}, "critic": {"type": "llm"}})
    assert type(arch.critic) is LLMCritic
    assert arch.settings.no_improvement is None
    refine, _ = built(
        {"type": "self_refine", "no_improvement": 0, "agent": {"instructions": "Write.", "role": "w"}}
    )
    assert type(refine) is SelfRefine
    assert refine.settings.no_improvement is None and refine.role == "w"


def test_a_supervisor_over_nested_architectures() -> None:
    arch, _ = built(
        {
            "type": "supervisor",
            "max_delegations": 3,
            "workers": {
                "coder": {
                    "type": "actor_critic",
                    "actor": {"instructions": "Code."},
                    "critic": {"type": "llm"},
                },
                "team": {"type": "supervisor", "workers": {"writer": {"instructions": "Write."}}},
            },
        }
    )
    assert type(arch) is Supervisor and arch.max_delegations == 3
    assert type(arch.workers["coder"]) is ActorCritic
    assert arch.workers["coder"].description == "Code."  # the actor's, as in code
    assert type(arch.workers["team"]) is Supervisor


def test_a_constructor_error_names_the_file_and_key_path() -> None:
    data = {
        "type": "supervisor",
        "workers": {
            "coder": {"type": "actor_critic", "actor": {"instructions": "x"}, "critic": {"type": "llm"}}
        },
    }
    data["workers"]["coder"]["critic_template"] = "{task} {answer}"
    with pytest.raises(
        UserError, match=r"^team\.toml: workers\.coder: critic_template uses unknown placeholder"
    ):
        build(parse_spec(data, path="team.toml"))


def test_import_errors_name_the_key_path() -> None:
    cases = {
        "tools[0]": {"instructions": "x", "tools": ["tests.spec.nowhere:word_count"]},
        "tools[1]": {"instructions": "x", "tools": ["tests.spec.helpers:shout", "tests.spec.helpers:nope"]},
        "output_type": {"instructions": "x", "output_type": "tests.spec.helpers:Nope"},
    }
    for key, data in cases.items():
        with pytest.raises(UserError, match="^spec: " + re.escape(key) + ": "):
            built(data)
    with pytest.raises(UserError, match=r"tools\[0\]: 'tests.spec.helpers:NOT_A_FUNCTION' is 42"):
        built({"instructions": "x", "tools": ["tests.spec.helpers:NOT_A_FUNCTION"]})


def test_tools_resolve_beside_the_spec_file(tmp_path: Path) -> None:
    (tmp_path / "local_tools_for_spec.py").write_text("def ping() -> str:\n    return 'pong'\n")
    (tmp_path / "s.toml").write_text('instructions = "x"\ntools = ["local_tools_for_spec:ping"]\n')
    arch, _ = build(jeeves.spec.load_spec(tmp_path / "s.toml"))
    assert arch.tools[0].name == "ping"
    assert str(tmp_path) not in sys.path  # importable only while building


def test_model_overrides_win_over_the_spec() -> None:
    _, router = built(
        {"instructions": "x", "models": {"default": "openai/gpt-4o-mini"}},
        models={"default": "anthropic/claude-sonnet-4-5", "agent": "openai/gpt-4o"},
    )
    assert {k: r.model for k, r in router.routes.items()} == {
        "default": "anthropic/claude-sonnet-4-5",
        "agent": "openai/gpt-4o",
    }


def test_a_routes_timeout_comes_from_the_spec_with_a_finite_default() -> None:
    _, router = built(
        {
            "instructions": "x",
            "models": {"default": "openai/gpt-4o-mini", "agent": {"model": "openai/m", "timeout_s": 30}},
        }
    )
    assert {k: r.timeout_s for k, r in router.routes.items()} == {"default": 120.0, "agent": 30.0}
    with pytest.raises(UserError, match="timeout_s"):
        built({"instructions": "x", "models": {"agent": {"model": "openai/m", "timeout_s": 0}}})


def test_offline_needs_a_demo_script() -> None:
    with pytest.raises(UserError, match=r"has no \[demo\] script, so it cannot run offline"):
        built({"instructions": "x"}, offline=True)


async def test_offline_every_route_and_pin_answers_from_the_script() -> None:
    data = {
        "type": "actor_critic",
        "actor": {"instructions": "Write.", "model": "anthropic/claude-sonnet-4-5"},
        "critic": {"type": "llm"},
        "models": {"critic": "openai/gpt-4o"},
        "demo": {
            "task": "Say hi.",
            "script": {"actor": ["hi"], "critic": ['{"score": 1, "issues": [], "summary": "ok"}']},
        },
    }
    arch, router = built(data, offline=True, models={"actor_critic.critic": jeeves.Route(model="openai/o3")})
    assert arch.actor.route.model == "scripted:anthropic/claude-sonnet-4-5"
    assert router.routes["critic"].model == "scripted:openai/gpt-4o"
    assert router.routes["default"].model == "scripted"
    assert router.routes["actor_critic.critic"].model == "scripted:openai/o3"  # an override stays offline
    script = router.routes["default"].client
    assert {r.client for r in router.routes.values()} == {script}
    result = await jeeves.run(arch, "Say hi.", router=router, session_id="s")
    assert result.stop_reason == "approved" and result.text == "hi"
    script.assert_consumed()


async def test_demo_tool_calls_are_scripted() -> None:
    data = {
        "instructions": "Count.",
        "role": "counter",
        "tools": ["tests.spec.helpers:word_count"],
        "demo": {
            "script": {
                "counter": [{"tool_calls": [{"name": "word_count", "arguments": {"text": "a b"}}]}, "2"]
            }
        },
    }
    arch, router = built(data, offline=True)
    async with jeeves.stream(arch, "How many?", router=router) as events:
        seen = [e async for e in events]
    done = [e for e in seen if e.type == "tool.completed"]
    assert [(e.name, e.result) for e in done] == [("word_count", "2")]


def test_a_function_critic_import_error_is_keyed_once() -> None:
    data = {
        "type": "actor_critic",
        "actor": {"instructions": "x"},
        "critic": [{"type": "llm"}, {"type": "function", "function": "tests.spec.helpers:nope"}],
    }
    with pytest.raises(UserError) as caught:
        built(data)
    assert str(caught.value).startswith(
        "spec: critic[1].function: 'tests.spec.helpers' has no attribute 'nope'"
    )
    assert str(caught.value).count("spec:") == 1


def test_every_problem_of_the_build_is_reported_at_once() -> None:
    data = {
        "type": "supervisor",
        "workers": {
            "coder": {"instructions": "x", "tools": ["tests.spec.helpers:nope", "tests.spec.helpers:shout"]},
            "writer": {"instructions": "x", "output_type": "tests.spec.nowhere:Summary"},
            "editor": {
                "type": "actor_critic",
                "actor": {"instructions": "x"},
                "critic": {"type": "llm"},
                "critic_template": "{answer}",
            },
        },
    }
    with pytest.raises(UserError) as caught:
        built(data)
    lines = str(caught.value).splitlines()
    assert lines[0] == "spec has 3 problems:"
    assert [line.split(":")[0] for line in lines[1:]] == [
        "  - workers.coder.tools[0]",
        "  - workers.writer.output_type",
        "  - workers.editor",
    ]
    assert "unknown placeholder(s) {answer}" in lines[3]


def test_unused_route_and_script_keys_are_reported_together() -> None:
    data = {
        "type": "actor_critic",
        "actor": {"instructions": "x"},
        "critic": {"type": "llm"},
        "models": {"critc": "openai/x", "actr": "openai/y"},
        "demo": {"script": {"feedback": ["x"]}},
    }
    with pytest.raises(UserError) as caught:
        built(data)
    assert [line.split(":")[0] for line in str(caught.value).splitlines()] == [
        "spec has 3 problems",
        "  - models.critc",
        "  - models.actr",
        "  - demo.script.feedback",
    ]
