"""The approval policy (`jeeves.approvals.policy` / `jeeves.approvals.decide`) and the tool idempotency key."""

from __future__ import annotations

import pytest

import jeeves
from jeeves.approvals.decide import Allow, Approvals, Decision, PendingGate, arguments_hash
from jeeves.errors import UserError


def test_auto_modes_run_inline_others_ask_and_rules_allow_by_glob() -> None:
    policy = Approvals(auto=("read_only",), rules=[Allow("send_email", where={"to": "*@ourco.com"})])
    assert policy.action("lookup", "read_only", {}) == "run"
    assert policy.action("write_file", None, {}) == "ask"  # no mode reads as local_write
    assert policy.action("send_email", "network", {"to": "ann@ourco.com"}) == "run"
    assert policy.action("send_email", "network", {"to": "ann@evil.com"}) == "ask"
    assert policy.action("send_email", "network", {}) == "ask"  # a named argument must be there


def test_above_the_safety_mode_is_refused_even_with_a_rule() -> None:
    policy = Approvals(refuse_above="network", rules=[Allow("pay")])
    assert policy.action("pay", "destructive", {}) == "refuse"
    assert "above this run's safety mode (network)" in policy.refusal("pay", "destructive")


def test_ask_limits_which_modes_are_gated() -> None:
    policy = Approvals(auto=(), ask=("destructive",))
    assert policy.action("fetch", "network", {}) == "run"
    assert policy.action("pay", "destructive", {}) == "ask"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"auto": ("sudo",)}, r"'sudo' is not an approval mode"),
        ({"auto": "read_only"}, r"auto='read_only' is one mode, not a list"),
        ({"refuse_above": "never"}, r"refuse_above 'never'"),
    ],
)
def test_bad_policies_say_what_to_write(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(UserError, match=match):
        Approvals(**kwargs)  # type: ignore[arg-type]


def test_the_arguments_hash_ignores_key_order_and_a_decision_carries_it() -> None:
    assert arguments_hash({"a": 1, "b": "x"}) == arguments_hash({"b": "x", "a": 1})
    gate = PendingGate(
        session_id="s",
        step=2,
        gate_id="s#2",
        tool="pay",
        arguments={"a": 1},
        arguments_hash=arguments_hash({"a": 1}),
    )
    assert Decision.approve(gate, by="alice").arguments_hash == gate.arguments_hash


def test_the_idempotency_key_outside_a_tool_call_is_a_user_error() -> None:
    with pytest.raises(UserError, match="outside a tool call"):
        jeeves.agent.tools.idempotency_key()
