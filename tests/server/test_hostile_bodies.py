"""Every JSON route reads its body with one helper: hostile bodies are a 400, never a 500."""

from __future__ import annotations

import pytest

from jeeves.server import create_app
from jeeves.server.body import MAX_JSON_DEPTH, BadJson, parse_json
from tests.server.conftest import Blocked, asgi_client
from tests.server.gated import POLICY, refund_entry
from tests.server.test_gates_http import gated_run

pytestmark = pytest.mark.anyio

DEEP_ARRAYS = b"[" * 1000 + b"]" * 1000  # 2 KB
DEEP_OBJECTS = b'{"a":' * 1000 + b"1" + b"}" * 1000
BODIES = {
    "deep arrays": (DEEP_ARRAYS, "deeper than 64 levels"),
    "deep objects": (DEEP_OBJECTS, "deeper than 64 levels"),
    "just over the limit": (
        b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
        "deeper than 64 levels",
    ),
    "not UTF-8": (b'{"task": "caf\xe9"}', "not UTF-8"),
    "not JSON": (b"{nope", "not JSON"),
    "a lone surrogate": (b'{"task": "a\\ud800", "text": "\\udfff"}', "lone UTF-16 surrogate"),
}
ROUTES = ["/runs", "/runs/g-1/gates/g-1%231", "/runs/g-1/messages", "/agui", "/agui/refund"]


@pytest.mark.parametrize("route", ROUTES)
async def test_every_json_route_answers_400_to_a_hostile_body(route: str) -> None:
    app = create_app({"refund": refund_entry, "blocked": Blocked()}, approvals=POLICY)
    async with asgi_client(app) as client:
        record = await gated_run(app, client, "g-1")
        for name, (body, needle) in BODIES.items():
            response = await client.post(route, content=body, headers={"Content-Type": "application/json"})
            assert response.status_code == 400, (name, response.text)
            assert needle in response.json()["error"], name
        assert record.pending()  # nothing was decided or started by any of them
        assert [r.session_id for r in app.state.runs.runs()] == ["g-1"]
        record.cancel()


def test_a_body_at_the_depth_limit_parses() -> None:
    assert parse_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None
    assert parse_json(b'{"a": [1, {"b": "c"}], "d": null}') == {"a": [1, {"b": "c"}], "d": None}
    with pytest.raises(BadJson):
        parse_json(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))


def test_a_lone_surrogate_is_named_by_where_it_is_and_a_pair_is_a_character() -> None:
    with pytest.raises(BadJson, match=r"body's \$\.messages\[1\]\.text holds a lone UTF-16 surrogate"):
        parse_json(b'{"messages": [{"text": "ok"}, {"text": "a\\uDC00b"}]}')
    with pytest.raises(BadJson, match=r"body's \$\['a b'\] key '\\ud800' holds"):
        parse_json(b'{"a b": {"\\ud800": 1}}')
    assert parse_json(b'{"task": "\\ud83d\\ude00 \\\\ud800"}') == {"task": "\U0001f600 \\ud800"}


async def test_a_run_a_lone_surrogate_could_not_start_leaves_the_run_list_readable() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        refused = await client.post(
            "/runs",
            content=b'{"architecture": "refund", "task": "refund \\ud800"}',
            headers={"Content-Type": "application/json"},
        )
        listed = await client.get("/runs")
    assert refused.status_code == 400 and "\n" not in refused.json()["error"]
    assert listed.status_code == 200 and listed.json()["runs"] == []


async def test_a_body_that_does_not_fit_its_route_is_one_line_that_echoes_nothing_back() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        sent = {"architecture": 5, "task": ["x" * 200_000], "extra": 1}
        refused = await client.post("/runs", json=sent)
    said = refused.json()["error"]
    assert refused.status_code == 422 and "\n" not in said and len(said) < 300
    assert said == (
        "Invalid request body: architecture: Input should be a valid string; task: Input should be a valid "
        "string; extra: Extra inputs are not permitted."
    )
