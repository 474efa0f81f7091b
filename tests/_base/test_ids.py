from __future__ import annotations

import pytest

from jeeves._base.ids import child_id, new_root_id, validate_name, validate_root_id
from jeeves.errors import UserError


def test_child_id_is_a_pure_function() -> None:
    assert child_id("job-1", "critic", 2) == "job-1__critic_2"
    assert child_id(child_id("r", "coder", 0), "actor", 1) == "r__coder_0__actor_1"


@pytest.mark.parametrize("bad", ["", "Critic", "1critic", "a__b", "a-b", "a b", None, 3])
def test_invalid_names_are_user_errors_showing_the_value(bad: object) -> None:
    with pytest.raises(UserError) as info:
        validate_name(bad)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("good", ["critic", "code_reviewer", "w2", "a_b_c"])
def test_valid_names(good: str) -> None:
    assert validate_name(good) == good


def test_root_ids() -> None:
    assert validate_root_id("job-1.2:x_y") == "job-1.2:x_y"
    with pytest.raises(UserError):
        validate_root_id("bad__id")
    with pytest.raises(UserError, match=r"Invalid session_id 'job_'.*no '_' at the end"):
        validate_root_id("job_")  # its child `job___critic_0` would be in the subtree of `job`
    assert new_root_id() != new_root_id()
    with pytest.raises(UserError):
        child_id("r", "x", -1)
