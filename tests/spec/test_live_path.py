"""`jeeves run` on real model routes: litellm's HTTP path, against a scripted local server.

Each test starts `tests.models.mock_openai` on 127.0.0.1 and runs the CLI as a user would,
in a subprocess, with a dummy key and the server's URL where a user puts it: the
`OPENAI_API_BASE` or `OPENAI_BASE_URL` variable, or `api_base` in a route's params. The
scripted replies are the specs' own `[demo.script]`, with token counts large enough that
every role's cost shows in the summary's four decimals.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from jeeves.messages import format_usd
from jeeves.models.litellm import _litellm
from jeeves.spec import load_spec
from jeeves.spec.models import ReplySpec
from tests.conftest import REPO, subprocess_env
from tests.conftest import jeeves_cli as jeeves
from tests.models.mock_openai import Behaviour, Fail, MockOpenAI, Text, Tool, serve

CODEGEN = "architectures/codegen.toml"
TEAM = "architectures/research_team.toml"
TASK = "Write parse_duration(text) as the tests beside the spec describe."
MINI, FULL = "openai/gpt-4o-mini", "openai/gpt-4o"
ASYMMETRIC = ("--model", f"actor={MINI}", "--model", f"critic={FULL}")
"""The coder on a cheap model, the reviewer on a dearer one."""

ACTOR_TOKENS = [(1500, 400), (2600, 450)]
CRITIC_TOKENS = [(1800, 60), (2000, 30)]


def demo_script(path: str) -> dict[str, list[ReplySpec]]:
    demo = load_spec(REPO / path).demo
    assert demo is not None
    return demo.script


CODEGEN_DEMO = demo_script(CODEGEN)
DRAFTS = [reply.text for reply in CODEGEN_DEMO["actor"]]
"""A draft that passes 1 of the 5 tests in architectures/codegen_tests.py, then one that passes all."""


def codegen_replies() -> list[Behaviour]:
    """Draft, review, draft, review: the HTTP calls of codegen.toml's two rounds, in order."""
    verdicts = [reply.text for reply in CODEGEN_DEMO["critic"]]
    actor = [Text(text, *tokens) for text, tokens in zip(DRAFTS, ACTOR_TOKENS, strict=True)]
    critic = [Text(text, *tokens) for text, tokens in zip(verdicts, CRITIC_TOKENS, strict=True)]
    return [actor[0], critic[0], actor[1], critic[1]]


def price(model: str, calls: Sequence[tuple[int, int]]) -> float:
    """What litellm's price map says `calls` (prompt, completion tokens) cost on `model`."""
    return sum(
        sum(_litellm().cost_per_token(model=model, prompt_tokens=p, completion_tokens=c)) for p, c in calls
    )


def role_line(role: str, model: str, calls: Sequence[tuple[int, int]]) -> str:
    tokens = sum(p + c for p, c in calls)
    return f"  {role}: {len(calls)} call{'' if len(calls) == 1 else 's'}, {tokens:,} tokens, {format_usd(price(model, calls))}"


def env_for(
    base_url: str | None, *, key: str | None = "sk-test", var: str = "OPENAI_API_BASE"
) -> dict[str, str]:
    """The test environment with no real keys or base URLs; then `key` and `var=base_url` if given."""
    dropped = ("OPENAI_API_BASE", "OPENAI_BASE_URL")
    env = {k: v for k, v in subprocess_env().items() if not k.endswith("_API_KEY") and k not in dropped}
    if key is not None:
        env["OPENAI_API_KEY"] = key
    if base_url is not None:
        env[var] = base_url
    return env


OFFLINE = env_for(None, key=None)


def codegen_run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`jeeves run codegen.toml TASK`, the coder on gpt-4o-mini and the reviewer on gpt-4o, session `cg`."""
    return jeeves("run", CODEGEN, TASK, *ASYMMETRIC, "--session-id", "cg", *args, env=env)


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def used_up(mock: MockOpenAI) -> None:
    assert not mock.unexpected, f"requests the script did not cover: {mock.models}"
    assert mock.remaining() == 0, "scripted replies were left unused"


@pytest.fixture
def mock() -> Iterator[MockOpenAI]:
    with serve() as server:
        yield server
        used_up(server)


def test_codegen_live_routes_each_role_prints_its_cost_and_replays_offline(tmp_path: Path) -> None:
    journal = tmp_path / "runs.jsonl"
    with serve() as mock:
        mock.script(*codegen_replies())
        live = codegen_run("--journal", str(journal), env=env_for(mock.base_url))
        used_up(mock)
        sent, headers = mock.requests, mock.headers
    assert live.returncode == 0, live.stderr
    assert live.stderr == ""
    assert [body["model"] for body in sent] == ["gpt-4o-mini", "gpt-4o", "gpt-4o-mini", "gpt-4o"]
    assert {h["authorization"] for h in headers} == {"Bearer sk-test"}
    assert all(body["stream"] for body in sent), "the live tree streams every call"
    assert [("response_format" in body) for body in sent] == [False, True, False, True]  # the review's schema
    # The code critic ran the spec's pytest file on the first draft: its failures reach the actor.
    revise = sent[2]["messages"][-1]["content"]
    assert "test_combined_units failed" in revise and "test_rejects_the_empty_string failed" in revise

    actor = role_line("codegen.actor", MINI, ACTOR_TOKENS)
    critic = role_line("codegen.critic", FULL, CRITIC_TOKENS)
    total = price(MINI, ACTOR_TOKENS) + price(FULL, CRITIC_TOKENS)
    summary = live.stdout.split("\n\n")[-1].splitlines()
    assert summary[:3] == [
        f"stop reason: approved · 4 model calls · 8,840 tokens · {format_usd(total)}",
        actor,
        critic,
    ]
    assert summary[3] == f"journal: {journal}" and summary[4].endswith(f" -m jeeves replay {journal} cg")
    actor_usd, critic_usd = (float(line.rsplit("$", 1)[1]) for line in (actor, critic))
    assert 0 < actor_usd < critic_usd
    assert DRAFTS[1].strip() in live.stdout

    replayed = jeeves("replay", str(journal), "cg", env=OFFLINE)  # the server is gone, and no key is set
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.endswith(  # with what each role spent when it ran, to the cent
        f"\noutput: {DRAFTS[1]}\nstop reason: approved (replayed offline)\n"
        f"recorded: 4 model calls · 8,840 tokens · {format_usd(total)}\n{actor}\n{critic}\n"
    )
    assert (
        "  actor_1  session.started  role=actor architecture=agent model=openai/gpt-4o-mini"
        in replayed.stdout
    )
    assert "  critic_1  session.started  role=critic architecture=combined_critic model=openai/gpt-4o" in (
        replayed.stdout
    )


def test_codegen_json_names_each_roles_model_and_replays_event_for_event(
    mock: MockOpenAI, tmp_path: Path
) -> None:
    journal = tmp_path / "runs.db"
    mock.script(*codegen_replies())
    live = codegen_run("--json", "--journal", str(journal), env=env_for(mock.base_url, var="OPENAI_BASE_URL"))
    assert live.returncode == 0, live.stderr
    events = json_lines(live.stdout)

    started = {e["session_id"]: e["model"] for e in events if e["type"] == "session.started"}
    assert started == {
        "cg": None,
        "cg__actor_0": MINI,
        "cg__critic_0": FULL,
        "cg__actor_1": MINI,
        "cg__critic_1": FULL,
    }
    calls = [e for e in events if e["type"] == "model.completed"]
    tokens = [ACTOR_TOKENS[0], CRITIC_TOKENS[0], ACTOR_TOKENS[1], CRITIC_TOKENS[1]]
    assert [(e["model"], e["usage"]["input_tokens"], e["usage"]["output_tokens"]) for e in calls] == [
        (model, *pair) for model, pair in zip([MINI, FULL, MINI, FULL], tokens, strict=True)
    ]
    for call, pair in zip(calls, tokens, strict=True):
        assert call["usage"]["cost_usd"] == pytest.approx(price(call["model"], [pair]))
        assert call["usage"]["cost_usd"] > 0
    critiques = [e for e in events if e["type"] == "critique"]
    assert [(e["score"], e["passed"], e["summary"].splitlines()[0]) for e in critiques] == [
        (0.2, False, "tests: 1/5 tests passed."),  # pytest really ran the first draft: 1 of 5 passed
        (0.95, True, "tests: 5/5 tests passed."),
    ]
    assert [i for i in critiques[0]["issues"] if i.startswith("[tests]")] == [
        "[tests] test_combined_units failed: ValueError: invalid literal for int() with base 10: '1h30'",
        "[tests] test_spaces_between_parts failed: ValueError: invalid literal for int() with base 10: '2h 15m 10'",
        "[tests] test_rejects_what_is_not_a_duration failed: KeyError: 'n'",
        "[tests] test_rejects_the_empty_string failed: IndexError: string index out of range",
    ]
    last = events[-1]
    assert (last["type"], last["session_id"], last["stop_reason"]) == ("session.completed", "cg", "approved")
    assert last["usage"]["cost_usd"] == pytest.approx(price(MINI, ACTOR_TOKENS) + price(FULL, CRITIC_TOKENS))

    replayed = jeeves("replay", str(journal), "cg", "--json", env=OFFLINE)
    assert replayed.returncode == 0, replayed.stderr
    again = json_lines(replayed.stdout)
    assert {e["replayed"] for e in again} == {True}

    def kept(event: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in event.items() if k not in ("ts", "replayed")}

    assert [kept(e) for e in again] == [kept(e) for e in events]


def test_research_team_delegates_and_runs_its_tool_over_http(mock: MockOpenAI) -> None:
    script = demo_script(TEAM)
    lead, researcher, actor, critic = (
        script[k] for k in ("lead", "researcher", "writer.actor", "writer.critic")
    )

    def call(reply: ReplySpec, id: str) -> Tool:
        (tool_call,) = reply.tool_calls
        return Tool(
            tool_call.name, json.dumps(tool_call.arguments), id=id, prompt_tokens=900, completion_tokens=60
        )

    mock.script(
        call(lead[0], "call_1"),  # delegate to the researcher
        call(researcher[0], "call_2"),  # search_notes
        Text(researcher[1].text, 1200, 200),
        call(lead[1], "call_3"),  # delegate to the writer
        Text(actor[0].text, 800, 120),
        Text(critic[0].text, 900, 40),
        Text(actor[1].text, 1100, 130),
        Text(critic[1].text, 1000, 20),
        call(lead[2], "call_4"),  # forward the writer's answer
    )
    routes = {
        "lead": FULL,
        "researcher": MINI,
        "writer.actor": "openai/gpt-4.1-mini",
        "writer.critic": "openai/gpt-4.1",
    }
    flags = [arg for role, model in routes.items() for arg in ("--model", f"{role}={model}")]
    out = jeeves("run", TEAM, *flags, env=env_for(mock.base_url))
    assert out.returncode == 0, out.stderr

    lead_m, researcher_m, actor_m, critic_m = (model.removeprefix("openai/") for model in routes.values())
    assert mock.models == [
        *(lead_m, researcher_m, researcher_m),  # delegate; search_notes; the facts
        *(lead_m, actor_m, critic_m, actor_m, critic_m),  # delegate; the writer's two rounds
        lead_m,  # forward
    ]
    offered = [sorted(t["function"]["name"] for t in body.get("tools", [])) for body in mock.requests]
    assert offered[:2] == [["delegate", "forward"], ["search_notes"]]
    found = mock.requests[2]["messages"][-1]  # the tool ran for real, in the CLI's process
    assert (found["role"], found["name"], found["tool_call_id"]) == ("tool", "search_notes", "call_2")
    assert found["content"].startswith("[n2] Nathaniel J. Smith's 2018 essay")
    delegated = mock.requests[3]["messages"][-1]  # the researcher's facts came back to the lead
    assert (delegated["name"], delegated["content"]) == ("delegate", researcher[1].text)

    assert actor[1].text.strip() in out.stdout  # forwarded: the writer's approved answer
    lines = out.stdout.split("\n\n")[-1].splitlines()
    assert lines[0].startswith("stop reason: forwarded · 9 model calls · 9,350 tokens · $")
    assert lines[1:] == [  # each session's role path, the keys routing matches
        role_line("lead", FULL, [(900, 60)] * 3),
        role_line("lead.researcher", MINI, [(900, 60), (1200, 200)]),
        role_line("lead.writer.actor", routes["writer.actor"], [(800, 120), (1100, 130)]),
        role_line("lead.writer.critic", routes["writer.critic"], [(900, 40), (1000, 20)]),
    ]
    assert all(float(line.rsplit("$", 1)[1]) > 0 for line in lines[1:])


def test_a_refused_key_is_one_line_exit_2_and_the_journal_keeps_the_steps_done(
    mock: MockOpenAI, tmp_path: Path
) -> None:
    journal = tmp_path / "runs.jsonl"
    first_draft, first_review, second_draft, second_review = codegen_replies()
    mock.script(first_draft, first_review, Fail(401, message="Incorrect API key provided: sk-test."))
    out = codegen_run("--journal", str(journal), env=env_for(mock.base_url))

    assert out.returncode == 2, "a refused key is set-up, like a missing one"
    assert mock.models == ["gpt-4o-mini", "gpt-4o", "gpt-4o-mini"], "a 401 is not retried"
    error, saved, resume = out.stderr.splitlines()
    assert "Traceback" not in out.stderr + out.stdout
    assert error.startswith("error: Model 'openai/gpt-4o-mini' refused the API key (401: ")
    assert "Incorrect API key provided: sk-test." in error
    assert "; check OPENAI_API_KEY (or the api_key given to the route) and its access to this model" in error
    assert saved == f"The steps it completed are in {journal}; once fixed, resume without repeating them:"
    command = shlex.join(
        ["run", CODEGEN, TASK, *(f"--model={m}" for m in ASYMMETRIC[1::2])]
        + ["--journal", str(journal), "--session-id", "cg"]
    )
    assert resume.startswith("  ") and resume.endswith(f" -m jeeves {command}")  # as it was run

    (run,) = json_lines(jeeves("runs", str(journal), "--json", env=OFFLINE).stdout)
    spent = price(MINI, ACTOR_TOKENS[:1]) + price(FULL, CRITIC_TOKENS[:1])
    assert (run["status"], run["usage"]["model_calls"]) == ("failed", 2)
    assert run["usage"]["cost_usd"] == pytest.approx(spent)
    replayed = jeeves("replay", str(journal), "cg", "--json", env=OFFLINE)
    assert replayed.returncode == 1  # the recorded run failed, and its replay fails the same way
    events = json_lines(replayed.stdout)
    done = [(e["session_id"], e["text"]) for e in events if e["type"] == "model.completed"]
    assert done == [("cg__actor_0", DRAFTS[0]), ("cg__critic_0", CODEGEN_DEMO["critic"][0].text)]
    assert [e["session_id"] for e in events if e["type"] == "session.failed"] == ["cg__actor_1", "cg"]

    mock.script(second_draft, second_review)  # the key is fixed: resume as the error said
    resumed = jeeves(*shlex.split(resume)[3:], env=env_for(mock.base_url))  # after `python -m jeeves`
    assert resumed.returncode == 0, resumed.stderr
    assert mock.models[3:] == ["gpt-4o-mini", "gpt-4o"], "only the steps not done are made live"
    assert "stop reason: approved · 2 model calls" in resumed.stdout


def test_server_errors_on_every_fallback_are_one_line_exit_1(mock: MockOpenAI, tmp_path: Path) -> None:
    spec = tmp_path / "one.toml"
    spec.write_text(
        'instructions = "Answer in one word."\n'
        f'[models]\ndefault = {{ model = "{MINI}", fallbacks = ["{FULL}"], retries = 0 }}\n'
    )
    mock.script(Fail(500), Fail(503))
    out = jeeves("run", str(spec), "Say hi.", env=env_for(mock.base_url))
    assert out.returncode == 1
    assert mock.models == ["gpt-4o-mini", "gpt-4o"]
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr + out.stdout
    assert out.stderr.startswith("error: the run failed: ProviderError: Model 'openai/gpt-4o' failed (")
    assert out.stderr.endswith("; the provider failed; retry later or add a fallback.\n")


def test_a_refused_key_without_a_journal_is_one_line_naming_the_variable(
    mock: MockOpenAI, tmp_path: Path
) -> None:
    spec = tmp_path / "one.toml"
    spec.write_text(f'instructions = "Answer."\n[models]\ndefault = {{ model = "{MINI}", retries = 2 }}\n')
    mock.script(Fail(403, message="This key has no access to gpt-4o-mini."))
    out = jeeves("run", str(spec), "Say hi.", env=env_for(mock.base_url))
    assert out.returncode == 2
    assert len(mock.requests) == 1
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr + out.stdout
    assert out.stderr.startswith("error: Model 'openai/gpt-4o-mini' refused the API key (403: ")
    assert "check OPENAI_API_KEY" in out.stderr


def one_agent(path: Path, base_url: str | None = None) -> Path:
    """A one-agent spec on gpt-4o-mini; with `base_url`, its route names the server itself."""
    params = f'api_base = "{base_url}", temperature = 0.2, max_tokens = 64'
    route = f'{{ model = "{MINI}", params = {{ {params} }} }}' if base_url else f'"{MINI}"'
    path.write_text(f'instructions = "Answer."\n[models]\ndefault = {route}\n')
    return path


def test_api_base_in_a_routes_params_reaches_litellm(mock: MockOpenAI, tmp_path: Path) -> None:
    mock.script(Text("Hello.", 30000, 2000))
    out = jeeves("run", str(one_agent(tmp_path / "one.toml", mock.base_url)), "Hi.", env=env_for(None))
    assert out.returncode == 0, out.stderr
    (body,) = mock.requests
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-4o-mini", 0.2, 64)
    assert mock.headers[0]["authorization"] == "Bearer sk-test"
    assert role_line("agent", MINI, [(30000, 2000)]) in out.stdout.splitlines()


@pytest.mark.parametrize("where", ["params", "OPENAI_API_BASE"])
def test_a_local_server_still_needs_a_key_and_the_cli_names_it(
    mock: MockOpenAI, tmp_path: Path, where: str
) -> None:
    """litellm's OpenAI client sends a key to any server; without one the CLI says which, exit 2."""
    if where == "params":
        spec, env = one_agent(tmp_path / "one.toml", mock.base_url), env_for(None, key=None)
    else:
        spec, env = one_agent(tmp_path / "one.toml"), env_for(mock.base_url, key=None, var=where)
    out = jeeves("run", str(spec), "Hi.", env=env)
    assert out.returncode == 2
    assert mock.requests == []
    assert out.stderr.startswith(
        "error: Model 'openai/gpt-4o-mini' needs OPENAI_API_KEY set in the environment"
    )
    assert (
        "(a key is sent to a custom api_base too; any value will do for a server that checks none)"
        in out.stderr
    )
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
