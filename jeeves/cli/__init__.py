"""The `jeeves` command: every subcommand lives in this package (`main` parses and dispatches)."""

__all__: list[str] = []
