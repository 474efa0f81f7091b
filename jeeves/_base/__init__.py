"""What every layer stands on (private): session ids and role names, argument validation,
credential redaction."""

__all__: list[str] = []
