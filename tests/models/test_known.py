"""A model string is checked before any call, against the snapshot of what litellm routes."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

import jeeves
from jeeves.models.known import known_models, model_problem
from jeeves.models.router import Router
from tests.conftest import REPO, jeeves_cli, subprocess_env


@pytest.mark.parametrize(
    "model",
    [
        "gpt-4o",  # litellm maps it to openai by itself
        "claude-sonnet-4-5",
        "openai/gpt-99",  # a known provider: the provider says whether it has the model
        "anthropic/claude-3-haiku-20240307",
        "ollama/llama3",
        "ft:gpt-4o-mini:acme::abc123",
    ],
)
def test_what_litellm_routes_is_accepted(model: str) -> None:
    assert model_problem(model) is None
    assert Router({"default": model}).routes["default"].model == model


@pytest.mark.parametrize(
    ("model", "suggestion"),
    [
        ("gtp-4o", "did you mean 'openai/gpt-4o'?"),
        ("antropic/claude-sonnet-4-5", "did you mean 'anthropic/claude-sonnet-4-5'?"),
        ("llama3", "write it as PROVIDER/MODEL, e.g. 'openai/gpt-4o-mini'."),
    ],
)
def test_what_litellm_cannot_route_is_refused_with_a_suggestion(model: str, suggestion: str) -> None:
    problem = model_problem(model)
    assert problem is not None and repr(model) in problem and problem.endswith(suggestion)
    with pytest.raises(jeeves.UserError, match=f"Route 'critic': .*{model}"):
        Router({"critic": model})
    with pytest.raises(jeeves.UserError, match="not a provider litellm knows|cannot route"):
        Router({"default": "openai/gpt-4o"}).override({"critic": model})
    with pytest.raises(jeeves.UserError, match="fallbacks|cannot route|not a provider"):
        Router({"critic": jeeves.Route(model="openai/gpt-4o", fallbacks=(model,))})


@pytest.mark.anyio
async def test_a_run_given_a_model_litellm_cannot_route_makes_no_call() -> None:
    with pytest.raises(jeeves.UserError, match="did you mean 'openai/gpt-4o'"):
        await jeeves.run(jeeves.Agent("Say hi."), "hi", models={"default": "gtp-4o"})


def test_a_route_with_its_own_client_is_not_checked() -> None:
    script = jeeves.ScriptedModel({"default": ["hi"]})
    assert Router({"default": "anything"}, client=script).routes["default"].model == "anything"
    assert Router({"default": script}).routes["default"].client is script


def test_the_snapshot_is_of_the_installed_litellm() -> None:
    """Refresh it (`python scripts/refresh-known-models`) when the tested litellm changes."""
    known = known_models()
    assert known.litellm == metadata.version("litellm")
    assert {"openai", "anthropic", "gemini", "ollama"} <= known.providers
    assert known.models["gpt-4o"] == "openai"


def test_the_check_does_not_import_litellm() -> None:
    code = (
        "import sys, jeeves\n"
        "try:\n    jeeves.Router({'actor': 'gtp-4o'})\nexcept jeeves.UserError as exc:\n    print(exc)\n"
        "print('litellm' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), cwd=REPO
    )
    assert done.stdout.splitlines()[-1] == "False", done.stderr
    assert "openai/gpt-4o" in done.stdout


def test_jeeves_run_refuses_a_mistyped_model_at_once_with_exit_2() -> None:
    done = jeeves_cli("run", "architectures/codegen.toml", "Write it.", "--model", "actor=gtp-4o")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: architectures/codegen.toml: --model actor=gtp-4o: litellm cannot route")
    assert "did you mean 'openai/gpt-4o'?" in line and "--offline" in line


def test_a_spec_route_litellm_cannot_route_is_a_problem_under_its_key() -> None:
    from jeeves.spec.build import build
    from jeeves.spec.load import parse_spec

    spec = parse_spec({"type": "agent", "instructions": "Hi.", "models": {"default": "gtp-4o"}})
    with pytest.raises(jeeves.UserError, match=r"models\.default: litellm cannot route model 'gtp-4o'"):
        build(spec)
    fine = parse_spec({"type": "agent", "instructions": "Hi.", "models": {"default": "gpt-4o"}})
    assert build(fine)[1].routes["default"].model == "gpt-4o"
    with pytest.raises(jeeves.UserError, match=r"--model default=gtp-4o: litellm cannot route"):
        build(fine, models={"default": "gtp-4o"})
    assert (
        build(fine, offline=False, models={"agent": "openai/gpt-99"})[1].routes["agent"].model
        == "openai/gpt-99"
    )
