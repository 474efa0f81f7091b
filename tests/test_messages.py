"""Usage arithmetic, how dollars are shown, and what identifies a request for replay."""

from __future__ import annotations

import pytest

from jeeves.journal.records import fingerprint
from jeeves.messages import Message, ModelRequest, ToolSpec, Usage, format_usd


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0.0, "$0.0000"),
        (0.0104, "$0.0104"),
        (1.25, "$1.2500"),
        (0.0011, "$0.0011"),
        (0.000031, "$0.000031"),  # a cheap call keeps two significant digits instead of reading $0.0000
        (0.00005, "$0.000050"),
        (0.00999, "$0.0100"),
    ],
)
def test_dollars_never_read_as_free_when_they_are_not(amount: float, shown: str) -> None:
    assert format_usd(amount) == shown


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=3, output_tokens=4, model_calls=1, cost_usd=0.5) + Usage(
        input_tokens=1, model_calls=1, cost_usd=0.25
    )
    assert (total.total_tokens, total.model_calls, total.cost_usd) == (8, 2, 0.75)


def _request(params: dict[str, object]) -> ModelRequest:
    schema = {"type": "object", "properties": {"token": {"type": "string"}, "password": {"type": "string"}}}
    return ModelRequest(
        messages=[Message.system("Be brief."), Message.user("Say hi")],
        tools=[ToolSpec(name="search", description="Look up", parameters=schema)],
        output_schema={"type": "object", "properties": {"secret": {"type": "string"}}},
        output_name="Answer",
        params=params,
    )


PLAIN = {
    "temperature": 0.2,
    "max_tokens": 300,
    "max_completion_tokens": 200,
    "prompt_cache_key": "k1",
    "extra_headers": {"X-Trace": "abc"},
    "stop": ["END"],
}


def test_a_request_without_credentials_fingerprints_as_journals_recorded_it() -> None:
    # Computed before credentials were left out of fingerprints: journals recorded then still match.
    known = "8478ccf6da75cc5da4b16fb6b50a85d0b1d72bf088f6cb0c5cfa5a12a21d204a"
    assert fingerprint(_request(PLAIN).fingerprint_payload()) == known


def test_credentials_are_not_part_of_the_fingerprint_or_the_payload() -> None:
    keyed = {
        **PLAIN,
        "api_key": "sk-a-123456",
        "extra_headers": {"X-Trace": "abc", "Authorization": "Bearer sk-a-123456"},
    }
    rotated = {
        **keyed,
        "api_key": "sk-b-654321",
        "extra_headers": {"X-Trace": "abc", "Authorization": "Bearer b"},
    }
    payloads = [_request(p).fingerprint_payload() for p in (PLAIN, keyed, rotated)]
    assert payloads[0] == payloads[1] == payloads[2]
    assert "sk-a-123456" not in repr(payloads[1])


def test_a_turn_request_holds_what_the_validating_constructor_would_and_aliases_nothing() -> None:
    from jeeves.messages import Message, ModelRequest, ToolSpec, turn_request

    history = [Message.system("s"), Message.user("go")]
    tools = [ToolSpec(name="lookup", description="Look up.")]
    params = {"temperature": 0.2}
    built = turn_request(history, tools, params, output_schema={"type": "object"}, output_name="Out")
    validated = ModelRequest(
        messages=list(history),
        tools=tools,
        params=params,
        output_schema={"type": "object"},
        output_name="Out",
    )
    assert built == validated and built.model_dump() == validated.model_dump()
    assert built.fingerprint_payload() == validated.fingerprint_payload()
    assert built.messages[0] is history[0]  # the same messages, as validation keeps them
    history.append(Message.user("later"))
    tools.append(ToolSpec(name="other"))
    params["seed"] = 1
    assert len(built.messages) == 2 and len(built.tools) == 1 and built.params == {"temperature": 0.2}
    assert built.model_copy(update={"model": "m"}).model == "m" and built.model == ""


@pytest.mark.anyio
async def test_an_agents_requests_are_what_validation_would_make_of_them() -> None:
    import jeeves
    from jeeves.messages import ModelRequest
    from jeeves.testing import FunctionModel, Reply, call

    @jeeves.tool
    def step(n: int) -> str:
        """Take a step."""
        return f"did {n}"

    def act(request: ModelRequest) -> Reply:
        done = sum(m.role == "tool" for m in request.messages)
        return Reply(tool_calls=[call("step", {"n": done})]) if done < 3 else Reply(text="done")

    model = FunctionModel(act)
    agent = jeeves.Agent("Step.", tools=[step], model=model, params={"temperature": 0})
    assert (await jeeves.run(agent, "Go.")).text == "done"
    assert len(model.requests) == 4
    for request in model.requests:
        assert ModelRequest.model_validate(request.model_dump()) == request
