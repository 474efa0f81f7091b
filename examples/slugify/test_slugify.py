"""The tests the README's ActorCritic runs against each draft (`CodeCritic(..., module="slugify")`).

The critic writes the draft as `slugify.py` beside a copy of this file and runs pytest on it
in a subprocess; this file is not part of the project's own test suite.
"""

from slugify import slugify


def test_words():
    assert slugify("Hello World") == "hello-world"


def test_runs_of_separators():
    assert slugify("a  --  b") == "a-b"


def test_ends():
    assert slugify(" Jeeves, at your service! ") == "jeeves-at-your-service"
