"""The pytest file codegen.toml's code critic runs against each draft (as test_solution.py).

The draft is saved as `slugify.py` beside it (`module = "slugify"` in the spec). Point the
spec's `tests` at your own file, and describe the function in the task, to generate
something else.
"""

from slugify import slugify


def test_lowercases_and_joins_words():
    assert slugify("Hello World") == "hello-world"


def test_collapses_runs_of_separators():
    assert slugify("a  --  b") == "a-b"


def test_strips_separators_at_the_ends():
    assert slugify("  Jeeves, at your service! ") == "jeeves-at-your-service"


def test_keeps_digits():
    assert slugify("Route 66") == "route-66"


def test_empty_when_nothing_is_left():
    assert slugify("!!!") == ""
